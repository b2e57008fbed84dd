"""`pulumi-resource-ck8s-gpu`: the component provider executable the engine starts (ADR 0045).

The engine runs it as `pulumi-resource-ck8s-gpu <engine address> [flags]`; it prints the port it
serves on and answers GetSchema and Construct until the engine stops it.
"""

import sys


def main() -> None:
    from pulumi.provider import main as serve

    from .server import Ck8sGpuProvider

    serve(Ck8sGpuProvider(), sys.argv[1:])


if __name__ == "__main__":
    main()

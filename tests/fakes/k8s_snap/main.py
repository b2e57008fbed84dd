"""Entry point of every fake command: `python -m tests.fakes.k8s_snap.main <tool> <args...>`.

The shims on a simulated node's PATH (written by tests/fakes/k8s_snap/fleet.py and by the fake
`snap install`) carry FAKE_WORLD, FAKE_INSTANCE and FAKE_REGION, so a command always acts as the
instance it runs on, also when SSM runs it on another instance.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.fakes.k8s_snap import tracks, world


def shim(path: Path, tool: str, instance: str, world_dir: str, region: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    repo = Path(__file__).resolve().parents[3]
    path.write_text(
        "#!/bin/sh\n"
        f"FAKE_WORLD='{world_dir}' FAKE_INSTANCE='{instance}' FAKE_REGION='{region}' "
        f"PYTHONPATH='{repo}' exec '{sys.executable}' -m tests.fakes.k8s_snap.main {tool} \"$@\"\n"
    )
    path.chmod(0o755)


def snap(argv: Sequence[str]) -> int:
    """snapd's CLI for the calls the node script makes (`snap wait`, `install`, `refresh --hold`)."""
    me_id = os.environ["FAKE_INSTANCE"]
    with world.locked() as state:
        me: dict[str, Any] = state["instances"][me_id]
        world.record(state, me_id, "snap " + " ".join(argv))
        if list(argv[:3]) == ["wait", "system", "seed.loaded"]:
            return 0
        if argv[:1] == ["install"] and len(argv) >= 2:
            name = argv[1]
            opts = {a.split("=", 1)[0]: a.split("=", 1)[1] if "=" in a else True for a in argv[2:]}
            failures = state.setdefault("snap_failures", {})
            if failures.get(me_id, 0) > 0:
                failures[me_id] -= 1
                print(f'error: cannot install "{name}": Post "https://api.snapcraft.io/v2/snaps/refresh": EOF',
                      file=sys.stderr)
                return 1
            channel = str(opts.get("--channel", "latest/stable"))
            if name == "k8s":
                if opts.get("--classic") is not True:
                    print('error: This revision of snap "k8s" was published using classic confinement', file=sys.stderr)
                    return 1
                try:
                    tracks.from_channel(channel)
                except KeyError:
                    print(f'error: requested a non-existing branch on {channel} for snap "k8s"', file=sys.stderr)
                    return 1
                root = Path(me["root"])
                here = (os.environ["FAKE_WORLD"], os.environ["FAKE_REGION"])
                shim(root / "snap/bin/k8s", "k8s", me_id, *here)
                shim(root / "snap/k8s/current/bin/kubectl", "kubectl", me_id, *here)
            me["node"].setdefault("snap", {})[name] = channel
            return 0
        if list(argv) == ["refresh", "--hold", "k8s"]:
            if "k8s" not in me["node"].get("snap", {}):
                print('error: snap "k8s" is not installed', file=sys.stderr)
                return 1
            me["node"]["held"] = True
            return 0
    print(f"error: the fake snap does not model `snap {' '.join(argv)}`", file=sys.stderr)
    return 1


def cloud_init(argv: Sequence[str]) -> int:
    """`cloud-init query ds.meta_data.<key>` on the EC2 datasource (IMDS meta-data key names)."""
    state = world.read()
    me = state["instances"][os.environ["FAKE_INSTANCE"]]
    values = {"ds.meta_data.local-hostname": me["name"], "ds.meta_data.local-ipv4": me["ip"],
              "ds.meta_data.instance-id": os.environ["FAKE_INSTANCE"]}
    if len(argv) != 2 or argv[0] != "query" or argv[1] not in values:
        print(f"ERROR: Undefined jinja variable: \"{argv[-1] if argv else ''}\"", file=sys.stderr)
        return 1
    print(values[argv[1]])
    return 0


def main(argv: Sequence[str]) -> int:
    tool, *rest = argv
    # Imported per tool: every fake call is a new process, and most need little.
    if tool == "k8s":
        from tests.fakes.k8s_snap import k8s_cli

        return k8s_cli.main(rest)
    if tool == "kubectl":
        from tests.fakes.k8s_snap import kubectl_cli

        return kubectl_cli.main(rest)
    if tool == "aws":
        from tests.fakes.k8s_snap import aws_cli

        return aws_cli.main(rest)
    if tool == "snap":
        return snap(rest)
    if tool == "cloud-init":
        return cloud_init(rest)
    print(f"fake: unknown tool {tool}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""`ck8s-gpu` console script: one parser, subcommands registered by their own modules."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Each module (beside this one: the package is `components` in a checkout, `ck8s_gpu` installed)
# exposes `register(subparsers)` that adds its parser with `set_defaults(func=...)`.
SUBCOMMANDS = (
    "plan",
    "smoke",
    "stamp",
    "preflight",
    "rebuild_plan",
    "upgrade",
    "forget_cluster",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse's default exit code 2 is kept; only the wording is made explicit.
        self.print_usage(sys.stderr)
        self.exit(2, f"ck8s-gpu: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ck8s-gpu", description="GPU Kubernetes on Canonical Kubernetes")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in SUBCOMMANDS:
        name = f"{__package__}.{module}"
        try:
            importlib.import_module(name).register(sub)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # a real import error inside the module must surface
                raise
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except KeyboardInterrupt:
        print("ck8s-gpu: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())

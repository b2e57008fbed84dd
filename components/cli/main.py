"""`ck8s-gpu` console script: one parser, subcommands registered by their own modules."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Sequence

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, PartialCredentialsError

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
    "report",
    "conformance",
)


# Exit codes of every subcommand (also in `ck8s-gpu --help`): the subcommands return 0 and 1
# themselves; bad arguments and settings are 2 (argparse's own code, and the settings' one message).
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
EXIT_CLOSED_OUTPUT = 141  # 128 + SIGPIPE, as a shell reports `cmd | head` for a C program
EXIT_CODES = f"""exit codes:
  {EXIT_OK}    done, every check passed
  {EXIT_FAILED}    a check failed, or a system it talks to (AWS, the cluster, the file system) refused
  {EXIT_BAD_INPUT}    bad arguments, stack file or settings (every bad field named)
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C)
  {EXIT_CLOSED_OUTPUT}  standard output closed by its reader (e.g. `| head`)
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse's default exit code 2 is kept; only the wording is made explicit.
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"ck8s-gpu: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="ck8s-gpu", description="GPU Kubernetes on Canonical Kubernetes", epilog=EXIT_CODES,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for module in SUBCOMMANDS:
        name = f"{__package__}.{module}"
        try:
            importlib.import_module(name).register(sub)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # a real import error inside the module must surface
                raise
    return parser


def _aws_message(exc: BotoCoreError | ClientError) -> str:
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return (f"AWS: {exc}: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run where an "
                "instance role or SSO session provides them")
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        return f"AWS refused {exc.operation_name}: {err.get('Code', '?')}: {err.get('Message', exc)}"
    return f"AWS: {exc}"


def _os_message(exc: OSError) -> str:
    """`<path>: <reason>` for a file the command read or wrote, else the reason."""
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


def _close_stdout() -> None:
    # The reader is gone: point stdout at /dev/null so the interpreter's final flush does not fail
    # again (Python docs, "Note on SIGPIPE").
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def main(argv: Sequence[str] | None = None) -> int:
    """Every failure the environment causes ends in one line on stderr and an exit code of
    EXIT_CODES, never a traceback; a bug in the program still shows its traceback."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the boundary, not at exit
    except KeyboardInterrupt:
        print("ck8s-gpu: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _close_stdout()
        return EXIT_CLOSED_OUTPUT
    except (BotoCoreError, ClientError) as exc:
        print(f"ck8s-gpu {args.command}: {_aws_message(exc)}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:
        print(f"ck8s-gpu {args.command}: {_os_message(exc)}", file=sys.stderr)
        return EXIT_FAILED
    return code


if __name__ == "__main__":
    sys.exit(main())

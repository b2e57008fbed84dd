"""`ck8s-gpu` console script: one parser, subcommands registered by their own modules."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from botocore.exceptions import BotoCoreError, ClientError

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
  {EXIT_FAILED}    a check failed, or a system it talks to (AWS, the cluster, the file system) refused,
       or a program it runs (the Pulumi CLI) is not installed
  {EXIT_BAD_INPUT}    bad arguments, stack file or settings (every bad field named), an output path
       that cannot be written among them (refused before any work)
  {EXIT_INTERRUPTED}  interrupted (Ctrl-C): what it wrote is whole or absent, never half a file
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
    from botocore.exceptions import ClientError, NoCredentialsError, PartialCredentialsError

    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return (f"AWS: {exc}: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run where an "
                "instance role or SSO session provides them")
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        return f"AWS refused {exc.operation_name}: {err.get('Code', '?')}: {err.get('Message', exc)}"
    return f"AWS: {exc}"


def _environment_message(exc: Exception) -> str | None:
    """The one line for a failure the environment caused (AWS, the file system), None for a bug.
    botocore is imported only by the commands that talk to AWS: its errors exist only once it is."""
    if "botocore.exceptions" in sys.modules:
        from botocore.exceptions import BotoCoreError, ClientError

        if isinstance(exc, BotoCoreError | ClientError):  # first: some are OSErrors too (SSLError)
            return _aws_message(exc)
    if isinstance(exc, OSError):
        return _os_message(exc)
    return None


def _os_message(exc: OSError) -> str:
    """`<path>: <reason>` for a file the command read or wrote, else the reason; a program it runs
    (the Pulumi CLI for forget-cluster, upgrade, stamp) that is not installed is said so."""
    where = f"{exc.filename}: " if exc.filename else ""
    if isinstance(exc, FileNotFoundError) and _raised_by_subprocess(exc):
        return f"{where}command not found (install it or put it on PATH)"
    return f"{where}{exc.strerror or exc}"


def _raised_by_subprocess(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename == subprocess.__file__


def _close_stdout() -> None:
    # The reader is gone: point stdout at /dev/null so the interpreter's final flush does not fail
    # again (Python docs, "Note on SIGPIPE").
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


class _Interrupts:
    """Ctrl-C as main() sees it while a command runs.

    Python's handler raises KeyboardInterrupt in whatever code runs; some of that code does not let
    it through. This one notes that a Ctrl-C came (so an error a library raised while it caught the
    interrupt, or on the state the interrupt left half-built, reads as the interruption it is), and
    gives back one that CPython swallowed: in a weakref callback or a __del__ (asyncio's task WeakSet
    runs one each time a task is freed) it cannot propagate, so CPython printed "Exception ignored in
    ..." with a traceback and carried on as if no Ctrl-C came; the signal is sent again instead, and
    the handler raises it in the code that runs next."""

    def __init__(self, program: bool) -> None:
        self.came = False
        self._program = program
        self._hook = sys.unraisablehook
        self._handler: Any = None

    def __enter__(self) -> _Interrupts:
        sys.unraisablehook = self._unraisable
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._handler = signal.signal(signal.SIGINT, self._on_sigint)
        return self

    def __exit__(self, *_exc: object) -> None:
        sys.unraisablehook = self._hook
        if self._program:
            _ignore_interrupts()
        elif self._handler is not None:
            with contextlib.suppress(KeyboardInterrupt):  # signal.signal() runs a pending handler first
                signal.signal(signal.SIGINT, self._handler)

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        self.came = True
        signal.default_int_handler(signum, frame)

    def _unraisable(self, args: Any) -> None:
        if isinstance(args.exc_value, KeyboardInterrupt) and callable(signal.getsignal(signal.SIGINT)):
            os.kill(os.getpid(), signal.SIGINT)
            return
        self._hook(args)

    def explain(self, exc: BaseException) -> bool:
        """Whether `exc` came of a Ctrl-C: one came while the command ran, or it was being handled."""
        seen: set[int] = set()
        cause: BaseException | None = exc
        while cause is not None and id(cause) not in seen:
            if isinstance(cause, KeyboardInterrupt):
                return True
            seen.add(id(cause))
            cause = cause.__cause__ or cause.__context__
        return self.came


def _interrupted() -> int:
    print("ck8s-gpu: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def main(argv: Sequence[str] | None = None) -> int:
    """Every failure the environment causes ends in one line on stderr and an exit code of
    EXIT_CODES, never a traceback; a bug in the program still shows its traceback.

    Building the parser imports every subcommand (a second, pydantic's models): a Ctrl-C then is an
    interruption like any other, so it is inside the boundary. Called as the program (`argv` None:
    the console script, `python -m`), an interrupted run ends at once (_exit_now), and Ctrl-C is
    ignored once the command has ended, while the interpreter exits (_ignore_interrupts)."""
    command = "?"
    with _Interrupts(program=argv is None) as interrupts:
        try:
            args = build_parser().parse_args(argv)
            command = args.command
            code: int = args.func(args)
            sys.stdout.flush()  # a closed pipe shows here, inside the boundary, not at exit
        except KeyboardInterrupt:
            code = _interrupted()
        except BrokenPipeError:
            _close_stdout()
            code = EXIT_CLOSED_OUTPUT
        except SystemExit:  # argparse's --help and usage errors: their text is flushed inside the boundary too
            try:
                sys.stdout.flush()
            except BrokenPipeError:  # else "Exception ignored" at exit, and status 120
                _close_stdout()
                code = EXIT_CLOSED_OUTPUT
            else:
                raise
        except Exception as exc:
            message = _environment_message(exc)
            if interrupts.explain(exc):  # a library caught the Ctrl-C, or tripped on what it left half-done
                code = _interrupted()
            elif message is None:
                raise
            else:
                print(f"ck8s-gpu {command}: {message}", file=sys.stderr)
                code = EXIT_FAILED
    if argv is None and code == EXIT_INTERRUPTED:
        _exit_now(code)
    return code


def _exit_now(code: int) -> NoReturn:
    """End an interrupted program run without the interpreter's teardown. What the command was
    doing is abandoned mid-way (the mock engine's pending tasks and its event loop, RPC threads):
    torn down at exit, each pending task was reported ("Task was destroyed but it is pending!") and
    the loop's finalizer could trip over its already closed self-pipe ("Exception ignored in
    BaseEventLoop.__del__"). Files are whole or absent already (runtime/atomic.py); what the
    command printed is flushed here."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _ignore_interrupts() -> None:
    """For the rest of a program run, whose command has ended: Ctrl-C changes nothing any more
    (a hang at exit still ends with SIGTERM or SIGQUIT).

    Two things in CPython 3.11 would otherwise turn an exit code into death by SIGINT (-2, no
    message): its finalization restores SIGINT's default action (signal module, _PySignal_Fini); and
    a KeyboardInterrupt that ended an exec() or eval() of source text (dataclasses, typing and
    pydantic build code so while modules load) is noted as unhandled even when caught, and
    Py_RunMain then re-raises SIGINT at exit (Python/pythonrun.c run_eval_code_obj sets
    _Py_UnhandledKeyboardInterrupt; each such exec() starts by clearing it: `exec("")` does only
    that). A KeyboardInterrupt that escapes main() is still noted, by the interpreter's own caller."""
    for _ in range(2):
        try:  # signal.signal() first runs the handler of a Ctrl-C still pending: it is taken here
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            break
        except KeyboardInterrupt:
            continue
    exec("")


if __name__ == "__main__":
    sys.exit(main())

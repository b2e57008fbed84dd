"""Run preview/up for every stamped region with bounded parallelism (the decision logic, no I/O
of its own: the backend, the pre-flight and the output sink are injected)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from .backend import OpResult, StackBackend
from .derive import StampedStack
from .summary import Mode, RegionResult, smoke_verdict

# (stamped stack) -> list of failure messages; empty = go.
Preflight = Callable[[StampedStack], list[str]]
Emit = Callable[[str], None]


class _Printer:
    """Serialises lines from concurrent regions and prefixes each with its stack."""

    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._lock = threading.Lock()

    def line(self, stack: str, text: str) -> None:
        with self._lock:
            for part in text.rstrip("\n").splitlines() or [""]:
                self._emit(f"[{stack}] {part}")


def _one(
    stamped: StampedStack,
    mode: Mode,
    backend: StackBackend,
    new_stack: bool,
    file_action: str,
    preflight_failures: list[str] | None,
    printer: _Printer,
    clock: Callable[[], float],
) -> RegionResult:
    start = clock()

    def result(op: OpResult, smoke: str = "-", ok: bool | None = None) -> RegionResult:
        return RegionResult(
            region=stamped.region, stack=stamped.stack, mode=mode, new_stack=new_stack, file_action=file_action,
            ok=op.ok if ok is None else ok, seconds=clock() - start, changes=op.changes, smoke=smoke, error=op.error,
        )

    if preflight_failures:
        return result(OpResult(ok=False, error="pre-flight failed:\n" + "\n".join(preflight_failures)))
    printer.line(stamped.stack, f"{mode} started ({'new stack' if new_stack else 'existing stack'})")
    try:
        if mode == "up":
            op = backend.up(stamped.stack, lambda text: printer.line(stamped.stack, text))
        else:
            op = backend.preview(stamped.stack, lambda text: printer.line(stamped.stack, text))
    except Exception as exc:  # one region's crash never stops or hides the others
        op = OpResult(ok=False, error=f"{type(exc).__name__}: {exc}")
    if mode != "up" or not op.ok:
        printer.line(stamped.stack, f"{mode} {'done' if op.ok else 'FAILED'}")
        return result(op)
    text, passed = smoke_verdict(op.outputs.get("smokeReport"))
    smoke_failed = passed is False and stamped.settings.smoke_test.enabled
    printer.line(stamped.stack, f"up {'done' if not smoke_failed else 'done, smoke test FAILED'}: smoke test {text}")
    if smoke_failed:
        return result(OpResult(ok=False, changes=op.changes, error=f"smoke test {text} (stack output smokeReport)"),
                      smoke=text)
    return result(op, smoke=text)


def run_regions(
    stamped: list[StampedStack],
    mode: Mode,
    backend: StackBackend,
    *,
    parallel: int,
    file_actions: dict[str, str],
    preflight: Preflight | None = None,
    emit: Emit = print,
    clock: Callable[[], float] = time.monotonic,
) -> list[RegionResult]:
    """Pre-flight every region first (before any `up` starts), then preview/up at most `parallel`
    at a time. Results are in the order of `stamped`; a failed region never stops the others."""
    if parallel < 1:
        raise ValueError("parallel must be >= 1")
    existing = backend.existing_stacks()
    printer = _Printer(emit)
    failures: dict[str, list[str]] = {}
    if preflight is not None:
        for s in stamped:
            failures[s.stack] = preflight(s)
            verdict = "ok" if not failures[s.stack] else f"{len(failures[s.stack])} problem(s)"
            printer.line(s.stack, f"pre-flight {verdict}")
            for message in failures[s.stack]:
                printer.line(s.stack, f"  {message}")
    with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="stamp") as pool:
        futures = [
            pool.submit(_one, s, mode, backend, s.stack not in existing, file_actions.get(s.stack, "-"),
                        failures.get(s.stack), printer, clock)
            for s in stamped
        ]
        return [f.result() for f in futures]

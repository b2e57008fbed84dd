"""`stamp --offline`: the offline plan of every stamped region, each in a fresh process.

The mock engine keeps per-process state (ADR 0002), so regions are planned in a spawn-context
process pool, one task per child; no Pulumi CLI, no credentials, no network.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
import time
from concurrent.futures import InvalidStateError, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .derive import StampedStack
from .summary import RegionResult


@dataclass(frozen=True)
class _Job:
    stack: str
    region: str
    config: dict[str, Any]
    out: str | None


def _plan(job: _Job) -> tuple[bool, int, dict[str, int], str]:
    """Runs in the child: (ok, resource count, counts per type, error)."""
    from ..plan import artifacts
    from ..plan.run import plan_config
    from ..settings.load import SettingsError

    try:
        plan = plan_config(job.config, job.stack, f"stamp {job.stack}")
    except SettingsError as exc:
        return False, 0, {}, exc.message
    except Exception as exc:  # the program itself failed: report it for this region only
        return False, 0, {}, f"{type(exc).__name__}: {exc}"
    if job.out is not None:
        artifacts.write(plan, Path(job.out) / job.stack)
    return True, len(plan.resources), dict(artifacts.resources_document(plan)["counts"]), ""


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent, which stops them all (a worker that took it would die
    mid-task and leave the pool waiting for a result that never comes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _without_cancel_race(hook: Any) -> Any:
    """CPython 3.11's executor manager thread marks the futures of a pool whose workers died as
    broken, and raises InvalidStateError for those already cancelled (concurrent/futures/process.py
    terminate_broken): a race of our own shutdown, printed as a traceback in a thread. Drop it only."""
    def excepthook(args: Any) -> None:
        if not isinstance(args.exc_value, InvalidStateError):
            hook(args)

    return excepthook


def plan_regions(
    stamped: list[StampedStack],
    *,
    parallel: int,
    file_actions: dict[str, str],
    out: Path | None = None,
) -> list[RegionResult]:
    jobs = [_Job(s.stack, s.region, s.config, str(out) if out else None) for s in stamped]
    start = time.monotonic()
    context = multiprocessing.get_context("spawn")
    # ProcessPoolExecutor, not multiprocessing.Pool: a worker that dies (OOM, a crash) fails the
    # batch with BrokenProcessPool instead of leaving map() waiting for ever.
    pool = ProcessPoolExecutor(max_workers=parallel, mp_context=context, max_tasks_per_child=1,
                               initializer=_ignore_sigint)
    # A terminal's Ctrl-C reaches the whole process group. The initializer runs only once a worker
    # has started, and one caught earlier, still importing, died printing a traceback. So SIGINT is
    # blocked while the workers and the executor's manager thread (which spawns the replacements
    # max_tasks_per_child asks for) come into being: both inherit the mask, a spawned worker keeps
    # it across exec, and only this thread unblocks it again, to take Ctrl-C for all of them.
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            futures = [pool.submit(_plan, job) for job in jobs]
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a Ctrl-C held meanwhile lands here
        outcomes = [f.result() for f in futures]
    except BrokenProcessPool as exc:  # a worker was killed: every region of the batch is reported failed
        why = f"a planning worker died ({exc}); out of memory? re-run with --parallel 1"
        outcomes = [(False, 0, {}, why) for _ in jobs]
    except BaseException:  # Ctrl-C (or anything else): stop every worker now, then let it propagate
        threading.excepthook = _without_cancel_race(threading.excepthook)
        for worker in multiprocessing.active_children():
            worker.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        # At interpreter exit CPython 3.11's concurrent/futures/process.py _python_exit writes to each
        # executor's wakeup pipe, unlocked ("call not protected by ProcessPoolExecutor._shutdown_lock"),
        # while the executor's manager thread may be closing that pipe (join_executor_internals):
        # "OSError: [Errno 9] Bad file descriptor" printed after "interrupted" (seen in a clean-clone CI
        # run). Once the manager thread has ended, the pipe is closed and marked so, and the exit hook
        # skips it. With the workers terminated it ends at once; the bound only keeps Ctrl-C prompt.
        manager = getattr(pool, "_executor_manager_thread", None)
        if manager is not None:
            manager.join(timeout=20)
        raise
    pool.shutdown()
    elapsed = time.monotonic() - start
    return [
        RegionResult(
            region=s.region, stack=s.stack, mode="offline", new_stack=False,
            file_action=file_actions.get(s.stack, "-"), ok=ok,
            # Wall time of the whole batch: plans overlap, per-plan time would mislead.
            seconds=elapsed, changes={"create": count} if ok else {}, error=error,
        )
        for s, (ok, count, _types, error) in zip(stamped, outcomes, strict=True)
    ]

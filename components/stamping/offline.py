"""`stamp --offline`: the offline plan of every stamped region, in warm worker processes.

The SDK keeps global state (ADR 0002): one plan per process at a time. Regions are planned in a
spawn-context pool of `--parallel` long-lived workers. Each worker imports the planning modules
once (its initializer) and then plans region after region: every run starts from fresh SDK runtime
state (components/plan/mockengine.py run_program: a new event loop, root stack, mocks, config, RPC
and output registries). tests/unit/stamping/test_offline_workers.py holds every region's plan from
a reused worker equal, file for file, to its plan in a fresh process. A fresh interpreter per
region cost about 2.5 s of imports each (docs/benchmarks.md). No Pulumi CLI, no credentials, no
network.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import InvalidStateError, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from .derive import StampedStack
from .summary import RegionResult


@dataclass(frozen=True)
class _Job:
    stack: str
    region: str
    config: dict[str, Any]
    out: str | None


class _Outcome(NamedTuple):
    ok: bool
    resources: int  # how many the program registered
    counts: dict[str, int]  # per type
    error: str
    pid: int  # the worker that planned it


def _plan(job: _Job) -> _Outcome:
    """Runs in a worker, one region after another."""
    from ..plan.run import close_run_loop

    try:
        return _plan_region(job)
    finally:
        # plan_config closes a finished run's loop and its RPC threads' loops; a run that failed
        # leaves its loop current, and a worker planning region after region must not keep it open
        # (21 descriptors a plan before those closes: tests/unit/stamping/test_offline_workers.py).
        close_run_loop()


def _plan_region(job: _Job) -> _Outcome:
    from ..plan import artifacts
    from ..plan.run import plan_config
    from ..settings.load import SettingsError

    pid = os.getpid()
    try:
        plan = plan_config(job.config, job.stack, f"stamp {job.stack}")
    except SettingsError as exc:
        return _Outcome(False, 0, {}, exc.message, pid)
    except Exception as exc:  # the program itself failed: report it for this region only
        return _Outcome(False, 0, {}, f"{type(exc).__name__}: {exc}", pid)
    if job.out is not None:
        try:
            artifacts.write(plan, Path(job.out) / job.stack)
        except OSError as exc:  # each file is written whole (runtime/atomic.py); the region fails
            where = f"{exc.filename}: " if exc.filename else ""
            return _Outcome(False, 0, {}, f"plan not written: {where}{exc.strerror or exc}", pid)
    return _Outcome(True, len(plan.resources), dict(artifacts.resources_document(plan)["counts"]), "", pid)


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent, which stops them all (a worker that took it would die
    mid-task and leave the pool waiting for a result that never comes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _start_worker() -> None:
    """A worker's initializer: Ctrl-C left to the parent, then the modules every plan needs imported
    once for all the regions this worker plans. The provider modules the program reaches lazily
    (pulumi_aws's submodules) are imported by the worker's first plan, also once."""
    _ignore_sigint()
    from .. import validate, wiring  # noqa: F401  (the program's own imports: __main__.py)
    from ..aws import cluster  # noqa: F401  (stamped stacks are AWS clusters)
    from ..plan import artifacts, run  # noqa: F401
    from ..runtime import plain_errors  # noqa: F401
    from ..runtime.checkout_alias import alias_checkout_name

    alias_checkout_name()  # `components.*` in __main__.py: these same modules (ADR 0044)


def _without_cancel_race(hook: Any) -> Any:
    """CPython 3.11's executor manager thread marks the futures of a pool whose workers died as
    broken, and raises InvalidStateError for those already cancelled (concurrent/futures/process.py
    terminate_broken): a race of our own shutdown, printed as a traceback in a thread. Drop it only."""
    def excepthook(args: Any) -> None:
        if not isinstance(args.exc_value, InvalidStateError):
            hook(args)

    return excepthook


def _run_jobs(jobs: list[_Job], parallel: int) -> list[_Outcome]:
    context = multiprocessing.get_context("spawn")
    # ProcessPoolExecutor, not multiprocessing.Pool: a worker that dies (OOM, a crash) fails the
    # batch with BrokenProcessPool instead of leaving map() waiting for ever. No max_tasks_per_child:
    # a worker plans region after region, so the pool never spawns a replacement once it is full.
    pool = ProcessPoolExecutor(max_workers=min(parallel, len(jobs)) or 1, mp_context=context,
                               initializer=_start_worker)
    # A terminal's Ctrl-C reaches the whole process group. The initializer runs only once a worker
    # has started, and one caught earlier, still importing, died printing a traceback. So SIGINT is
    # blocked while the workers and the executor's manager thread come into being (a spawn pool
    # starts both in submit(), in this thread): both inherit the mask, a spawned worker keeps it
    # across exec, and only this thread unblocks it again, to take Ctrl-C for all of them.
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            futures = [pool.submit(_plan, job) for job in jobs]
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a Ctrl-C held meanwhile lands here
        outcomes = [f.result() for f in futures]
    except BrokenProcessPool as exc:  # a worker was killed: every region of the batch is reported failed
        why = f"a planning worker died ({exc}); out of memory? re-run with --parallel 1"
        outcomes = [_Outcome(False, 0, {}, why, 0) for _ in jobs]
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
    return outcomes


def plan_regions(
    stamped: list[StampedStack],
    *,
    parallel: int,
    file_actions: dict[str, str],
    out: Path | None = None,
) -> list[RegionResult]:
    jobs = [_Job(s.stack, s.region, s.config, str(out) if out else None) for s in stamped]
    start = time.monotonic()
    outcomes = _run_jobs(jobs, parallel)
    elapsed = time.monotonic() - start
    return [
        RegionResult(
            region=s.region, stack=s.stack, mode="offline", new_stack=False,
            file_action=file_actions.get(s.stack, "-"), ok=o.ok,
            # Wall time of the whole batch: plans overlap, per-plan time would mislead.
            seconds=elapsed, changes={"create": o.resources} if o.ok else {}, error=o.error,
        )
        for s, o in zip(stamped, outcomes, strict=True)
    ]

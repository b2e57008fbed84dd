"""A stand-in controller (clusterpolicy.OperatorStandIn, gpucluster.GpuClusterStandIn) run as the
operator's work queue runs it: a generation change reconciled after `delay` seconds (its watch), a
requeue when due (shortened to 50 ms: tests wait on behaviour, not on the operator's periods)."""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any


class Clock:
    """lastTransitionTime values: a new minute each call (RFC 3339)."""

    def __init__(self) -> None:
        self.t = itertools.count()

    def now(self) -> str:
        return f"2026-12-01T21:{next(self.t) % 60:02d}:00Z"


class Reconciler:
    """`on_reconcile(store)` hooks what the real operator's state loop does to its operands."""

    def __init__(self, standin: Any, delay: float = 0.0) -> None:
        self.op, self.store, self.delay = standin, standin.store, delay
        self.on_reconcile: Any = None
        self._stop = threading.Event()
        self._due: float | None = 0.0 if not standin.pending() else None
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        noticed: float | None = None
        while not self._stop.wait(0.01):
            now = time.monotonic()
            if self.op.pending():
                noticed = now if noticed is None else noticed
                if now - noticed < self.delay:
                    continue
                noticed = None
            elif self._due is None or now < self._due:
                continue
            if self.on_reconcile:
                self.on_reconcile(self.store)
            after = self.op.reconcile()
            self._due = None if after is None else now + min(after, 0.05)

    def __enter__(self) -> Reconciler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(2)

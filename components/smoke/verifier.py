"""One check per hop of the DRA allocation path, over plain objects (pure).

The path's hops (components/smoke/checks/path.py), then each case family's checks
(components/smoke/cases), then the DCGM exporter: components/smoke/cases CHECKS is the order.
Every check passes, fails or skips with a reason; a check that found nothing to look at fails
instead of passing vacuously.
"""

from __future__ import annotations

import time

from .cases import CHECKS
from .checks.path import leftover_claims as leftover_claims  # re-exported for the runner
from .expectations import Expectations
from .snapshot import Snapshot as Snapshot  # re-exported: callers build snapshots next to verify()
from .view import FAILED as FAILED
from .view import PASSED as PASSED
from .view import SKIPPED as SKIPPED
from .view import CheckResult as CheckResult
from .view import View

CHECK_NAMES = tuple(c.name for c in CHECKS)
HOPS = tuple(c.hop for c in CHECKS)


def _malformed(exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return "malformed object in the cluster snapshot (" + (text if len(text) <= 200 else text[:200] + "...") + ")"


def verify(exp: Expectations, snap: Snapshot) -> list[CheckResult]:
    """Every check, in hop order. An object of an unexpected shape fails the check that read it
    (named, with what was wrong) instead of crashing the run: the report still shows every hop."""
    try:
        view = View(exp, snap)
    except Exception as exc:  # any shape error in the snapshot is a finding, not a crash
        return [CheckResult(c.name, c.hop, FAILED, _malformed(exc)) for c in CHECKS]
    results = []
    for check in CHECKS:
        t0 = time.perf_counter()
        try:
            result = check.run(view)
        except Exception as exc:  # same: report it on this hop, run the others
            result = CheckResult(check.name, check.hop, FAILED, _malformed(exc))
        result.duration_ms = round((time.perf_counter() - t0) * 1000, 3)
        results.append(result)
    return results

"""Case `gpus` (smokeTest.wholeGpu): `gpus` single-GPU pods holding distinct whole GPUs at once.
Its checks are the path's own (components/smoke/checks/path.py: distinct-gpus and the hops)."""

from __future__ import annotations

from typing import Any

from ...settings.model import Settings
from ..expectations import CaseExpectation
from .base import CaseFamily, NameFn


def expect(s: Settings, name: NameFn) -> tuple[CaseExpectation, ...]:
    t = s.smoke_test
    if not t.whole_gpu:
        return ()
    return (CaseExpectation("gpus", name("gpus"), t.gpus, ("probe",), t.device_class, distinct=True),)


def values(s: Settings) -> dict[str, Any]:
    return {"cases": {"wholeGpu": s.smoke_test.whole_gpu}}


FAMILY = CaseFamily("wholeGpu", expect=expect, values=values)

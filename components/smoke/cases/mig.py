"""Case `mig` (smokeTest.mig / migProfile): one pod holding one MIG device (NVIDIA's demo gpu-test4)."""

from __future__ import annotations

from typing import Any

from ...settings.model import Settings
from ..checks.base import Check
from ..expectations import MIG_DEVICE_CLASS, CaseExpectation
from ..snapshot import name
from ..view import SKIPPED, CheckResult, View, outcome
from .base import CaseFamily, NameFn


def expect(s: Settings, name: NameFn) -> tuple[CaseExpectation, ...]:
    t = s.smoke_test
    if not t.mig:
        return ()
    return (CaseExpectation("mig", name("mig"), 1, ("probe",), MIG_DEVICE_CLASS, distinct=False,
                            profile=t.mig_profile or ""),)


def values(s: Settings) -> dict[str, Any]:
    t = s.smoke_test
    return {"cases": {"mig": {"enabled": bool(t.mig), "deviceClassName": MIG_DEVICE_CLASS,
                              "profile": t.mig_profile or ""}}}


def check_mig(v: View) -> CheckResult:
    case = v.exp.case("mig")
    if case is None:
        return CheckResult("case-mig", "MIG", SKIPPED, "smokeTest.mig is off")
    problems, done = [], []
    pods = v.by_case["mig"]
    if not pods:
        problems.append(f"no pod of Job {case.job} exists")
    for pod in pods:
        allocated = v.allocated(pod)
        if not allocated:
            problems.append(f"pod {name(pod)}'s MIG claim was never allocated: {v.why_pending(pod)}")
        for r, sd in allocated:
            kind, profile = v.attr(sd, "type"), v.attr(sd, "profile")
            if kind != "mig":
                problems.append(f"pod {name(pod)} got {r.get('pool')}/{r.get('device')} of type '{kind}', "
                                "expected a MIG device")
            elif case.profile and profile != case.profile:
                problems.append(f"pod {name(pod)} got {r.get('pool')}/{r.get('device')} of profile '{profile}', "
                                f"smokeTest.migProfile asks for '{case.profile}'")
            else:
                done.append(f"{r.get('pool')}/{r.get('device')} ({profile})")
    return outcome("case-mig", "MIG", problems, "MIG device " + ", ".join(done))




FAMILY = CaseFamily("mig", checks=(Check("case-mig", "MIG", check_mig),), expect=expect, values=values)

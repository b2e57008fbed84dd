"""Case `gang` (smokeTest.gang): `gpus` pods in one KAI PodGroup; all start together or none."""

from __future__ import annotations

from typing import Any

from ...settings.model import Settings
from ..checks.base import Check
from ..expectations import POD_GROUP_ANNOTATION, CaseExpectation
from ..snapshot import annotations_of, name
from ..view import SKIPPED, CheckResult, View, outcome
from .base import CaseFamily, NameFn


def expect(s: Settings, name: NameFn) -> tuple[CaseExpectation, ...]:
    t = s.smoke_test
    if not t.gang:
        return ()
    return (CaseExpectation("gang", name("gang"), t.gpus, ("probe",), t.device_class, distinct=True,
                            pod_group=name("gang")),)


def values(s: Settings) -> dict[str, Any]:
    return {"cases": {"gang": s.smoke_test.gang}}


def check_gang(v: View) -> CheckResult:
    case = v.exp.case("gang")
    if case is None:
        return CheckResult("case-gang", "gang", SKIPPED, "smokeTest.gang is off")
    problems = []
    group = next((g for g in v.snap.pod_groups if name(g) == case.pod_group), None)
    if group is None:
        problems.append(f"PodGroup {case.pod_group} does not exist")
    elif int(group.get("spec", {}).get("minMember", 0)) != case.pods:
        problems.append(f"PodGroup {case.pod_group} has minMember {group['spec'].get('minMember')}, "
                        f"expected {case.pods}")
    pods = v.by_case["gang"]
    for pod in pods:
        if annotations_of(pod).get(POD_GROUP_ANNOTATION) != case.pod_group:
            problems.append(f"pod {name(pod)} is in PodGroup '{annotations_of(pod).get(POD_GROUP_ANNOTATION, '')}', "
                            f"expected {case.pod_group}")
    scheduled = [p for p in pods if p.get("spec", {}).get("nodeName")]
    if len(pods) < case.pods:
        problems.append(f"only {len(pods)} of {case.pods} gang pods exist")
    elif 0 < len(scheduled) < case.pods:
        problems.append(f"gang split: {len(scheduled)} of {case.pods} pods were scheduled")
    elif not scheduled:
        problems.append(f"no gang pod was scheduled: {v.why_pending(pods[0]) if pods else 'no pods'}")
    return outcome("case-gang", "gang", problems,
                    f"PodGroup {case.pod_group} (minMember {case.pods}) bound all {case.pods} pods")




FAMILY = CaseFamily("gang", checks=(Check("case-gang", "gang", check_gang),), expect=expect, values=values)

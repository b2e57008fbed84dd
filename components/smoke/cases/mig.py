"""Case `mig` (smokeTest.mig): MIG devices allocated through DRA (NVIDIA's demo gpu-test4).

With MIG layouts (nodePools[].mig), one pod per profile of each cut pool's layout, on that pool,
asking for that profile: every profile a layout promises is published and allocatable where it
was promised (issue 43). Without one (MIG made outside this program: `existing` clusters under
gpuStack.migStrategy), one pod asking for smokeTest.migProfile, or any MIG device."""

from __future__ import annotations

from typing import Any

from ...facts.mig import pool_mig_devices
from ...facts.nodes import pool_label
from ...settings.facts import provided_pools
from ...settings.model import Settings
from ..checks.base import Check
from ..expectations import MIG_DEVICE_CLASS, CaseExpectation
from ..snapshot import name
from ..view import SKIPPED, CheckResult, View, outcome
from .base import CaseFamily, NameFn

MIG = "mig"  # the devices' `type` (dra-driver-nvidia-gpu mig.go CommonAttributesMig)


def pool_cases(s: Settings) -> list[tuple[str, str, str]]:
    """(case, pool, profile) for each profile of each cut pool's layout, in the pools' order. The
    case name is `mig<pool index>-<profile index>`: a label value and a short part of object names,
    however long the pool's name."""
    out = []
    for i, pool in enumerate(p for p in provided_pools(s) if p.cuts_gpus):
        for j, profile in enumerate(sorted(pool_mig_devices(pool) or {})):
            out.append((f"mig{i}-{j}", pool.name, profile))
    return out


def expect(s: Settings, name: NameFn) -> tuple[CaseExpectation, ...]:
    t = s.smoke_test
    if not t.mig:
        return ()
    per_pool = pool_cases(s)
    if per_pool:
        return tuple(CaseExpectation(case, name(case), 1, ("probe",), MIG_DEVICE_CLASS, distinct=False,
                                     profile=profile, device_type=MIG, params=(("pool", pool),))
                     for case, pool, profile in per_pool)
    return (CaseExpectation("mig", name("mig"), 1, ("probe",), MIG_DEVICE_CLASS, distinct=False,
                            profile=t.mig_profile or "", device_type=MIG),)


def values(s: Settings) -> dict[str, Any]:
    t = s.smoke_test
    pools = [{"case": case, "profile": profile, "nodeSelector": {pool_label(s): pool}}
             for case, pool, profile in pool_cases(s)] if t.mig else []
    return {"cases": {"mig": {"enabled": bool(t.mig), "deviceClassName": MIG_DEVICE_CLASS,
                              "profile": t.mig_profile or "", "pools": pools}}}


def check_mig(v: View) -> CheckResult:
    cases = [c for c in v.exp.cases if c.device_type == MIG]
    if not cases:
        return CheckResult("case-mig", "MIG", SKIPPED, "smokeTest.mig is off")
    problems, done = [], []
    for case in cases:
        where = f" on pool '{pool}'" if (pool := case.param("pool")) else ""
        pods = v.by_case[case.case]
        if not pods:
            problems.append(f"no pod of Job {case.job} exists")
        for pod in pods:
            allocated = v.allocated(pod)
            if not allocated:
                problems.append(f"pod {name(pod)}'s MIG claim{where} for {case.profile or 'any profile'} was never "
                                f"allocated: {v.why_pending(pod)}")
            for r, sd in allocated:
                kind, profile = v.attr(sd, "type"), v.attr(sd, "profile")
                if kind != MIG:
                    problems.append(f"pod {name(pod)} got {r.get('pool')}/{r.get('device')} of type '{kind}', "
                                    "expected a MIG device")
                elif case.profile and profile != case.profile:
                    asked = f"pool '{pool}''s layout" if pool else "smokeTest.migProfile"
                    problems.append(f"pod {name(pod)} got {r.get('pool')}/{r.get('device')} of profile '{profile}', "
                                    f"{asked} asks for '{case.profile}'")
                else:
                    done.append(f"{r.get('pool')}/{r.get('device')} ({profile})")
    return outcome("case-mig", "MIG", problems, "MIG device " + ", ".join(done))


FAMILY = CaseFamily("mig", checks=(Check("case-mig", "MIG", check_mig),), expect=expect, values=values)

"""Cases `shared` (smokeTest.sharedClaim: one pod, two containers, one claim from a template) and
`shared-named` (smokeTest.sharedNamedClaim: two pods naming one ResourceClaim object, NVIDIA's demo
gpu-test3)."""

from __future__ import annotations

from typing import Any

from ...settings.model import Settings
from ..checks.base import Check
from ..expectations import NO_KUBELET, SHARING_STRATEGIES, CaseExpectation
from ..snapshot import Obj, allocation_nodes, allocation_results, name
from ..view import FAILED, SKIPPED, CheckResult, View, describe, observed, outcome
from .base import CaseFamily, NameFn


def expect_shared(s: Settings, name: NameFn) -> tuple[CaseExpectation, ...]:
    t = s.smoke_test
    if not t.shared_claim:
        return ()
    return (CaseExpectation("shared", name("shared"), 1, ("probe-a", "probe-b"), t.device_class, distinct=False,
                            sharing=SHARING_STRATEGIES.get(t.sharing, "")),)


def expect_named(s: Settings, name: NameFn) -> tuple[CaseExpectation, ...]:
    t = s.smoke_test
    if not t.shared_named_claim:
        return ()
    # The chart names the claim like the case's Job (templates/resourceclaim-shared-named.yaml).
    return (CaseExpectation("shared-named", name("shared-named"), 2, ("probe",), t.device_class, distinct=False,
                            claim=name("shared-named"), sharing=SHARING_STRATEGIES.get(t.sharing, "")),)


def values_shared(s: Settings) -> dict[str, Any]:
    return {"cases": {"sharedClaim": s.smoke_test.shared_claim}}


def values_named(s: Settings) -> dict[str, Any]:
    return {"cases": {"sharedNamedClaim": s.smoke_test.shared_named_claim}}


def check_shared(v: View) -> CheckResult:
    case = v.exp.case("shared")
    if case is None:
        return CheckResult("case-shared-claim", "shared claim", SKIPPED, "smokeTest.sharedClaim is off")
    pods = v.by_case["shared"]
    if not pods:
        return CheckResult("case-shared-claim", "shared claim", FAILED, f"no pod of Job {case.job} exists")
    problems = []
    pod = pods[0]
    p = name(pod)
    for c in pod.get("spec", {}).get("containers") or []:
        refs = [r.get("name") for r in (c.get("resources") or {}).get("claims") or []]
        if refs != ["gpu"]:
            problems.append(f"container {p}/{c.get('name')} references claims {refs}, expected the shared 'gpu'")
    allocated = v.allocated(pod)
    if len(allocated) != 1:
        problems.append(f"pod {p}'s shared claim holds {len(allocated)} device(s), expected 1")
    if v.exp.in_container and not problems:
        seen = {c: observed(v.parsed_log(v.snap.logs.get(f"{p}/{c}", "")), v.exp.probe_expect)
                for c in case.containers}
        if len({frozenset(s) for s in seen.values()}) != 1 or not next(iter(seen.values())):
            shown = "; ".join(f"{c}: {', '.join(sorted(s)) or 'nothing'}" for c, s in seen.items())
            problems.append(f"containers of pod {p} did not see the same device ({shown})")
    where = describe(allocated, v)
    inside = "both containers saw it" if v.exp.in_container else f"containers not checked: {NO_KUBELET}"
    return outcome("case-shared-claim", "shared claim", problems, f"one claim on {where}; {inside}")


def _reserved_sets(v: View, claim_name: str) -> list[set[str]]:
    """The pods each allocated version of a claim was reserved for."""
    return [{str(r.get("name")) for r in (c.get("status", {}).get("reservedFor") or []) if r.get("resource", "pods")
             == "pods"} for c in v.versions.get(claim_name, [])]


def _allocations(v: View, claim_name: str) -> list[frozenset[tuple[str, str, str]]]:
    """Each time the claim was allocated, in order: per the watched history (an allocation dropped and
    made again counts twice), else the distinct allocations of its recorded versions."""
    def devices(obj: Obj) -> frozenset[tuple[str, str, str]]:
        return frozenset((str(r.get("driver", "")), str(r.get("pool", "")), str(r.get("device", "")))
                         for r in allocation_results(obj))

    out: list[frozenset[tuple[str, str, str]]] = []
    history = [e for e in v.snap.claim_history if name(e.get("object") or {}) == claim_name]
    if history:
        current: frozenset[tuple[str, str, str]] = frozenset()
        for entry in history:
            now = frozenset() if entry.get("type") == "DELETED" else devices(entry.get("object") or {})
            if now and now != current:
                out.append(now)
            current = now
        return out
    return list(dict.fromkeys(d for c in v.versions.get(claim_name, []) if (d := devices(c))))


def check_shared_named(v: View) -> CheckResult:
    """NVIDIA's gpu-test3: two pods name one ResourceClaim object. It is allocated once, reserved for
    both pods at the same time, both run on its node and (with a kubelet) both see the same GPU."""
    check, hop = "case-named-claim", "named claim"
    case = v.exp.case("shared-named")
    if case is None:
        return CheckResult(check, hop, SKIPPED, "smokeTest.sharedNamedClaim is off")
    pods = v.by_case[case.case]
    if not pods:
        return CheckResult(check, hop, FAILED, f"no pod of Job {case.job} exists")
    problems = []
    if len(pods) < case.pods:
        problems.append(f"only {len(pods)} of {case.pods} pods of Job {case.job} exist")
    for pod in pods:
        refs = [r for r in pod.get("spec", {}).get("resourceClaims") or [] if r.get("name") == "gpu"]
        named = refs[0].get("resourceClaimName") if refs else None
        if named != case.claim:
            how = f"claim '{named}'" if named else "a claim template or nothing"
            problems.append(f"pod {name(pod)} names {how}, expected the ResourceClaim {case.claim}")
    claim = v.claims.get(case.claim)
    if claim is None or not allocation_results(claim):
        problems.append(f"ResourceClaim {case.claim} was never seen (was it created?)" if claim is None
                        else f"claim {case.claim} was never allocated: {v.why_pending(pods[0])}")
        return outcome(check, hop, problems, "")
    results = allocation_results(claim)
    where = describe(v.allocated(pods[0]), v)
    if len(results) != 1:
        problems.append(f"claim {case.claim} holds {len(results)} devices ({where}), expected 1")
    together = {name(p) for p in pods}
    if v.exp.in_container:
        # The barrier keeps both pods running, so one allocation must have served both.
        allocations = _allocations(v, case.claim)
        if len(allocations) > 1:
            shown = "; ".join(", ".join(f"{d[1]}/{d[2]}" for d in sorted(a)) for a in allocations)
            problems.append(f"claim {case.claim} was allocated {len(allocations)} times ({shown}): its pods did not "
                            "share one allocation")
        if not any(together <= r for r in _reserved_sets(v, case.claim)):
            held = "; ".join(", ".join(sorted(r)) or "nobody" for r in _reserved_sets(v, case.claim)) or "no version"
            problems.append(f"claim {case.claim} was never reserved for both pods at once (reservedFor: {held})")
    nodes = allocation_nodes(claim) or {sd.node for _r, sd in v.allocated(pods[0]) if sd and sd.node}
    for pod in pods:
        node = pod.get("spec", {}).get("nodeName")
        if not node:
            problems.append(f"pod {name(pod)} was never scheduled: {v.why_pending(pod)}")
        elif nodes and node not in nodes:
            problems.append(f"pod {name(pod)} ran on node {node}, but claim {case.claim} is on "
                            f"{', '.join(sorted(nodes))}")
    if v.exp.in_container and not problems:
        seen = {name(p): observed(v.parsed_log(v.snap.logs.get(f"{name(p)}/{case.containers[0]}", "")),
                                   v.exp.probe_expect) for p in pods}
        if len({frozenset(s) for s in seen.values()}) != 1 or not next(iter(seen.values())):
            shown = "; ".join(f"{p}: {', '.join(sorted(s)) or 'nothing'}" for p, s in seen.items())
            problems.append(f"the pods naming claim {case.claim} did not see the same device ({shown})")
    inside = "both pods saw it" if v.exp.in_container else f"pods' view not checked: {NO_KUBELET}"
    once = "allocated once, reserved for both pods at once" if v.exp.in_container else "reserved for each pod"
    return outcome(check, hop, problems, f"claim {case.claim} on {where}: {once}, both on its node; {inside}")




SHARED = CaseFamily("sharedClaim", checks=(Check("case-shared-claim", "shared claim", check_shared),),
                    expect=expect_shared, values=values_shared)
NAMED = CaseFamily("sharedNamedClaim", checks=(Check("case-named-claim", "named claim", check_shared_named),),
                   expect=expect_named, values=values_named)

"""Cases `first-available-preferred` / `first-available-fallback` (smokeTest.firstAvailable,
Kubernetes DRAPrioritizedList): one claim template whose request `gpu` lists two subrequests,
`preferred` (the preferred pool's GPU model, by productName) then `fallback` (any GPU of the class);
one pod pinned to each pool. Mirrors the "Prioritized list" example of Kubernetes' DRA concepts page
(https://kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/#prioritized-list).

Upstream facts (k8s.io/api v0.34.4 resource/v1 types.go DeviceRequest.FirstAvailable, DeviceSubRequest;
v1beta2 the same on 1.33): the scheduler tries the subrequests in order and records the one it took
as `<request>/<subrequest>` in the allocation result (k8s.io/dynamic-resource-allocation v0.34.4
structured/internal/stable/allocator_stable.go internalDeviceResult.requestName).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...facts.nodes import pool_label
from ...settings.facts import pool_gpus, provided_pools
from ...settings.model import NodePoolSettings, Settings
from ...settings.problems import ROOT, Problem
from ...tables.labels import POOL_LABELS
from ..checks.base import Check
from ..expectations import CaseExpectation
from ..snapshot import attribute, labels, name
from ..view import SKIPPED, CheckResult, View, outcome
from .base import CaseFamily, NameFn

PREFERRED, FALLBACK = "preferred", "fallback"  # the subrequests, in the order the scheduler tries them
REQUEST = "gpu"
CASES = {PREFERRED: "first-available-preferred", FALLBACK: "first-available-fallback"}
CHECK, HOP = "case-first-available", "prioritized list"
TEMPLATE_PART = "first-available"


def _pools(s: Settings) -> dict[str, NodePoolSettings | None]:
    f = s.smoke_test.first_available
    by_name = {p.name: p for p in provided_pools(s)}
    return {PREFERRED: by_name.get(f.preferred_pool or ""), FALLBACK: by_name.get(f.fallback_pool or "")}


def _product(pool: NodePoolSettings | None) -> str:
    facts = pool_gpus(pool) if pool is not None else None
    return facts.product_name if facts is not None else ""


def expect(s: Settings, name: NameFn) -> tuple[CaseExpectation, ...]:
    pools = _pools(s)
    preferred = _product(pools[PREFERRED])
    if not s.smoke_test.first_available.enabled or not preferred or any(p is None for p in pools.values()):
        return ()
    out = []
    for sub, case in CASES.items():
        pool = pools[sub]
        assert pool is not None
        params = (("subrequest", sub), ("pool", pool.name), ("preferredProductName", preferred))
        out.append(CaseExpectation(case, name(case), 1, ("probe",), s.smoke_test.device_class, distinct=True,
                                   params=params))
    return tuple(out)


def values(s: Settings) -> dict[str, Any]:
    """charts/gpu-smoke-test `firstAvailable` (templates/job-first-available.yaml)."""
    pools = _pools(s)
    preferred = _product(pools[PREFERRED])
    if not s.smoke_test.first_available.enabled or not preferred or any(p is None for p in pools.values()):
        return {"firstAvailable": {"enabled": False}}  # what is missing is the rules' refusal
    label = pool_label(s)
    return {"firstAvailable": {
        "enabled": True,
        "preferredProductName": preferred,
        "nodeSelectors": {sub: {label: p.name} for sub, p in pools.items() if p is not None},
    }}


# --- settings rules ------------------------------------------------------------------------------


def problems(s: Settings) -> Iterator[Problem]:
    """Both pools named, provided here, of different GPU models. The track's DRAPrioritizedList is
    the feature-gate table's rule (components/facts/feature_gate_rules.py); allocation dra is smokeTest's."""
    f = s.smoke_test.first_available
    path = f"{ROOT}.smokeTest.firstAvailable"
    if not f.enabled:
        return
    pools = _pools(s)
    names = ", ".join(p.name for p in provided_pools(s))
    for sub, key, wanted in ((PREFERRED, "preferredPool", f.preferred_pool), (FALLBACK, "fallbackPool",
                                                                              f.fallback_pool)):
        if wanted is None:
            yield f"{path}.{key}", "required: the case pins one pod to each of two pools"
        elif pools[sub] is None:
            yield f"{path}.{key}", f"'{wanted}' is not a node pool this platform provides ({names})"
        elif not _product(pools[sub]):
            yield f"{path}.{key}", f"pool '{wanted}' has no known GPU model (instance table or nodePools[].gpu)"
        elif s.platform == "local" and s.local.kubelet_pools and wanted not in s.local.kubelet_pools:
            # The run's containers are judged (a kubelet runs them): a pod on a KWOK node leaves no log.
            yield (f"{path}.{key}", f"pool '{wanted}' is no kubelet pool (local.kubeletPools: "
                                    f"{', '.join(s.local.kubelet_pools)}): KWOK nodes run no container")
    preferred, fallback = pools[PREFERRED], pools[FALLBACK]
    if preferred is None or fallback is None or not _product(preferred) or not _product(fallback):
        return
    if preferred.name == fallback.name:
        yield f"{path}.fallbackPool", f"is the preferred pool '{preferred.name}': the case needs two pools"
    elif _product(preferred) == _product(fallback):
        yield (f"{path}.fallbackPool", f"pool '{fallback.name}' has the preferred model too ({_product(preferred)}): "
                                       "its pod would take the preferred subrequest, so the fallback is never shown")


# --- the check -----------------------------------------------------------------------------------


def _pool_of(v: View, node: str) -> tuple[str, str]:
    """(pool name, its GPU model per the instance facts) of a node, by its pool label."""
    known = {p.name: p.product_name for p in v.exp.pools or ()}
    lb = labels(v.nodes.get(node, {}))
    pool = next((lb[k] for k in POOL_LABELS if lb.get(k) in known), "")
    return pool, known.get(pool, "")


def _published(v: View, node: str) -> str:
    """The productName values the node's GPUs publish."""
    found = sorted({str(attribute(sd.device, "productName", v.exp.driver)) for sd in v.slices.values()
                    if sd.node == node and attribute(sd.device, "productName", v.exp.driver) is not None})
    return ", ".join(found) or "no productName"


def check_first_available(v: View) -> CheckResult:
    cases = [c for sub in CASES.values() if (c := v.exp.case(sub)) is not None]
    if not cases:
        return CheckResult(CHECK, HOP, SKIPPED, "smokeTest.firstAvailable is off")
    problems: list[str] = []
    done: list[str] = []
    for case in cases:
        sub, want = case.param("subrequest"), case.param("preferredProductName")
        pods = v.by_case[case.case]
        if not pods:
            problems.append(f"no pod of Job {case.job} exists")
        for pod in pods:
            p, node = name(pod), str(pod.get("spec", {}).get("nodeName") or "")
            allocated = v.allocated(pod)
            if not node or not allocated:
                problems.append(f"pod {p}'s claim was never allocated: {v.why_pending(pod)}")
                continue
            pool, model = _pool_of(v, node)
            for r, sd in allocated:
                took, product = str(r.get("request", "")), v.attr(sd, "productName")
                device = f"{r.get('pool')}/{r.get('device')}"
                if took == f"{REQUEST}/{FALLBACK}" and model and model == want:
                    problems.append(f"fallback taken while the preferred model was free: pod {p} got {took} on node "
                                    f"{node}, whose pool '{pool}' has {model} GPUs per its instance facts, but its "
                                    f"devices publish productName {_published(v, node)}")
                elif took != f"{REQUEST}/{sub}":
                    problems.append(f"pod {p} on node {node} (pool '{pool or 'unknown'}') got {took or 'no request'} "
                                    f"({device}, {product}), expected {REQUEST}/{sub}")
                elif sub == PREFERRED and product != want:
                    problems.append(f"pod {p} got {took} on {device} of model {product}: the preferred selector "
                                    f"asks for {want}")
                elif sub == FALLBACK and product == want:
                    problems.append(f"pod {p} got {took} on {device}, which is the preferred model {want}: the "
                                    "preferred subrequest should have matched it")
                else:
                    done.append(f"{case.case}: {took} on {node} ({product})")
    return outcome(CHECK, HOP, problems, "; ".join(done))


FAMILY = CaseFamily("firstAvailable", checks=(Check(CHECK, HOP, check_first_available),), expect=expect,
                    values=values, problems=problems)

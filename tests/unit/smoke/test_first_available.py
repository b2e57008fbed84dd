"""Smoke case firstAvailable (DRAPrioritizedList): the check on passing and failing worlds, the
settings refusals, the values and the rendered prioritized-list claim on every supported track.

Allocation results name the subrequest taken as `<request>/<subrequest>` (k8s.io/dynamic-resource-allocation
v0.34.4 structured/internal/stable/allocator_stable.go internalDeviceResult.requestName).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from components.kube.charts import render
from components.smoke.cases import first_available as fa
from components.smoke.expectations import CaseExpectation, PoolExpectation, object_name
from components.smoke.snapshot import Obj
from components.smoke.verifier import FAILED, PASSED, SKIPPED, verify
from components.smoke.view import View
from components.tables.labels import SIMULATED_POOL_LABEL
from tests.helpers.k8s_schema import VERSIONS, schema_errors
from tests.unit.helpers import by_path, raised_problems
from tests.unit.smoke import fixtures as fx
from tests.unit.smoke import settings_fixtures as sf

H100 = "NVIDIA H100 80GB HBM3"
L4 = "NVIDIA L4"
PREFERRED_NODE, FALLBACK_NODE = fx.NODES[1], fx.NODES[0]  # an H100 node, an L4 node


def case(sub: str) -> CaseExpectation:
    name = fa.CASES[sub]
    return CaseExpectation(name, object_name(fx.RELEASE, name, fx.RUN), 1, ("probe",), "gpu.nvidia.com", True,
                           params=(("subrequest", sub), ("pool", "h100" if sub == fa.PREFERRED else "l4"),
                                   ("preferredProductName", H100)))


def world() -> fx.World:
    """Pool l4 (node 0, the g6 world's L4) and pool h100 (node 1, publishing H100s); the preferred
    pod got gpu/preferred on the H100 node, the fallback pod gpu/fallback on the L4 node."""
    w = fx.real_world(gpus_per_node=2, nodes=fx.NODES, cases=())
    pools = (PoolExpectation("l4", "g6.12xlarge", 1, 2, L4), PoolExpectation("h100", "p5.48xlarge", 1, 2, H100))
    w.exp = replace(w.exp, pools=pools, cases=(case(fa.PREFERRED), case(fa.FALLBACK)))
    w.snap.nodes = [fx.node(FALLBACK_NODE, "g6.12xlarge", {SIMULATED_POOL_LABEL: "l4"}),
                    fx.node(PREFERRED_NODE, "p5.48xlarge", {SIMULATED_POOL_LABEL: "h100"})]
    for s in w.snap.slices:
        if s["spec"]["nodeName"] == PREFERRED_NODE:
            for d in s["spec"]["devices"]:
                d["attributes"]["productName"] = {"string": H100}
    for i, (sub, node) in enumerate(((fa.PREFERRED, PREFERRED_NODE), (fa.FALLBACK, FALLBACK_NODE))):
        name = fx.pod_name(fa.CASES[sub], 0)
        c = fx.claim(name, node, "gpu-0")
        c["spec"]["devices"]["requests"] = [{"name": "gpu", "firstAvailable": [
            {"name": fa.PREFERRED, "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1,
             "selectors": [{"cel": {"expression": f"device.attributes['gpu.nvidia.com'].productName == '{H100}'"}}]},
            {"name": fa.FALLBACK, "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1}]}]
        c["status"]["allocation"]["devices"]["results"][0]["request"] = f"gpu/{sub}"
        w.snap.claims.append(c)
        w.snap.pods.append(fx.pod(name, fa.CASES[sub], node, c["metadata"]["name"]))
        w.snap.events.append(fx.scheduled_event(name, node, "kai-scheduler", i))
        w.snap.logs[f"{name}/probe"] = fx.nvidia_smi_log(name, node, fa.CASES[sub], "probe", [fx.gpu_uuid(node, 0)])
        w.snap.jobs.append(fx.job(fa.CASES[sub], 1))
    w.snap.metrics = {n: fx.dcgm_metrics(n, [fx.gpu_uuid(n, i) for i in range(2)]) for n in fx.NODES}
    return w


def claim_of(w: fx.World, sub: str) -> Obj:
    return w.obj("ResourceClaim", f"{fx.pod_name(fa.CASES[sub], 0)}-gpu-9sd8f")


def failed(w: fx.World) -> str:
    r = fa.check_first_available(View(w.exp, w.snap))
    assert r.status == FAILED, r.message
    assert r.hop == "prioritized list"
    return "\n".join(r.details)


# --- the check -----------------------------------------------------------------------------------


def test_preferred_on_the_preferred_pool_and_fallback_elsewhere_passes_with_the_whole_run() -> None:
    w = world()
    r = fa.check_first_available(View(w.exp, w.snap))
    assert r.status == PASSED, r.details
    assert r.message == (f"first-available-preferred: gpu/preferred on {PREFERRED_NODE} ({H100}); "
                         f"first-available-fallback: gpu/fallback on {FALLBACK_NODE} ({L4})")
    assert {x.name: x.message for x in verify(w.exp, w.snap) if x.status == FAILED} == {}


def test_skipped_when_the_case_is_off() -> None:
    w = fx.real_world()
    r = fa.check_first_available(View(w.exp, w.snap))
    assert (r.status, r.message) == (SKIPPED, "smokeTest.firstAvailable is off")


def test_fallback_taken_while_the_preferred_model_was_free_names_node_pool_model_and_what_it_publishes() -> None:
    # The node tier's negative: the preferred node publishes another productName than its instance type's.
    w = world()
    for s in w.snap.slices:
        if s["spec"]["nodeName"] == PREFERRED_NODE:
            for d in s["spec"]["devices"]:
                d["attributes"]["productName"] = {"string": "NVIDIA H100 PCIe"}
    claim_of(w, fa.PREFERRED)["status"]["allocation"]["devices"]["results"][0]["request"] = "gpu/fallback"
    p = fx.pod_name(fa.CASES[fa.PREFERRED], 0)
    assert failed(w) == (f"fallback taken while the preferred model was free: pod {p} got gpu/fallback on node "
                         f"{PREFERRED_NODE}, whose pool 'h100' has {H100} GPUs per its instance facts, but its devices "
                         "publish productName NVIDIA H100 PCIe")


def test_the_fallback_pod_taking_the_preferred_subrequest_fails() -> None:
    w = world()
    claim_of(w, fa.FALLBACK)["status"]["allocation"]["devices"]["results"][0]["request"] = "gpu/preferred"
    p = fx.pod_name(fa.CASES[fa.FALLBACK], 0)
    assert failed(w) == (f"pod {p} on node {FALLBACK_NODE} (pool 'l4') got gpu/preferred ({FALLBACK_NODE}/gpu-0, "
                         f"{L4}), expected gpu/fallback")


def test_a_preferred_result_on_another_model_fails() -> None:
    w = world()
    for s in w.snap.slices:
        if s["spec"]["nodeName"] == PREFERRED_NODE:
            s["spec"]["devices"][0]["attributes"]["productName"] = {"string": L4}
    p = fx.pod_name(fa.CASES[fa.PREFERRED], 0)
    assert failed(w) == (f"pod {p} got gpu/preferred on {PREFERRED_NODE}/gpu-0 of model {L4}: the preferred selector "
                         f"asks for {H100}")


def test_a_fallback_result_on_the_preferred_model_fails() -> None:
    w = world()
    for s in w.snap.slices:
        if s["spec"]["nodeName"] == FALLBACK_NODE:
            s["spec"]["devices"][0]["attributes"]["productName"] = {"string": H100}
    p = fx.pod_name(fa.CASES[fa.FALLBACK], 0)
    assert failed(w) == (f"pod {p} got gpu/fallback on {FALLBACK_NODE}/gpu-0, which is the preferred model {H100}: "
                         "the preferred subrequest should have matched it")


def test_a_plain_request_result_and_a_missing_pod_fail() -> None:
    w = world()
    claim_of(w, fa.FALLBACK)["status"]["allocation"]["devices"]["results"][0]["request"] = "gpu"
    assert "got gpu (" in failed(w) and "expected gpu/fallback" in failed(w)
    w = world()
    w.snap.pods = [p for p in w.snap.pods if p["metadata"]["labels"]["ck8s-gpu.io/smoke-case"] != fa.CASES[fa.FALLBACK]]
    assert failed(w) == f"no pod of Job {object_name(fx.RELEASE, fa.CASES[fa.FALLBACK], fx.RUN)} exists"


def test_an_unallocated_claim_fails_with_the_scheduler_s_reason() -> None:
    w = world()
    claim_of(w, fa.PREFERRED)["status"] = {}
    p = fx.pod_name(fa.CASES[fa.PREFERRED], 0)
    assert failed(w) == f"pod {p}'s claim was never allocated: no scheduling event recorded"


# --- settings, values, render ----------------------------------------------------------------------

AWS_TWO: dict[str, Any] = {
    "platform": "aws",
    "region": "eu-north-1",
    "nodePools": [{"name": "h100", "instanceType": "p5.48xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1},
                  {"name": "l4", "instanceType": "g6.12xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1}],
    "smokeTest": {"firstAvailable": {"enabled": True, "preferredPool": "h100", "fallbackPool": "l4"}},
}


def problems(doc: dict[str, Any]) -> dict[str, str]:
    return by_path(raised_problems(sf.plan, doc))  # the gate, then the smoke test's plan


def with_case(**case: Any) -> dict[str, Any]:
    doc = copy.deepcopy(AWS_TWO)
    doc["smokeTest"]["firstAvailable"] = {"enabled": True, **case}
    return doc


def test_values_and_expectations_follow_the_pools() -> None:
    plan = sf.plan(AWS_TWO)
    assert plan.values["firstAvailable"] == {
        "enabled": True, "preferredProductName": H100,
        "nodeSelectors": {"preferred": {"ck8s-gpu/pool": "h100"}, "fallback": {"ck8s-gpu/pool": "l4"}}}
    cases = {c.case: c for c in plan.expectations.cases}
    assert cases["first-available-preferred"].param("pool") == "h100"
    assert cases["first-available-fallback"].param("subrequest") == "fallback"
    assert cases["first-available-fallback"].param("preferredProductName") == H100


@pytest.mark.parametrize("api", ["resource.k8s.io/v1", "resource.k8s.io/v1beta2"])
def test_the_prioritized_list_claim_renders_and_validates(api: str) -> None:
    plan = sf.plan(AWS_TWO)
    values = {**plan.values, "resourceApi": api}
    objs = render("gpu-smoke-test", values, release=plan.release, namespace=plan.namespace)
    rct = next(o for o in objs if o["metadata"]["name"] == object_name(plan.release, "first-available", plan.run_id))
    request = rct["spec"]["spec"]["devices"]["requests"][0]
    assert request["name"] == "gpu" and [s["name"] for s in request["firstAvailable"]] == ["preferred", "fallback"]
    assert request["firstAvailable"][0]["selectors"] == [
        {"cel": {"expression": f"device.attributes['gpu.nvidia.com'].productName == '{H100}'"}}]
    assert "selectors" not in request["firstAvailable"][1]
    versions = VERSIONS if api.endswith("/v1") else ("1.34.0",)  # v1beta2 is what 1.33 serves; 1.34 still does
    assert [schema_errors(rct, v) for v in versions] == [None] * len(versions)
    jobs = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Job"}
    for sub, pool in (("preferred", "h100"), ("fallback", "l4")):
        spec = jobs[object_name(plan.release, f"first-available-{sub}", plan.run_id)]["spec"]["template"]["spec"]
        assert spec["nodeSelector"] == {"ck8s-gpu/pool": pool}
        assert spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": rct["metadata"]["name"]}]


def test_both_pools_are_required() -> None:
    found = problems(with_case())
    assert found["settings.smokeTest.firstAvailable.preferredPool"] == (
        "required: the case pins one pod to each of two pools")
    assert "settings.smokeTest.firstAvailable.fallbackPool" in found


def test_unknown_pools_are_refused() -> None:
    found = problems(with_case(preferredPool="a100", fallbackPool="l4"))
    assert found["settings.smokeTest.firstAvailable.preferredPool"] == (
        "'a100' is not a node pool this platform provides (h100, l4)")


def test_one_pool_twice_or_two_pools_of_one_model_are_refused() -> None:
    found = problems(with_case(preferredPool="h100", fallbackPool="h100"))
    assert found["settings.smokeTest.firstAvailable.fallbackPool"] == (
        "is the preferred pool 'h100': the case needs two pools")
    doc = with_case(preferredPool="h100", fallbackPool="h100b")
    doc["nodePools"].append({"name": "h100b", "instanceType": "p5.48xlarge", "minSize": 1, "desiredSize": 1,
                             "maxSize": 1})
    assert problems(doc)["settings.smokeTest.firstAvailable.fallbackPool"] == (
        f"pool 'h100b' has the preferred model too ({H100}): its pod would take the preferred subrequest, so the "
        "fallback is never shown")


def test_kind_provides_one_pool_only() -> None:
    doc = copy.deepcopy(sf.KIND)
    doc["nodePools"].append({"name": "h100", "instanceType": "p5.48xlarge", "minSize": 1, "desiredSize": 1,
                             "maxSize": 1})
    doc["smokeTest"] = {"gpus": 2, "firstAvailable": {"enabled": True, "preferredPool": "h100", "fallbackPool": "gpu"}}
    assert problems(doc)["settings.smokeTest.firstAvailable.preferredPool"] == (
        "'h100' is not a node pool this platform provides (gpu)")


def test_on_local_both_pools_must_be_kubelet_pools() -> None:
    doc = copy.deepcopy(sf.LOCAL_CD_FA)
    doc["local"] = {"kubeletPools": ["gb200"]}
    assert problems(doc)["settings.smokeTest.firstAvailable.preferredPool"] == (
        "pool 'h100' is no kubelet pool (local.kubeletPools: gb200): KWOK nodes run no container")
    assert sf.plan(sf.LOCAL_CD_FA).expectations.case("first-available-fallback") is not None

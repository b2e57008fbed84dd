"""Smoke case nvlinkGroup: one pod, N GPUs of one Fabric Manager partition in one claim (NVIDIA's demo
demo/specs/fabric-manager-partitioning, dra-driver-nvidia-gpu 0.5.0-dev). Passing and failing worlds,
the settings refusals and the chart render."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from components.kube.charts import render
from components.smoke.cases import FAMILIES, nvlink_group
from components.smoke.expectations import CaseExpectation, object_name
from components.smoke.verifier import FAILED, PASSED, SKIPPED, CheckResult, verify
from tests.helpers.k8s_schema import VERSIONS, schema_errors
from tests.unit.helpers import by_path, raised_problems
from tests.unit.smoke import fixtures as fx
from tests.unit.smoke import settings_fixtures as sf
from tests.unit.smoke.fixtures import World

JOB = object_name(fx.RELEASE, "nvlink-group", fx.RUN)
NODE = fx.NODES[0]
# An 8-GPU HGX baseboard's Fabric Manager partitions (module ids 1-8 = gpu-0..7): one of 8 (id 0),
# two of 4 (1, 2), four of 2 (3-6), eight of 1 (7-14), as the driver publishes them (deviceinfo.go).
PARTITIONS = {8: lambda i: 0, 4: lambda i: 1 + i // 4, 2: lambda i: 3 + i // 2, 1: lambda i: 7 + i}

P5: dict[str, Any] = {
    "platform": "aws",
    "region": "eu-north-1",
    "gpuStack": {"nvlinkPartitions": True},
    "nodePools": [{"name": "h100", "instanceType": "p5.48xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1}],
    "smokeTest": {"gpus": 2, "nvlinkGroup": {"enabled": True, "gpus": 4}},
}


def partitioned(w: World, node: str) -> None:
    for d in w.obj("ResourceSlice", f"{node}-gpu.nvidia.com-7xk2p")["spec"]["devices"]:
        i = int(d["name"].split("-")[1])
        d["attributes"]["gpuModuleID"] = {"int": i + 1}
        for size, pid in PARTITIONS.items():
            d["attributes"][f"partition{size}"] = {"int": pid(i)}


def world(devices: tuple[int, ...] = (4, 5, 6, 7), n: int = 4) -> World:
    """Two 8-GPU nodes: the whole-GPU pods on node 1, the nvlink-group pod on node 0 holding `devices`."""
    w = fx.real_world(gpus_per_node=8)
    for node in fx.NODES:
        partitioned(w, node)
    case = CaseExpectation("nvlink-group", JOB, 1, ("probe",), "gpu.nvidia.com", False,
                           params=(("gpus", str(n)), ("attribute", f"partition{n}"), ("pool", "h100")))
    w.exp = replace(w.exp, cases=(*w.exp.cases, case))
    pod_name = fx.pod_name("nvlink-group", 0)
    c = fx.claim(pod_name, NODE, f"gpu-{devices[0]}")
    c["status"]["allocation"]["devices"]["results"] = [
        {"request": "gpu", "driver": fx.DRIVER, "pool": NODE, "device": f"gpu-{i}"} for i in devices]
    w.snap.claims.append(c)
    w.snap.pods.append(fx.pod(pod_name, "nvlink-group", NODE, c["metadata"]["name"]))
    w.snap.events.append(fx.scheduled_event(pod_name, NODE, "kai-scheduler"))
    w.snap.logs[f"{pod_name}/probe"] = fx.nvidia_smi_log(pod_name, NODE, "nvlink-group", "probe",
                                                         [fx.gpu_uuid(NODE, i) for i in devices])
    w.snap.jobs.append(fx.job("nvlink-group", 1))
    w.pods.append(pod_name)
    return w


def results(w: World) -> dict[str, CheckResult]:
    return {r.name: r for r in verify(w.exp, w.snap)}


def failed(w: World) -> dict[str, str]:
    return {r.name: r.message for r in verify(w.exp, w.snap) if r.status == FAILED}


def nvlink_claim(w: World) -> dict[str, Any]:
    return w.obj("ResourceClaim", f"{fx.pod_name('nvlink-group', 0)}-gpu-9sd8f")


def test_one_partition_passes() -> None:
    w = world()
    assert failed(w) == {}
    got = results(w)["case-nvlink-group"]
    assert got.status == PASSED
    assert got.message == (f"claim holds 4 GPU(s) of one NVLink partition: {NODE}/gpu-4, {NODE}/gpu-5, {NODE}/gpu-6, "
                           f"{NODE}/gpu-7 on {NODE}, one partition4 (2)")


def test_skipped_when_off() -> None:
    got = results(fx.real_world())["case-nvlink-group"]
    assert (got.status, got.message) == (SKIPPED, "smokeTest.nvlinkGroup is off")


def test_a_split_allocation_fails_naming_both_partitions() -> None:
    w = world(devices=(2, 3, 4, 5))
    got = failed(w)
    assert got["case-nvlink-group"] == (
        f"the allocation splits NVLink partition partition4 (claim {nvlink_claim(w)['metadata']['name']} of pod "
        f"{fx.pod_name('nvlink-group', 0)}): partition4=1: {NODE}/gpu-2, {NODE}/gpu-3; "
        f"partition4=2: {NODE}/gpu-4, {NODE}/gpu-5")


def test_a_device_without_the_attribute_fails() -> None:
    w = world()
    slice_ = w.obj("ResourceSlice", f"{NODE}-gpu.nvidia.com-7xk2p")
    del slice_["spec"]["devices"][6]["attributes"]["partition4"]
    msg = failed(w)["case-nvlink-group"]
    assert msg.startswith("the allocation splits NVLink partition partition4")
    assert msg.endswith(f"partition4=2: {NODE}/gpu-4, {NODE}/gpu-5, {NODE}/gpu-7; no partition4: {NODE}/gpu-6")


def test_the_wrong_count_fails() -> None:
    w = world(devices=(4, 5, 6))
    assert failed(w)["case-nvlink-group"].startswith(
        f"claim {nvlink_claim(w)['metadata']['name']} of pod {fx.pod_name('nvlink-group', 0)} holds 3 device(s) "
        f"({NODE}/gpu-4, {NODE}/gpu-5, {NODE}/gpu-6), expected 4")


def test_the_same_gpu_twice_is_not_a_group() -> None:
    """The API server accepts a result listed twice (validateSlice, not validateSet, at v1.34.4): four
    results that name three GPUs, all of one partition, must still fail."""
    w = world(devices=(4, 5, 6, 6))
    msg = failed(w)["case-nvlink-group"]
    assert (f"claim {nvlink_claim(w)['metadata']['name']} of pod {fx.pod_name('nvlink-group', 0)} holds "
            f"{NODE}/gpu-6 more than once: an NVLink group of 4 needs 4 distinct GPUs, and only 3 are") in msg


def test_a_device_on_another_node_fails() -> None:
    w = world()
    claim = nvlink_claim(w)
    claim["status"]["allocation"]["devices"]["results"][3]["pool"] = fx.NODES[1]
    assert f"holds {fx.NODES[1]}/gpu-7 on node {fx.NODES[1]}, but the pod ran on {NODE}" in \
        " | ".join(results(w)["case-nvlink-group"].details)


def test_never_allocated_says_why() -> None:
    w = world()
    nvlink_claim(w)["status"] = {}
    pod = w.obj("Pod", fx.pod_name("nvlink-group", 0))
    pod["spec"].pop("nodeName")
    w.snap.events = [e for e in w.snap.events if e["involvedObject"]["name"] != fx.pod_name("nvlink-group", 0)]
    w.snap.events.append({"reason": "FailedScheduling", "involvedObject": {"kind": "Pod", "name": pod["metadata"][
        "name"]}, "message": "0/2 nodes are available: 2 cannot allocate all claims."})
    assert failed(w)["case-nvlink-group"] == (
        f"pod {fx.pod_name('nvlink-group', 0)}'s claim {nvlink_claim(w)['metadata']['name']} was never allocated 4 "
        "GPUs of one NVLink partition: 0/2 nodes are available: 2 cannot allocate all claims.")


def test_a_prepare_refusal_names_the_nvlink_hop_and_the_kubelet() -> None:
    """The on-cluster negative: Fabric Manager refuses a set that is not one partition at prepare."""
    w = world()
    p = fx.pod_name("nvlink-group", 0)
    pod = w.obj("Pod", p)
    pod["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}],
                     "containerStatuses": [{"name": "probe", "state": {"waiting": {"reason": "ContainerCreating"}}}]}
    why = ("failed to prepare dynamic resources: fabric manager: GPU module set [3 4 5 6] does not match any FM "
           "partition; refusing partition activation")
    w.snap.events.append({"reason": "FailedPrepareDynamicResources", "involvedObject": {"kind": "Pod", "name": p},
                          "message": why, "lastTimestamp": "2026-11-29T21:31:00Z"})
    del w.snap.logs[f"{p}/probe"]
    got = failed(w)
    hop = "claim prepare (kubelet -> DRA kubelet plugin NodePrepareResources)"
    assert got["case-nvlink-group"] == (f"pod {p} never started, so its NVLink partition was never set up: claim "
                                        f"prepared? no: {hop}: {why}")
    assert got["pods-started"] == f"pod {p} on {NODE}: {hop}: {why}"


def test_no_log_means_nothing_to_compare() -> None:
    w = world()
    p = fx.pod_name("nvlink-group", 0)
    del w.snap.logs[f"{p}/probe"]
    w.snap.log_errors[f"{p}/probe"] = "container not found"
    assert failed(w)["case-nvlink-group"] == (f"no log from {p}/probe (container not found): nothing to compare "
                                              "with the partition's GPUs")


def test_container_device_compares_all_n_gpus() -> None:
    w = world()
    p = fx.pod_name("nvlink-group", 0)
    w.snap.logs[f"{p}/probe"] = fx.nvidia_smi_log(p, NODE, "nvlink-group", "probe",
                                                  [fx.gpu_uuid(NODE, i) for i in (4, 5, 6)])
    assert failed(w)["container-device"].startswith(f"{p}/probe saw ")


# --- settings ---------------------------------------------------------------------------------


def problems(raw: dict[str, Any]) -> dict[str, str]:
    return by_path(raised_problems(sf.settings, raw))


def with_(raw: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    for dotted, value in changes.items():
        node = out
        *parents, leaf = dotted.split("__")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return out


def test_a_p5_stack_renders_one_partition_claim_valid_on_every_track() -> None:
    plan = sf.plan(P5)
    assert plan.values["nvlinkGroup"] == {"enabled": True, "gpus": 4, "deviceClassName": "gpu.nvidia.com",
                                          "matchAttribute": "gpu.nvidia.com/partition4",
                                          "nodeSelector": {"ck8s-gpu/pool": "h100"}}
    case = plan.expectations.case("nvlink-group")
    assert case is not None and case.param("attribute") == "partition4" and case.param("gpus") == "4"
    objs = render("gpu-smoke-test", plan.values, release=plan.release, namespace=plan.namespace)
    rct = next(o for o in objs if o["kind"] == "ResourceClaimTemplate" and o["metadata"]["name"] == case.job)
    devices = rct["spec"]["spec"]["devices"]
    assert devices["requests"][0]["exactly"]["count"] == 4
    assert devices["constraints"] == [{"requests": ["gpu"], "matchAttribute": "gpu.nvidia.com/partition4"}]
    job = next(o for o in objs if o["kind"] == "Job" and o["metadata"]["name"] == case.job)
    tpl = job["spec"]["template"]["spec"]
    assert tpl["nodeSelector"] == {"ck8s-gpu/pool": "h100"}
    assert tpl["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": case.job}]
    for version in VERSIONS:
        assert [schema_errors(o, version) for o in (rct, job)] == [None, None]
    beta = copy.deepcopy(plan.values)
    beta["resourceApi"] = "resource.k8s.io/v1beta2"
    rct2 = next(o for o in render("gpu-smoke-test", beta, release=plan.release, namespace=plan.namespace)
                if o["kind"] == "ResourceClaimTemplate" and o["metadata"]["name"] == case.job)
    assert rct2["apiVersion"] == "resource.k8s.io/v1beta2" and schema_errors(rct2, "1.34.0") is None


def test_off_renders_nothing() -> None:
    plan = sf.plan(sf.AWS)
    assert plan.values["nvlinkGroup"] == {"enabled": False}
    assert plan.expectations.case("nvlink-group") is None
    objs = render("gpu-smoke-test", plan.values, release=plan.release, namespace=plan.namespace)
    assert not [o for o in objs if "nvlink-group" in o["metadata"]["name"]]


PATH = "settings.smokeTest.nvlinkGroup"


@pytest.mark.parametrize(("changes", "field", "reason"), [
    ({"smokeTest__nvlinkGroup__gpus": 3}, f"{PATH}.gpus",
     "3 is no Fabric Manager partition size of an 8-GPU HGX baseboard (1, 2, 4, 8)"),
    ({"gpuStack__nvlinkPartitions": False}, f"{PATH}.enabled", "needs settings.gpuStack.nvlinkPartitions"),
    ({"smokeTest__wholeGpu": False, "smokeTest__gpus": 1, "smokeTest__migProfile": "1g.10gb",
      "gpuStack__migStrategy": "mixed"}, f"{PATH}.enabled", "allocates whole GPUs"),
    ({"smokeTest__nvlinkGroup__pool": "h200"}, f"{PATH}.pool", "'h200' is not a node pool (h100)"),
    ({"nodePools": [{"name": "l4", "instanceType": "g6.48xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1}]},
     f"{PATH}.pool", "no node pool's instance type has NVSwitch GPUs"),
    ({"nodePools": [{"name": "one", "instanceType": "p5.4xlarge", "minSize": 1, "desiredSize": 2, "maxSize": 2}],
      "smokeTest__pool": "one"}, "settings.smokeTest.pool",
     "pool 'one' (p5.4xlarge) has no single-node NVSwitch fabric: its GPUs have no NVSwitch"),
    ({"queues": [{"name": "gpu-root", "gpu": {"quota": 8}},
                 {"name": "smoke-test", "parent": "gpu-root", "gpu": {"quota": 2}}]},
     "settings.queues[1].gpu.quota", "smokeTest.nvlinkGroup holds 4 non-preemptible GPU(s) at once"),
])
def test_refusals(changes: dict[str, Any], field: str, reason: str) -> None:
    got = problems(with_(P5, **changes))
    assert field in got, got
    assert reason in got[field]


def test_a_gb200_pool_is_refused_its_nvlink_spans_nodes() -> None:
    raw = with_(P5, nodePools=[{"name": "gb200", "instanceType": "p6e-gb200.36xlarge", "minSize": 1,
                                "desiredSize": 1, "maxSize": 1}], smokeTest__nvlinkGroup__gpus=2,
                smokeTest__nvlinkGroup__pool="gb200")
    got = problems(raw)
    assert "its NVLink domain spans nodes" in got[f"{PATH}.pool"]


LOCAL: dict[str, Any] = {
    "platform": "local",
    "environment": "ci",
    "gpuStack": {"nvlinkPartitions": True},
    "nodePools": [{"name": "h100", "instanceType": "p5.48xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1},
                  {"name": "kwok", "instanceType": "p5.48xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1}],
    "local": {"kubeletPools": ["h100"]},
    "smokeTest": {"gpus": 2, "scheduler": "default", "nvlinkGroup": {"enabled": True, "gpus": 8}},
}


def test_local_kubelet_pools_of_simulated_p5_nodes_are_accepted() -> None:
    plan = sf.plan(LOCAL)
    assert plan.values["nvlinkGroup"]["nodeSelector"] == {"run.ai/simulated-gpu-node-pool": "h100"}
    assert plan.values["nvlinkGroup"]["matchAttribute"] == "gpu.nvidia.com/partition8"


def test_a_local_kwok_pool_is_refused() -> None:
    got = problems(with_(LOCAL, smokeTest__nvlinkGroup__pool="kwok"))
    assert "is a KWOK pool" in got[f"{PATH}.pool"]


def test_the_case_counts_in_the_registry() -> None:
    assert nvlink_group.FAMILY in FAMILIES

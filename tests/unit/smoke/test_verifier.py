"""The verifier against cluster states shaped like real upstream objects.

One consistent world passes; each broken hop is caught by its own check, with a message that
names the object and the expectation. `failed` sets list the checks a break is allowed to
cascade into, so a break caught by the wrong check (or by none) fails the test.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

import pytest

from components.smoke.expectations import NO_KUBELET, PoolExpectation
from components.smoke.verifier import FAILED, PASSED, SKIPPED, CheckResult, verify
from tests.unit.smoke import fixtures as fx
from tests.unit.smoke.fixtures import World


def by_name(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {r.name: r for r in results}


def failed(results: list[CheckResult]) -> set[str]:
    return {r.name for r in results if r.status == FAILED}


def test_real_world_passes_every_hop() -> None:
    w = fx.real_world()
    results = by_name(verify(w.exp, w.snap))
    assert failed(list(results.values())) == set(), {r.name: r.message for r in results.values()}
    for check in ("device-class", "resource-slices", "claims-allocated", "scheduler", "claim-node",
                  "container-device", "distinct-gpus", "jobs-complete", "dcgm-metrics"):
        assert results[check].status == PASSED, (check, results[check].message)
    assert results["case-gang"].status == SKIPPED and "gang is off" in results["case-gang"].message
    assert f"{fx.NODES[0]}: 1 GPU(s)" in results["resource-slices"].message
    assert results["scheduler"].message == "2 pod(s) bound by kai-scheduler (queue smoke-test)"


def test_every_case_on_one_world_passes() -> None:
    w = fx.real_world(gpus_per_node=2, cases=("gpus", "shared", "gang", "mig"))
    results = verify(w.exp, w.snap)
    assert failed(results) == set(), {r.name: r.message for r in results if r.status == FAILED}
    assert {r.name for r in results if r.status == PASSED} >= {"case-shared-claim", "case-gang", "case-mig"}


def test_fake_gpu_operator_world_passes_on_env_devices() -> None:
    w = fx.fake_world()
    results = by_name(verify(w.exp, w.snap))
    assert failed(list(results.values())) == set(), {r.name: r.message for r in results.values()}
    assert results["container-device"].message == "2 container(s) saw exactly their allocated device"


def test_kwok_world_skips_in_container_checks_with_the_reason() -> None:
    w = fx.kwok_world()
    results = by_name(verify(w.exp, w.snap))
    assert failed(list(results.values())) == set(), {r.name: r.message for r in results.values()}
    assert results["container-device"].status == SKIPPED
    assert results["container-device"].message == NO_KUBELET == "no kubelet on simulated nodes"
    assert results["dcgm-metrics"].status == SKIPPED


# --- the nine breaks named in the issue, plus more -------------------------------------------


def _missing_class(w: World) -> None:
    w.snap.device_classes = [d for d in w.snap.device_classes if d["metadata"]["name"] != "gpu.nvidia.com"]


def _fewer_devices(w: World) -> None:
    devices = w.obj("ResourceSlice", f"{fx.NODES[0]}-gpu.nvidia.com-7xk2p")["spec"]["devices"]
    devices.pop()


def _unallocated(w: World) -> None:
    pod = w.obj("Pod", w.pods[1])
    w.obj("ResourceClaim", f"{w.pods[1]}-gpu-9sd8f")["status"] = {}
    pod["spec"].pop("nodeName")
    pod["status"].update(phase="Pending", containerStatuses=[],
                         conditions=[{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}])
    w.snap.events = [e for e in w.snap.events if e["involvedObject"]["name"] != w.pods[1]]
    w.snap.events.append({"type": "Warning", "reason": "FailedScheduling", "source": {"component": "kai-scheduler"},
                          "involvedObject": {"kind": "Pod", "name": w.pods[1]},
                          "message": "0/2 nodes are available: 2 cannot allocate all claims."})
    w.snap.logs.pop(f"{w.pods[1]}/probe")
    job = w.obj("Job", fx.object_name(fx.RELEASE, "gpus", fx.RUN))
    job["status"] = {"active": 1, "succeeded": 1}


def _other_driver(w: World) -> None:
    result = w.obj("ResourceClaim", f"{w.pods[0]}-gpu-9sd8f")["status"]["allocation"]["devices"]["results"][0]
    result.update(driver="gpu.example.com", device="gpu-3")


def _wrong_node(w: World) -> None:
    w.obj("Pod", w.pods[0])["spec"]["nodeName"] = fx.NODES[1]


def _wrong_scheduler(w: World) -> None:
    p = w.obj("Pod", w.pods[0])
    p["spec"]["schedulerName"] = "default-scheduler"
    w.snap.events = [e for e in w.snap.events if e["involvedObject"]["name"] != w.pods[0]]
    w.snap.events.append(fx.scheduled_event(w.pods[0], fx.NODES[0], "default-scheduler"))


def _same_gpu(w: World) -> None:
    # Both claims on node 0's gpu-0, and the second pod ran there and saw it.
    first = w.obj("ResourceClaim", f"{w.pods[0]}-gpu-9sd8f")
    second = w.obj("ResourceClaim", f"{w.pods[1]}-gpu-9sd8f")
    second["status"]["allocation"] = json.loads(json.dumps(first["status"]["allocation"]))
    w.obj("Pod", w.pods[1])["spec"]["nodeName"] = fx.NODES[0]
    w.snap.logs[f"{w.pods[1]}/probe"] = fx.nvidia_smi_log(w.pods[1], fx.NODES[0], "gpus", "probe",
                                                          [fx.gpu_uuid(fx.NODES[0], 0)])


def _saw_other_uuid(w: World) -> None:
    w.snap.logs[f"{w.pods[0]}/probe"] = fx.nvidia_smi_log(w.pods[0], fx.NODES[0], "gpus", "probe",
                                                          ["GPU-00000000-1111-2222-3333-444444444444"])


def _job_failed(w: World) -> None:
    job = w.obj("Job", fx.object_name(fx.RELEASE, "gpus", fx.RUN))
    job["status"] = fx.job("gpus", 2, failed=True)["status"]
    pod = w.obj("Pod", w.pods[1])
    pod["status"]["phase"] = "Failed"
    pod["status"]["containerStatuses"][0]["state"] = {"terminated": {"exitCode": 1, "reason": "Error"}}


def _nvidia_smi_fails(w: World) -> None:
    w.snap.logs[f"{w.pods[0]}/probe"] = (
        f"CK8S-SMOKE begin pod={w.pods[0]} container=probe node={fx.NODES[0]} case=gpus\n"
        "CK8S-SMOKE nvidia-smi rc=9\n"
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
        "CK8S-SMOKE end rc=1\n")


def _node_missing(w: World) -> None:
    w.snap.slices = w.snap.slices[:1]


def _incomplete_pool(w: World) -> None:
    w.snap.slices[0]["spec"]["pool"]["resourceSliceCount"] = 2


def _no_logs(w: World) -> None:
    w.snap.logs.pop(f"{w.pods[0]}/probe")
    w.snap.log_errors[f"{w.pods[0]}/probe"] = "container \"probe\" in pod is waiting to start: ContainerCreating"


def _queue_label_missing(w: World) -> None:
    w.obj("Pod", w.pods[0])["metadata"]["labels"].pop("kai.scheduler/queue")


def _dcgm_missing_gpu(w: World) -> None:
    assert w.snap.metrics is not None
    w.snap.metrics[fx.NODES[1]] = fx.dcgm_metrics(fx.NODES[1], [])


BREAKS: list[tuple[str, Callable[[World], None], dict[str, object], str, str, set[str]]] = [
    # id, break, world kwargs, check, message fragment, every check allowed to fail
    ("missing-class", _missing_class, {}, "device-class",
     "DeviceClass gpu.nvidia.com does not exist", {"device-class"}),
    ("fewer-devices", _fewer_devices, {"gpus_per_node": 2}, "resource-slices",
     f"node {fx.NODES[0]} advertises 1 GPU(s), expected 2 (pool gpu, g6.12xlarge)", {"resource-slices"}),
    ("claim-unallocated", _unallocated, {}, "claims-allocated",
     f"claim {fx.object_name(fx.RELEASE, 'gpus', fx.RUN)}-q7xza-gpu-9sd8f of pod "
     f"{fx.object_name(fx.RELEASE, 'gpus', fx.RUN)}-q7xza was never allocated: "
     "0/2 nodes are available: 2 cannot allocate all claims.",
     {"claims-allocated", "scheduler", "container-device", "jobs-complete", "distinct-gpus"}),
    ("other-driver", _other_driver, {}, "claims-allocated",
     "was allocated by driver 'gpu.example.com', expected 'gpu.nvidia.com'",
     {"claims-allocated", "container-device", "distinct-gpus"}),
    ("pod-on-other-node", _wrong_node, {}, "claim-node",
     f"ran on node {fx.NODES[1]} but its claim", {"claim-node"}),
    ("wrong-scheduler", _wrong_scheduler, {}, "scheduler",
     "was scheduled by 'default-scheduler', expected 'kai-scheduler'", {"scheduler"}),
    ("same-gpu", _same_gpu, {}, "distinct-gpus",
     f"were both allocated {fx.NODES[0]}/gpu-0", {"distinct-gpus"}),
    ("saw-other-uuid", _saw_other_uuid, {}, "container-device",
     f"saw GPU-00000000-1111-2222-3333-444444444444, but its claim was allocated {fx.NODES[0]}/gpu-0 "
     f"(uuid {fx.gpu_uuid(fx.NODES[0], 0)})", {"container-device"}),
    ("job-failed", _job_failed, {}, "jobs-complete",
     "failed (BackoffLimitExceeded: Job has reached the specified backoff limit); pod", {"jobs-complete"}),
    ("nvidia-smi-fails", _nvidia_smi_fails, {}, "container-device",
     "nvidia-smi -L failed (rc=9): NVIDIA-SMI has failed because it couldn't communicate", {"container-device"}),
    ("node-not-publishing", _node_missing, {}, "resource-slices",
     "1 node(s) publish gpu.nvidia.com slices, expected 2 (gpu: 2 x g6.xlarge)",
     {"resource-slices", "claims-allocated", "claim-node", "container-device"}),
    ("incomplete-pool", _incomplete_pool, {}, "resource-slices",
     f"pool {fx.NODES[0]} is incomplete: 1 of 2 ResourceSlices published", {"resource-slices"}),
    ("no-logs", _no_logs, {}, "container-device",
     "no log from", {"container-device"}),
    ("queue-label", _queue_label_missing, {}, "scheduler",
     "has queue label '', expected 'smoke-test'", {"scheduler"}),
    ("dcgm-missing-gpu", _dcgm_missing_gpu, {"dcgm": True}, "dcgm-metrics",
     f"DCGM exporter on {fx.NODES[1]} does not report {fx.gpu_uuid(fx.NODES[1], 0)}", {"dcgm-metrics"}),
]


@pytest.mark.parametrize(("case", "breaker", "kwargs", "check", "fragment", "allowed"), BREAKS,
                         ids=[b[0] for b in BREAKS])
def test_break_is_caught_by_its_hop(case: str, breaker: Callable[[World], None], kwargs: dict[str, object],
                                    check: str, fragment: str, allowed: set[str]) -> None:
    w = fx.real_world(**kwargs)  # type: ignore[arg-type]
    assert failed(verify(w.exp, w.snap)) == set(), "the unbroken world must pass"
    breaker(w)
    results = verify(w.exp, w.snap)
    got = by_name(results)[check]
    assert got.status == FAILED, (check, got.message)
    assert fragment in got.message or any(fragment in d for d in got.details), (fragment, got.message, got.details)
    assert check in failed(results) <= allowed, {r.name: r.message for r in results if r.status == FAILED}


def test_fake_world_container_saw_another_device() -> None:
    w = fx.fake_world()
    other = fx.gpu_uuid(fx.NODES[0], 7).lower()
    p = w.pods[0]
    w.snap.logs[f"{p}/probe"] = fx.fake_env_log(p, "ck8s-gpu-worker", "gpus", "probe", [other])
    got = by_name(verify(w.exp, w.snap))["container-device"]
    assert got.status == FAILED
    assert got.message.startswith(f"{p}/probe saw {other}, but its claim was allocated ck8s-gpu-worker/gpu-")


def test_missing_mig_class_and_wrong_device_type() -> None:
    w = fx.real_world(gpus_per_node=2, cases=("gpus", "mig"))
    mig_pod = next(p for p in w.pods if "-mig-" in p)
    claim = w.obj("ResourceClaim", f"{mig_pod}-gpu-9sd8f")
    claim["status"]["allocation"]["devices"]["results"][0]["device"] = "gpu-1"
    claim["status"]["allocation"]["devices"]["results"][0]["pool"] = fx.NODES[0]
    w.snap.device_classes = [d for d in w.snap.device_classes if d["metadata"]["name"] != "mig.nvidia.com"]
    results = by_name(verify(w.exp, w.snap))
    assert results["device-class"].message.startswith("DeviceClass mig.nvidia.com does not exist")
    assert "of type 'gpu', expected a MIG device" in results["case-mig"].message


def test_gang_split_is_reported() -> None:
    w = fx.real_world(cases=("gang",))
    gang_pod = w.obj("Pod", w.pods[1])
    gang_pod["spec"].pop("nodeName")
    gang_pod["status"]["phase"] = "Pending"
    got = by_name(verify(w.exp, w.snap))["case-gang"]
    assert got.status == FAILED and "gang split: 1 of 2 pods were scheduled" in got.details


def test_gang_without_podgroup_and_wrong_annotation() -> None:
    w = fx.real_world(cases=("gang",))
    w.snap.pod_groups = []
    w.obj("Pod", w.pods[0])["metadata"]["annotations"]["pod-group-name"] = "pg-auto-1234"
    got = by_name(verify(w.exp, w.snap))["case-gang"]
    assert got.message.startswith(f"PodGroup {fx.object_name(fx.RELEASE, 'gang', fx.RUN)} does not exist")
    assert any("is in PodGroup 'pg-auto-1234'" in d for d in got.details)


def test_shared_claim_containers_must_agree() -> None:
    w = fx.real_world(cases=("gpus", "shared"))
    shared = next(p for p in w.pods if "-shared-" in p)
    w.snap.logs[f"{shared}/probe-b"] = fx.nvidia_smi_log(shared, fx.NODES[1], "shared", "probe-b",
                                                         [fx.gpu_uuid(fx.NODES[0], 0)])
    results = by_name(verify(w.exp, w.snap))
    assert results["case-shared-claim"].status == FAILED
    assert "did not see the same device" in results["case-shared-claim"].message
    assert "probe-b saw" in results["container-device"].message


def test_no_pods_fails_instead_of_passing_vacuously() -> None:
    w = fx.real_world()
    w.snap.pods, w.snap.claims, w.snap.logs = [], [], {}
    results = by_name(verify(w.exp, w.snap))
    assert results["claims-allocated"].message == f"no smoke-test pod of run {fx.RUN} exists (did the Jobs start?)"
    assert results["claim-node"].status == FAILED
    assert results["container-device"].status == FAILED
    assert results["distinct-gpus"].status == FAILED


def test_pods_of_another_run_are_ignored() -> None:
    w = fx.real_world()
    stale = fx.pod("old-run-pod", "gpus", fx.NODES[0], "old-claim")
    stale["metadata"]["labels"]["ck8s-gpu.io/smoke-run"] = "ffff0000"
    w.snap.pods.append(stale)
    assert failed(verify(w.exp, w.snap)) == set()


def test_unknown_pools_use_feature_discovery_count() -> None:
    w = fx.real_world()
    w.exp = replace(w.exp, pools=None)
    w.snap.nodes[0]["metadata"]["labels"]["nvidia.com/gpu.count"] = "4"
    got = by_name(verify(w.exp, w.snap))["resource-slices"]
    assert got.message == (f"node {fx.NODES[0]} advertises 1 GPU(s) but GPU feature discovery counts 4 "
                           "(label nvidia.com/gpu.count)")


def test_node_of_unknown_instance_type_with_mixed_pools() -> None:
    w = fx.real_world()
    w.exp = replace(w.exp, pools=(PoolExpectation("a", "g6.xlarge", 1, 1, "NVIDIA L4"),
                                  PoolExpectation("b", "g6.12xlarge", 1, 4, "NVIDIA L4")))
    w.snap.nodes[1]["metadata"]["labels"]["node.kubernetes.io/instance-type"] = "m7i.large"
    got = by_name(verify(w.exp, w.snap))["resource-slices"]
    assert got.status == FAILED
    assert f"node {fx.NODES[1]}: cannot tell its pool (instance type 'm7i.large'" in got.message


def test_dcgm_required_but_absent_fails_and_auto_skips() -> None:
    w = fx.real_world(dcgm=True)
    w.snap.metrics, w.snap.metrics_note = None, "no nvidia-dcgm-exporter Service found"
    assert by_name(verify(w.exp, w.snap))["dcgm-metrics"].message == (
        "DCGM exporter required but unavailable: no nvidia-dcgm-exporter Service found")
    w.exp = replace(w.exp, dcgm=None)
    got = by_name(verify(w.exp, w.snap))["dcgm-metrics"]
    assert (got.status, got.message) == (SKIPPED, "no nvidia-dcgm-exporter Service found")


def test_results_are_timed_and_json_serialisable() -> None:
    w = fx.real_world()
    results = verify(w.exp, w.snap)
    assert [r.name for r in results][:3] == ["device-class", "resource-slices", "claims-allocated"]
    assert all(r.duration_ms >= 0 for r in results)
    json.dumps([r.to_dict() for r in results])


def _history(w: World, order: list[tuple[str, int]]) -> None:
    """Claim versions as a watch delivers them: (event type, pod index)."""
    claims = {i: w.obj("ResourceClaim", f"{p}-gpu-9sd8f") for i, p in enumerate(w.pods)}
    w.snap.claim_history = [{"type": t, "object": claims[i]} for t, i in order]


def test_kwok_without_history_skips_distinct_with_the_reason() -> None:
    w = fx.kwok_world()
    got = by_name(verify(w.exp, w.snap))["distinct-gpus"]
    assert (got.status, got.message) == (SKIPPED, f"{NO_KUBELET}: no barrier and no claim history to compare")


def test_kwok_sequential_reuse_of_one_gpu_is_not_a_conflict() -> None:
    w = fx.kwok_world()
    _same_gpu(w)  # both claims got node 0's gpu-0 ...
    _history(w, [("ADDED", 0), ("DELETED", 0), ("ADDED", 1), ("DELETED", 1)])  # ... one after the other
    got = by_name(verify(w.exp, w.snap))["distinct-gpus"]
    assert (got.status, got.message) == (PASSED, "2 allocations, no device shared (per the claim history)")


def test_kwok_overlapping_reuse_of_one_gpu_is_caught() -> None:
    w = fx.kwok_world()
    _same_gpu(w)
    _history(w, [("ADDED", 0), ("ADDED", 1), ("DELETED", 0), ("DELETED", 1)])
    got = by_name(verify(w.exp, w.snap))["distinct-gpus"]
    assert got.status == FAILED
    assert got.message == f"pods {w.pods[0]} and {w.pods[1]} held {fx.NODES[0]}/gpu-0 at the same time"


def test_pool_label_beats_instance_type() -> None:
    """Two pools of the same instance type but different declared GPU counts: the pool label decides."""
    w = fx.real_world()
    w.exp = replace(w.exp, pools=(PoolExpectation("a", "g6.xlarge", 1, 1, "NVIDIA L4"),
                                  PoolExpectation("b", "g6.xlarge", 1, 2, "NVIDIA L4")))
    w.snap.nodes[0]["metadata"]["labels"]["ck8s-gpu/pool"] = "a"
    w.snap.nodes[1]["metadata"]["labels"]["run.ai/simulated-gpu-node-pool"] = "b"
    got = by_name(verify(w.exp, w.snap))["resource-slices"]
    assert got.message == f"node {fx.NODES[1]} advertises 1 GPU(s), expected 2 (pool b, g6.xlarge)"


def test_pool_labels_match_what_the_platforms_apply() -> None:
    from components.aws.userdata import POOL_LABEL
    from components.tables.labels import POOL_LABELS, SIMULATED_POOL_LABEL

    assert POOL_LABELS == (POOL_LABEL, SIMULATED_POOL_LABEL)

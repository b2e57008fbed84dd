"""The verifier on the cases NVIDIA's demos cover (dra-driver-nvidia-gpu v0.4.1 demo/specs/quickstart/v1):
two pods on one named claim (gpu-test3), GPU sharing through GpuConfig (gpu-test5), a MIG profile
(gpu-test4), and a MIG-only run without the whole-GPU case. Each check passes on a consistent world
and fails, naming what broke, when one thing is off.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from components.smoke.expectations import NO_KUBELET, object_name
from components.smoke.verifier import FAILED, PASSED, SKIPPED, CheckResult, verify
from tests.unit.smoke import fixtures as fx
from tests.unit.smoke.fixtures import World

NAMED = object_name(fx.RELEASE, "shared-named", fx.RUN)


def by_name(w: World) -> dict[str, CheckResult]:
    return {r.name: r for r in verify(w.exp, w.snap)}


def failed(w: World) -> dict[str, str]:
    return {r.name: r.message for r in verify(w.exp, w.snap) if r.status == FAILED}


def named_pods(w: World) -> list[str]:
    return [p for p in w.pods if "-shared-named-" in p]


def problems(result: CheckResult) -> str:
    return " | ".join(result.details or [result.message])


# --- two pods, one named claim (gpu-test3) ----------------------------------------------------


def test_two_pods_on_one_named_claim_pass() -> None:
    w = fx.real_world(cases=("gpus", "shared-named"))
    assert failed(w) == {}
    got = by_name(w)["case-named-claim"]
    assert got.status == PASSED
    assert got.message.startswith(f"claim {NAMED} on {fx.NODES[1]}/gpu-0 (uuid {fx.gpu_uuid(fx.NODES[1], 0)}): "
                                  "allocated once, reserved for both pods at once, both on its node; both pods saw it")


def test_named_claim_case_is_skipped_when_off() -> None:
    got = by_name(fx.real_world())["case-named-claim"]
    assert (got.status, got.message) == (SKIPPED, "smokeTest.sharedNamedClaim is off")


def _template_instead(w: World) -> None:
    pod = w.obj("Pod", named_pods(w)[1])
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu-smoke-test-gpu-ab12cd34"}]


def _never_allocated(w: World) -> None:
    w.obj("ResourceClaim", NAMED)["status"] = {}
    for p in named_pods(w):
        pod = w.obj("Pod", p)
        pod["spec"].pop("nodeName")
        pod["status"]["phase"] = "Pending"
    w.snap.events.append({"type": "Warning", "reason": "FailedScheduling", "source": {"component": "kai-scheduler"},
                          "involvedObject": {"kind": "Pod", "name": named_pods(w)[0]},
                          "message": f"DRA claim {NAMED} is a shared GPU claim but does not have a queue label "
                                     "(kai.scheduler/queue)"})


def _allocated_twice(w: World) -> None:
    """Released after the first pod and allocated again for the second: they never shared it."""
    first = w.obj("ResourceClaim", NAMED)
    second = copy.deepcopy(first)
    first["status"]["reservedFor"] = first["status"]["reservedFor"][:1]
    released = copy.deepcopy(first)
    released["status"] = {}
    result = second["status"]["allocation"]["devices"]["results"][0]
    result["device"] = "gpu-0" if result["device"] != "gpu-0" else "gpu-1"
    second["status"]["reservedFor"] = second["status"]["reservedFor"][1:]
    w.snap.claim_history = [{"type": "MODIFIED", "object": copy.deepcopy(first)},
                            {"type": "MODIFIED", "object": released},
                            {"type": "MODIFIED", "object": second}]
    w.snap.claims = [c for c in w.snap.claims if c["metadata"]["name"] != NAMED] + [second]


def _reserved_one_at_a_time(w: World) -> None:
    claim = w.obj("ResourceClaim", NAMED)
    one, two = copy.deepcopy(claim), copy.deepcopy(claim)
    one["status"]["reservedFor"] = claim["status"]["reservedFor"][:1]
    two["status"]["reservedFor"] = claim["status"]["reservedFor"][1:]
    w.snap.claim_history = [{"type": "MODIFIED", "object": one}, {"type": "MODIFIED", "object": two}]
    claim["status"]["reservedFor"] = two["status"]["reservedFor"]


def _pod_elsewhere(w: World) -> None:
    w.obj("Pod", named_pods(w)[1])["spec"]["nodeName"] = fx.NODES[0]


def _saw_different_gpus(w: World) -> None:
    p = named_pods(w)[1]
    w.snap.logs[f"{p}/probe"] = fx.nvidia_smi_log(p, fx.NODES[1], "shared-named", "probe",
                                                  [fx.gpu_uuid(fx.NODES[1], 0), fx.gpu_uuid(fx.NODES[1], 1)])


def _claim_missing(w: World) -> None:
    w.snap.claims = [c for c in w.snap.claims if c["metadata"]["name"] != NAMED]


def _one_pod_only(w: World) -> None:
    gone = named_pods(w)[1]
    w.snap.pods = [p for p in w.snap.pods if p["metadata"]["name"] != gone]


NAMED_BREAKS = [
    ("template-instead", _template_instead, "names a claim template or nothing, expected the ResourceClaim"),
    ("never-allocated", _never_allocated,
     f"claim {NAMED} was never allocated: DRA claim {NAMED} is a shared GPU claim but does not have a queue label"),
    ("allocated-twice", _allocated_twice,
     f"claim {NAMED} was allocated 2 times ({fx.NODES[1]}/gpu-1; {fx.NODES[1]}/gpu-0): its pods did not share"),
    ("reserved-one-at-a-time", _reserved_one_at_a_time, f"claim {NAMED} was never reserved for both pods at once"),
    ("pod-elsewhere", _pod_elsewhere, f"ran on node {fx.NODES[0]}, but claim {NAMED} is on {fx.NODES[1]}"),
    ("saw-different-gpus", _saw_different_gpus, f"the pods naming claim {NAMED} did not see the same device"),
    ("claim-missing", _claim_missing, f"ResourceClaim {NAMED} was never seen"),
    ("one-pod-only", _one_pod_only, "only 1 of 2 pods of Job"),
]


@pytest.mark.parametrize(("breaker", "fragment"), [b[1:] for b in NAMED_BREAKS], ids=[b[0] for b in NAMED_BREAKS])
def test_named_claim_break_is_caught(breaker: object, fragment: str) -> None:
    w = fx.real_world(gpus_per_node=2, cases=("shared-named",))
    assert failed(w) == {}, "the unbroken world must pass"
    breaker(w)  # type: ignore[operator]
    got = by_name(w)["case-named-claim"]
    assert got.status == FAILED and fragment in problems(got), problems(got)


def test_without_a_kubelet_the_pods_need_not_overlap() -> None:
    """KWOK pods finish at once: the claim is released and allocated again for the second pod, and no
    container output exists. That is no failure there; the message says what was not checked."""
    w = fx.kwok_world(cases=("shared-named",))
    _allocated_twice(w)
    got = by_name(w)["case-named-claim"]
    assert got.status == PASSED, problems(got)
    assert got.message.endswith(f"reserved for each pod, both on its node; pods' view not checked: {NO_KUBELET}")
    w.exp = replace(w.exp, in_container=True)  # the same history where a barrier held both pods: a failure
    assert "was allocated 2 times" in problems(by_name(w)["case-named-claim"])


# --- GPU sharing through GpuConfig (gpu-test5) ------------------------------------------------


@pytest.mark.parametrize("strategy", ["TimeSlicing", "MPS"])
def test_sharing_config_on_both_shared_cases_passes(strategy: str) -> None:
    w = fx.real_world(gpus_per_node=2, cases=("gpus", "shared", "shared-named"), sharing=strategy)
    assert failed(w) == {}
    got = by_name(w)["gpu-sharing"]
    assert (got.status, got.message) == (PASSED, f"2 claim(s) carry the GpuConfig ({strategy})")


def test_sharing_is_skipped_when_none() -> None:
    got = by_name(fx.real_world(cases=("gpus", "shared")))["gpu-sharing"]
    assert (got.status, got.message) == (SKIPPED, "smokeTest.sharing is none")


def test_an_allocation_without_the_gpu_config_fails() -> None:
    w = fx.real_world(cases=("shared-named",), sharing="TimeSlicing")
    w.obj("ResourceClaim", NAMED)["status"]["allocation"]["devices"].pop("config")
    got = by_name(w)["gpu-sharing"]
    assert got.status == FAILED
    assert got.message == (f"claim {NAMED}'s allocation carries no resource.nvidia.com/v1beta1 GpuConfig with sharing "
                           "strategy TimeSlicing for driver gpu.nvidia.com (strategies found: none)")


@pytest.mark.parametrize(("change", "found"), [
    (lambda cfg: cfg["opaque"]["parameters"]["sharing"].update(strategy="MPS"), "MPS"),
    (lambda cfg: cfg["opaque"].update(driver="gpu.example.com"), "none"),
    (lambda cfg: cfg["opaque"]["parameters"].update(apiVersion="gpu.resource.example.com/v1alpha1"), "none"),
    (lambda cfg: cfg.update(requests=["other"]), "none"),
])
def test_a_config_for_another_strategy_driver_api_or_request_does_not_count(change: object, found: str) -> None:
    w = fx.real_world(cases=("shared",), sharing="TimeSlicing")
    shared = next(p for p in w.pods if "-shared-" in p)
    change(w.obj("ResourceClaim", f"{shared}-gpu-9sd8f")["status"]["allocation"]["devices"]["config"][0])  # type: ignore[operator]
    got = by_name(w)["gpu-sharing"]
    assert got.status == FAILED and got.message.endswith(f"(strategies found: {found})"), got.message


def test_mps_needs_the_pipe_directory_in_every_container() -> None:
    w = fx.real_world(cases=("shared",), sharing="MPS")
    shared = next(p for p in w.pods if "-shared-" in p)
    w.snap.logs[f"{shared}/probe-a"] = fx.nvidia_smi_log(shared, fx.NODES[1], "shared", "probe-a",
                                                         [fx.gpu_uuid(fx.NODES[1], 0)])
    w.snap.logs[f"{shared}/probe-b"] = w.snap.logs[f"{shared}/probe-b"].replace("mounted=yes", "mounted=no")
    got = by_name(w)["gpu-sharing"]
    assert got.status == FAILED
    assert got.details == [
        f"{shared}/probe-a got no MPS pipe directory (CUDA_MPS_PIPE_DIRECTORY unset): the driver did not set up MPS "
        "for its claim",
        f"{shared}/probe-b: MPS pipe directory /tmp/nvidia-mps is not mounted"]


def test_without_a_kubelet_mps_is_judged_by_the_allocation_only() -> None:
    w = fx.kwok_world(cases=("shared-named",))
    w.exp = replace(w.exp, cases=tuple(replace(c, sharing="MPS") for c in w.exp.cases))
    w.obj("ResourceClaim", NAMED)["status"]["allocation"]["devices"]["config"] = [fx.gpu_config("MPS")]
    got = by_name(w)["gpu-sharing"]
    assert (got.status, got.message) == (PASSED, f"1 claim(s) carry the GpuConfig (MPS); MPS in containers not "
                                                 f"checked: {NO_KUBELET}")


# --- MIG: the profile, and a run with MIG devices only ----------------------------------------


def test_the_mig_device_must_have_the_profile_asked_for() -> None:
    w = fx.real_world(gpus_per_node=2, cases=("gpus", "mig"), mig_profile="1g.10gb")
    assert by_name(w)["case-mig"].status == PASSED
    w.exp = replace(w.exp, cases=tuple(replace(c, profile="2g.20gb") if c.case == "mig" else c for c in w.exp.cases))
    got = by_name(w)["case-mig"]
    assert got.status == FAILED
    assert got.message.endswith("of profile '1g.10gb', smokeTest.migProfile asks for '2g.20gb'")


def test_a_mig_only_run_passes_without_whole_gpu_results_or_class() -> None:
    """wholeGpu off: no `gpus` Job, no distinct GPUs to compare, and the whole-GPU DeviceClass is not
    looked for (the MIG case uses mig.nvidia.com)."""
    w = fx.real_world(cases=("mig",), mig_profile="1g.10gb")
    w.snap.device_classes = [d for d in w.snap.device_classes if d["metadata"]["name"] != "gpu.nvidia.com"]
    results = by_name(w)
    assert {n: r.message for n, r in results.items() if r.status == FAILED} == {}
    assert results["device-class"].message == "DeviceClass mig.nvidia.com exists and selects gpu.nvidia.com devices"
    assert (results["distinct-gpus"].status, results["distinct-gpus"].message) == (
        SKIPPED, "no case holds several GPUs at once (wholeGpu and gang are off)")
    assert results["jobs-complete"].message == f"completed: {object_name(fx.RELEASE, 'mig', fx.RUN)} 1/1"
    assert results["case-mig"].status == PASSED


def test_the_whole_gpu_class_is_still_required_when_a_case_uses_it() -> None:
    w = fx.real_world(cases=("gpus", "mig"), gpus_per_node=2)
    w.snap.device_classes = [d for d in w.snap.device_classes if d["metadata"]["name"] != "gpu.nvidia.com"]
    got = by_name(w)["device-class"]
    assert got.status == FAILED and got.message.startswith("DeviceClass gpu.nvidia.com does not exist")


def test_no_case_at_all_fails_the_device_class_hop() -> None:
    w = fx.real_world()
    w.exp = replace(w.exp, cases=())
    got = by_name(w)["device-class"]
    assert (got.status, got.message) == (FAILED, "no case to run: no DeviceClass to look up")

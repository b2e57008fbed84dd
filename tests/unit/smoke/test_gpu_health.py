"""Smoke case gpuHealth: the driver's device taints (NVMLDeviceHealthCheck: gpu.nvidia.com/xid=<xid>:NoSchedule,
cmd/gpu-kubelet-plugin/device_health.go) keep devices away from claims that do not tolerate them, and a
device tainted while a claim of the run holds it fails the run. The whole-GPU pods are the probes."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from components.settings.load import SettingsError
from components.smoke.expectations import Expectations
from components.smoke.verifier import FAILED, PASSED, SKIPPED, CheckResult, verify
from tests.unit.smoke import fixtures as fx
from tests.unit.smoke import settings_fixtures as sf
from tests.unit.smoke.fixtures import World

NODE = fx.NODES[-1]  # both whole-GPU pods run here on gpu-0 and gpu-1 (fixtures.real_world, 2 GPUs a node)
ALLOCATED = "2026-11-29T21:30:05Z"  # when the scheduler wrote the allocations
FINISHED = "2026-11-29T21:30:40Z"  # when the pods' containers ended


def xid(at: str | None, effect: str = "NoSchedule") -> dict[str, Any]:
    t: dict[str, Any] = {"key": "gpu.nvidia.com/xid", "value": "48", "effect": effect}
    if at is not None:
        t["timeAdded"] = at
    return t


def world() -> World:
    w = fx.real_world(gpus_per_node=2)
    w.exp = replace(w.exp, gpu_health=True)
    for c in w.snap.claims:
        c["metadata"]["managedFields"] = [
            {"manager": "kube-controller-manager", "operation": "Update", "time": "2026-11-29T21:30:01Z"},
            {"manager": "kai-scheduler", "operation": "Update", "subresource": "status", "time": ALLOCATED}]
    for p in w.snap.pods:
        for cs in p["status"]["containerStatuses"]:
            cs["state"]["terminated"]["finishedAt"] = FINISHED
    return w


def taint(w: World, node: str, device: str, t: dict[str, Any]) -> None:
    d = next(d for d in w.obj("ResourceSlice", f"{node}-gpu.nvidia.com-7xk2p")["spec"]["devices"]
             if d["name"] == device)
    d.setdefault("taints", []).append(t)


def results(w: World) -> dict[str, CheckResult]:
    return {r.name: r for r in verify(w.exp, w.snap)}


def failed(w: World) -> dict[str, str]:
    return {r.name: r.message for r in verify(w.exp, w.snap) if r.status == FAILED}


def claim_of(i: int) -> str:
    return f"{fx.pod_name('gpus', i)}-gpu-9sd8f"


def test_a_tainted_device_nobody_got_passes_and_is_listed() -> None:
    w = world()
    taint(w, fx.NODES[0], "gpu-0", xid("2026-11-29T21:29:00Z"))
    assert failed(w) == {}
    got = results(w)["case-gpu-health"]
    assert got.status == PASSED
    assert got.message == ("2 allocation(s), none of a device tainted while held or before; tainted devices: "
                           f"{fx.NODES[0]}/gpu-0 (gpu.nvidia.com/xid=48:NoSchedule)")


def test_without_the_case_a_tainted_node_still_fails_resource_slices() -> None:
    w = world()
    w.exp = replace(w.exp, gpu_health=False)
    taint(w, fx.NODES[0], "gpu-0", xid("2026-11-29T21:29:00Z"))
    got = results(w)
    assert got["resource-slices"].status == FAILED
    assert got["resource-slices"].message.startswith(f"node {fx.NODES[0]} publishes tainted GPUs")
    assert (got["case-gpu-health"].status, got["case-gpu-health"].message) == (
        SKIPPED, "smokeTest.gpuHealth is off (or gpu health is)")


def test_tainted_devices_still_count_in_the_pools() -> None:
    w = world()
    taint(w, fx.NODES[0], "gpu-0", xid(None))
    taint(w, fx.NODES[0], "gpu-1", xid(None))
    assert results(w)["resource-slices"].message == f"{fx.NODES[0]}: 2 GPU(s); {NODE}: 2 GPU(s)"


def test_a_tainted_device_handed_out_fails() -> None:
    w = world()
    taint(w, NODE, "gpu-0", xid("2026-11-29T21:29:00Z"))
    got = failed(w)
    assert got["case-gpu-health"] == (
        f"the scheduler handed {NODE}/gpu-0, tainted gpu.nvidia.com/xid=48:NoSchedule since 2026-11-29T21:29:00Z, "
        f"to claim {claim_of(0)} of pod {fx.pod_name('gpus', 0)} at 2026-11-29T21:30:05+00:00 without a toleration")
    assert "tainted gpu.nvidia.com/xid=48:NoSchedule without a toleration" in got["claims-allocated"]  # they agree


def test_a_device_tainted_while_held_fails() -> None:
    w = world()
    taint(w, NODE, "gpu-1", xid("2026-11-29T21:30:20Z"))
    assert failed(w)["case-gpu-health"] == (
        f"{NODE}/gpu-1 turned unhealthy while claim {claim_of(1)} of pod {fx.pod_name('gpus', 1)} held it: tainted "
        "gpu.nvidia.com/xid=48:NoSchedule at 2026-11-29T21:30:20Z")


def test_a_taint_after_the_claim_gave_the_device_back_passes_the_case() -> None:
    w = world()
    taint(w, NODE, "gpu-1", xid("2026-11-29T21:31:00Z"))
    assert results(w)["case-gpu-health"].status == PASSED


def test_without_time_added_the_final_slices_judge() -> None:
    w = world()
    taint(w, NODE, "gpu-0", xid(None))
    assert failed(w)["case-gpu-health"] == (
        f"claim {claim_of(0)} of pod {fx.pod_name('gpus', 0)} held {NODE}/gpu-0, which the final slices taint "
        "gpu.nvidia.com/xid=48:NoSchedule (no timeAdded: cannot tell when)")


def test_without_the_allocation_time_a_taint_before_release_fails() -> None:
    w = world()
    for c in w.snap.claims:
        c["metadata"].pop("managedFields")
    taint(w, NODE, "gpu-0", xid("2026-11-29T21:29:00Z"))
    assert failed(w)["case-gpu-health"].endswith("(when the claim got it is not recorded)")


def test_a_tolerated_taint_and_an_informational_one_pass() -> None:
    w = world()
    c = w.obj("ResourceClaim", claim_of(0))
    c["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [
        {"key": "gpu.nvidia.com/xid", "operator": "Exists", "effect": "NoSchedule"}]
    taint(w, NODE, "gpu-0", xid("2026-11-29T21:29:00Z"))
    taint(w, NODE, "gpu-1", {"key": "gpu.nvidia.com/unmonitored", "effect": "None", "timeAdded": ALLOCATED})
    got = results(w)["case-gpu-health"]
    assert got.status == PASSED
    assert got.message.endswith(f"{NODE}/gpu-0 (gpu.nvidia.com/xid=48:NoSchedule); "
                                f"{NODE}/gpu-1 (gpu.nvidia.com/unmonitored:None)")


def test_an_earlier_allocation_in_the_claim_history_counts() -> None:
    """A claim first allocated gpu-1, then deallocated and allocated gpu-0: gpu-1's taint, added while that
    first version held it, fails the run though the final claim never names gpu-1."""
    w = world()
    final = w.obj("ResourceClaim", claim_of(0))
    first = {**final, "metadata": {**final["metadata"], "resourceVersion": "1", "managedFields": [
        {"manager": "kai-scheduler", "operation": "Update", "subresource": "status", "time": "2026-11-29T21:30:02Z"}]},
        "status": {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": fx.DRIVER, "pool": NODE, "device": "gpu-1"}]}}}}
    dropped = {**final, "metadata": {**final["metadata"], "resourceVersion": "2", "managedFields": [
        {"manager": "kai-scheduler", "operation": "Update", "subresource": "status", "time": "2026-11-29T21:30:04Z"}]},
        "status": {}}
    w.snap.claim_history = [{"type": "ADDED", "object": first}, {"type": "MODIFIED", "object": dropped},
                            {"type": "MODIFIED", "object": final}]
    taint(w, NODE, "gpu-1", xid("2026-11-29T21:30:03Z"))
    msg = " | ".join(results(w)["case-gpu-health"].details)
    assert f"{NODE}/gpu-1 turned unhealthy while claim {claim_of(0)} of pod {fx.pod_name('gpus', 0)} held it" in msg
    # Tainted after that version gave it back (and while pod 1 held it): only pod 1's holding fails.
    w.obj("ResourceSlice", f"{NODE}-gpu.nvidia.com-7xk2p")["spec"]["devices"][1]["taints"] = [
        xid("2026-11-29T21:30:10Z")]
    details = results(w)["case-gpu-health"].details
    assert details == [f"{NODE}/gpu-1 turned unhealthy while claim {claim_of(1)} of pod {fx.pod_name('gpus', 1)} "
                       "held it: tainted gpu.nvidia.com/xid=48:NoSchedule at 2026-11-29T21:30:10Z"]


def test_nothing_allocated_fails() -> None:
    w = world()
    for c in w.snap.claims:
        c["status"] = {}
    assert failed(w)["case-gpu-health"].startswith("no claim of the run held a device")


# --- settings -> expectations -----------------------------------------------------------------


def test_on_with_gpu_health_and_through_the_engine_json() -> None:
    raw = {**sf.AWS, "gpuStack": {"gpuHealth": True}}
    plan = sf.plan(raw)
    assert plan.expectations.gpu_health is True
    assert plan.values["gpuHealth"] == {"enabled": True}
    assert Expectations.from_dict(plan.expectations.to_dict()).gpu_health is True
    off = sf.plan(raw, gpuHealth=False)
    assert off.expectations.gpu_health is False and off.values["gpuHealth"] == {"enabled": False}
    assert off.run_id != plan.run_id


def test_off_by_default_where_device_taints_are_alpha() -> None:
    plan = sf.plan(sf.AWS)
    assert plan.expectations.gpu_health is False
    assert plan.values["gpuHealth"] == {"enabled": False}


def test_asking_for_the_case_without_gpu_health_is_refused() -> None:
    with pytest.raises(SettingsError) as err:
        sf.settings(sf.AWS, gpuHealth=True)
    assert "settings.smokeTest.gpuHealth" in dict(err.value.problems)


# --- device taints judged by time, over every slice version seen (issue 45) -------------------------

CREATED = "2026-11-29T21:30:00Z"  # the run's pods
BEFORE, WHILE_HELD, AFTER_RELEASE = "2026-11-29T21:29:00Z", "2026-11-29T21:30:20Z", "2026-11-29T21:31:00Z"
HELD, NOT_HELD = (NODE, "gpu-0"), (fx.NODES[0], "gpu-0")  # pod 0's device; a device no claim of the run got
ON_AND_OFF = (True, False)


@pytest.mark.parametrize(("device", "at", "where", "fails_on", "fails_off"), [
    (HELD, BEFORE, "final", {"case-gpu-health", "claims-allocated"}, {"claims-allocated", "resource-slices"}),
    (HELD, WHILE_HELD, "final", {"case-gpu-health"}, set()),
    (HELD, WHILE_HELD, "seen", {"case-gpu-health"}, set()),       # came and went while held
    (HELD, AFTER_RELEASE, "final", set(), set()),                 # a failure nowhere
    (HELD, AFTER_RELEASE, "seen", set(), set()),
    (NOT_HELD, BEFORE, "final", set(), {"resource-slices"}),      # the run started with a sick GPU
    (NOT_HELD, BEFORE, "seen", set(), {"resource-slices"}),
    (NOT_HELD, AFTER_RELEASE, "final", set(), set()),
], ids=["held-before", "held-while", "held-while-seen", "held-after", "held-after-seen", "idle-before",
        "idle-before-seen", "idle-after"])
def test_a_taint_is_judged_by_when_it_came_in_every_check(device: tuple[str, str], at: str, where: str,
                                                          fails_on: set[str], fails_off: set[str]) -> None:
    for gpu_health, want in zip(ON_AND_OFF, (fails_on, fails_off), strict=True):
        w = world()
        w.exp = replace(w.exp, gpu_health=gpu_health)
        for p in w.snap.pods:
            p["metadata"]["creationTimestamp"] = CREATED
        if where == "final":
            taint(w, *device, xid(at))
        else:  # only an earlier slice version had it: the runner's watch saw it (collect.TaintRecorder)
            w.snap.taints_seen = [{"pool": device[0], "device": device[1], "taint": xid(at)}]
        assert set(failed(w)) == want, (gpu_health, failed(w))


def test_the_taint_recorder_keeps_every_taint_of_the_driver_once() -> None:
    from components.smoke.collect import TaintRecorder

    rec = TaintRecorder(None, "resource.k8s.io/v1", "gpu.nvidia.com")  # type: ignore[arg-type]
    sl = {"spec": {"driver": "gpu.nvidia.com", "pool": {"name": NODE}, "devices": [
        {"name": "gpu-0", "taints": [xid(WHILE_HELD)]}, {"name": "gpu-1"}]}}
    rec.record(sl)
    rec.record(sl)  # the same version again (a list after a watch)
    rec.record({"spec": {"driver": "compute-domain.nvidia.com", "pool": {"name": NODE}, "devices": [
        {"name": "channel-0", "taints": [xid(WHILE_HELD)]}]}})
    rec.record({"kind": "ResourceClaim", "status": {}})  # not a slice at all
    assert rec.seen() == [{"pool": NODE, "device": "gpu-0", "taint": xid(WHILE_HELD)}]

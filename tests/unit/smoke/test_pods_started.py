"""The `pods-started` hop: a scheduled pod's containers started, else the first hop that failed, in
the kubelet's words (claim prepare, sandbox, image pull, container create with its CDI devices)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.smoke.snapshot import start_failure
from components.smoke.verifier import FAILED, PASSED, SKIPPED, verify
from tests.unit.smoke import fixtures as fx


def pod(waiting: tuple[str, str] | None = None, state: str | None = None, phase: str = "Pending") -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if waiting:
        status["containerStatuses"] = [{"name": "probe", "state": {"waiting": {"reason": waiting[0],
                                                                               "message": waiting[1]}}}]
    elif state:
        status["containerStatuses"] = [{"name": "probe", "state": {state: {}}}]
    return {"metadata": {"name": "p"}, "spec": {"nodeName": "n"}, "status": status}


def event(reason: str, message: str) -> dict[str, Any]:
    return {"reason": reason, "message": message, "involvedObject": {"kind": "Pod", "name": "p"}}


@pytest.mark.parametrize(("the_pod", "events", "want"), [
    (pod(), [event("FailedPrepareDynamicResources", "driver not registered")],
     "claim prepare (kubelet -> DRA kubelet plugin NodePrepareResources): driver not registered"),
    (pod(), [event("FailedCreatePodSandBox", "cni failed")], "pod sandbox (container runtime, CNI): cni failed"),
    (pod(("ImagePullBackOff", "back-off")), [], "image pull: container probe ImagePullBackOff: back-off"),
    (pod(("ErrImageNeverPull", "absent")), [], "image pull: container probe ErrImageNeverPull: absent"),
    (pod(("CreateContainerError", "CDI device injection failed")), [],
     "container create (runtime, CDI devices): container probe CreateContainerError: CDI device injection failed"),
    # The current waiting reason is what is wrong now; an old prepare event was a retry that worked.
    (pod(("ErrImagePull", "no such host")), [event("FailedPrepareDynamicResources", "old")],
     "image pull: container probe ErrImagePull: no such host"),
    # Started containers, or a pod that is simply not there yet, have failed nothing.
    (pod(state="running", phase="Running"), [event("FailedPrepareDynamicResources", "old")], ""),
    (pod(state="terminated", phase="Succeeded"), [], ""),
    (pod(("ContainerCreating", "")), [], ""),
    (pod(), [], ""),
])
def test_start_failure_names_the_hop(the_pod: dict[str, Any], events: list[dict[str, Any]], want: str) -> None:
    assert start_failure(the_pod, events) == want


def results(world: fx.World) -> dict[str, Any]:
    return {r.name: r for r in verify(world.exp, world.snap)}


def test_started_pods_pass_and_kwok_nodes_skip() -> None:
    ok = results(fx.real_world())["pods-started"]
    assert ok.status == PASSED and ok.hop == "kubelet" and ok.message.startswith("2 pod(s) started")
    kwok = results(fx.kwok_world())["pods-started"]
    assert kwok.status == SKIPPED and kwok.message == "no kubelet on simulated nodes"


def test_a_pod_whose_claim_was_not_prepared_fails_naming_its_node_and_the_plugin() -> None:
    w = fx.real_world()
    stuck = w.snap.pods[0]
    stuck["status"] = {"phase": "Pending", "containerStatuses": [
        {"name": "probe", "state": {"waiting": {"reason": "ContainerCreating"}}}]}
    w.snap.events.append({**event("FailedPrepareDynamicResources", "DRA driver gpu.nvidia.com is not registered"),
                          "involvedObject": {"kind": "Pod", "name": stuck["metadata"]["name"]}})
    r = results(w)["pods-started"]
    assert r.status == FAILED
    assert r.message == (f"pod {stuck['metadata']['name']} on {stuck['spec']['nodeName']}: claim prepare (kubelet -> "
                         "DRA kubelet plugin NodePrepareResources): DRA driver gpu.nvidia.com is not registered")


def test_a_scheduled_pod_with_nothing_reported_is_not_a_pass() -> None:
    w = fx.real_world()
    p = w.snap.pods[1]
    p["status"] = {"phase": "Pending"}
    r = results(w)["pods-started"]
    assert r.status == FAILED and "containers not started (Pending), no failure reported yet" in r.message


def test_unscheduled_pods_are_left_to_the_scheduling_hops() -> None:
    w = fx.real_world()
    for p in w.snap.pods:
        p["spec"] = {k: v for k, v in copy.deepcopy(p["spec"]).items() if k != "nodeName"}
        p["status"] = {"phase": "Pending"}
    r = results(w)["pods-started"]
    assert r.status == FAILED and r.message == "no scheduled pod to look at"

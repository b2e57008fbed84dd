"""The GPU Operator's gate against a stand-in of the operator's status writes (tests/fakes/gpu_operator).

Each test runs the gate the program REGISTERS (found under the mock engine, its provider looked up
by the registered type) against a loopback API whose ClusterPolicy, nodes and DaemonSets the
stand-in keeps, so a gate that reads the wrong field passes here exactly when it would in a
cluster. Issue 26, defects 1 and 2: `state: ready` with reason NFDLabelsMissing or NoGPUNodes, too
few GPU nodes, a stale `ready` right after a change, and a values-only change that never re-waited.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

import pytest

from components.addons.addon_set import AddonSet
from components.k8s_ready import sha256
from components.kube import wait
from components.plan.mockengine import run_program
from components.settings import Settings
from tests.fakes.gpu_operator.clusterpolicy import GPU_PCI_LABELS, OperatorStandIn, Store, routes
from tests.fakes.gpu_operator.runner import Clock, Reconciler
from tests.unit.addons.helpers import StandInCluster, by_name, settings
from tests.unit.platforms.fake_api import FakeApi

GATE = "gpu-gpu-operator-cluster-policy-ready"
# The provider behind each type the gate has had (the program registers one of them).
PROVIDERS = {
    "pulumi-python:dynamic/ck8s-gpu:WaitFor": ("components.k8s_wait", "_WaitForProvider"),
    "pulumi-python:dynamic/ck8s-gpu:ClusterPolicyReady": ("components.addons.cluster_policy_ready",
                                                         "_ClusterPolicyReadyProvider"),
}
NFD_GPU = {GPU_PCI_LABELS[0]: "true", "feature.node.kubernetes.io/system-os_release.ID": "ubuntu"}
NFD_CPU = {"feature.node.kubernetes.io/system-os_release.ID": "ubuntu"}
SPEC = {"driver": {"enabled": True, "version": "580.95.05"}, "toolkit": {"enabled": True}}


pytestmark = pytest.mark.usefixtures("quick_backoff")  # tests/unit/conftest.py


@pytest.fixture
def backoff_seconds() -> float:
    """quick_backoff's pause in this module: its gates poll at 0.02 s, not the shared 0.01 s."""
    return 0.02


def Operator(store: Store, delay: float = 0.0) -> Reconciler:
    """The ClusterPolicy stand-in, run as the operator's work queue runs it (tests/fakes/gpu_operator/runner.py)."""
    return Reconciler(OperatorStandIn(store, Clock()), delay)


def registered_gate(s: Settings) -> tuple[Any, dict[str, Any]]:
    """(provider, inputs) of the ClusterPolicy gate the AddonSet registers for these settings."""
    def program() -> None:
        AddonSet("gpu", s, StandInCluster(s))

    gate = by_name(run_program(program, {}, stack="test"))[GATE]
    module, cls = PROVIDERS[gate.type]
    return getattr(importlib.import_module(module), cls)(), dict(gate.inputs)


def run_gate(s: Settings, store: Store, *, timeout: float = 1.5, settle: float = 0.4) -> dict[str, Any]:
    provider, inputs = registered_gate(s)
    with FakeApi(routes(store)) as api:  # type: ignore[arg-type]
        props = {**inputs, "kubeconfig": api.kubeconfig(), "timeoutSeconds": timeout, "settleSeconds": settle}
        return dict(provider.create(props).outs)


def two_node_pool() -> Settings:
    return settings("aws", nodePools=[{"name": "gpu", "minSize": 2, "desiredSize": 2, "maxSize": 2}])


def installed(store: Store, nodes: dict[str, dict[str, str]]) -> Store:
    store.put_policy(SPEC)
    for name, labels in nodes.items():
        store.node(name, labels)
    return store


# ---------------------------------------------------------------------------- defect 1


def test_ready_with_no_nfd_labels_is_not_ready() -> None:
    """A GPU node joined but NFD never labelled it (its worker did not tolerate the pool's taint):
    the operator says `ready` with reason NFDLabelsMissing; the gate refuses it and says why."""
    store = installed(Store(), {"gpu-0": {}})
    with Operator(store), pytest.raises(wait.WaitTimeout) as exc:
        run_gate(settings("aws"), store)
    assert store.policy and store.policy["status"]["state"] == "ready"  # the stand-in said ready
    assert "reason 'NFDLabelsMissing': No NFD labels found" in str(exc.value)
    assert "0 GPU node(s) labelled nvidia.com/gpu.present=true, expected at least 1" in str(exc.value)


def test_ready_with_no_gpu_node_is_not_ready() -> None:
    store = installed(Store(), {"cpu-0": NFD_CPU})
    with Operator(store), pytest.raises(wait.WaitTimeout, match="reason 'NoGPUNodes': No GPU node found"):
        run_gate(settings("aws"), store)


# The set alone, without the aws cluster's node classes (the wiring's): its NodePools are left out.
NO_NODE_CLASSES = {"addons": {"karpenterNodepools": {"enabled": False}}}


def autoscaled_from_zero() -> Settings:
    return settings("aws", nodePools=[{"name": "gpu", "instanceType": "g6.xlarge", "autoscaling": {"maxSize": 3}}],
                    gpuStack=NO_NODE_CLASSES)


def test_where_every_gpu_node_is_the_autoscalers_no_gpu_node_yet_is_ready() -> None:
    """ADR 0049: no job queued, no GPU node launched; the operator's verdict ready/NoGPUNodes is then
    the whole truth, and `up` must not wait for nodes nothing asked for."""
    store = installed(Store(), {"cpu-0": NFD_CPU})
    with Operator(store):
        outs = run_gate(autoscaled_from_zero(), store)
    assert outs["gpuNodes"] == 0 and "Ready/NoGPUNodes, 0 GPU node(s)" in outs["observed"]


def test_an_autoscaled_pool_with_a_floor_still_waits_for_its_floor() -> None:
    s = settings("aws", nodePools=[{"name": "gpu", "instanceType": "g6.xlarge",
                                    "autoscaling": {"minSize": 1, "maxSize": 3}}], gpuStack=NO_NODE_CLASSES)
    store = installed(Store(), {"cpu-0": NFD_CPU})
    with Operator(store), pytest.raises(wait.WaitTimeout, match="reason 'NoGPUNodes'"):
        run_gate(s, store)


def test_an_autoscaled_node_once_there_must_be_reconciled_like_any() -> None:
    store = installed(Store(), {"gpu-0": NFD_GPU})
    store.daemonset("nvidia-driver-daemonset", desired=1, ready=False)
    with Operator(store), pytest.raises(wait.WaitTimeout, match="nvidia-driver-daemonset"):
        run_gate(autoscaled_from_zero(), store)


def test_fewer_gpu_nodes_than_the_pools_hold_is_not_ready() -> None:
    store = installed(Store(), {"gpu-0": NFD_GPU, "gpu-1": {}})
    with Operator(store), pytest.raises(wait.WaitTimeout, match=r"1 GPU node.*expected at least 2 \(gpu-0\)"):
        run_gate(two_node_pool(), store)
    assert store.policy and store.policy["status"]["conditions"][0]["reason"] == "Reconciled"


def test_a_hand_set_gpu_label_does_not_count() -> None:
    """The operator resets nvidia.com/gpu.present on a node without NFD's PCI labels."""
    store = installed(Store(), {"gpu-0": NFD_GPU, "gpu-1": {**NFD_CPU, "nvidia.com/gpu.present": "true"}})
    with Operator(store), pytest.raises(wait.WaitTimeout, match="expected at least 2"):
        run_gate(two_node_pool(), store)


def test_reconciled_onto_every_gpu_node_passes() -> None:
    store = installed(Store(), {"gpu-0": NFD_GPU, "gpu-1": NFD_GPU})
    store.daemonset("nvidia-driver-daemonset", desired=2)
    with Operator(store):
        outs = run_gate(two_node_pool(), store)
    assert outs["gpuNodes"] == 2 and "Reconciled" in outs["observed"]


def test_an_operand_not_rolled_out_holds_the_gate_with_the_operator_message() -> None:
    store = installed(Store(), {"gpu-0": NFD_GPU})
    store.daemonset("nvidia-driver-daemonset", desired=1, ready=False)
    with Operator(store), pytest.raises(wait.WaitTimeout) as exc:
        run_gate(settings("aws"), store)
    text = str(exc.value)
    assert "state is 'notReady' (OperandNotReady: ClusterPolicy is not ready; states not ready: " \
           "['nvidia-driver-daemonset'])" in text
    assert "DaemonSet nvidia-driver-daemonset: 1 of 1 pod(s) unavailable" in text


# ---------------------------------------------------------------------------- defect 2


def reconciled(nodes: int = 1) -> Store:
    """A cluster the operator reconciled before the change: state ready, reason Reconciled."""
    store = installed(Store(), {f"gpu-{i}": NFD_GPU for i in range(nodes)})
    store.daemonset("nvidia-driver-daemonset", desired=nodes)
    op = OperatorStandIn(store, Clock())
    op.reconcile()
    return store


def test_a_stale_ready_right_after_a_change_does_not_pass() -> None:
    """Helm changed the spec; the operator reacts a moment later (its watch, its pod restarting):
    it rolls the driver DaemonSet, which writes notReady, then ready once the rollout is done.
    The gate must return only after that, never on the `ready` left from before the change."""
    store = reconciled()
    store.put_policy({**SPEC, "driver": {"enabled": True, "version": "580.105.08"}})
    rollout: dict[str, float] = {}

    def operator_rolls_the_driver(s: Store) -> None:
        ds = s.daemonsets["nvidia-driver-daemonset"]
        if "started" not in rollout:  # first reconcile of the new spec: the DaemonSet is updated
            rollout["started"] = time.monotonic()
            s.daemonset("nvidia-driver-daemonset", desired=1, ready=False, generation=2)
        elif time.monotonic() - rollout["started"] > 0.3 and ds["status"]["numberUnavailable"]:
            s.daemonset("nvidia-driver-daemonset", desired=1, ready=True, generation=2)
            rollout["done"] = time.monotonic()

    with Operator(store, delay=0.3) as op:
        op.on_reconcile = operator_rolls_the_driver
        run_gate(settings("aws"), store, timeout=5, settle=2)
        returned = time.monotonic()
    assert "done" in rollout and returned >= rollout["done"], "the gate passed on the status from before the change"


def test_a_change_that_moves_nothing_passes_after_the_settle_window() -> None:
    """No operand changes, so the operator writes nothing: the gate passes once the verdict held
    for the settle window, not at once, and not never."""
    store = reconciled()
    writes = store.status_writes
    store.put_policy({**SPEC, "toolkit": {"enabled": True, "env": [{"name": "X", "value": "1"}]}})
    with Operator(store, delay=0.05):
        t0 = time.monotonic()
        outs = run_gate(settings("aws"), store, timeout=5, settle=0.5)
    assert time.monotonic() - t0 >= 0.5 and store.status_writes == writes
    assert "unchanged for" in outs["observed"]


def _values_only_change() -> Settings:
    return settings("aws", gpuStack={"addons": {"gpuOperator": {"values": {"driver": {"version": "580.105.08"}}}}})


def test_a_values_only_change_waits_again() -> None:
    provider, before = registered_gate(settings("aws"))
    _, after = registered_gate(_values_only_change())
    outs = {**before, "kubeconfigSha256": sha256(str(before["kubeconfig"]))}  # what create() recorded
    assert provider.diff("id", outs, {**after, "kubeconfig": before["kubeconfig"]}).changes is True
    assert provider.diff("id", outs, {**before}).changes is False


def test_gate_inputs_and_program_wiring() -> None:
    _, inputs = registered_gate(two_node_pool())
    assert inputs["minGpuNodes"] == 2 and inputs["objectName"] == "cluster-policy"
    _, auto = registered_gate(settings("aws", nodePools=[{"name": "gpu", "minSize": 1, "desiredSize": 3,
                                                         "maxSize": 5, "ignoreScalingChanges": True}]))
    assert auto["minGpuNodes"] == 1  # an autoscaler owns the size: wait for the minimum


def test_a_capacity_block_pool_counts_from_its_blocks_start() -> None:
    """AWS launches a block's instances only once it is active: before its start the gate must not
    wait for them (it would time out), from its start it must."""
    from datetime import UTC, datetime

    from components.addons.cluster_policy_ready import nodes_due

    block = {"name": "h100", "instanceType": "p5.48xlarge", "minSize": 2, "desiredSize": 2, "maxSize": 2,
             "availabilityZone": "eu-west-1a",
             "capacityReservation": {"id": "cr-0123456789abcdef0", "marketType": "capacity-block",
                                     "startsAt": "2026-12-03T08:00Z"}}
    s = settings("aws", network={"availabilityZones": ["eu-west-1a", "eu-west-1b"]},
                 nodePools=[{"name": "l40s", "instanceType": "g6e.12xlarge", "desiredSize": 1}, block])
    provider, inputs = registered_gate(s)
    assert inputs["minGpuNodes"] == 1 and inputs["laterGpuNodes"] == [[2, "2026-12-03T08:00Z"]]
    assert nodes_due(1, inputs["laterGpuNodes"], datetime(2026, 12, 3, 7, 59, tzinfo=UTC)) == 1
    assert nodes_due(1, inputs["laterGpuNodes"], datetime(2026, 12, 3, 8, 0, tzinfo=UTC)) == 3
    # A stack without such a pool keeps the inputs it had: no re-check from this change alone.
    _, plain = registered_gate(two_node_pool())
    assert "laterGpuNodes" not in plain
    outs = {**plain, "kubeconfigSha256": sha256(str(plain["kubeconfig"]))}
    assert provider.diff("id", outs, {**plain}).changes is False

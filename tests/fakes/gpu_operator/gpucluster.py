"""The GPU Operator's GPUCluster controller as far as its status and node labels go, at the pin.

Built from NVIDIA/gpu-operator v26.7.0 (commit 10ee5b3). Each rule names the file it models:

- controllers/gpucluster_controller.go Reconcile: `validatePrerequisites` first: a ClusterPolicy
  exists -> state notReady, Ready=False/Error, Error=True reason PrerequisiteNotMet with
  `A ClusterPolicy CR "<name>" exists; a ClusterPolicy CR and GPUCluster CR may not exist at the
  same time`, requeue after 1 min. Then the states sync; not ready -> state notReady and Error=True
  with reason ReconcileFailed (`Error syncing state <name>: <err>`, a state that failed) or
  OperandNotReady (`Waiting for operand pods to be ready`), requeue after 5 s; ready -> state ready
  and Ready=True reason Reconciled `All resources have been successfully reconciled`, requeue after
  1 min (its periodic resync).
- updateCRStatus writes `state` (and the namespace) only when it changed; the conditions
  (internal/conditions/gpucluster.go) are meta.SetStatusCondition without observedGeneration, so a
  write that changes nothing is a no-op the API server does not persist (Store.write_status).
- SetupWithManager: the GPUCluster watch passes only generation changes (GenerationChangedPredicate):
  `pending` is that work queue.
- internal/state/state_skel.go, the DaemonSet readiness of the GPUCluster's states: 0 desired, 0
  current, 0 misscheduled with the generation observed is ready; else desired != 0 and every desired
  pod available and updated (the generation is not compared there).
- controllers/nodelabeling_controller.go: `nvidia.com/gpu.present` follows NFD's PCI labels (a
  hand-set one is reset); in GPUCluster mode a GPU node gets the DRA stack's deploy labels
  (controllers/state_manager.go gpuClusterStateLabels), `nvidia.com/gpu.deploy.dra-driver=true`
  among them, which the kubelet plugin's DaemonSet selects (manifests/state-dra-driver/0500_daemonset.yaml).

The kubelet plugin's DaemonSet is scheduled by this stand-in where the label is (desired = those
nodes); its rollout is given by the test (`rolled_out`). Not modelled: the DRA objects themselves
(DeviceClasses, the validator, the admission policy), the finalizer and deletion, NVIDIADriver.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.gpu_operator.clusterpolicy import GPU_PCI_LABELS, GPU_PRESENT, _set_condition

Obj = dict[str, Any]

NAME = "gpu-cluster"
UID = "uid-gpu-cluster"
NAMESPACE = "gpu-operator"
DRA_DRIVER_LABEL = "nvidia.com/gpu.deploy.dra-driver"
KUBELET_PLUGIN = "nvidia-dra-driver-kubelet-plugin"
REQUEUE_NOT_READY = 5.0
REQUEUE_READY = 60.0
REQUEUE_PREREQUISITE = 60.0


@dataclass
class Store:
    """The API objects the controller reads and writes, with the API server's resourceVersions."""

    cluster: Obj | None = None
    cluster_policy: str | None = None  # the name of a ClusterPolicy that exists, if one does
    nodes: dict[str, Obj] = field(default_factory=dict)
    daemonsets: dict[str, Obj] = field(default_factory=dict)
    rolled_out: bool = True  # whether the kubelet plugin's pods are up on every node it targets
    rv: int = 1
    status_writes: int = 0

    def bump(self, obj: Obj) -> None:
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)

    def put_cluster(self, spec: Obj) -> None:
        """A spec write (Helm): generation +1 when the spec changed, status kept."""
        if self.cluster is None:
            self.cluster = {"apiVersion": "nvidia.com/v1alpha1", "kind": "GPUCluster",
                            "metadata": {"name": NAME, "uid": UID, "generation": 1}, "spec": copy.deepcopy(spec)}
        elif self.cluster.get("spec") != spec:
            self.cluster["spec"] = copy.deepcopy(spec)
            self.cluster["metadata"]["generation"] += 1
        else:
            return
        self.bump(self.cluster)

    def write_status(self, status: Obj) -> bool:
        assert self.cluster is not None
        if self.cluster.get("status") == status:
            return False
        self.cluster["status"] = copy.deepcopy(status)
        self.bump(self.cluster)
        self.status_writes += 1
        return True

    def node(self, name: str, labels: dict[str, str]) -> None:
        self.nodes[name] = {"metadata": {"name": name, "labels": dict(labels)}, "status": {}}
        self.bump(self.nodes[name])


def daemonset_ready(ds: Obj) -> bool:
    """internal/state/state_skel.go at v26.7.0 (the GPUCluster's states)."""
    st = ds.get("status") or {}
    desired = st.get("desiredNumberScheduled") or 0
    if (st.get("observedGeneration", 0) >= ds["metadata"].get("generation", 0) and desired == 0
            and not st.get("numberMisscheduled") and not st.get("currentNumberScheduled")):
        return True
    return bool(desired) and desired == st.get("numberAvailable") and st.get("updatedNumberScheduled") == st.get(
        "numberAvailable")


@dataclass
class GpuClusterStandIn:
    store: Store
    clock: Any  # .now() -> RFC 3339 string for lastTransitionTime
    seen_generation: int = 0
    reconciles: int = 0

    def pending(self) -> bool:
        c = self.store.cluster
        return c is not None and c["metadata"]["generation"] != self.seen_generation

    def label_nodes(self) -> None:
        """nodelabeling_controller.go in GPUCluster mode: gpu.present from NFD, the DRA deploy labels."""
        for node in self.store.nodes.values():
            labels = node["metadata"]["labels"]
            before = dict(labels)
            gpu = any(labels.get(k) == "true" for k in GPU_PCI_LABELS)
            if gpu:
                labels[GPU_PRESENT] = "true"
                labels[DRA_DRIVER_LABEL] = "true"
            else:
                if GPU_PRESENT in labels:
                    labels[GPU_PRESENT] = "false"
                labels.pop(DRA_DRIVER_LABEL, None)  # removeAllGPUStateLabels
            if labels != before:
                self.store.bump(node)

    def schedule_plugin(self) -> None:
        """The state-dra-driver DaemonSet, owned by the GPUCluster, on the labelled nodes."""
        targets = sum(1 for n in self.store.nodes.values() if n["metadata"]["labels"].get(DRA_DRIVER_LABEL) == "true")
        up = targets if self.store.rolled_out else 0
        owner = [{"kind": "GPUCluster", "name": NAME, "uid": UID, "controller": True}]
        self.store.daemonsets[KUBELET_PLUGIN] = {
            "metadata": {"name": KUBELET_PLUGIN, "namespace": NAMESPACE, "generation": 1, "ownerReferences": owner},
            "status": {"desiredNumberScheduled": targets, "currentNumberScheduled": targets, "observedGeneration": 1,
                       "updatedNumberScheduled": up, "numberAvailable": up, "numberUnavailable": targets - up}}
        self.store.bump(self.store.daemonsets[KUBELET_PLUGIN])

    def reconcile(self) -> float | None:
        """One Reconcile; returns RequeueAfter seconds."""
        c = self.store.cluster
        if c is None:
            return None
        self.reconciles += 1
        self.seen_generation = c["metadata"]["generation"]
        now = self.clock.now()
        if self.store.cluster_policy is not None:
            self._state("notReady")
            # Go's %q: the name in double quotes.
            self._error("PrerequisiteNotMet", f'A ClusterPolicy CR "{self.store.cluster_policy}" exists; a '
                                              "ClusterPolicy CR and GPUCluster CR may not exist at the same time", now)
            return REQUEUE_PREREQUISITE
        self.label_nodes()
        self.schedule_plugin()
        if not all(daemonset_ready(ds) for ds in self.store.daemonsets.values()):
            self._state("notReady")
            self._error("OperandNotReady", "Waiting for operand pods to be ready", now)
            return REQUEUE_NOT_READY
        self._state("ready")
        status = copy.deepcopy(self.store.cluster.get("status") or {})
        conds = status.setdefault("conditions", [])
        _set_condition(conds, {"type": "Ready", "status": "True", "reason": "Reconciled",
                               "message": "All resources have been successfully reconciled"}, now)
        _set_condition(conds, {"type": "Error", "status": "False", "reason": "Ready"}, now)
        self.store.write_status(status)
        return REQUEUE_READY

    def _state(self, state: str) -> None:
        assert self.store.cluster is not None
        status = copy.deepcopy(self.store.cluster.get("status") or {})
        if status.get("state") == state:
            return
        status["state"] = state
        status["namespace"] = NAMESPACE
        self.store.write_status(status)

    def _error(self, reason: str, message: str, now: str) -> None:
        """internal/conditions/gpucluster.go SetConditionsError: Ready False/Error, Error True/<reason>."""
        assert self.store.cluster is not None
        status = copy.deepcopy(self.store.cluster.get("status") or {})
        conds = status.setdefault("conditions", [])
        _set_condition(conds, {"type": "Ready", "status": "False", "reason": "Error"}, now)
        _set_condition(conds, {"type": "Error", "status": "True", "reason": reason, "message": message}, now)
        self.store.write_status(status)


def routes(store: Store) -> dict[str, Any]:
    """The GET paths the gate reads, answered from the store (for tests.unit.platforms.fake_api)."""
    def cluster() -> tuple[int, Any]:
        return (404, {"kind": "Status", "reason": "NotFound"}) if store.cluster is None else (200, store.cluster)

    return {
        "/apis/nvidia.com/v1alpha1/gpuclusters/gpu-cluster": cluster,
        "/api/v1/nodes": lambda: (200, {"items": list(store.nodes.values())}),
        "/apis/apps/v1/namespaces/gpu-operator/daemonsets": lambda: (200, {"items": list(store.daemonsets.values())}),
    }

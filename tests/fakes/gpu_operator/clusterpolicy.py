"""The GPU Operator's ClusterPolicy controller as far as its status and node labels go, at the pin.

Built from NVIDIA/gpu-operator v26.7.0 (commit 10ee5b3). Each rule names the file it models:

- controllers/clusterpolicy_controller.go Reconcile: the state loop; any operand not ready ->
  state notReady, Ready=False/Error, Error=True reason OperandNotReady with
  "ClusterPolicy is not ready; states not ready: [...]", requeue after 5 s; all ready but no node
  has any `feature.node.kubernetes.io/` label -> state ready, Ready=True reason NFDLabelsMissing
  "No NFD labels found", requeue after 45 s; else state ready and Ready=True with reason
  NoGPUNodes (no node labelled nvidia.com/gpu.present=true) or Reconciled, no requeue.
- updateCRState: `state` is written only when it differs; internal/conditions/clusterpolicy.go:
  the conditions are a second Status().Update, meta.SetStatusCondition keeping lastTransitionTime
  unless the condition's status flips. An update that changes nothing is a no-op the API server
  does not persist (no new resourceVersion): Store.write_status models that.
- SetupWithManager: the ClusterPolicy watch passes only generation changes
  (TypedGenerationChangedPredicate): a status write never triggers a reconcile, a spec change
  does; `pending` below is that work queue.
- state_manager.go discoverGPUNodes / hasNFDLabels / hasCommonGPULabel, and
  nodelabeling_controller.go: `nvidia.com/gpu.present` follows NFD's PCI labels
  (`feature.node.kubernetes.io/pci-10de.present` and the 0300/0302 class variants); a hand-set
  `true` on a node without them is reset to `false`.
- object_controls.go isDaemonSetReady: an operand DaemonSet with 0 desired pods is ready; else
  numberUnavailable 0, the generation observed, every desired pod updated and available.

The operands' DaemonSets are given to it (their status is what a DaemonSet controller writes).
Not modelled: the NVIDIADriver CRD path, the OS labels the first GPU node must carry, the
operands' own rendering (tests/integration and tools/compat_controllers.py run the real one).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]

NFD_PREFIX = "feature.node.kubernetes.io/"
GPU_PCI_LABELS = ("feature.node.kubernetes.io/pci-10de.present", "feature.node.kubernetes.io/pci-0302_10de.present",
                  "feature.node.kubernetes.io/pci-0300_10de.present")
GPU_PRESENT = "nvidia.com/gpu.present"
REQUEUE_NOT_READY = 5.0
REQUEUE_NFD_MISSING = 45.0


@dataclass
class Store:
    """The API objects the operator reads and writes, with the API server's resourceVersions."""

    policy: Obj | None = None
    nodes: dict[str, Obj] = field(default_factory=dict)
    daemonsets: dict[str, Obj] = field(default_factory=dict)
    rv: int = 1
    status_writes: int = 0  # persisted status updates (no-ops excluded)

    def bump(self, obj: Obj) -> None:
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)

    def put_policy(self, spec: Obj) -> None:
        """A spec write (Helm): generation +1 when the spec changed, status kept."""
        if self.policy is None:
            self.policy = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
                           "metadata": {"name": "cluster-policy", "uid": "uid-cluster-policy", "generation": 1},
                           "spec": copy.deepcopy(spec)}
        elif self.policy.get("spec") != spec:
            self.policy["spec"] = copy.deepcopy(spec)
            self.policy["metadata"]["generation"] += 1
        else:
            return
        self.bump(self.policy)

    def write_status(self, status: Obj) -> bool:
        """PUT .../status: persisted (new resourceVersion) only when it changes something."""
        assert self.policy is not None
        if self.policy.get("status") == status:
            return False
        self.policy["status"] = copy.deepcopy(status)
        self.bump(self.policy)
        self.status_writes += 1
        return True

    def node(self, name: str, labels: dict[str, str]) -> None:
        self.nodes[name] = {"metadata": {"name": name, "labels": dict(labels)}, "status": {}}
        self.bump(self.nodes[name])

    def daemonset(self, name: str, *, desired: int, ready: bool = True, generation: int = 1) -> None:
        st = {"desiredNumberScheduled": desired, "observedGeneration": generation,
              "updatedNumberScheduled": desired if ready else 0, "numberAvailable": desired if ready else 0,
              "numberUnavailable": 0 if ready else desired}
        owner = [{"kind": "ClusterPolicy", "name": "cluster-policy", "uid": "uid-cluster-policy"}]
        self.daemonsets[name] = {"metadata": {"name": name, "namespace": "gpu-operator", "generation": generation,
                                              "ownerReferences": owner}, "status": st}
        self.bump(self.daemonsets[name])


def _set_condition(conds: list[Obj], new: Obj, now: str) -> None:
    """apimachinery meta.SetStatusCondition: lastTransitionTime moves only when the status flips."""
    for c in conds:
        if c["type"] == new["type"]:
            if c["status"] != new["status"]:
                c["lastTransitionTime"] = now
            c.update({k: new.get(k, "") for k in ("status", "reason", "message")})
            return
    conds.append({**{"message": ""}, **new, "lastTransitionTime": now})


def daemonset_ready(ds: Obj) -> bool:
    """object_controls.go isDaemonSetReady (RollingUpdate operands)."""
    st = ds.get("status") or {}
    if not st.get("desiredNumberScheduled"):
        return True
    if st.get("numberUnavailable"):
        return False
    return (st.get("observedGeneration", 0) >= ds["metadata"].get("generation", 0)
            and st.get("updatedNumberScheduled") == st["desiredNumberScheduled"]
            and st.get("numberAvailable") == st["desiredNumberScheduled"])


@dataclass
class OperatorStandIn:
    store: Store
    clock: Any  # .now() -> RFC 3339 string for lastTransitionTime
    seen_generation: int = 0
    reconciles: int = 0

    def pending(self) -> bool:
        """Work the watch would queue: a generation the controller has not reconciled."""
        p = self.store.policy
        return p is not None and p["metadata"]["generation"] != self.seen_generation

    def label_nodes(self) -> None:
        """nodelabeling_controller.go: gpu.present from NFD's PCI labels."""
        for node in self.store.nodes.values():
            labels = node["metadata"]["labels"]
            gpu = any(labels.get(k) == "true" for k in GPU_PCI_LABELS)
            want = "true" if gpu else ("false" if GPU_PRESENT in labels else None)
            if want is not None and labels.get(GPU_PRESENT) != want:
                labels[GPU_PRESENT] = want
                self.store.bump(node)

    def reconcile(self) -> float | None:
        """One Reconcile; returns RequeueAfter seconds (None: no requeue)."""
        p = self.store.policy
        if p is None:
            return None
        self.reconciles += 1
        self.seen_generation = p["metadata"]["generation"]
        self.label_nodes()
        nodes = list(self.store.nodes.values())
        has_nfd = any(k.startswith(NFD_PREFIX) for n in nodes for k in n["metadata"]["labels"])
        has_gpu = any(n["metadata"]["labels"].get(GPU_PRESENT) == "true" for n in nodes)
        not_ready = sorted(name for name, ds in self.store.daemonsets.items() if not daemonset_ready(ds))
        now = self.clock.now()
        if not_ready:
            self._state("notReady")
            self._conditions(False, "OperandNotReady", f"ClusterPolicy is not ready; states not ready: {not_ready}",
                             now)
            return REQUEUE_NOT_READY
        self._state("ready")
        if not has_nfd:
            self._conditions(True, "NFDLabelsMissing", "No NFD labels found", now)
            return REQUEUE_NFD_MISSING
        if not has_gpu:
            self._conditions(True, "NoGPUNodes", "No GPU node found, watching for new nodes to join the cluster.", now)
        else:
            self._conditions(True, "Reconciled",
                             "ClusterPolicy is ready as all resources have been successfully reconciled", now)
        return None

    def _state(self, state: str) -> None:
        """updateCRState: re-read, compare, write only a changed state (conditions untouched)."""
        assert self.store.policy is not None
        status = copy.deepcopy(self.store.policy.get("status") or {})
        if status.get("state") == state:
            return
        status["state"] = state
        status["namespace"] = "gpu-operator"
        self.store.write_status(status)

    def _conditions(self, ready: bool, reason: str, message: str, now: str) -> None:
        """internal/conditions/clusterpolicy.go updateConditions: Ready and Error set together."""
        assert self.store.policy is not None
        status = copy.deepcopy(self.store.policy.get("status") or {})
        conds = status.setdefault("conditions", [])
        if ready:
            _set_condition(conds, {"type": "Ready", "status": "True", "reason": reason, "message": message}, now)
            _set_condition(conds, {"type": "Error", "status": "False", "reason": "Ready"}, now)
        else:
            _set_condition(conds, {"type": "Ready", "status": "False", "reason": "Error"}, now)
            _set_condition(conds, {"type": "Error", "status": "True", "reason": reason, "message": message}, now)
        self.store.write_status(status)


def routes(store: Store) -> dict[str, Any]:
    """The GET paths the gate reads, answered from the store (for tests.unit.platforms.fake_api)."""
    def policy() -> tuple[int, Any]:
        return (404, {"kind": "Status", "reason": "NotFound"}) if store.policy is None else (200, store.policy)

    discovery = {"kind": "APIResourceList", "groupVersion": "nvidia.com/v1",
                 "resources": [{"name": "clusterpolicies", "kind": "ClusterPolicy", "namespaced": False},
                               {"name": "clusterpolicies/status", "kind": "ClusterPolicy", "namespaced": False}]}
    return {
        "/apis/nvidia.com/v1": lambda: (200, discovery),  # the CRD is installed (crds/ of the chart)
        "/apis/nvidia.com/v1/clusterpolicies/cluster-policy": policy,
        "/api/v1/nodes": lambda: (200, {"items": list(store.nodes.values())}),
        "/apis/apps/v1/namespaces/gpu-operator/daemonsets": lambda: (200, {"items": list(store.daemonsets.values())}),
    }


def dumps(store: Store) -> str:
    return json.dumps(store.policy, indent=1, sort_keys=True)

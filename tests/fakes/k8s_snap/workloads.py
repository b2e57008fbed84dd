"""Pods, PodDisruptionBudgets and the controllers' bare minimum, for day-2 operations (drain,
remove-node, instance loss) to act on.

State: `cluster["pods"]` ("<ns>/<name>" -> pod) and `cluster["pdbs"]` ("<ns>/<name>" -> PDB);
`cluster["job_restarts"]` (Job name -> how many of its pods were recreated after a disruption),
`cluster["nodes"][n]["gpus"]` (the node's `nvidia.com/gpu` capacity; 0 unless a test sets it).
Tests build workloads with the `add_*` helpers below (under `fleet.mutate()`).

Rules, each from upstream (k8s.io/kubernetes@v1.34.1 unless named):
- a pod's phase is read at the world clock: a Job pod with `finishes_at` in the past is Succeeded
  (the kubelet's status once its container exits 0);
- a pod is healthy (counted by a PDB) when Running on a Ready Node (pkg/controller/disruption
  countHealthyPods uses the pod's Ready condition; the fake derives it from the Node: the node
  lifecycle controller marks the pods of a NotReady node not Ready);
- PDB status (pkg/controller/disruption/disruption.go getExpectedPodCount, updatePdbStatus):
  minAvailable (int) -> desiredHealthy = minAvailable, expectedCount = matching pods;
  maxUnavailable (int) -> expectedCount = sum of the matching pods' controllers' scale (a
  ReplicaSet's scale = its pods here), desiredHealthy = max(0, expectedCount - maxUnavailable);
  a pod whose controller has no scale (a Job) fails the sync: the PDB fails safe to 0 allowed;
  pods with no controller are left out of expectedCount; disruptionsAllowed =
  max(0, currentHealthy - desiredHealthy), 0 when expectedCount <= 0;
- eviction (pkg/registry/core/pod/storage/eviction.go): a Succeeded/Failed/Pending pod is deleted
  without looking at PDBs (canIgnorePDB); more than one matching PDB -> 500 "This pod has more than
  one PodDisruptionBudget, which the eviction subresource does not support."; an unhealthy pod is
  deleted if currentHealthy >= desiredHealthy > 0 (IfHealthyBudget, the default policy); otherwise
  disruptionsAllowed == 0 -> 429 "Cannot evict pod as it would violate the pod's disruption budget.";
- after a pod is deleted, its controller makes a new one (ReplicaSet, Job: a new name
  `<owner>-<5 chars>`; the Job's restart counted), which the scheduler binds to the first Ready,
  schedulable (not cordoned) Node, by name, with free GPUs for its request, or leaves Pending;
  DaemonSet pods and pods with no controller are not recreated elsewhere. Pending pods are retried
  whenever the fake changes nodes (uncordon, join, refresh end);
- a Node deleted (remove-node) takes its pods with it (the pod garbage collector deletes pods bound
  to a missing Node); a Node whose instance stopped keeps them (taint-based eviction after 300s is
  not modelled).
"""

from __future__ import annotations

import secrets
import string
from typing import Any

from tests.fakes.k8s_snap import world

GPU = "nvidia.com/gpu"
PDB_429 = "Cannot evict pod as it would violate the pod's disruption budget."
PDB_MANY = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
_API_VERSION = {"ReplicaSet": "apps/v1", "DaemonSet": "apps/v1", "Job": "batch/v1"}


def _cluster(state: dict[str, Any]) -> dict[str, Any]:
    cluster: dict[str, Any] = state["cluster"]
    for key in ("pods", "pdbs", "job_restarts"):
        cluster.setdefault(key, {})
    return cluster


# ------------------------------------------------------------------------------ test helpers


def set_gpus(state: dict[str, Any], node: str, count: int) -> None:
    """The Node's `nvidia.com/gpu` capacity (what the device plugin / DRA driver would advertise)."""
    _cluster(state)["nodes"][node]["gpus"] = count


def add_pod(state: dict[str, Any], namespace: str, name: str, node: str | None, *, owner_kind: str | None = None,
            owner: str | None = None, labels: dict[str, str] | None = None, gpus: int = 0,
            claims: tuple[str, ...] = (), empty_dir: bool = False, finishes_at: float | None = None) -> str:
    """A pod bound to `node` (Running) or, with node None, Pending. `gpus` is
    `resources.limits["nvidia.com/gpu"]`; each of `claims` is a `spec.resourceClaims` entry asking
    for one GPU through DRA (a ResourceClaimTemplate of that name). Returns its "<ns>/<name>" key."""
    key = f"{namespace}/{name}"
    pods = _cluster(state)["pods"]
    if key in pods:
        raise ValueError(f"pod {key} exists")
    pods[key] = {
        "namespace": namespace, "name": name, "uid": secrets.token_hex(8), "labels": dict(labels or {}),
        "owner": {"kind": owner_kind, "name": owner} if owner_kind and owner else None,
        "node": node, "phase": "Running" if node else "Pending", "gpus": gpus, "claims": list(claims),
        "empty_dir": empty_dir, "started_at": world.now(state), "finishes_at": finishes_at,
    }
    return key


def add_deployment_pods(state: dict[str, Any], namespace: str, replicaset: str, nodes: list[str],
                        labels: dict[str, str] | None = None, gpus: int = 0, empty_dir: bool = False) -> list[str]:
    """One ReplicaSet-owned pod per entry of `nodes` (a Deployment's pods)."""
    return [add_pod(state, namespace, f"{replicaset}-{_suffix()}", n, owner_kind="ReplicaSet", owner=replicaset,
                    labels=labels, gpus=gpus, empty_dir=empty_dir) for n in nodes]


def add_job_pod(state: dict[str, Any], namespace: str, job: str, node: str | None, gpus: int = 0,
                claims: tuple[str, ...] = (), finishes_at: float | None = None,
                labels: dict[str, str] | None = None) -> str:
    return add_pod(state, namespace, f"{job}-{_suffix()}", node, owner_kind="Job", owner=job,
                   labels={"batch.kubernetes.io/job-name": job, **(labels or {})}, gpus=gpus, claims=claims,
                   finishes_at=finishes_at)


def add_daemonset_pod(state: dict[str, Any], namespace: str, daemonset: str, node: str,
                      labels: dict[str, str] | None = None) -> str:
    return add_pod(state, namespace, f"{daemonset}-{_suffix()}", node, owner_kind="DaemonSet", owner=daemonset,
                   labels=labels)


def add_pdb(state: dict[str, Any], namespace: str, name: str, selector: dict[str, str],
            min_available: int | None = None, max_unavailable: int | None = None) -> None:
    """policy/v1 PodDisruptionBudget with matchLabels `selector` and an integer minAvailable or
    maxUnavailable (the API refuses both at once)."""
    if (min_available is None) == (max_unavailable is None):
        raise ValueError("minAvailable and maxUnavailable cannot be both set")  # policy validation.go
    _cluster(state)["pdbs"][f"{namespace}/{name}"] = {
        "namespace": namespace, "name": name, "selector": dict(selector),
        "min_available": min_available, "max_unavailable": max_unavailable,
    }


def pods_on(state: dict[str, Any], node: str) -> list[dict[str, Any]]:
    return [p for _, p in sorted(_cluster(state)["pods"].items()) if p["node"] == node]


# ------------------------------------------------------------------------------ pod state


def _suffix() -> str:
    return "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(5))


def phase(state: dict[str, Any], pod: dict[str, Any]) -> str:
    if pod["phase"] == "Running" and pod.get("finishes_at") is not None and pod["finishes_at"] <= world.now(state):
        return "Succeeded"
    return str(pod["phase"])


def gpu_request(pod: dict[str, Any]) -> int:
    return int(pod["gpus"]) + len(pod["claims"])


def node_ready(state: dict[str, Any], name: str) -> bool:
    """Ready=True: registered, a CNI (network feature), and a kubelet posting status (its instance
    runs). A kubelet restarting for a snap refresh is back within the node-monitor grace period, so
    the Node stays Ready through it."""
    cluster = state["cluster"]
    node = cluster["nodes"].get(name)
    if node is None or node["registered_at"] > world.now(state) or node.get("late_lookups", 0) > 0 or not node["ready"]:
        return False
    inst = node_instance(state, name)
    return inst is not None and inst["state"] == "running"


def kubelet_posting(state: dict[str, Any], name: str) -> bool:
    """False once the Node's instance stopped: the node lifecycle controller sets Ready=Unknown."""
    inst = node_instance(state, name)
    return inst is not None and inst["state"] == "running"


def node_instance(state: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The instance whose k8s joined as Node `name` (a running one before a terminated one)."""
    found = [i for i in state["instances"].values() if i["node"].get("name") == name and i["node"].get("role")]
    found.sort(key=lambda i: i["state"] != "running")
    return found[0] if found else None


def _healthy(state: dict[str, Any], pod: dict[str, Any]) -> bool:
    return phase(state, pod) == "Running" and pod["node"] is not None and node_ready(state, pod["node"])


def free_gpus(state: dict[str, Any], node: str) -> int:
    used = sum(gpu_request(p) for p in pods_on(state, node) if phase(state, p) in ("Running", "Pending"))
    return int(state["cluster"]["nodes"][node].get("gpus", 0)) - used


def _place(state: dict[str, Any], pod: dict[str, Any]) -> None:
    cluster = state["cluster"]
    for name in sorted(cluster["nodes"]):
        node = cluster["nodes"][name]
        if node.get("unschedulable") or not node_ready(state, name):
            continue
        if gpu_request(pod) and free_gpus(state, name) < gpu_request(pod):
            continue
        pod.update(node=name, phase="Running", started_at=world.now(state))
        return
    pod.update(node=None, phase="Pending")


def schedule_pending(state: dict[str, Any]) -> None:
    for pod in _cluster(state)["pods"].values():
        if pod["node"] is None and pod["phase"] == "Pending":
            _place(state, pod)


def delete_pod(state: dict[str, Any], key: str) -> None:
    """Delete, and let the pod's controller replace it (see the module docstring)."""
    cluster = _cluster(state)
    pod = cluster["pods"].pop(key)
    owner = pod["owner"]
    if owner is None or owner["kind"] not in ("ReplicaSet", "Job"):
        return
    if owner["kind"] == "Job":
        if phase(state, pod) == "Succeeded":
            return  # a completed Job pod is done, not replaced
        cluster["job_restarts"][owner["name"]] = cluster["job_restarts"].get(owner["name"], 0) + 1
    new = dict(pod, name=f"{owner['name']}-{_suffix()}", uid=secrets.token_hex(8))
    if pod.get("finishes_at") is not None:
        new["finishes_at"] = world.now(state) + (pod["finishes_at"] - pod["started_at"])  # starts over
    cluster["pods"][f"{new['namespace']}/{new['name']}"] = new
    _place(state, new)


def node_gone(state: dict[str, Any], name: str) -> None:
    """pkg/controller/podgc: pods bound to a Node that no longer exists are deleted."""
    for key, pod in sorted(_cluster(state)["pods"].items()):
        if pod["node"] == name:
            delete_pod(state, key)


# ------------------------------------------------------------------------------------ PDBs


def _matching_pdbs(state: dict[str, Any], pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for _, b in sorted(_cluster(state)["pdbs"].items())
            if b["namespace"] == pod["namespace"] and all(pod["labels"].get(k) == v for k, v in b["selector"].items())]


def pdb_status(state: dict[str, Any], pdb: dict[str, Any]) -> dict[str, int]:
    pods = [p for p in _cluster(state)["pods"].values() if p["namespace"] == pdb["namespace"]
            and all(p["labels"].get(k) == v for k, v in pdb["selector"].items())]
    healthy = sum(1 for p in pods if _healthy(state, p))
    if pdb["min_available"] is not None:
        desired, expected = int(pdb["min_available"]), len(pods)
    else:
        owners = {(p["owner"]["kind"], p["owner"]["name"]) for p in pods if p["owner"]}
        if any(kind != "ReplicaSet" for kind, _ in owners):
            return {"currentHealthy": healthy, "desiredHealthy": 0, "expectedPods": 0, "disruptionsAllowed": 0}
        expected = sum(1 for p in pods if p["owner"])
        desired = max(0, expected - int(pdb["max_unavailable"]))
    allowed = healthy - desired
    if expected <= 0 or allowed <= 0:
        allowed = 0
    return {"currentHealthy": healthy, "desiredHealthy": desired, "expectedPods": expected,
            "disruptionsAllowed": allowed}


class EvictionRefused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def evict(state: dict[str, Any], key: str) -> None:
    """POST pods/<name>/eviction: deletes the pod or raises EvictionRefused (429 / 500)."""
    pod = _cluster(state)["pods"][key]
    if phase(state, pod) in ("Succeeded", "Failed", "Pending"):
        delete_pod(state, key)
        return
    budgets = _matching_pdbs(state, pod)
    if len(budgets) > 1:
        raise EvictionRefused(500, PDB_MANY)
    if budgets:
        status = pdb_status(state, budgets[0])
        unhealthy_ok = (not _healthy(state, pod) and status["currentHealthy"] >= status["desiredHealthy"]
                        and status["desiredHealthy"] > 0)
        if not unhealthy_ok and status["disruptionsAllowed"] == 0:
            raise EvictionRefused(429, PDB_429)
    delete_pod(state, key)


# ----------------------------------------------------------------------------- API objects


def pod_object(state: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any]:
    """v1 Pod as `kubectl get -o json` prints it (the fields the fake keeps)."""
    meta: dict[str, Any] = {"name": pod["name"], "namespace": pod["namespace"], "uid": pod["uid"]}
    if pod["labels"]:
        meta["labels"] = dict(pod["labels"])
    if pod["owner"]:
        kind, name = pod["owner"]["kind"], pod["owner"]["name"]
        meta["ownerReferences"] = [{"apiVersion": _API_VERSION[kind], "kind": kind, "name": name,
                                    "uid": f"uid-{kind.lower()}-{name}", "controller": True,
                                    "blockOwnerDeletion": True}]
    container: dict[str, Any] = {"name": "main", "image": "registry.example/fake:1", "resources": {}}
    if pod["gpus"]:
        container["resources"] = {"limits": {GPU: str(pod["gpus"])}, "requests": {GPU: str(pod["gpus"])}}
    if pod["claims"]:
        container["resources"]["claims"] = [{"name": c} for c in pod["claims"]]
    spec: dict[str, Any] = {"containers": [container]}
    if pod["node"]:
        spec["nodeName"] = pod["node"]
    if pod["claims"]:
        spec["resourceClaims"] = [{"name": c, "resourceClaimTemplateName": c} for c in pod["claims"]]
    if pod["empty_dir"]:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase(state, pod)}}

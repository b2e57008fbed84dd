"""GpuClusterReady: the GPU Operator's gate with `gpuStack.draManagedBy: operator` (docs/adr/0048),
judged the way the operator at the pin (NVIDIA/gpu-operator v26.7.0) writes a GPUCluster's status.

- The GPUCluster `gpu-cluster` (nvidia.com/v1alpha1, cluster-scoped; the CRD's CEL rule makes the
  name a singleton: crds/nvidia.com_gpuclusters.yaml) is Ready when `status.state` is `ready` AND
  its Ready condition is True with reason `Reconciled`, the one reason written once every state
  synced (controllers/gpucluster_controller.go, the branch after the state manager's sync). The
  other reasons are the operator's own words for what is wrong, quoted in the failure:
  `PrerequisiteNotMet` (a ClusterPolicy exists: the two may not coexist, validatePrerequisites),
  `ReconcileFailed` (`Error syncing state <name>: <err>`), `OperandNotReady`.
- `ready` does not prove that a GPU node runs anything: a DaemonSet whose node selector matches no
  node counts as ready (internal/state/state_skel.go, the DaemonSet readiness check). The gate
  therefore counts the GPU nodes itself (`nvidia.com/gpu.present=true`, which the node labelling
  controller keeps in both modes: nodelabeling_controller.go reconcileCommonGPULabel) and wants the
  DRA kubelet plugin's DaemonSet (`nvidia-dra-driver-kubelet-plugin`,
  manifests/state-dra-driver/0500_daemonset.yaml) owned by the GPUCluster, scheduled on at least
  that many nodes and rolled out, like every DaemonSet the GPUCluster owns.
- The status has no observedGeneration (GPUClusterStatus: state, namespace, conditions; the
  conditions are set without one), and the controller's watch on the GPUCluster uses
  GenerationChangedPredicate: the freshness rule of the ClusterPolicy gate applies unchanged
  (components/addons/cluster_policy_ready.py, docs/adr/0026).

The verdicts are pure functions; the dynamic provider only reads the API. The provider class is
pickled into the state by reference: it must stay here under its name.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import pulumi
import pulumi.dynamic

from ..k8s_ready import inputs_changed, kubeconfig_endpoint, sha256
from ..kube.errors import ApiFailure
from ..kube.wait import Observation, WaitTimeout, poll
from ..tables import tokens
from .cluster_policy_ready import (
    GPU_PRESENT_LABEL,
    READY_REASON,
    SETTLE_SECONDS,
    Freshness,
    Obj,
    Seen,
    daemonset_problem,
    error_message,
    gpu_nodes,
    nodes_due,
    ready_condition,
    status_fingerprint,
)

API = "nvidia.com/v1alpha1"
KIND = "GPUCluster"
KUBELET_PLUGIN = "nvidia-dra-driver-kubelet-plugin"  # manifests/state-dra-driver/0500_daemonset.yaml
TYPE = tokens.DYNAMIC_GPU_CLUSTER_READY


def owned_by(ds: Obj, cluster: Obj) -> bool:
    uid = cluster.get("metadata", {}).get("uid")
    return any(o.get("kind") == KIND and (not uid or o.get("uid") == uid)
               for o in ds.get("metadata", {}).get("ownerReferences") or [])


def judge(seen: Seen, name: str, min_gpu_nodes: int) -> Observation:
    """The verdict on one poll, before freshness: every reason it is not ready, in one line."""
    if seen.policy is None:
        return Observation(False, f"{KIND} {name} does not exist (yet)")
    st = seen.policy.get("status") or {}
    state, cond = st.get("state") or "", ready_condition(seen.policy)
    problems = []
    if state != "ready":
        problems.append(f"state is {state or 'unset'!r}" + (f" ({msg})" if (msg := error_message(seen.policy)) else ""))
    if cond.get("status") != "True" or cond.get("reason") != READY_REASON:
        if cond:
            problems.append(f"Ready condition is {cond.get('status')} with reason {cond.get('reason', '')!r}"
                            + (f": {cond['message']}" if cond.get("message") else ""))
        else:
            problems.append("no Ready condition yet")
    found = gpu_nodes(seen.nodes)
    if len(found) < min_gpu_nodes:
        problems.append(f"{len(found)} GPU node(s) labelled {GPU_PRESENT_LABEL}=true, expected at least "
                        f"{min_gpu_nodes}" + (f" ({', '.join(found[:10])})" if found else ""))
    owned = [ds for ds in seen.daemonsets if owned_by(ds, seen.policy)]
    plugin = next((ds for ds in owned if ds.get("metadata", {}).get("name") == KUBELET_PLUGIN), None)
    if plugin is None:
        problems.append(f"no DaemonSet {KUBELET_PLUGIN} owned by the {KIND} (the DRA kubelet plugin)")
    else:
        desired = int((plugin.get("status") or {}).get("desiredNumberScheduled") or 0)
        if desired < max(min_gpu_nodes, len(found)):
            problems.append(f"DaemonSet {KUBELET_PLUGIN} is scheduled on {desired} node(s), expected every GPU node "
                            f"(at least {max(min_gpu_nodes, len(found))}): the operator labels a GPU node "
                            "nvidia.com/gpu.deploy.dra-driver=true before its plugin runs there")
    problems += [p for ds in owned if (p := daemonset_problem(ds))]
    if problems:
        return Observation(False, "; ".join(problems))
    return Observation(True, f"state ready, Ready/{READY_REASON}, {len(found)} GPU node(s), DRA kubelet plugin and "
                             "operands rolled out", value=str(len(found)))


def timeout_message(name: str, endpoint: str, elapsed: float, attempts: int, last: Observation) -> str:
    verb = "gave up" if last.permanent or last.fatal else "timed out"
    return (f"GPU Operator not ready: {KIND} {name} on {endpoint}: {verb} after {elapsed:.0f}s and "
            f"{attempts} attempts; last seen: {last.detail}")


# --------------------------------------------------------------------------------------------
# I/O


def _read(get: Callable[[str], str | ApiFailure], name: str, namespace: str) -> Seen | Observation:
    answers: dict[str, Any] = {}
    for key, path in (("cluster", f"/apis/{API}/gpuclusters/{name}"), ("nodes", "/api/v1/nodes"),
                      ("daemonsets", f"/apis/apps/v1/namespaces/{namespace}/daemonsets")):
        answer = get(path)
        if isinstance(answer, ApiFailure):
            if answer.status == 404 and key == "cluster":
                answers[key] = None
                continue
            return Observation.failed(answer, f"GET {path}: ")
        try:
            answers[key] = json.loads(answer)
        except ValueError:
            return Observation(False, f"GET {path}: answer is not JSON: {answer[:200]!r}")
    return Seen(answers["cluster"], list((answers["nodes"] or {}).get("items") or []),
                list((answers["daemonsets"] or {}).get("items") or []))


def check_gpu_cluster(kubeconfig: str, *, name: str, namespace: str, min_gpu_nodes: int, timeout_seconds: float,
                      settle_seconds: float = SETTLE_SECONDS, clock: Callable[[], float] = time.monotonic,
                      sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Poll until the GPUCluster is ready by `judge` on a fresh status. Returns the outputs."""
    from ..kube.client import api_client, http_get  # the kubernetes client is slow to import

    endpoint = kubeconfig_endpoint(kubeconfig)
    try:
        api = api_client(kubeconfig)
    except Exception as exc:  # malformed kubeconfig: waiting cannot fix it
        raise WaitTimeout(f"GPU Operator not ready: {KIND} {name} on {endpoint}: unusable kubeconfig: {exc}") from None
    fresh: list[Freshness] = []

    def probe() -> Observation:
        seen = _read(lambda p: http_get(api, p), name, namespace)
        if isinstance(seen, Observation):
            return seen
        if not fresh:
            fresh.append(Freshness(status_fingerprint(seen.policy), settle_seconds, clock))
        return fresh[0].observe(seen, judge(seen, name, min_gpu_nodes))

    try:
        last, _ = poll(probe, timeout_seconds=timeout_seconds, clock=clock, sleep=sleep,
                       describe_timeout=lambda e, n, obs: timeout_message(name, endpoint, e, n, obs))
    finally:
        api.close()
    return {"gpuNodes": int(last.value), "observed": last.detail}


# --------------------------------------------------------------------------------------------
# the dynamic resource

_KEYS = ("objectName", "operatorNamespace", "minGpuNodes", "laterGpuNodes", "trigger")


class _GpuClusterReadyProvider(pulumi.dynamic.ResourceProvider):  # type: ignore[misc]
    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        due = nodes_due(int(props["minGpuNodes"]), props.get("laterGpuNodes"), datetime.now(UTC))
        outs = check_gpu_cluster(str(props["kubeconfig"]), name=str(props["objectName"]),
                                 namespace=str(props["operatorNamespace"]), min_gpu_nodes=due,
                                 timeout_seconds=float(props["timeoutSeconds"]),
                                 settle_seconds=float(props.get("settleSeconds") or SETTLE_SECONDS))
        return {**{k: props.get(k) for k in _KEYS}, **outs, "timeoutSeconds": props["timeoutSeconds"],
                "settleSeconds": props.get("settleSeconds"), "kubeconfigSha256": sha256(str(props["kubeconfig"]))}

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(f"gpucluster-{uuid.uuid4().hex[:12]}", self._run(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        return pulumi.dynamic.DiffResult(changes=inputs_changed(olds, news, _KEYS))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(self._run(news))


class GpuClusterReady(pulumi.dynamic.Resource, module="ck8s-gpu", name="GpuClusterReady"):  # type: ignore[misc,call-arg]
    """Succeeds once the GPU Operator reconciled its GPUCluster with the DRA kubelet plugin on at least
    `min_gpu_nodes` GPU nodes, judged on a status written after the change (module docstring).
    `trigger` is a digest of everything the operator consumes: any change waits again."""

    gpuNodes: pulumi.Output[int]
    observed: pulumi.Output[str]

    def __init__(self, name: str, kubeconfig: pulumi.Input[str], *, object_name: str, operator_namespace: str,
                 min_gpu_nodes: int, timeout_seconds: int, trigger: pulumi.Input[str],
                 settle_seconds: int = SETTLE_SECONDS, later_gpu_nodes: Sequence[tuple[int, str]] = (),
                 opts: pulumi.ResourceOptions | None = None) -> None:
        if timeout_seconds <= 0 or settle_seconds < 0 or min_gpu_nodes < 1:
            raise ValueError(f"GpuClusterReady {name}: timeout_seconds must be positive, settle_seconds >= 0 "
                             f"and min_gpu_nodes >= 1 (got {timeout_seconds}, {settle_seconds}, {min_gpu_nodes})")
        props = {
            "kubeconfig": pulumi.Output.secret(kubeconfig),
            "objectName": object_name,
            "operatorNamespace": operator_namespace,
            "minGpuNodes": min_gpu_nodes,
            "timeoutSeconds": timeout_seconds,
            "settleSeconds": settle_seconds,
            "trigger": trigger,
            "gpuNodes": None,
            "observed": None,
            "kubeconfigSha256": None,
        }
        if later_gpu_nodes:
            props["laterGpuNodes"] = [[n, t] for n, t in later_gpu_nodes]
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"]))
        super().__init__(_GpuClusterReadyProvider(), name, props, opts)

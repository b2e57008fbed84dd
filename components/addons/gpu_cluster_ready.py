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

import time
from collections.abc import Callable, Sequence
from typing import Any

import pulumi
import pulumi.dynamic

from ..kube.wait import Observation
from ..tables import tokens
from .cluster_policy_ready import (
    READY_REASON,
    SETTLE_SECONDS,
    Obj,
    OperatorGateProvider,
    Seen,
    daemonset_problem,
    gate_props,
    poll_fresh,
    status_problems,
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
    problems, found = status_problems(seen, min_gpu_nodes)
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


def check_gpu_cluster(kubeconfig: str, *, name: str, namespace: str, min_gpu_nodes: int, timeout_seconds: float,
                      settle_seconds: float = SETTLE_SECONDS, clock: Callable[[], float] = time.monotonic,
                      sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Poll until the GPUCluster is ready by `judge` on a fresh status. Returns the outputs."""
    return poll_fresh(kubeconfig, what=f"{KIND} {name}", object_path=f"/apis/{API}/gpuclusters/{name}",
                      namespace=namespace, judge=lambda seen: judge(seen, name, min_gpu_nodes),
                      timeout_seconds=timeout_seconds, settle_seconds=settle_seconds, clock=clock, sleep=sleep)


# --------------------------------------------------------------------------------------------
# the dynamic resource

class _GpuClusterReadyProvider(OperatorGateProvider):
    id_prefix = "gpucluster"

    def poll(self, kubeconfig: str, **kwargs: Any) -> dict[str, Any]:
        return check_gpu_cluster(kubeconfig, **kwargs)


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
        props = gate_props("GpuClusterReady", name, kubeconfig, object_name=object_name,
                           operator_namespace=operator_namespace, min_gpu_nodes=min_gpu_nodes,
                           timeout_seconds=timeout_seconds, trigger=trigger, settle_seconds=settle_seconds,
                           later_gpu_nodes=later_gpu_nodes)
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"]))
        super().__init__(_GpuClusterReadyProvider(), name, props, opts)

"""Plain facts about a stack's cluster that add-on values and smoke expectations are computed
from (pure: no Pulumi import, so the pure layers that read them load nothing of Pulumi's)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..settings.facts import pool_gpus
from ..settings.model import Settings
from ..tables import pins


@dataclass(frozen=True)
class GpuPoolFacts:
    name: str
    nodes: int  # desired size
    gpus_per_node: int
    product_name: str
    memory_mib: int
    mig_capable: bool


@dataclass(frozen=True)
class ClusterFacts:
    """Plain facts add-on values functions and smoke expectations are computed from."""

    platform: str
    track: str
    kubernetes_minor: int
    simulated_gpus: bool  # kind / local: GPUs are published by a simulated driver
    has_kubelet: bool  # false on KWOK nodes: no container ever runs, in-container checks skip
    pools: tuple[GpuPoolFacts, ...]
    gpu_view: str = "nvidia-smi"  # what the probe reads: nvidia-smi, or env (fake-gpu-operator)


def cluster_facts(settings: Settings) -> ClusterFacts:
    pools = []
    for pool in settings.node_pools:
        gpu = pool_gpus(pool)
        if gpu is None:  # rules reject this before any component runs
            raise ValueError(f"pool {pool.name} has no GPU facts")
        pools.append(
            GpuPoolFacts(pool.name, pool.start_size, gpu.count, gpu.product_name, gpu.memory_mib, gpu.mig_capable)
        )
    return ClusterFacts(
        platform=settings.platform,
        track=settings.kubernetes.track,
        kubernetes_minor=pins.track(settings.kubernetes.track).minor,
        simulated_gpus=settings.traits.simulated_gpus,
        has_kubelet=settings.has_kubelet,
        pools=tuple(pools),
        gpu_view=settings.traits.gpu_view,
    )


@dataclass(frozen=True)
class AddonFacts:
    """What a platform must know of the add-on set, told by the layers above both (a platform never
    imports the add-ons: docs/architecture.md, Layers); components/addons/selected.py
    `addon_facts` computes it from the one answer to "which add-ons does this stack install"."""

    # The AWS cloud controller manager runs: nodes start with `--cloud-provider=external` and the
    # control planes' role may call what it calls.
    cloud_controller_manager: bool
    # The program makes a BackupTarget (bucket, key, IAM user) for Velero: its names join the inventory.
    backup_target: bool



def live_cluster_facts(settings: Settings | None, minor: int, *, simulated: bool = False,
                       has_kubelet: bool = True) -> ClusterFacts:
    """Facts of a running cluster a command tests by hand (`smoke`, `conformance`): the stack's, at the
    cluster's own minor, when its settings are given; else an `existing` cluster of unknown pools.
    `simulated`: containers see GPU_DEVICE_* instead of nvidia-smi; `has_kubelet` False: KWOK nodes."""
    if settings is not None:
        facts = cluster_facts(settings)
        return replace(facts, kubernetes_minor=minor, simulated_gpus=facts.simulated_gpus or simulated,
                       has_kubelet=facts.has_kubelet and has_kubelet,
                       gpu_view="env" if simulated else facts.gpu_view)
    return ClusterFacts(platform="existing", track="", kubernetes_minor=minor, simulated_gpus=simulated,
                        has_kubelet=has_kubelet, pools=(), gpu_view="env" if simulated else "nvidia-smi")

"""What each platform is, in one table: the rest of the code asks a trait, never a platform name list."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PlatformTraits:
    makes_cluster: bool  # the program creates the cluster (aws, kind); else it is handed a kubeconfig
    simulated_gpus: bool  # GPUs published by a simulated driver (kind's fake-gpu-operator, local's publisher)
    # containers really run: in-container smoke checks can pass (KWOK nodes have none; local's
    # kubelet pools do: Settings.has_kubelet)
    has_kubelet: bool
    knows_node_pools: bool  # pools are made here, so their GPU facts are ours to check (not: existing)
    cloud: str | None = None  # the cloud whose resources the platform creates
    # How a container sees its GPU: `nvidia-smi` (NVIDIA's driver through CDI; on local's kubelet
    # pools the simulated driver of tools/mod/simgpu, same path) or `env` (fake-gpu-operator's
    # GPU_DEVICE_* variables on kind).
    gpu_view: str = "nvidia-smi"

    @property
    def needs_kubeconfig(self) -> bool:
        return not self.makes_cluster


TRAITS: dict[str, PlatformTraits] = {
    "aws": PlatformTraits(makes_cluster=True, simulated_gpus=False, has_kubelet=True, knows_node_pools=True,
                          cloud="aws"),
    "kind": PlatformTraits(makes_cluster=True, simulated_gpus=True, has_kubelet=True, knows_node_pools=True,
                           gpu_view="env"),
    "existing": PlatformTraits(makes_cluster=False, simulated_gpus=False, has_kubelet=True, knows_node_pools=False),
    "local": PlatformTraits(makes_cluster=False, simulated_gpus=True, has_kubelet=False, knows_node_pools=True),
}


def traits(platform: str) -> PlatformTraits:
    return TRAITS[platform]

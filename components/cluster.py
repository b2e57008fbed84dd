"""What every platform's cluster component hands to the add-ons and the smoke test.

AwsCluster, KindCluster, ExistingCluster and LocalCluster differ in how a cluster comes to be;
downstream code sees only this contract, so the add-on set and the smoke test are the same
on every platform.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pulumi
import pulumi_kubernetes as k8s

from components import pins
from components.settings.facts import pool_gpus
from components.settings.model import Settings


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


def cluster_facts(settings: Settings) -> ClusterFacts:
    pools = []
    for pool in settings.node_pools:
        gpu = pool_gpus(pool)
        if gpu is None:  # rules reject this before any component runs
            raise ValueError(f"pool {pool.name} has no GPU facts")
        pools.append(
            GpuPoolFacts(pool.name, pool.desired_size, gpu.count, gpu.product_name, gpu.memory_mib, gpu.mig_capable)
        )
    return ClusterFacts(
        platform=settings.platform,
        track=settings.kubernetes.track,
        kubernetes_minor=pins.track(settings.kubernetes.track).minor,
        simulated_gpus=settings.traits.simulated_gpus,
        has_kubelet=settings.traits.has_kubelet,
        pools=tuple(pools),
    )


class ClusterHandle(Protocol):
    """Implemented by every platform cluster component."""

    @property
    def provider(self) -> k8s.Provider: ...

    @property
    def kubeconfig(self) -> pulumi.Output[str]:
        """Admin kubeconfig; always a Pulumi secret."""
        ...

    @property
    def ready(self) -> pulumi.Resource:
        """The API readiness gate: every Kubernetes resource depends on it."""
        ...

    @property
    def facts(self) -> ClusterFacts: ...


class ClusterHandleBase(pulumi.ComponentResource):
    """The ClusterHandle properties over the four attributes every platform component sets."""

    _provider: k8s.Provider
    _kubeconfig: pulumi.Output[str]
    _ready: pulumi.Resource
    _facts: ClusterFacts

    @property
    def provider(self) -> k8s.Provider:
        return self._provider

    @property
    def kubeconfig(self) -> pulumi.Output[str]:
        return self._kubeconfig

    @property
    def ready(self) -> pulumi.Resource:
        return self._ready

    @property
    def facts(self) -> ClusterFacts:
        return self._facts


"""ExistingCluster / LocalCluster: a cluster someone else made, reached through a secret kubeconfig.

`existing`: a Canonical Kubernetes cluster whose nodes already joined (the node pools describe
them). `local`: the CI control plane with KWOK GPU nodes (tools/localcluster.py); its facts say
simulated GPUs and no kubelet. Nothing is created but the readiness gate and the provider.
"""

from __future__ import annotations

import pulumi

from ..facts.cluster import cluster_facts
from ..kube.cluster_handle import ClusterHandleBase
from ..settings.model import Settings
from ..tables import tokens
from .gate import ready_and_provider

API_READY_TIMEOUT_SECONDS = 300


class ExistingCluster(ClusterHandleBase):
    """Implements components.kube.cluster_handle.ClusterHandle for platform `existing`."""

    PLATFORM = "existing"
    TYPE = tokens.EXISTING_CLUSTER

    def __init__(
        self,
        name: str,
        settings: Settings,
        kubeconfig: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(self.TYPE, name, None, opts)
        if settings.platform != self.PLATFORM:
            raise ValueError(f"{type(self).__name__} needs settings with platform {self.PLATFORM}, "
                             f"got {settings.platform}")
        self._facts = cluster_facts(settings)
        self._kubeconfig: pulumi.Output[str] = pulumi.Output.secret(kubeconfig)
        # One Ready node proves the API and the credentials work; the add-ons' own readiness
        # waits cover the GPU nodes (their number on an existing cluster is the operator's business).
        self._ready, self._provider = ready_and_provider(
            name, self, self._kubeconfig, min_ready_nodes=1, timeout_seconds=API_READY_TIMEOUT_SECONDS
        )
        self.register_outputs({"kubeconfig": self._kubeconfig, "endpoint": self._ready.endpoint})



class LocalCluster(ExistingCluster):
    """Implements components.kube.cluster_handle.ClusterHandle for platform `local` (KWOK GPU nodes)."""

    PLATFORM = "local"
    TYPE = tokens.LOCAL_CLUSTER

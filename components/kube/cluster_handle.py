"""What every platform's cluster component hands to the add-ons and the smoke test.

AwsCluster, KindCluster, ExistingCluster and LocalCluster differ in how a cluster comes to be;
downstream code sees only this contract, so the add-on set and the smoke test are the same
on every platform.
"""

from __future__ import annotations

from typing import Any, Protocol

import pulumi
import pulumi_kubernetes as k8s

from ..facts.cluster import ClusterFacts


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

    @property
    def node_classes(self) -> pulumi.Output[list[dict[str, Any]]] | None:
        """Autoscaled pools' node classes, for the karpenter-nodepools add-on (aws; None elsewhere)."""
        ...


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

    @property
    def node_classes(self) -> pulumi.Output[list[dict[str, Any]]] | None:
        """The autoscaled pools' node classes (the aws cluster's; None elsewhere): the
        karpenter-nodepools add-on's wired values (components/wiring.py)."""
        return None


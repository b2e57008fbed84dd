"""The part every kubeconfig-backed platform shares: API readiness gate, then the provider (thin)."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from ..k8s_ready import ApiReady
from .identity import cluster_identity


def _identity(kubeconfig: str | None) -> str:
    # None only under the mock engine (no command ever ran); a real run always has the text.
    return cluster_identity(kubeconfig) if kubeconfig else "unknown"


def ready_and_provider(
    name: str,
    parent: pulumi.Resource,
    kubeconfig: pulumi.Output[str],
    *,
    min_ready_nodes: int,
    timeout_seconds: int,
    depends_on: list[pulumi.Resource] | None = None,
) -> tuple[ApiReady, k8s.Provider]:
    """ApiReady on `kubeconfig`, and a provider that depends on it.

    Every resource created with the provider waits for the gate even when its author forgets
    `depends_on`: the engine creates a provider only after the provider's own dependencies.
    """
    ready = ApiReady(
        f"{name}-api-ready",
        kubeconfig,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=depends_on or []),
        timeout_seconds=timeout_seconds,
        min_ready_nodes=min_ready_nodes,
    )
    # The CA fingerprint is not secret; keeping it plain keeps plans and diffs readable.
    identifier = pulumi.Output.unsecret(kubeconfig.apply(_identity))
    provider = k8s.Provider(
        f"{name}-k8s",
        kubeconfig=kubeconfig,
        cluster_identifier=identifier,
        # Never drop state because the API did not answer (docs/adr/0021): a `pulumi refresh`
        # during an outage would forget every release and the next `up` would collide with them.
        # Set explicitly: the provider flag overrides PULUMI_K8S_DELETE_UNREACHABLE in the caller's
        # environment (pulumi-kubernetes provider/v4 pkg/provider/provider.go, `deleteUnreachable`).
        delete_unreachable=False,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[ready]),
    )
    return ready, provider

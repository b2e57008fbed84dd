"""One entry point from settings to a cluster, whatever the platform.

Every platform returns a components.kube.cluster_handle.ClusterHandle (provider with a cluster identifier,
secret kubeconfig, ApiReady gate, facts), so the add-ons and the smoke test never branch on it.
Platform modules are imported lazily: a kind preview never loads pulumi_aws.
"""

from __future__ import annotations

import pulumi

from ..addons.selected import addon_facts
from ..kube.cluster_handle import ClusterHandle
from ..settings.model import Settings


def make_cluster(
    name: str,
    settings: Settings,
    kubeconfig: pulumi.Input[str] | None = None,
    opts: pulumi.ResourceOptions | None = None,
) -> ClusterHandle:
    """The cluster for `settings.platform`. `kubeconfig` (secret config `ck8s-gpu:kubeconfig`) is
    required for `existing` and `local` and refused elsewhere (it would be silently ignored)."""
    platform = settings.platform
    if settings.traits.needs_kubeconfig:
        if kubeconfig is None:
            raise ValueError(f"platform {platform} needs the kubeconfig: pulumi config set --secret "
                             "ck8s-gpu:kubeconfig < kubeconfig")
        from .existing import ExistingCluster, LocalCluster

        cls = ExistingCluster if platform == "existing" else LocalCluster
        return cls(name, settings, kubeconfig, opts)
    if kubeconfig is not None:
        raise ValueError(f"platform {platform} makes its own cluster: ck8s-gpu:kubeconfig must not be set")
    if platform == "kind":
        from .kind import KindCluster

        return KindCluster(name, settings, opts)
    if platform == "aws":
        from ..aws.cluster import AwsCluster

        return AwsCluster(name, settings, addon_facts(settings), opts)  # type: ignore[no-any-return]
    raise ValueError(f"unknown platform {platform!r}")

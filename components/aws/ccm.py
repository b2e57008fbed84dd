"""The AWS cloud controller manager: provider IDs, zones and instance types on Nodes, Nodes of
terminated instances removed, Service load balancers. Optional (default on for aws).

Chart `aws-cloud-controller-manager` from kubernetes/cloud-provider-aws at the pinned version; its
values keys (args, image, nodeSelector, tolerations, dnsPolicy and the template-only
`hostNetworking`) were read from charts/aws-cloud-controller-manager at chart 0.0.10 (appVersion
v1.34.0, commit e4e42f3). The CCM image is the chart's own (the pin decides it). It runs on
control planes with host networking, as Canonical's guide does (snap docs howto/storage/cloud.md),
so it works before pod networking and uses the control-plane instance role.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import pins
from components.addons.base import deep_merge
from components.settings.model import Settings

PIN = "aws-cloud-controller-manager"
NAMESPACE = "kube-system"
INSTALL_TIMEOUT_SECONDS = 600


def ccm_values(settings: Settings) -> dict[str, Any]:
    """Computed values with the stack's `gpuStack.addons.awsCloudControllerManager.values` merged over."""
    values = {
        "args": [
            "--v=2",
            "--cloud-provider=aws",
            f"--cluster-name={settings.cluster_name}",
            "--use-service-account-credentials=true",
            # Pods use Cilium's overlay, not VPC routes.
            "--configure-cloud-routes=false",
        ],
        "hostNetworking": True,
        "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
        "tolerations": [
            {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"},
            {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
        ],
    }
    return deep_merge(values, settings.gpu_stack.addons.aws_cloud_controller_manager.values)


def chart_version(settings: Settings) -> str:
    return settings.gpu_stack.addons.aws_cloud_controller_manager.version or pins.chart(PIN).version


def chart_source(settings: Settings) -> dict[str, Any]:
    """`chart` and, for an https/http repository, `repository_opts`: the pin's repository or the
    stack's mirror (`gpuStack.addons.awsCloudControllerManager.repository`)."""
    pin = pins.chart(PIN)
    repo = (settings.gpu_stack.addons.aws_cloud_controller_manager.repository or pin.repo).rstrip("/")
    if repo.startswith("oci://"):
        return {"chart": f"{repo}/{pin.name}"}
    return {"chart": pin.name, "repository_opts": k8s.helm.v3.RepositoryOptsArgs(repo=repo)}


class AwsCloudControllerManager(pulumi.ComponentResource):
    """A Helm release in kube-system, after the cluster's readiness gate."""

    def __init__(
        self,
        name: str,
        settings: Settings,
        provider: k8s.Provider,
        ready: pulumi.Resource,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("ck8s-gpu:index:AwsCloudControllerManager", name, None, opts)
        self.release = k8s.helm.v3.Release(
            f"{name}-release",
            name=PIN,
            **chart_source(settings),
            version=chart_version(settings),
            namespace=NAMESPACE,
            values=ccm_values(settings),
            timeout=INSTALL_TIMEOUT_SECONDS,
            # As the add-ons (components/addons/addon_set.py): a failed upgrade is rolled back.
            atomic=True,
            cleanup_on_fail=True,
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[ready]),
        )
        self.register_outputs({"status": self.release.status})

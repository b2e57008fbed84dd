"""The AWS cloud controller manager, as an add-on: provider IDs, zones and instance types on
Nodes, Nodes of terminated instances removed, Service load balancers. On by default on aws.

Chart `aws-cloud-controller-manager` from kubernetes/cloud-provider-aws at the pinned version; its
values keys (args, image, nodeSelector, tolerations, dnsPolicy and the template-only
`hostNetworking`) were read from charts/aws-cloud-controller-manager at chart 0.0.10 (appVersion
v1.34.0, commit e4e42f3). The image is the chart's own (the pin decides it). It runs on control
planes with host networking, as Canonical's guide does (snap docs howto/storage/cloud.md), so it
works before pod networking and uses the control-plane instance role.

It used to be a release the AWS cluster made itself, outside the add-on machinery (its own merge
and version lookup, no cleanup-on-fail, history or engine timeouts); `previous_urn` lets an
existing stack adopt that release instead of replacing it (docs/adr/0024).
"""

from __future__ import annotations

from typing import Any

from ..settings.model import Settings
from .base import Addon, AddonContext
from .image_refs import Entry, ImageRef

NAME = "aws-cloud-controller-manager"
NAMESPACE = "kube-system"  # the cluster's own: never created or relabelled by the add-on set


def values(ctx: AddonContext) -> dict[str, Any]:
    return {
        "args": [
            "--v=2",
            "--cloud-provider=aws",
            f"--cluster-name={ctx.settings.cluster_name}",
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


def _check(settings: Settings) -> tuple[str, ...]:
    if settings.platform != "aws":
        return (f"runs only on platform aws (this stack is {settings.platform}): it talks to AWS's API",)
    return ()


def previous_urn(settings: Settings, stack: str, project: str) -> str:
    """Where the release lived before it was an add-on: a child of AwsCluster's own component."""
    types = "ck8s-gpu:index:AwsCluster$ck8s-gpu:index:AwsCloudControllerManager$kubernetes:helm.sh/v3:Release"
    return f"urn:pulumi:{stack}::{project}::{types}::{settings.cluster_name}-ccm-release"


# --- Images: aws-cloud-controller-manager 0.0.10 -----------------------------------------------------
_CCM = ("kubernetes/cloud-provider-aws e4e42f3 (chart version 0.0.10, appVersion v1.34.0) "
        "charts/aws-cloud-controller-manager/values.yaml, templates/daemonset.yaml")
IMAGES: tuple[Entry, ...] = (
    Entry("aws-cloud-controller-manager", "cloud-controller-manager",
          ImageRef("registry.k8s.io", "provider-aws/cloud-controller-manager", "v1.34.0", _CCM),
          keys=("image.repository", "image.tag"),
          mirror=(("image.repository", "provider-aws/cloud-controller-manager"),)),
)


ADDON = Addon(
    name=NAME,
    settings_key="aws_cloud_controller_manager",
    description="AWS cloud controller manager: provider IDs, zones and instance types on Nodes, Nodes of "
                "terminated instances removed, Service load balancers",
    namespace=NAMESPACE,
    # Only AWS has AWS's API; the nodes start with `--cloud-provider=external` exactly when it is on.
    platform_defaults={"aws": "on", "existing": "off", "kind": "off", "local": "off"},
    # Host network on control planes (kube-system is the cluster's, labelled by nobody here).
    pod_security="privileged",
    values=values,
    chart_pin=NAME,
    images=IMAGES,
    timeout_seconds=10 * 60,
    # Nodes keep the `uninitialized` taint until it runs: GPU pods cannot schedule before it.
    on_gpu_path=True,
    owns_namespace=False,
    check=_check,
    previous_urn=previous_urn,
)

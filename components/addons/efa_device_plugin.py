"""The AWS EFA Kubernetes device plugin, as an add-on: every EFA of a node advertised as the
extended resource `vpc.amazonaws.com/efa`. On by default on aws exactly when a pool has EFA
(components/facts/efa.py efa_enabled); docs/adr/0028 says why a device plugin and not a DRA driver.

Chart `aws-efa-k8s-device-plugin` from aws/eks-charts at the pinned version. Values keys read from
stable/aws-efa-k8s-device-plugin at chart v0.5.30 (appVersion v0.5.20, eks-charts commit 5239609):
`image.repository`/`image.tag` (tag defaults to appVersion: the pin decides the image),
`nodeSelector`, `tolerations` (appended to the template's own CriticalAddonsOnly toleration) and
`supportedInstanceLabels.{keys,values}` (a required node affinity: instance-type In values). The
template runs the container privileged with host networking and hostPath mounts of
/var/lib/kubelet/device-plugins, /dev/infiniband and /opt/aws/neuron (DirectoryOrCreate), so its
namespace must be privileged.
"""

from __future__ import annotations

from typing import Any

from ..facts.efa import efa_enabled
from ..facts.nodes import pool_tolerations
from ..settings.model import NodePoolSettings, Settings
from ..tables.labels import EFA_NODE_LABEL, INSTANCE_TYPE_LABEL
from .base import Addon, AddonContext, Default
from .image_refs import Entry, ImageRef, split_repository

NAME = "aws-efa-k8s-device-plugin"
NAMESPACE = "aws-efa"
# The chart's default repository is EKS' ECR account 602401143452, which answers only callers with
# ECR credentials; Canonical Kubernetes nodes have no kubelet image credential provider. AWS serves
# the same images under its public EKS namespace (public.ecr.aws/eks, as eks-charts'
# aws-load-balancer-controller defaults to): not read from that registry here (docs/adr/0028).
PUBLIC_IMAGE_REPOSITORY = "public.ecr.aws/eks/aws-efa-k8s-device-plugin"


def efa_pools(settings: Settings) -> tuple[NodePoolSettings, ...]:
    return tuple(p for p in settings.node_pools if efa_enabled(p))


def values(ctx: AddonContext) -> dict[str, Any]:
    s = ctx.settings
    return {
        "image": {"repository": PUBLIC_IMAGE_REPOSITORY},
        # The launch labels EFA nodes (components/aws/userdata.py): nothing else has the devices.
        "nodeSelector": {EFA_NODE_LABEL: "true"},
        # Every taint of every EFA pool: the plugin must run wherever EFA is.
        "tolerations": pool_tolerations(efa_pools(s)),
        # The chart's own list is every EFA type at its release; ours is exactly the EFA pools'
        # types, so a type newer than the chart still gets its plugin.
        "supportedInstanceLabels": {
            "keys": [INSTANCE_TYPE_LABEL],
            "values": sorted({p.instance_type for p in efa_pools(s)}),
        },
    }


def _check(settings: Settings) -> tuple[str, ...]:
    if not efa_pools(settings):
        return ("no node pool has EFA (nodePools[].efa, or its default on training types): "
                "the plugin would run on no node",)
    return ()


# --- Images: aws-efa-k8s-device-plugin v0.5.30 -------------------------------------------------------
# aws/eks-charts 5239609 stable/aws-efa-k8s-device-plugin: `<image.repository>:<image.tag |
# appVersion>` (templates/daemonset.yaml), tag v0.5.20; the repository is ours (AWS's public copy,
# components/addons/efa_device_plugin.py PUBLIC_IMAGE_REPOSITORY), not the chart's private ECR.
_EFA_REGISTRY, _EFA_REPO = split_repository("public.ecr.aws/eks/aws-efa-k8s-device-plugin")
IMAGES: tuple[Entry, ...] = (
    Entry("aws-efa-k8s-device-plugin", "efa-device-plugin",
          ImageRef(_EFA_REGISTRY, _EFA_REPO, "v0.5.20",
                   "aws/eks-charts 5239609 stable/aws-efa-k8s-device-plugin/values.yaml (chart v0.5.30); "
                   "repository: components/addons/efa_device_plugin.py"),
          keys=("image.repository", "image.tag"), mirror=(("image.repository", _EFA_REPO),)),
)


def _default(settings: Settings) -> Default:
    """on when a node pool has EFA"""
    # The pools' EFA devices reach pods only through it; without EFA pools it would run nowhere.
    return "on" if efa_pools(settings) else "off"


ADDON = Addon(
    name=NAME,
    settings_key="efa_device_plugin",
    description="AWS EFA device plugin: each node's EFA devices as the extended resource "
                "vpc.amazonaws.com/efa, on EFA nodes only",
    namespace=NAMESPACE,
    # Only aws launches EFA interfaces; an existing cluster with EFA nodes enables it (and labels
    # them ck8s-gpu/efa=true, the plugin's nodeSelector).
    platform_defaults={"aws": _default, "existing": "off", "kind": "off", "local": "off"},
    # Privileged container, host network, hostPath /dev/infiniband and the kubelet's
    # device-plugins directory (templates/daemonset.yaml): baseline forbids each.
    pod_security="privileged",
    values=values,
    chart_pin=NAME,
    images=IMAGES,
    timeout_seconds=10 * 60,
    # NCCL jobs ask for vpc.amazonaws.com/efa; the GPU smoke test does not.
    on_gpu_path=False,
    check=_check,
)

"""The autoscaled pools as Karpenter objects (chart `charts/karpenter-nodepools`): one EC2NodeClass
and one NodePool per autoscaled pool, after Karpenter (its CRDs come with its release).

The NodePools are the settings' own (components/facts/autoscaling.py). The EC2NodeClasses are the
aws cluster's: image, user-data, instance profile, subnets and security groups exist only as its
outputs, so the program's wiring hands them in (AddonSet extra_values `nodeClasses`, from
AwsCluster.node_classes: components/aws/karpenter.py renders them).
"""

from __future__ import annotations

from typing import Any

from ..facts.autoscaling import NodeClassRef, nodepool_manifest
from ..settings.model import Settings
from .base import Addon, AddonContext, Default
from .karpenter import NAMESPACE, autoscaled

NAME = "karpenter-nodepools"
# The aws provider's node class of each pool: named as the pool (components/aws/karpenter.py).
EC2_NODE_CLASS = ("karpenter.k8s.aws", "EC2NodeClass")


def values(ctx: AddonContext) -> dict[str, Any]:
    s = ctx.settings
    pools = [p for p in s.node_pools if p.autoscaling is not None]
    return {"nodePools": [nodepool_manifest(s, p, NodeClassRef(*EC2_NODE_CLASS, p.name)) for p in pools],
            "nodeClasses": []}


def _wired(settings: Settings) -> str | None:
    if not autoscaled(settings):
        return None
    return ("its EC2NodeClasses are the aws cluster's outputs: pass AddonSet(extra_values={'karpenter-nodepools': "
            "{'nodeClasses': cluster.node_classes}})")


def _default(settings: Settings) -> Default:
    """on when a node pool is autoscaled"""
    return "on" if autoscaled(settings) else "off"


ADDON = Addon(
    name=NAME,
    settings_key="karpenter_nodepools",
    description="each autoscaled pool's Karpenter NodePool and EC2NodeClass (this repository's chart)",
    namespace=NAMESPACE,  # both kinds are cluster-scoped; the release lives next to Karpenter
    platform_defaults={"aws": _default, "existing": "off", "kind": "off", "local": "off"},
    pod_security="privileged",  # Karpenter's namespace (no pod of its own)
    values=values,
    local_chart=NAME,
    depends_on=("karpenter",),
    timeout_seconds=2 * 60,
    wired_values_problem=_wired,
)

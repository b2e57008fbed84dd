"""The autoscaled pools as Karpenter objects (chart `charts/karpenter-nodepools`): one EC2NodeClass
and one NodePool per autoscaled pool, after Karpenter (its CRDs come with its release).

The NodePools are the settings' own (components/facts/autoscaling.py). The EC2NodeClasses are the
aws cluster's: image, user-data, instance profile, subnets and security groups exist only as its
outputs, so the program's wiring hands them in (AddonSet extra_values `nodeClasses`, from
AwsCluster.node_classes: components/aws/karpenter.py renders them). On an existing cluster whose
nodes are EC2 instances they are the settings' (`existingAws`: components/facts/autoscaling.py
existing_node_class_manifest), so nothing is wired.
"""

from __future__ import annotations

from typing import Any

from ..facts.autoscaling import ec2_node_class_ref, existing_node_class_manifest, nodepool_manifest
from ..settings.model import Settings
from .base import Addon, AddonContext, Default
from .karpenter import NAMESPACE, autoscaled, on_existing_aws

NAME = "karpenter-nodepools"


def values(ctx: AddonContext) -> dict[str, Any]:
    s = ctx.settings
    pools = [p for p in s.node_pools if p.autoscaling is not None]
    # Each pool's EC2NodeClass is named as the pool (facts.autoscaling ec2_node_class_ref).
    classes = [existing_node_class_manifest(s, p) for p in pools] if on_existing_aws(s) else []
    return {"nodePools": [nodepool_manifest(s, p, ec2_node_class_ref(p)) for p in pools], "nodeClasses": classes}


def _wired(settings: Settings) -> str | None:
    if not autoscaled(settings) or on_existing_aws(settings):
        return None
    return ("its EC2NodeClasses are the aws cluster's outputs: pass AddonSet(extra_values={'karpenter-nodepools': "
            "{'nodeClasses': cluster.node_classes}})")


def _default(settings: Settings) -> Default:
    """on when a node pool is autoscaled"""
    return "on" if autoscaled(settings) else "off"


def _existing_default(settings: Settings) -> Default:
    """on when a node pool is autoscaled and `existingAws` says how its nodes join"""
    return "on" if on_existing_aws(settings) else "off"


ADDON = Addon(
    name=NAME,
    settings_key="karpenter_nodepools",
    description="each autoscaled pool's Karpenter NodePool and EC2NodeClass (this repository's chart)",
    namespace=NAMESPACE,  # both kinds are cluster-scoped; the release lives next to Karpenter
    platform_defaults={"aws": _default, "existing": _existing_default, "kind": "off", "local": "off"},
    pod_security="privileged",  # Karpenter's namespace (no pod of its own)
    values=values,
    local_chart=NAME,
    depends_on=("karpenter",),
    timeout_seconds=2 * 60,
    wired_values_problem=_wired,
)

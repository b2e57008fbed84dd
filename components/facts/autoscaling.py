"""Karpenter's NodePool for an autoscaled pool (`nodePools[].autoscaling`), from the settings alone.

One renderer for every place the object is made: the aws platform pairs it with the pool's
EC2NodeClass (components/aws/karpenter.py), an existing cluster on AWS with the class of its
`existingAws` settings (existing_node_class_manifest, below), and the CI scenarios
(tests/integration/test_karpenter_local.py) pair the very same object with a KWOKNodeClass on the
local control plane, so what CI proves is what aws applies.

The API is karpenter.sh/v1 at the pin (sigs.k8s.io/karpenter v1.15.0 pkg/apis/v1/nodepool.go,
nodeclaim.go, labels.go); the rules each field follows are cited beside it. docs/autoscaling.md
says what a user sets and what happens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..settings.model import NodePoolSettings, Settings
from ..tables.labels import INSTANCE_TYPE_LABEL
from .nodes import pool_node_labels

API_VERSION = "karpenter.sh/v1"
# labels.go: the well-known keys a NodePool's requirements may use.
INSTANCE_TYPE_KEY = INSTANCE_TYPE_LABEL
CAPACITY_TYPE_KEY = "karpenter.sh/capacity-type"
ZONE_KEY = "topology.kubernetes.io/zone"
NODEPOOL_LABEL = "karpenter.sh/nodepool"  # Karpenter labels every node it launches with its NodePool
# A pod that must never be moved by consolidation or drift (disruption docs; pkg/apis/v1/labels.go
# DoNotDisruptAnnotationKey). Jobs set it; docs/autoscaling.md says when.
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


@dataclass(frozen=True)
class NodeClassRef:
    """The provider's node class a NodePool launches with: EC2NodeClass on aws, KWOKNodeClass in CI."""

    group: str
    kind: str
    name: str


def nodepool_name(pool: NodePoolSettings) -> str:
    """The NodePool's name: the pool's (a DNS label, unique in the stack; cluster-scoped object)."""
    return pool.name


def capacity_types(pool: NodePoolSettings) -> list[str]:
    """karpenter.sh/capacity-type values the pool may launch as: `reserved` for a pool naming a
    reservation or Capacity Block (ReservedCapacity gate, default on in v1.15.0 options.go; the
    EC2NodeClass's capacityReservationSelectorTerms say which), else the pool's capacityType."""
    if pool.capacity_reservation is not None:
        return ["reserved"]
    return [pool.capacity_type]


def nodepool_manifest(settings: Settings, pool: NodePoolSettings, node_class: NodeClassRef) -> dict[str, Any]:
    """The NodePool of autoscaled pool `pool`."""
    a = pool.autoscaling
    if a is None:
        raise ValueError(f"pool {pool.name!r} is not autoscaled")
    requirements: list[dict[str, Any]] = [
        {"key": INSTANCE_TYPE_KEY, "operator": "In", "values": [pool.instance_type]},
        {"key": CAPACITY_TYPE_KEY, "operator": "In", "values": capacity_types(pool)},
    ]
    if pool.availability_zone is not None:
        requirements.append({"key": ZONE_KEY, "operator": "In", "values": [pool.availability_zone]})
    return {
        "apiVersion": API_VERSION,
        "kind": "NodePool",
        "metadata": {"name": nodepool_name(pool)},
        "spec": {
            "template": {
                # Karpenter puts these on the Node through the API when it registers (never through
                # the kubelet's --node-labels: components/facts/nodes.py gpu_node_labels).
                "metadata": {"labels": dict(sorted(pool_node_labels(settings, pool).items()))},
                "spec": {
                    "nodeClassRef": {"group": node_class.group, "kind": node_class.kind, "name": node_class.name},
                    "requirements": requirements,
                    "taints": [{"key": t.key, **({"value": t.value} if t.value else {}), "effect": t.effect}
                               for t in pool.taints],
                    # nodeclaim.go ExpireAfter: NillableDuration, `Never` disables expiry.
                    "expireAfter": a.expire_after or "Never",
                },
            },
            "disruption": {
                "consolidationPolicy": a.consolidation,
                "consolidateAfter": a.scale_down_after,
                # Budget.Nodes: the most of this pool's NodeClaims disrupted at once, every reason.
                "budgets": [{"nodes": a.disruption_budget}],
            },
            # Limits "nodes" counts the NodePool's own NodeClaims; the group's floor is not among them.
            "limits": {"nodes": str(a.max_size - a.min_size)},
        },
    }


# karpenter.k8s.aws/v1 EC2NodeClass (github.com/aws/karpenter-provider-aws v1.15.0 pkg/apis/v1/ec2nodeclass.go).
EC2_NODE_CLASS_API_VERSION = "karpenter.k8s.aws/v1"
EC2_NODE_CLASS_KIND = "EC2NodeClass"


def ec2_node_class_ref(pool: NodePoolSettings) -> NodeClassRef:
    """The pool's EC2NodeClass, named as the pool, on aws and on an existing cluster alike."""
    return NodeClassRef(EC2_NODE_CLASS_API_VERSION.split("/")[0], EC2_NODE_CLASS_KIND, pool.name)


def existing_node_class_manifest(settings: Settings, pool: NodePoolSettings) -> dict[str, Any]:
    """The EC2NodeClass of autoscaled pool `pool` on an existing cluster whose nodes are EC2
    instances: exactly the user's `existingAws` fields (judged against the CRD's rules by
    components/settings/rules/existing_aws.py), with amiFamily Custom, which passes userData
    verbatim (pkg/providers/amifamily/custom.go) and leaves block devices to the image's own
    mappings (Custom DefaultBlockDeviceMappings: nil). metadataOptions stay the CRD's default:
    IMDSv2 required, hop limit 1."""
    e = settings.existing_aws
    if e is None:
        raise ValueError("settings.existingAws is not set")
    if pool.autoscaling is None:
        raise ValueError(f"pool {pool.name!r} is not autoscaled")
    spec: dict[str, Any] = {
        "amiFamily": "Custom",
        "amiSelectorTerms": [_term(t.model_dump(by_alias=True, exclude_none=True)) for t in e.ami_selector_terms],
        "userData": e.user_data,
        "instanceProfile": e.instance_profile,
        "subnetSelectorTerms": [_term(t.model_dump(exclude_none=True)) for t in e.subnet_selector_terms],
        "securityGroupSelectorTerms": [_term(t.model_dump(exclude_none=True))
                                       for t in e.security_group_selector_terms],
    }
    if e.tags:
        spec["tags"] = dict(sorted(e.tags.items()))
    return {"apiVersion": EC2_NODE_CLASS_API_VERSION, "kind": EC2_NODE_CLASS_KIND,
            "metadata": {"name": ec2_node_class_ref(pool).name}, "spec": spec}


def _term(term: dict[str, Any]) -> dict[str, Any]:
    return {k: dict(sorted(v.items())) if isinstance(v, dict) else v for k, v in term.items()}

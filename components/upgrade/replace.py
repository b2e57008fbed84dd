"""`ck8s-gpu replace-node`: one node out, a new one in, quorum kept (ADR 0016).

Control plane: quorum check, drain, `k8s remove-node` from another control plane (etcd and k8sd
membership shrink first, so the cluster never counts a member that is gone), then `pulumi up
--replace <instance URN>`: the new instance boots from current user-data and joins by itself,
gated like every control plane. Worker: drain, terminate through its Auto Scaling group without
lowering desired capacity, delete its Node; the group launches one that joins by itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..settings.model import Settings
from ..tables import tokens
from .executor import NodeRef, Operator, UpgradeStopped

INSTANCE_TYPE = tokens.AWS_EC2_INSTANCE


class ReplaceError(Exception):
    pass


def find(cps: Sequence[NodeRef], pools: Mapping[str, Sequence[NodeRef]], name: str) -> NodeRef:
    for ref in [*cps, *(n for nodes in pools.values() for n in nodes)]:
        if ref.name == name:
            return ref
    known = ", ".join(r.name for r in [*cps, *(n for nodes in pools.values() for n in nodes)]) or "none running"
    raise ReplaceError(f"no running node named {name} in this cluster (nodes: {known})")


def refusal(cps: Sequence[NodeRef], node: NodeRef, force: bool) -> str | None:
    if node.role == "control-plane" and len(cps) < 2 and not force:
        return (f"{node.name} is the only control plane: its datastore holds every object of the cluster and would "
                "be lost. Rebuild from backup instead (docs/runbooks/dr-rebuild.md), or pass --force to replace it "
                "and start an empty cluster")
    return None


def describe(node: NodeRef, cps: Sequence[NodeRef]) -> list[str]:
    if node.role == "control-plane":
        others = [c.name for c in cps if c.name != node.name]
        return [
            f"1. check the other control planes are Ready ({', '.join(others) or 'none'}): etcd keeps a majority",
            f"2. cordon and drain {node.name} (PodDisruptionBudgets honoured)",
            f"3. `k8s remove-node {node.name}` on {others[0] if others else node.name}: etcd and k8sd membership",
            f"4. pulumi up --replace the instance {node.instance_id}: the new one joins by itself, gated on Ready",
        ]
    return [
        f"1. cordon {node.name}; running GPU jobs finish (jobGraceSeconds); drain (PDBs honoured)",
        f"2. terminate {node.instance_id} in its Auto Scaling group, desired capacity kept",
        f"3. `k8s remove-node {node.name}` (its Node object); the group's replacement joins by itself",
    ]


def instance_urn(resources: Sequence[Mapping[str, Any]], instance_id: str) -> str:
    for r in resources:
        if r.get("type") == INSTANCE_TYPE and (r.get("outputs") or {}).get("id") == instance_id:
            return str(r["urn"])
    raise ReplaceError(f"instance {instance_id} is not a resource of this stack (a pool node? those are replaced "
                       "through their Auto Scaling group)")


def offline_plan(settings: Settings, name: str, force: bool = False) -> list[str]:
    """What --plan can say without AWS (issue 46): the node's role and instance come from EC2, so
    both procedures, with what the settings know (the control planes' count: one is refused)."""
    count = settings.control_plane.count
    cps = [NodeRef(f"<instance of control plane {i}>", f"<control plane {i}>", "control-plane") for i in range(count)]
    as_cp = NodeRef("<its instance>", name, "control-plane")
    as_worker = NodeRef("<its instance>", name, "worker")
    lines = [f"offline: no AWS credentials, so whether {name} is a control plane or a GPU pool's node (and its "
             "instance) is not known; the steps for each:", f"if {name} is one of the {count} control plane(s):"]
    reason = refusal(cps, as_cp, force)
    lines += [f"   refused: {reason}"] if reason else ["   " + line for line in describe(as_cp, [as_cp, *cps[1:]])]
    lines += [f"if {name} is a GPU pool's node:", *("   " + line for line in describe(as_worker, cps))]
    return lines


def run(settings: Settings, stack: str, name: str, force: bool, automation_stack: Callable[[str], Any],
        plan_only: bool = False) -> int:
    import boto3
    from botocore.exceptions import NoCredentialsError, PartialCredentialsError

    from .aws_runner import SsmRunner, discover

    region = settings.region or ""
    try:
        cps, pools = discover(region, settings.cluster_name)
    except (NoCredentialsError, PartialCredentialsError):
        if not plan_only:
            raise
        print("\n".join(offline_plan(settings, name, force)))
        return 0
    node = find(cps, pools, name)
    reason = refusal(cps, node, force)
    if reason:
        raise ReplaceError(reason)
    print("\n".join(describe(node, cps)))
    if plan_only:
        return 0
    op = Operator(SsmRunner(region), cps, settings.kubernetes.upgrade, log=print)
    try:
        if node.role == "control-plane":
            op.remove_control_plane(node, force=force)
            stk = automation_stack(stack)
            urn = instance_urn(stk.export_stack().deployment.get("resources", []), node.instance_id)
            stk.up(replace=[urn], color="never", on_output=print)
        else:
            op.remove_worker(node)
            boto3.client("autoscaling", region_name=region).terminate_instance_in_auto_scaling_group(
                InstanceId=node.instance_id, ShouldDecrementDesiredCapacity=False)
            op.forget_node(node)
    except UpgradeStopped as exc:
        raise ReplaceError(str(exc)) from None
    print(f"replaced {name}")
    return 0

"""How one pool's instances launch (pure): network interfaces, placement group and reserved
capacity, as the provider arguments GpuNodePool passes on (its zone's subnet comes from
AwsNetwork.private_subnets_in). components/aws/launch_rules.py holds these arguments to AWS's
rules before anything is registered.

Provider shapes are pulumi-aws v7's (terraform-provider-aws internal/service/ec2/
ec2_launch_template.go: network_interfaces, placement, capacity_reservation_specification,
instance_market_options; autoscaling/group.go: placement_group, vpc_zone_identifier).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..facts import efa
from ..facts.efa import Interface
from ..settings.model import NodePoolSettings, PlacementSettings

# A worker whose first boot fails powers itself off (components/aws/scripts/ck8s-node.sh die):
# `terminate` ends the instance, root volume included (EC2 User Guide, "Change instance initiated
# shutdown behavior": the default is `stop`), and the group's EC2 health check replaces it. A
# stopped one would be unhealthy too, but keeps its EBS billed until the group terminates it, and
# EC2 stops no Spot Instance of a one-time request (UnsupportedOperation). The console line stays
# readable for at least an hour after termination (EC2 API GetConsoleOutput). docs/adr/0040.
SHUTDOWN_BEHAVIOR = "terminate"
# EC2 status checks: "any state other than running" is unhealthy (EC2 Auto Scaling User Guide,
# "Health checks for instances in an Auto Scaling group").
HEALTH_CHECK_TYPE = "EC2"

# With a Capacity Block the group cannot launch before the block starts, and AWS retries the
# launches itself: `up` must not wait (it would fail after CAPACITY_TIMEOUT for a later start).
NO_WAIT = "0"


@dataclass(frozen=True)
class LaunchPlan:
    efa: bool
    # Launch-template network interfaces (provider arg dicts, security groups added by the shell);
    # empty: the template's own security groups on one default interface.
    interfaces: tuple[Interface, ...]
    placement: PlacementSettings | None
    reservation_target: dict[str, str] | None  # capacity_reservation_target arguments
    market_type: str | None  # instance_market_options.market_type ("capacity-block") or None
    wait_for_capacity_timeout: str | None  # None: the group's default (CAPACITY_TIMEOUT)


def launch_plan(pool: NodePoolSettings) -> LaunchPlan:
    on = efa.efa_enabled(pool)
    cr = pool.capacity_reservation
    target: dict[str, str] | None = None
    if cr is not None:
        target = ({"capacity_reservation_id": cr.id} if cr.id is not None
                  else {"capacity_reservation_resource_group_arn": cr.resource_group_arn or ""})
    block = pool.on_capacity_block
    return LaunchPlan(
        efa=on,
        interfaces=efa.interfaces(pool.instance_type) if on else (),
        placement=efa.placement(pool),
        reservation_target=target,
        market_type="capacity-block" if block else None,
        wait_for_capacity_timeout=NO_WAIT if block else None,
    )


def interface_args(plan: LaunchPlan, security_group_ids: list[Any]) -> list[dict[str, Any]]:
    """LaunchTemplateNetworkInterfaceArgs keyword dicts. No subnet (the group picks it), no public
    address (nodes are private; AWS refuses one with several interfaces), deleted with the node."""
    return [{
        "network_card_index": i.network_card_index,
        "device_index": i.device_index,
        "interface_type": i.interface_type,
        "security_groups": security_group_ids,
        "delete_on_termination": "true",
        "associate_public_ip_address": "false",
    } for i in plan.interfaces]


def placement_args(p: PlacementSettings) -> dict[str, Any]:
    """aws.ec2.PlacementGroup keyword arguments."""
    args: dict[str, Any] = {"strategy": p.strategy}
    if p.strategy == "partition":
        args["partition_count"] = p.partition_count or 7
    if p.strategy == "spread" and p.spread_level is not None:
        args["spread_level"] = p.spread_level
    return args


"""How one pool's instances launch (pure): network interfaces, placement group, reserved capacity
and zones, as the provider arguments GpuNodePool passes on. components/aws/launch_rules.py holds
these arguments to AWS's rules before anything is registered.

Provider shapes are pulumi-aws v7's (terraform-provider-aws internal/service/ec2/
ec2_launch_template.go: network_interfaces, placement, capacity_reservation_specification,
instance_market_options; autoscaling/group.go: placement_group, vpc_zone_identifier).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components import efa
from components.efa import Interface
from components.settings.model import NodePoolSettings, PlacementSettings, Settings

# With a Capacity Block the group cannot launch before the block starts, and AWS retries the
# launches itself: `up` must not wait (it would fail after CAPACITY_TIMEOUT for a later start).
NO_WAIT = "0"


@dataclass(frozen=True)
class LaunchPlan:
    pool: str
    efa: bool
    # Launch-template network interfaces (provider arg dicts, security groups added by the shell);
    # empty: the template's own security groups on one default interface.
    interfaces: tuple[Interface, ...]
    placement: PlacementSettings | None
    zone: str | None  # the one zone it launches in (its private subnet), or None: every zone
    reservation_target: dict[str, str] | None  # capacity_reservation_target arguments
    market_type: str | None  # instance_market_options.market_type ("capacity-block") or None
    wait_for_capacity_timeout: str | None  # None: the group's default (CAPACITY_TIMEOUT)
    hugepages_2mi: int  # vm.nr_hugepages on the node (0: untouched)

    @property
    def capacity_block(self) -> bool:
        return self.market_type == "capacity-block"


def launch_plan(settings: Settings, pool: NodePoolSettings) -> LaunchPlan:
    on = efa.efa_enabled(pool)
    cr = pool.capacity_reservation
    target: dict[str, str] | None = None
    if cr is not None:
        target = ({"capacity_reservation_id": cr.id} if cr.id is not None
                  else {"capacity_reservation_resource_group_arn": cr.resource_group_arn or ""})
    block = cr is not None and cr.market_type == "capacity-block"
    return LaunchPlan(
        pool=pool.name,
        efa=on,
        interfaces=efa.interfaces(pool.instance_type) if on else (),
        placement=efa.placement(pool),
        zone=pool.availability_zone,
        reservation_target=target,
        market_type="capacity-block" if block else None,
        wait_for_capacity_timeout=NO_WAIT if block else None,
        hugepages_2mi=efa.HUGEPAGES_2MI if on else 0,
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


def zone_subnets(settings: Settings, plan: LaunchPlan) -> list[int] | None:
    """Which of the new VPC's private subnets (by index) the pool launches in; None: every one."""
    if plan.zone is None:
        return None
    zones = settings.network.availability_zones or ()
    return [zones.index(plan.zone)] if plan.zone in zones else None

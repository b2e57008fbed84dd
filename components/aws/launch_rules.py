"""AWS's rules for what a pool's launch asks for (pure): interfaces, placement, reserved capacity,
zones. The mock engine never calls the provider, and the provider checks little of this itself:
AWS refuses it at RunInstances, long after `up` started, from inside an Auto Scaling group's
activity log. Each rule names its source (AWS EC2 User Guide pages unless said otherwise):
- [CARDS] using-eni.html#network-cards: a network card index below the type's card count;
  MaximumNetworkInterfaces per instance; device index 0 only on card 0 is the primary.
- [EFA] efa.html: EFA on the supported types only; "one EFA per network card" (efa-acc-inst-types
  .html); "You can't use an EFA-only interface as the primary network interface"; "EFA OS-bypass
  traffic is limited to a single subnet" (efa.html#efa-limits): an EFA pool lives in one zone.
- [SG] efa-start.html "Prepare an EFA-enabled security group": inbound and outbound all traffic
  to and from the group itself (components/aws/security_groups.py EFA_RULES).
- [RUN] EC2 API RunInstances: "If you specify a network interface, you must specify any security
  groups ... as part of the network interface"; a public IPv4 address only with one interface.
- [PG] placement-strategies.html and placement-groups-limitations.html: a cluster group lives in
  one Availability Zone; at most 7 partitions per zone; a rack spread group holds at most 7
  running instances per zone; host-level spread exists only on Outposts.
- [CR] capacity-reservations-using.html / capacity-blocks-launch.html: a reservation and its
  instances share one zone (an instance "can't launch in a subnet in a different Availability
  Zone" than its Capacity Block); reservations hold On-Demand capacity (no Spot); a Capacity
  Block is targeted by id (or an UltraServer block's resource group) with market type
  capacity-block; AWS places a block's instances itself (capacity-blocks.html: blocks are
  "colocated in EC2 UltraClusters"), so no placement group is named with one.
- [US] capacity-blocks.html (Supported instance types: P6e-GB200 as UltraServer types u-p6e-gb200x36
  and u-p6e-gb200x72 only), capacity-blocks-launch.html ("To use P6e-GB200 UltraServer Capacity
  Blocks, you must be opted in to the Dallas Local Zone") and cb-group.html (launches may target a
  resource group of UltraServer Capacity Blocks instead of one): p6e-gb200 instances launch only
  into an UltraServer Capacity Block, and one block's reservation holds one UltraServer's instances
  (9 or 18: components/tables/instance_types.py nvlink_domain).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from ..facts import efa
from ..settings.model import NodePoolSettings, Settings
from ..tables.instance_types import gpu_facts, nvlink_domain

Problem = tuple[str, str]
ROOT = "settings"


def _zones(s: Settings) -> Iterator[Problem]:
    zones = s.network.availability_zones
    if zones is None:
        return
    path = f"{ROOT}.network.availabilityZones"
    if s.network.existing is not None:
        yield path, "names the zones of subnets this stack creates; with network.existing the subnets say their zones"
    if len(zones) != s.network.az_count:
        yield path, f"lists {len(zones)} zones; network.azCount is {s.network.az_count}"
    for zone, n in Counter(zones).items():
        if n > 1:
            yield f"{path}[{list(zones).index(zone)}]", f"'{zone}' is listed {n} times (one subnet per zone)"
    for i, zone in enumerate(zones):
        if s.region and not zone.startswith(s.region):
            yield f"{path}[{i}]", f"'{zone}' is not a zone of region {s.region}"


def _pool_zone(s: Settings, i: int) -> Iterator[Problem]:
    p = s.node_pools[i]
    path = f"{ROOT}.nodePools[{i}]"
    needs = []
    if p.capacity_reservation is not None:
        needs.append("a capacity reservation lives in one zone [CR]")
    if efa.efa_enabled(p) and efa.efa_supported(p.instance_type):  # else _pool_efa names the type
        needs.append("EFA's OS-bypass traffic stays in one subnet [EFA]")
    pg = efa.placement(p)
    if pg is not None and pg.strategy == "cluster":
        needs.append("a cluster placement group lives in one zone [PG]")
    if p.availability_zone is None:
        for why in needs:
            yield f"{path}.availabilityZone", f"required: {why}"
        return
    if s.region and not p.availability_zone.startswith(s.region):
        yield f"{path}.availabilityZone", f"'{p.availability_zone}' is not a zone of region {s.region}"
    elif s.network.existing is None:
        zones = s.network.availability_zones
        if zones is None:
            yield (f"{ROOT}.network.availabilityZones", f"required with nodePools[{i}].availabilityZone: the new "
                   "VPC's subnets must be made in named zones for a pool to launch in one of them")
        elif p.availability_zone not in zones:
            yield (f"{path}.availabilityZone", f"'{p.availability_zone}' has no subnet: network.availabilityZones "
                   f"is {', '.join(zones)}")


def _pool_efa(s: Settings, i: int) -> Iterator[Problem]:
    p = s.node_pools[i]
    path = f"{ROOT}.nodePools[{i}]"
    if p.efa and not efa.efa_supported(p.instance_type):
        known = gpu_facts(p.instance_type)
        why = "has no EFA" if known is not None else "is not in the instance table, whose EFA facts the layout needs"
        yield f"{path}.efa", f"'{p.instance_type}' {why} [EFA]"
        return
    if not efa.efa_enabled(p):
        return
    facts = gpu_facts(p.instance_type)
    assert facts is not None and facts.network is not None  # efa_supported
    net = facts.network
    layout = efa.interfaces(p.instance_type)
    if layout[0].interface_type == "efa-only" or (layout[0].network_card_index, layout[0].device_index) != (0, 0):
        yield f"{path}.efa", "the primary interface (card 0, device 0) cannot be EFA-only [EFA]"
    if len(layout) > net.max_interfaces:
        yield f"{path}.efa", (f"{len(layout)} interfaces; '{p.instance_type}' takes at most {net.max_interfaces} "
                              "[CARDS]")
    per_card = Counter(x.network_card_index for x in layout if x.interface_type != "interface")
    for card, n in sorted(per_card.items()):
        if card >= net.network_cards:
            yield (f"{path}.efa",
                   f"network card {card} does not exist on '{p.instance_type}' ({net.network_cards}) [CARDS]")
        if n > 1:
            yield f"{path}.efa", f"{n} EFA on network card {card}: one EFA per network card [EFA]"
    if len({(x.network_card_index, x.device_index) for x in layout}) != len(layout):
        yield f"{path}.efa", "two interfaces share a network card and device index [CARDS]"


def _pool_placement(s: Settings, i: int) -> Iterator[Problem]:
    p = s.node_pools[i]
    path = f"{ROOT}.nodePools[{i}].placement"
    pg = p.placement
    if pg is None:
        return
    if p.on_capacity_block:
        yield path, ("a Capacity Block's instances are placed by AWS in its UltraCluster; it takes no placement "
                     "group [CR]")
    if pg.group_name is not None and (pg.partition_count is not None or pg.spread_level is not None):
        yield path, "an existing group (groupName) has its partitions and spread level already; set neither"
    if pg.partition_count is not None and pg.strategy != "partition":
        yield f"{path}.partitionCount", f"applies to strategy partition only (strategy is {pg.strategy})"
    if pg.spread_level is not None and pg.strategy != "spread":
        yield f"{path}.spreadLevel", f"applies to strategy spread only (strategy is {pg.strategy})"
    if pg.spread_level == "host":
        yield f"{path}.spreadLevel", "host-level spread groups exist only on AWS Outposts; use rack [PG]"
    if pg.strategy == "spread":
        zones = 1 if p.availability_zone else (len(s.network.availability_zones or ()) or s.network.az_count)
        if p.max_nodes > 7 * zones:
            yield (max_nodes_path(i, p), f"{p.max_nodes} nodes; a rack spread placement group holds at "
                   f"most 7 running instances per zone ({zones} zone(s): {7 * zones}) [PG]")


def max_nodes_path(i: int, p: NodePoolSettings) -> str:
    """Where a pool's largest size is set: maxSize, or autoscaling.maxSize."""
    return f"{ROOT}.nodePools[{i}].{p.max_nodes_key}"


def _pool_reservation(s: Settings, i: int) -> Iterator[Problem]:
    p = s.node_pools[i]
    cr = p.capacity_reservation
    if cr is None:
        return
    path = f"{ROOT}.nodePools[{i}].capacityReservation"
    if (cr.id is None) == (cr.resource_group_arn is None):
        yield path, "names exactly one of id and resourceGroupArn"
    if p.capacity_type == "spot":
        yield (f"{ROOT}.nodePools[{i}].capacityType",
               "spot cannot use a capacity reservation (it reserves On-Demand capacity) [CR]")
    if cr.starts_at is not None and not cr.capacity_block:
        yield (f"{path}.startsAt",
               "applies to marketType capacity-block only (an On-Demand reservation is active when made)")


def _pool_ultraserver(s: Settings, i: int) -> Iterator[Problem]:
    """UltraServer-only types (multi-node NVLink) launch into an UltraServer Capacity Block [US]."""
    p = s.node_pools[i]
    servers = nvlink_domain(p.instance_type).ultraservers
    if not servers:
        return
    path = f"{ROOT}.nodePools[{i}]"
    names = " or ".join(u.name for u in servers)
    cr = p.capacity_reservation
    if cr is None or not cr.capacity_block:
        yield (f"{path}.capacityReservation", f"required with marketType capacity-block: '{p.instance_type}' is "
               f"sold only as UltraServers ({names}) in Capacity Blocks for ML [US]")
        return
    largest = max(u.instances for u in servers)
    if cr.id is not None and p.max_nodes > largest:
        yield (max_nodes_path(i, p), f"{p.max_nodes} nodes; one UltraServer Capacity Block reservation holds at most "
               f"{largest} '{p.instance_type}' ({names}); target several blocks with resourceGroupArn [US]")


def launch_problems(s: Settings) -> list[Problem]:
    """Every AWS rule a pool's launch would break, each at its field path (aws only)."""
    if s.platform != "aws":
        return [(f"{ROOT}.nodePools[{i}].{key}", "applies to platform aws only")
                for i, p in enumerate(s.node_pools)
                for key, value in (("efa", p.efa), ("placement", p.placement),
                                   ("capacityReservation", p.capacity_reservation),
                                   ("availabilityZone", p.availability_zone)) if value]
    out = list(_zones(s))
    for i in range(len(s.node_pools)):
        for rule in (_pool_zone, _pool_efa, _pool_placement, _pool_reservation, _pool_ultraserver):
            out += rule(s, i)
    return out

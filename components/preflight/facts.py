"""What pre-flight knows about a region: plain data gathered by the boundary (or a test)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Reservation:
    """One Capacity Reservation as ec2 DescribeCapacityReservations describes it (EC2 API
    Reference, `CapacityReservation` data type; botocore's ec2 2016-11-15 model)."""

    id: str
    instance_type: str
    availability_zone: str
    state: str  # active | scheduled | expired | cancelled | pending | failed | payment-pending | ...
    reservation_type: str  # default (On-Demand Capacity Reservation) | capacity-block
    available: int  # AvailableInstanceCount: instances that can still launch into it
    total: int  # TotalInstanceCount
    platform: str  # InstancePlatform, e.g. Linux/UNIX
    tenancy: str  # default | dedicated
    match_criteria: str  # open | targeted
    start: datetime | None = None  # StartDate (a Capacity Block's start)
    end: datetime | None = None  # EndDate; None: no end (EndDateType unlimited)


@dataclass(frozen=True)
class PlacementGroup:
    """An existing placement group, as DescribePlacementGroups answers it (EC2 API Reference,
    `PlacementGroup` data type: GroupName, State pending | available | deleting | deleted, Strategy
    cluster | spread | partition, PartitionCount, SpreadLevel host | rack)."""

    name: str
    state: str
    strategy: str
    partition_count: int | None = None
    spread_level: str | None = None


@dataclass(frozen=True)
class Route:
    """A default route (0.0.0.0/0) of a route table (EC2 API Reference, `Route`)."""

    target: str  # nat-..., tgw-..., igw-..., eni-..., i-..., pcx-..., vgw-..., vpce-... ("" if none named)
    state: str  # active | blackhole (its target is gone: no traffic leaves through it)


@dataclass(frozen=True)
class RouteTable:
    """One route table of the VPC as DescribeRouteTables describes it (`RouteTable`)."""

    id: str
    main: bool  # the VPC's main table: subnets without an explicit association use it
    subnet_ids: tuple[str, ...]  # explicitly associated subnets
    default_routes: tuple[Route, ...] = ()


@dataclass(frozen=True)
class VpcEndpoint:
    """One VPC endpoint as DescribeVpcEndpoints describes it (`VpcEndpoint`)."""

    id: str
    service_name: str
    type: str  # Interface | Gateway | GatewayLoadBalancer | ...
    # available | pending | pendingacceptance | failed | ..., lowercased here: the service answers
    # `available`, `pendingAcceptance` (terraform-provider-aws internal/service/ec2/consts.go), not
    # the capitalised enum of botocore's model.
    state: str
    private_dns: bool  # PrivateDnsEnabled
    subnet_ids: tuple[str, ...] = ()  # Interface: one per AZ
    route_table_ids: tuple[str, ...] = ()  # Gateway


@dataclass(frozen=True)
class RegionFacts:
    region: str
    # Set when the region cannot be used at all (not enabled for the account, bad credentials):
    # nothing else was gathered.
    unavailable: str = ""
    zones: tuple[str, ...] = ()  # available AZs (zone type availability-zone), in AWS's order
    # AZs of `network.existing` subnets, when the stack brings its own network.
    subnet_zones: tuple[str, ...] = ()
    subnet_az: dict[str, str] = field(default_factory=dict)  # existing private subnet -> its AZ
    # The existing VPC's route tables and VPC endpoints (network.existing only).
    route_tables: tuple[RouteTable, ...] = ()
    vpc_endpoints: tuple[VpcEndpoint, ...] = ()
    # Endpoint services the stack would create endpoints of (network.endpoints: create): service
    # name -> the AZs it is offered in (DescribeVpcEndpointServices); a name missing: not offered.
    endpoint_services: dict[str, frozenset[str]] = field(default_factory=dict)
    offerings: dict[str, frozenset[str]] = field(default_factory=dict)  # type -> AZs offering it
    vcpus: dict[str, int] = field(default_factory=dict)  # from DescribeInstanceTypes
    # type -> NetworkInfo.EfaSupported (DescribeInstanceTypes), for pools with reserved capacity
    efa_supported: dict[str, bool] = field(default_factory=dict)
    # image source (SSM parameter path or `ami-` id) -> AMI id (None: missing or not available)
    amis: dict[str, str | None] = field(default_factory=dict)
    # The stack's own images (controlPlane.ami, nodePools[].ami) as DescribeImages answers them:
    # source -> the AMI's tags (Image.Tags, Key -> Value), for images that exist and are available.
    image_tags: dict[str, dict[str, str]] = field(default_factory=dict)
    # An own SSM parameter that resolves to an AMI that is not there (deregistered, failed, another
    # Region's id): source -> what DescribeImages said of it.
    image_gone: dict[str, str] = field(default_factory=dict)
    quotas: dict[str, float] = field(default_factory=dict)  # quota code -> applied (or default) value
    # A pool's `capacityReservation.id` or `.resourceGroupArn` -> the reservations it names (a
    # group: its members); None: no such reservation (or group) in this region and account.
    reservations: dict[str, tuple[Reservation, ...] | None] = field(default_factory=dict)
    # A pool's `placement.groupName` -> the group (None: no group of that name in this region).
    placement_groups: dict[str, PlacementGroup | None] = field(default_factory=dict)
    now: datetime | None = None  # the clock when the facts were gathered (UTC): reservation windows
    # Calls that failed for another reason than "not found" (access denied, throttling): the
    # checks they feed report "could not check", never "ok".
    errors: dict[str, str] = field(default_factory=dict)  # what -> error text

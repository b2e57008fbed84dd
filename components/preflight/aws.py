"""The thin boto3 boundary: gather RegionFacts for a stack. No decisions here (checks.py decides).

Calls (all read-only, all in the stack's region): ec2 DescribeAvailabilityZones, DescribeSubnets
(only for network.existing), DescribeInstanceTypeOfferings (location type availability-zone),
DescribeInstanceTypes (vCPUs of types outside the GPU table; EFA support of types in pools with
reserved capacity), ssm GetParameter (Canonical's public AMI parameter, and the control planes' or a
pool's own `ami` path), DescribeImages (an own `ami-` id, and the id an own path names: its State
and Tags, what the image carries), service-quotas GetServiceQuota, falling back to
GetAWSDefaultServiceQuota when the account has no applied value; for a pool's
`capacityReservation`: ec2 DescribeCapacityReservations by id, and for a `resourceGroupArn`
resource-groups ListGroupResources (the group's reservation ARNs; DescribeCapacityReservations
has no group filter) then DescribeCapacityReservations of its members; for network.existing:
ec2 DescribeRouteTables and DescribeVpcEndpoints (filter vpc-id); for network.endpoints: create:
DescribeVpcEndpointServices (filter service-name, so a service the region lacks is an absent
answer rather than an InvalidServiceName error for the whole call). "Not found" answers become
facts (no AMI, default quota, no reservation); any other error is recorded so the check reports
"could not check" rather than passing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ..aws.endpoints import planned_endpoints
from ..settings.model import Settings
from ..tables.instance_types import GPU_INSTANCE_TYPES
from .checks import alternatives, demands, image_sources, instance_types, own_sources
from .facts import PlacementGroup, RegionFacts, Reservation, Route, RouteTable, VpcEndpoint
from .quotas import SERVICE_CODE
from .reservations import efa_types
from .reservations import source as reservation_key

# Error codes meaning "this region is not usable with these credentials" (not enabled, opt-in).
REGION_UNAVAILABLE = {"AuthFailure", "OptInRequired", "UnrecognizedClientException", "InvalidClientTokenId"}
# DescribeCapacityReservations for an id this account has no reservation of in the region (the
# code terraform-provider-aws treats as "gone" on the same call: internal/service/ec2/errors.go).
RESERVATION_NOT_FOUND = {"InvalidCapacityReservationId.NotFound", "InvalidCapacityReservationId.Malformed"}
GROUP_NOT_FOUND = "NotFoundException"  # resource-groups ListGroupResources: no such group (HTTP 404)
RESERVATION_TYPE = "AWS::EC2::CapacityReservation"
# DescribeImages of an id the region has no image of (EC2 API Reference, Error codes).
IMAGE_NOT_FOUND = {"InvalidAMIID.NotFound", "InvalidAMIID.Unavailable", "InvalidAMIID.Malformed"}
AVAILABLE = "available"  # ImageState: pending | available | invalid | deregistered | ... (botocore ec2 model)


def _code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def _text(exc: Exception) -> str:
    # botocore's ClientError text already names the code and the operation.
    return str(exc) if _code(exc) else f"{type(exc).__name__}: {exc}"


class AwsRegion:
    """boto3 clients for one region. `session` is a boto3.Session (tests: one with stubbed clients)."""

    def __init__(self, session: Any, region: str, clock: Callable[[], datetime] | None = None) -> None:
        self.region = region
        self._clock = clock or (lambda: datetime.now(UTC))  # tests: a fixed time
        self.ec2 = session.client("ec2", region_name=region)
        self.ssm = session.client("ssm", region_name=region)
        self.quotas = session.client("service-quotas", region_name=region)
        self.resource_groups = session.client("resource-groups", region_name=region)

    def now(self) -> datetime:
        return self._clock()

    def zones(self) -> tuple[str, ...]:
        answer = self.ec2.describe_availability_zones(
            Filters=[{"Name": "zone-type", "Values": ["availability-zone"]},
                     {"Name": "state", "Values": ["available"]}])
        return tuple(sorted(z["ZoneName"] for z in answer["AvailabilityZones"]))

    def subnet_zones(self, subnet_ids: list[str]) -> dict[str, str]:
        """Subnet id -> its AZ."""
        answer = self.ec2.describe_subnets(SubnetIds=subnet_ids)
        return {s["SubnetId"]: s["AvailabilityZone"] for s in answer["Subnets"]}

    def route_tables(self, vpc_id: str) -> tuple[RouteTable, ...]:
        pages = self.ec2.get_paginator("describe_route_tables").paginate(
            Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
        return tuple(_route_table(t) for page in pages for t in page["RouteTables"])

    def vpc_endpoints(self, vpc_id: str) -> tuple[VpcEndpoint, ...]:
        pages = self.ec2.get_paginator("describe_vpc_endpoints").paginate(
            Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])
        return tuple(_endpoint(e) for page in pages for e in page["VpcEndpoints"])

    def endpoint_services(self, names: list[str]) -> dict[str, frozenset[str]]:
        pages = self.ec2.get_paginator("describe_vpc_endpoint_services").paginate(
            Filters=[{"Name": "service-name", "Values": names}])
        found: dict[str, set[str]] = {}
        for page in pages:
            # GovCloud has answered with ServiceNames only, ignoring the filter (terraform-provider-aws
            # vpc_endpoint_service_data_source.go): such a name is offered, its AZs unknown (empty).
            for n in page.get("ServiceNames", []):
                if n in names:
                    found.setdefault(n, set())
            for d in page.get("ServiceDetails", []):
                if d["ServiceName"] in names:
                    found.setdefault(d["ServiceName"], set()).update(d.get("AvailabilityZones", []))
        return {n: frozenset(z) for n, z in found.items()}

    def offerings(self, types: list[str]) -> dict[str, frozenset[str]]:
        found: dict[str, set[str]] = {t: set() for t in types}
        pages = self.ec2.get_paginator("describe_instance_type_offerings").paginate(
            LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": types}])
        for page in pages:
            for o in page["InstanceTypeOfferings"]:
                found.setdefault(o["InstanceType"], set()).add(o["Location"])
        return {t: frozenset(z) for t, z in found.items()}

    def instance_types(self, types: list[str]) -> tuple[dict[str, int], dict[str, bool]]:
        """vCPUs and NetworkInfo.EfaSupported per type (one DescribeInstanceTypes call)."""
        answer = self.ec2.describe_instance_types(InstanceTypes=types)["InstanceTypes"]
        return ({t["InstanceType"]: int(t["VCpuInfo"]["DefaultVCpus"]) for t in answer},
                {t["InstanceType"]: bool(t.get("NetworkInfo", {}).get("EfaSupported", False)) for t in answer})

    def reservations(self, ids: list[str]) -> tuple[Reservation, ...] | None:
        """The reservations by id; None when one of them does not exist in this region."""
        try:
            pages = self.ec2.get_paginator("describe_capacity_reservations").paginate(CapacityReservationIds=ids)
            return tuple(_reservation(r) for page in pages for r in page["CapacityReservations"])
        except Exception as exc:
            if _code(exc) in RESERVATION_NOT_FOUND:
                return None
            raise

    def group_reservation_ids(self, group_arn: str) -> list[str] | None:
        """Ids of the Capacity Reservations in a resource group; None: no such group."""
        try:
            pages = self.resource_groups.get_paginator("list_group_resources").paginate(
                Group=group_arn, Filters=[{"Name": "resource-type", "Values": [RESERVATION_TYPE]}])
            arns = [r["Identifier"]["ResourceArn"] for page in pages for r in page.get("Resources", [])]
        except Exception as exc:
            if _code(exc) == GROUP_NOT_FOUND:
                return None
            raise
        # arn:aws:ec2:<region>:<account>:capacity-reservation/cr-...
        return sorted(a.rsplit("/", 1)[-1] for a in arns)

    def reserved(self, key: str) -> tuple[Reservation, ...] | None:
        if key.startswith("cr-"):
            return self.reservations([key])
        ids = self.group_reservation_ids(key)
        if ids is None:
            return None
        return (self.reservations(ids) or ()) if ids else ()

    def placement_groups(self, names: list[str]) -> dict[str, PlacementGroup | None]:
        """The named placement groups; a name no group has is None. By filter, not GroupNames: with
        GroupNames one unknown name fails the whole call (InvalidPlacementGroup.Unknown)."""
        answer = self.ec2.describe_placement_groups(Filters=[{"Name": "group-name", "Values": names}])
        found = {g["GroupName"]: PlacementGroup(g["GroupName"], str(g.get("State", "")), str(g.get("Strategy", "")),
                                                g.get("PartitionCount"), g.get("SpreadLevel"))
                 for g in answer.get("PlacementGroups", [])}
        return {n: found.get(n) for n in names}

    def parameter(self, name: str) -> str | None:
        try:
            return str(self.ssm.get_parameter(Name=name)["Parameter"]["Value"])
        except Exception as exc:
            if _code(exc) == "ParameterNotFound":
                return None
            raise

    def image(self, image_id: str) -> tuple[str, dict[str, str]] | None:
        """The image's State and Tags (EC2 API: DescribeImages, `Image`); None: no such image in
        this region (an id that names none is an InvalidAMIID.* error, a deregistered one may be
        answered with no image at all)."""
        try:
            images = self.ec2.describe_images(ImageIds=[image_id])["Images"]
        except Exception as exc:
            if _code(exc) in IMAGE_NOT_FOUND:
                return None
            raise
        if not images:
            return None
        i = images[0]
        return str(i.get("State", "")), {str(t["Key"]): str(t.get("Value", "")) for t in i.get("Tags", [])}

    def quota(self, code: str) -> float:
        try:
            return float(self.quotas.get_service_quota(ServiceCode=SERVICE_CODE, QuotaCode=code)["Quota"]["Value"])
        except Exception as exc:
            if _code(exc) != "NoSuchResourceException":
                raise
        # No applied value for this account: the AWS default is what applies.
        answer = self.quotas.get_aws_default_service_quota(ServiceCode=SERVICE_CODE, QuotaCode=code)
        return float(answer["Quota"]["Value"])


def collect(settings: Settings, api: AwsRegion) -> RegionFacts:
    """Everything checks.check needs about settings.region, one call per question."""
    try:
        zones = api.zones()
    except Exception as exc:
        if _code(exc) in REGION_UNAVAILABLE:
            return RegionFacts(region=api.region, unavailable=_text(exc))
        raise
    errors: dict[str, str] = {}
    subnet_az: dict[str, str] = {}
    route_tables: tuple[RouteTable, ...] = ()
    vpc_endpoints: tuple[VpcEndpoint, ...] = ()
    existing = settings.network.existing
    if existing is not None:
        try:
            subnet_az = api.subnet_zones(list(existing.private_subnet_ids))
        except Exception as exc:
            errors["subnets"] = _text(exc)
        try:
            route_tables = api.route_tables(existing.vpc_id)
        except Exception as exc:
            errors["route-tables"] = _text(exc)
        try:
            vpc_endpoints = api.vpc_endpoints(existing.vpc_id)
        except Exception as exc:
            errors["vpc-endpoints"] = _text(exc)
    endpoint_services: dict[str, frozenset[str]] = {}
    wanted = sorted(name for _, name in planned_endpoints(settings, existing_vpc=existing is not None))
    if wanted:
        try:
            endpoint_services = api.endpoint_services(wanted)
        except Exception as exc:
            errors["endpoint-services"] = _text(exc)
    subnet_zones = tuple(sorted(set(subnet_az.values())))

    types = list(instance_types(settings))
    asked = sorted({*types, *(a for t in types for a in alternatives(t, settings))})
    offerings: dict[str, frozenset[str]] = {}
    try:
        offerings = api.offerings(asked)
    except Exception as exc:
        errors["offerings"] = _text(exc)

    unknown = sorted(t for t in types if GPU_INSTANCE_TYPES.get(t) is None or GPU_INSTANCE_TYPES[t].vcpus == 0)
    efa_asked = efa_types(settings)
    vcpus: dict[str, int] = {}
    efa: dict[str, bool] = {}
    if unknown or efa_asked:
        try:
            answered, efa = api.instance_types(sorted({*unknown, *efa_asked}))
            vcpus = {t: v for t, v in answered.items() if t in unknown}
            efa = {t: v for t, v in efa.items() if t in efa_asked}
        except Exception as exc:
            if unknown:
                errors["vcpus"] = _text(exc)
            if efa_asked:
                errors["instance-types"] = _text(exc)

    reservations: dict[str, tuple[Reservation, ...] | None] = {}
    for pool in settings.node_pools:
        if pool.capacity_reservation is None or (key := reservation_key(pool)) in reservations:
            continue
        try:
            reservations[key] = api.reserved(key)
        except Exception as exc:
            errors[key] = _text(exc)

    groups: dict[str, PlacementGroup | None] = {}
    if names := sorted({p.placement.group_name for p in settings.node_pools
                        if p.placement is not None and p.placement.group_name is not None}):
        try:
            groups = api.placement_groups(names)
        except Exception as exc:
            errors["placement-groups"] = _text(exc)

    amis, image_tags, image_gone = _images(settings, api, errors)

    quotas: dict[str, float] = {}
    facts_so_far = RegionFacts(region=api.region, zones=zones, vcpus=vcpus)
    for demand in demands(settings, facts_so_far)[0]:
        try:
            quotas[demand.quota.code] = api.quota(demand.quota.code)
        except Exception as exc:
            errors[demand.quota.code] = _text(exc)
    return RegionFacts(region=api.region, zones=zones, subnet_zones=subnet_zones, subnet_az=subnet_az,
                       route_tables=route_tables, vpc_endpoints=vpc_endpoints, endpoint_services=endpoint_services,
                       offerings=offerings, vcpus=vcpus, efa_supported=efa, amis=amis, image_tags=image_tags,
                       image_gone=image_gone, quotas=quotas,
                       reservations=reservations, placement_groups=groups, now=api.now(), errors=errors)


def _images(settings: Settings, api: AwsRegion, errors: dict[str, str]
            ) -> tuple[dict[str, str | None], dict[str, dict[str, str]], dict[str, str]]:
    """Each image source resolved (an `ami-` id described, a path read); the stack's own images
    described too, for their tags (Canonical's parameter is trusted to name a live image)."""
    amis: dict[str, str | None] = {}
    tags: dict[str, dict[str, str]] = {}
    gone: dict[str, str] = {}
    own = own_sources(settings)
    for source in sorted(image_sources(settings)):
        try:
            if source.startswith("ami-"):
                described = api.image(source)
                available = described is not None and described[0] == AVAILABLE
                amis[source] = source if available else None
            else:
                amis[source] = api.parameter(source)
                described = None
        except Exception as exc:
            errors[source] = _text(exc)
            continue
        ami = amis[source]
        if source not in own or ami is None:
            continue
        if not source.startswith("ami-"):
            try:
                described = api.image(ami)
            except Exception as exc:
                errors[f"image:{source}"] = _text(exc)
                continue
            if described is None or described[0] != AVAILABLE:
                gone[source] = "does not exist" if described is None else f"is {described[0] or 'in no state'}"
                continue
        if described is not None:
            tags[source] = described[1]
    return amis, tags, gone


# A route's target is whichever of these members the answer sets (EC2 API Reference, `Route`).
ROUTE_TARGETS = ("NatGatewayId", "TransitGatewayId", "GatewayId", "InstanceId", "NetworkInterfaceId",
                 "VpcPeeringConnectionId", "LocalGatewayId", "CarrierGatewayId", "CoreNetworkArn",
                 "EgressOnlyInternetGatewayId")


def _route_table(t: dict[str, Any]) -> RouteTable:
    assocs = t.get("Associations", [])
    defaults = tuple(
        Route(target=next((str(r[k]) for k in ROUTE_TARGETS if r.get(k)), ""), state=r.get("State", ""))
        for r in t.get("Routes", []) if r.get("DestinationCidrBlock") == "0.0.0.0/0")
    return RouteTable(id=t["RouteTableId"], main=any(a.get("Main") for a in assocs),
                      subnet_ids=tuple(a["SubnetId"] for a in assocs if a.get("SubnetId")),
                      default_routes=defaults)


def _endpoint(e: dict[str, Any]) -> VpcEndpoint:
    return VpcEndpoint(id=e["VpcEndpointId"], service_name=e.get("ServiceName", ""),
                       type=e.get("VpcEndpointType", ""), state=str(e.get("State", "")).lower(),
                       private_dns=bool(e.get("PrivateDnsEnabled", False)),
                       subnet_ids=tuple(e.get("SubnetIds", [])), route_table_ids=tuple(e.get("RouteTableIds", [])))


def _utc(value: Any) -> datetime | None:
    # boto3 parses EC2 timestamps into aware datetimes (botocore.utils.parse_timestamp).
    return value.astimezone(UTC) if isinstance(value, datetime) else None


def _reservation(r: dict[str, Any]) -> Reservation:
    return Reservation(
        id=r["CapacityReservationId"], instance_type=r.get("InstanceType", ""),
        availability_zone=r.get("AvailabilityZone", ""), state=r.get("State", ""),
        reservation_type=r.get("ReservationType", "default"), available=int(r.get("AvailableInstanceCount", 0)),
        total=int(r.get("TotalInstanceCount", 0)), platform=r.get("InstancePlatform", ""),
        tenancy=r.get("Tenancy", ""), match_criteria=r.get("InstanceMatchCriteria", ""),
        start=_utc(r.get("StartDate")), end=_utc(r.get("EndDate")))

"""Can the nodes' private subnets reach what the nodes call? (pure: settings + facts -> findings)

A private subnet reaches the AWS APIs the boot path calls (components/aws/endpoints.py REQUIRED)
through a default route (0.0.0.0/0, state active, to a NAT gateway, transit gateway, instance,
interface, peering, VPN or firewall endpoint) or through a VPC endpoint of each service, in its
VPC, `available`, with private DNS on (without it the default regional API names the CLI and the
SDKs use do not resolve to the endpoint: AWS PrivateLink Guide, "DNS hostnames"). A subnet without
an explicit route-table association uses the VPC's main route table (VPC User Guide, "Route
tables": "Subnet route tables"). Neither: an error naming the subnet and the missing services.

A subnet whose only way out is endpoints still reaches nothing outside AWS: the k8s and aws-cli
snaps come from the Snap Store, images from public registries, and Velero's bucket is in another
region. That is a warning, not an error: a route this check cannot see (a proxy the image is built
for) may serve them. An offline stack (settings.offline, docs/adr/0043) is built for exactly that:
its images carry the snap and every image (components/preflight/images.py checks they do), so no
warning. With an ECR pull-through cache and no NAT one thing still reaches out: ECR fetches an
image from its upstream on its first pull through a cache rule, and over an interface endpoint
that first pull needs the VPC to route to the internet through a NAT gateway (Amazon ECR User
Guide, vpc-endpoints.html, "Considerations for Amazon ECR VPC endpoints"; later pulls do not):
a warning naming the way round (the images preloaded, or the cache primed from elsewhere).

With images.mirror in the stack's own Region's ECR, the boot path adds ecr.api and ecr.dkr
(components/aws/endpoints.py, ecr_mirror_only): planned_endpoints names them, so endpoints: create
asks DescribeVpcEndpointServices about them like the rest.

The VPC this project makes is judged from the settings: its route tables are not there yet.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..aws.endpoints import ENDPOINTS, REQUIRED, Endpoint, planned_endpoints, service_name
from ..settings.model import Settings
from .facts import RegionFacts, RouteTable, VpcEndpoint
from .findings import Finding

ACTIVE = "active"
AVAILABLE = "available"
OUTSIDE_AWS = ("the Snap Store (the k8s and aws-cli snaps), public image registries and Velero's off-region "
               "bucket")


def _names(region: str, e: Endpoint) -> set[str]:
    """The service names an existing endpoint of `e` may carry in this region."""
    known = service_name(region, e)
    plain = f"com.amazonaws.{region}.{e.service}"
    return {known} if known else {plain, f"cn.{plain}"}


def table_of(subnet: str, tables: tuple[RouteTable, ...]) -> RouteTable | None:
    explicit = next((t for t in tables if subnet in t.subnet_ids), None)
    return explicit or next((t for t in tables if t.main), None)


def egress(table: RouteTable) -> str | None:
    """The active default route's target, or None."""
    return next((r.target or "(unnamed target)" for r in table.default_routes if r.state == ACTIVE), None)


def _endpoint_status(e: Endpoint, found: list[VpcEndpoint]) -> str | None:
    """None: usable; else why not."""
    if not found:
        return "missing"
    if not any(v.state == AVAILABLE for v in found):
        return f"{found[0].id} is {found[0].state or 'in no state'}, not available"
    usable = [v for v in found if v.state == AVAILABLE]
    if e.kind == "Interface" and not any(v.private_dns for v in usable):
        return (f"{usable[0].id} has private DNS off (the nodes call the default regional names: "
                f"turn PrivateDnsEnabled on)")
    return None


def _first_pull(settings: Settings, where: str) -> Iterator[Finding]:
    """ECR's first pull through a cache rule over an interface endpoint needs a NAT route."""
    if settings.images.pull_through_cache != "create":
        return
    which = ("an image the node images do not preload (images.preloaded) and the cache does not hold yet"
             if settings.images.preloaded else "every image the cache does not hold yet")
    yield Finding("cache-first-pull", "warning", "settings.images.pullThroughCache",
                  f"{where}: ECR fetches an image from its upstream on the first pull through a cache rule, and "
                  f"over the VPC's interface endpoints that first pull needs a NAT route to the internet (Amazon "
                  f"ECR User Guide, vpc-endpoints.html); {which} fails its first pull here: prime the cache from a "
                  f"networked place (pull each <mirror>/<upstream>/... once) before the cluster needs it")


def _new_vpc(settings: Settings, facts: RegionFacts, zones: tuple[str, ...]) -> Iterator[Finding]:
    net = settings.network
    if net.nat_gateways == "none":
        # A NAT-less VPC that is not offline never gets here: the settings refuse it
        # (components/aws/endpoints.py endpoint_problems).
        yield from _first_pull(settings, "natGateways is none")
    yield from _services(settings, facts, zones)


def _services(settings: Settings, facts: RegionFacts, zones: tuple[str, ...]) -> Iterator[Finding]:
    """endpoints: create: each service offered in the region, in every AZ its subnets are in
    (CreateVpcEndpoint refuses a subnet in an AZ the service is not offered in)."""
    planned = planned_endpoints(settings, existing_vpc=settings.network.existing is not None)
    if not planned:
        return
    if "endpoint-services" in facts.errors:
        yield Finding("could-not-check", "error", "settings.network.endpoints",
                      f"{facts.errors['endpoint-services']}: allow ec2:DescribeVpcEndpointServices for the "
                      f"pre-flight role")
        return
    for e, name in planned:
        offered = facts.endpoint_services.get(name)
        if offered is None:
            yield Finding("endpoint-service-missing", "error", "settings.network.endpoints",
                          f"{name} is not an endpoint service in {facts.region}, so endpoints: create fails: "
                          f"create the endpoints of this region's services yourself and set endpoints: expect, "
                          f"or keep NAT (natGateways: single, endpoints: off)")
            continue
        missing = [z for z in zones if offered and z not in offered and e.kind == "Interface"]
        if missing:
            yield Finding("endpoint-service-missing", "error", "settings.network.endpoints",
                          f"{name} is not offered in {', '.join(missing)} (offered in {', '.join(sorted(offered))}), "
                          f"where the cluster's private subnets are: choose zones where it is "
                          f"(network.availabilityZones) or keep NAT")


def _existing(settings: Settings, facts: RegionFacts) -> Iterator[Finding]:
    existing = settings.network.existing
    assert existing is not None
    path = "settings.network.existing.privateSubnetIds"
    if "route-tables" in facts.errors:
        yield Finding("could-not-check", "error", path, f"{facts.errors['route-tables']}: allow "
                      f"ec2:DescribeRouteTables for the pre-flight role")
        return
    creating = {e.service for e, _ in planned_endpoints(settings, existing_vpc=True)}
    endpoint_error = facts.errors.get("vpc-endpoints")
    if settings.network.endpoints == "create":
        yield from _create_in_existing(settings, facts, path)
    natless: list[str] = []
    for i, subnet in enumerate(existing.private_subnet_ids):
        subject = f"{path}[{i}]"
        az = facts.subnet_az.get(subnet, "")
        table = table_of(subnet, facts.route_tables)
        if table is None:
            yield Finding("could-not-check", "error", subject,
                          f"no route table of {existing.vpc_id} applies to {subnet} (is it in that VPC?)")
            continue
        if egress(table) is not None:
            continue
        where = f"{subnet} ({az or 'AZ unknown'}, route table {table.id})"
        dead = [r.target for r in table.default_routes if r.state != ACTIVE]
        route = (f"has a default route to {', '.join(dead)} in state blackhole (its target is gone)" if dead
                 else "has no default route (0.0.0.0/0 to a NAT gateway, transit gateway or other egress)")
        if endpoint_error is not None:
            yield Finding("could-not-check", "error", subject, f"{where} {route}, and its VPC's endpoints could not "
                          f"be read: {endpoint_error}: allow ec2:DescribeVpcEndpoints for the pre-flight role")
            continue
        lacking = []
        for e in REQUIRED:
            if e.service in creating:
                continue
            names = _names(facts.region, e)
            found = [v for v in facts.vpc_endpoints if v.service_name in names and v.type == e.kind]
            why = _endpoint_status(e, found)
            if why is not None:
                lacking.append(e.service if why == "missing" else f"{e.service} ({why})")
        natless.append(subnet)
        if lacking:
            yield Finding("no-aws-route", "error", subject,
                          f"{where} {route} and the VPC has no usable endpoint for {', '.join(lacking)}: nodes "
                          f"there cannot get their join token or find their control planes (ssm, ec2), read the "
                          f"cluster's secrets (secretsmanager) or the API load balancer (elasticloadbalancing). "
                          f"Add a NAT route, or set network.endpoints: create (or create them and set expect)")
        elif not settings.offline:  # offline: built to need nothing outside AWS (images.check)
            yield Finding("no-egress", "warning", subject,
                          f"{where} {route}: AWS's APIs are reached through the VPC endpoints, but nothing outside "
                          f"AWS is ({OUTSIDE_AWS}): nodes cannot install the k8s snap or pull images unless the "
                          f"stack is offline (settings.offline, docs/adr/0043) or a proxy or route this check "
                          f"cannot see serves them")
    if natless:
        yield from _first_pull(settings, f"{', '.join(natless)} route to no NAT")


def _create_in_existing(settings: Settings, facts: RegionFacts, path: str) -> Iterator[Finding]:
    """CreateVpcEndpoint takes one subnet per AZ (AWS PrivateLink Guide, create-interface-endpoint.html:
    "You can select one subnet per Availability Zone") and, with private DNS on, refuses a second
    endpoint with private DNS for the same service in the VPC (its private hosted zone conflicts)."""
    existing = settings.network.existing
    assert existing is not None
    seen: dict[str, str] = {}
    for i, subnet in enumerate(existing.private_subnet_ids):
        az = facts.subnet_az.get(subnet)
        if az is None:
            continue
        if az in seen:
            yield Finding("endpoint-subnets", "error", f"{path}[{i}]",
                          f"{subnet} is in {az} like {seen[az]}: an interface endpoint takes one subnet per AZ, so "
                          f"endpoints: create fails; list one private subnet per AZ or create the endpoints "
                          f"yourself (endpoints: expect)")
        seen.setdefault(az, subnet)
    if "vpc-endpoints" in facts.errors:
        return
    for e, name in planned_endpoints(settings, existing_vpc=True):
        clash = [v for v in facts.vpc_endpoints if v.service_name == name and v.type == "Interface" and v.private_dns
                 and v.state not in ("deleted", "deleting", "failed", "rejected", "expired")]
        if e.kind == "Interface" and clash:
            yield Finding("endpoint-conflict", "error", "settings.network.endpoints",
                          f"{existing.vpc_id} already has {clash[0].id} for {name} with private DNS on: a second one "
                          f"cannot be created; set endpoints: expect to use the VPC's own")


def check(settings: Settings, facts: RegionFacts, zones: tuple[str, ...]) -> list[Finding]:
    """`zones`: the AZs of the cluster's private subnets (checks.chosen_zones)."""
    if settings.network.existing is None:
        return list(_new_vpc(settings, facts, zones))
    return [*_services(settings, facts, zones), *_existing(settings, facts)]


__all__ = ["ENDPOINTS", "check", "egress", "table_of"]

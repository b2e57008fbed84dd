"""components/preflight/egress.py over plain facts: which routes count as egress, which endpoints
count as usable, and what endpoints: create refuses in an existing VPC (docs/adr/0041)."""

from __future__ import annotations

import pytest

from components.preflight import egress
from components.preflight.facts import RegionFacts, Route, RouteTable, VpcEndpoint
from components.settings.model import Settings

VPC = "vpc-0123456789abcdef0"
A, B = "subnet-0a1b2c3d4e5f60718", "subnet-0a1b2c3d4e5f60719"
BOOT = ("ssm", "ssmmessages", "ec2messages", "secretsmanager", "ec2", "elasticloadbalancing")


def _settings(endpoints: str = "off", subnets: tuple[str, ...] = (A, B)) -> Settings:
    return Settings.model_validate({
        "platform": "aws", "region": "eu-west-1",
        "network": {"endpoints": endpoints, "existing": {"vpcId": VPC, "privateSubnetIds": list(subnets)}}})


def _endpoint(service: str, n: int, **over: object) -> VpcEndpoint:
    base: dict[str, object] = {"id": f"vpce-0a1b2c3d4e5f6{n:04d}", "service_name": f"com.amazonaws.eu-west-1.{service}",
                               "type": "Interface", "state": "available", "private_dns": True, "subnet_ids": (A,)}
    base.update(over)
    return VpcEndpoint(**base)  # type: ignore[arg-type]


def _facts(*tables: RouteTable, endpoints: tuple[VpcEndpoint, ...] = (), **over: object) -> RegionFacts:
    base: dict[str, object] = {"region": "eu-west-1", "subnet_az": {A: "eu-west-1a", B: "eu-west-1b"},
                               "route_tables": tables, "vpc_endpoints": endpoints}
    base.update(over)
    return RegionFacts(**base)  # type: ignore[arg-type]


MAIN_LOCAL = RouteTable("rtb-0a1b2c3d4e5f60001", main=True, subnet_ids=())


@pytest.mark.parametrize("target", ["nat-0a1b2c3d4e5f60001", "tgw-0a1b2c3d4e5f60001", "eni-0a1b2c3d4e5f60001",
                                    "i-0a1b2c3d4e5f60001", "pcx-0a1b2c3d4e5f60001", "vpce-0a1b2c3d4e5f60009"])
def test_any_active_default_route_is_egress(target: str) -> None:
    main = RouteTable("rtb-0a1b2c3d4e5f60001", main=True, subnet_ids=(), default_routes=(Route(target, "active"),))
    assert egress.check(_settings(), _facts(main), ("eu-west-1a", "eu-west-1b")) == []


def test_a_blackhole_default_route_is_no_egress_and_says_so() -> None:
    main = RouteTable("rtb-0a1b2c3d4e5f60001", main=True, subnet_ids=(),
                      default_routes=(Route("nat-0a1b2c3d4e5f60001", "blackhole"),))
    findings = egress.check(_settings(), _facts(main), ())
    assert [(f.kind, f.subject) for f in findings] == [
        ("no-aws-route", "settings.network.existing.privateSubnetIds[0]"),
        ("no-aws-route", "settings.network.existing.privateSubnetIds[1]")]
    assert "nat-0a1b2c3d4e5f60001 in state blackhole" in findings[0].message
    assert "for ssm, ssmmessages, ec2messages, secretsmanager, ec2, elasticloadbalancing:" in findings[0].message


def test_an_explicit_association_wins_over_the_main_table() -> None:
    own = RouteTable("rtb-0a1b2c3d4e5f60718", main=False, subnet_ids=(A,),
                     default_routes=(Route("nat-0a1b2c3d4e5f60001", "active"),))
    findings = egress.check(_settings(), _facts(MAIN_LOCAL, own), ())
    assert [f.subject for f in findings] == ["settings.network.existing.privateSubnetIds[1]"]  # B: main, local only


def test_a_gateway_endpoint_or_a_pending_one_does_not_serve_an_interface_service() -> None:
    eps = tuple(_endpoint(s, i) for i, s in enumerate(BOOT) if s not in ("ec2", "ssm"))
    eps += (_endpoint("ec2", 10, type="Gateway"), _endpoint("ssm", 11, state="pendingacceptance"))
    [a, _] = egress.check(_settings(), _facts(MAIN_LOCAL, endpoints=eps), ())
    assert "no usable endpoint for ssm (vpce-0a1b2c3d4e5f60011 is pendingacceptance, not available), ec2:" in a.message


def test_all_endpoints_usable_is_a_warning_not_an_error() -> None:
    eps = tuple(_endpoint(s, i) for i, s in enumerate(BOOT))
    findings = egress.check(_settings(endpoints="expect"), _facts(MAIN_LOCAL, endpoints=eps), ())
    assert {(f.kind, f.severity) for f in findings} == {("no-egress", "warning")}


def test_endpoints_that_could_not_be_read_fail_closed_only_where_they_matter() -> None:
    main_nat = RouteTable("rtb-0a1b2c3d4e5f60001", main=True, subnet_ids=(),
                          default_routes=(Route("nat-0a1b2c3d4e5f60001", "active"),))
    err = {"vpc-endpoints": "UnauthorizedOperation"}
    assert egress.check(_settings(), _facts(main_nat, errors=err), ()) == []  # NAT: endpoints not needed
    findings = egress.check(_settings(), _facts(MAIN_LOCAL, errors=err), ())
    assert {f.kind for f in findings} == {"could-not-check"} and "ec2:DescribeVpcEndpoints" in findings[0].message


def test_create_refuses_two_subnets_in_one_az() -> None:
    c = "subnet-0a1b2c3d4e5f60720"
    s = _settings(endpoints="create", subnets=(A, B, c))
    facts = _facts(RouteTable("rtb-0a1b2c3d4e5f60001", main=True, subnet_ids=(),
                              default_routes=(Route("nat-0a1b2c3d4e5f60001", "active"),)),
                   subnet_az={A: "eu-west-1a", B: "eu-west-1b", c: "eu-west-1a"},
                   endpoint_services={f"com.amazonaws.eu-west-1.{x}": frozenset({"eu-west-1a", "eu-west-1b"})
                                      for x in BOOT})
    [f] = egress.check(s, facts, ("eu-west-1a", "eu-west-1b"))
    assert (f.kind, f.subject) == ("endpoint-subnets", "settings.network.existing.privateSubnetIds[2]")
    assert f"{c} is in eu-west-1a like {A}" in f.message


def test_a_service_offered_without_zones_is_offered() -> None:
    """GovCloud has answered DescribeVpcEndpointServices with ServiceNames only: offered, AZs unknown."""
    s = Settings.model_validate({"platform": "aws", "region": "eu-west-1", "offline": True,
                                 "network": {"natGateways": "none", "endpoints": "create"}})
    names: dict[str, frozenset[str]] = {f"com.amazonaws.eu-west-1.{x}": frozenset() for x in (*BOOT, "s3")}
    assert egress.check(s, RegionFacts(region="eu-west-1", endpoint_services=names), ("eu-west-1a",)) == []
    # One service missing is still found, so the check above is not empty by construction.
    del names["com.amazonaws.eu-west-1.ssm"]
    findings = egress.check(s, RegionFacts(region="eu-west-1", endpoint_services=names), ("eu-west-1a",))
    assert [f.kind for f in findings] == ["endpoint-service-missing"]

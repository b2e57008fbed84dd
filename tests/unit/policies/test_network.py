import pytest

from components.policies.network import (
    INGRESS_RULE,
    NO_WORLD_INGRESS,
    NO_WORLD_SSH,
    SECURITY_GROUP,
    SECURITY_GROUP_RULE,
    Ingress,
    is_world,
    world_union_problems,
)
from tests.unit.policies.helpers import facts, violations


def ingress(cidr: str, port: int = 6443, protocol: str = "tcp") -> dict[str, object]:
    key = "cidrIpv6" if ":" in cidr else "cidrIpv4"
    rule: dict[str, object] = {"ipProtocol": protocol, key: cidr, "securityGroupId": "sg-1"}
    if protocol != "-1":
        rule.update(fromPort=port, toPort=port)
    return rule


def test_private_sources_pass() -> None:
    assert violations(NO_WORLD_INGRESS, INGRESS_RULE, ingress("10.0.0.0/8"), facts=facts()) == []
    assert violations(NO_WORLD_INGRESS, INGRESS_RULE, {"ipProtocol": "tcp", "fromPort": 6400, "toPort": 6400,
                                                       "referencedSecurityGroupId": "sg-2"}) == []


def test_world_open_ports_violate_in_every_rule_shape() -> None:
    assert violations(NO_WORLD_INGRESS, INGRESS_RULE, ingress("0.0.0.0/0", 443), facts=facts()) == [
        "rule: tcp/443 open to 0.0.0.0/0"
    ]
    assert violations(NO_WORLD_INGRESS, INGRESS_RULE, ingress("::/0", 10250), facts=facts())
    sg = {"ingress": [{"protocol": "tcp", "fromPort": 80, "toPort": 80, "cidrBlocks": ["10.0.0.0/16"]},
                      {"protocol": "-1", "fromPort": 0, "toPort": 0, "ipv6CidrBlocks": ["::/0"]}]}
    assert violations(NO_WORLD_INGRESS, SECURITY_GROUP, sg, facts=facts()) == ["ingress[1]: all ports open to ::/0"]
    rule = {"type": "ingress", "protocol": "udp", "fromPort": 8472, "toPort": 8472, "cidrBlocks": ["0.0.0.0/0"]}
    assert violations(NO_WORLD_INGRESS, SECURITY_GROUP_RULE, rule, facts=facts())
    assert violations(NO_WORLD_INGRESS, SECURITY_GROUP_RULE, {**rule, "type": "egress"}, facts=facts()) == []


def test_declared_world_api_is_accepted_outside_prod_only() -> None:
    open_dev = facts(network={"apiAllowList": ["0.0.0.0/0"]})
    assert violations(NO_WORLD_INGRESS, INGRESS_RULE, ingress("0.0.0.0/0"), facts=open_dev) == []
    # Declared, but not for other ports.
    assert violations(NO_WORLD_INGRESS, INGRESS_RULE, ingress("0.0.0.0/0", 6400), facts=open_dev)
    # Not declared: the allow-list names other ranges.
    assert violations(NO_WORLD_INGRESS, INGRESS_RULE, ingress("0.0.0.0/0"), facts=facts(
        network={"apiAllowList": ["203.0.113.0/24"]}))
    # Without settings (a foreign stack) nothing is declared.
    assert violations(NO_WORLD_INGRESS, INGRESS_RULE, ingress("0.0.0.0/0"))
    open_prod = facts(environment="prod", production=True, network={"apiAllowList": ["0.0.0.0/0"]})
    assert "in prod" in violations(NO_WORLD_INGRESS, INGRESS_RULE, ingress("0.0.0.0/0"), facts=open_prod)[0]


def test_world_ssh_violates_even_when_the_api_is_declared_open() -> None:
    open_dev = facts(network={"apiAllowList": ["0.0.0.0/0"]})
    assert violations(NO_WORLD_SSH, INGRESS_RULE, ingress("0.0.0.0/0", 22), facts=open_dev)
    assert violations(NO_WORLD_SSH, INGRESS_RULE, ingress("::/0", 0, "-1"))  # all protocols include 22
    wide = {"ipProtocol": "tcp", "fromPort": 0, "toPort": 65535, "cidrIpv4": "0.0.0.0/0"}
    assert "SSH (22)" in violations(NO_WORLD_SSH, INGRESS_RULE, wide)[0]


def test_ssh_from_private_ranges_or_other_ports_passes() -> None:
    assert violations(NO_WORLD_SSH, INGRESS_RULE, ingress("10.0.0.0/8", 22)) == []
    assert violations(NO_WORLD_SSH, INGRESS_RULE, ingress("0.0.0.0/0", 443)) == []
    assert violations(NO_WORLD_SSH, INGRESS_RULE, ingress("0.0.0.0/0", 22, "udp")) == []
    assert violations(NO_WORLD_SSH, INGRESS_RULE, {"ipProtocol": "tcp", "fromPort": 22, "toPort": 22,
                                                   "cidrIpv4": "<computed>"}) == []


# --- meaning, not spelling (issue 14) ----------------------------------------------------------

@pytest.mark.parametrize("cidr", ["0.0.0.0/0", "::/0", "0.0.0.0/1", "::/1", "2000::/3", "0000:0000::/0",
                                  "0.0.0.0/0.0.0.0"])
def test_every_spelling_of_the_whole_internet_is_world(cidr: str) -> None:
    assert is_world(cidr), cidr
    assert violations(NO_WORLD_INGRESS, INGRESS_RULE, ingress(cidr, 443), facts=facts())


@pytest.mark.parametrize("cidr", ["10.0.0.0/8", "203.0.113.0/24", "100.64.0.0/10", "52.0.0.0/8", "fd00::/8",
                                  "2001:db8::/32", "128.0.0.0/2"])
def test_ranges_short_of_most_of_the_internet_are_not(cidr: str) -> None:
    assert not is_world(cidr), cidr


def _rules(*cidrs: str, port: int = 6443) -> list[tuple[str, Ingress]]:
    return [(f"api-{i}", Ingress("rule", "tcp", port, port, c)) for i, c in enumerate(cidrs)]


PUBLIC_8S = [f"{i}.0.0.0/8" for i in range(1, 224) if i not in (10, 100, 127, 169, 172, 192, 198, 203)]


@pytest.mark.parametrize("cidrs", [
    ("0.0.0.0/1", "128.0.0.0/1"),
    ("::/1", "8000::/1"),
    tuple(PUBLIC_8S),
    ("0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/2"),
])
def test_narrow_rules_that_together_open_the_internet_violate(cidrs: tuple[str, ...]) -> None:
    found = world_union_problems(_rules(*cidrs), facts(environment="prod", production=True,
                                                       network={"apiAllowList": list(cidrs)}))
    assert found and "of the public address space through" in found[0]
    # Outside production, an API allow-list that declares exactly those ranges is accepted, as a
    # declared 0.0.0.0/0 is; other ports never are.
    dev = facts(network={"apiAllowList": list(cidrs)})
    assert world_union_problems(_rules(*cidrs), dev) == []
    assert world_union_problems(_rules(*cidrs, port=10250), dev)


def test_a_few_offices_together_are_fine() -> None:
    assert world_union_problems(_rules("203.0.113.0/24", "198.51.100.0/24", "52.94.0.0/16"), facts()) == []


def test_an_all_ports_rule_counts_toward_every_port() -> None:
    rules = [("a", Ingress("rule", "-1", 0, 0, "0.0.0.0/1")), ("b", Ingress("rule", "tcp", 22, 22, "128.0.0.0/1"))]
    assert any("tcp/22" in p for p in world_union_problems(rules, facts()))


@pytest.mark.parametrize(("settings", "prod"), [
    ({"environment": "eu-main", "production": True}, True), ({"environment": "staging", "production": True}, True),
    ({"environment": "prod", "production": True}, True),
    ({"environment": "prod", "production": False}, False),
    ({"environment": "live", "production": False}, False), ({"environment": "staging"}, False),
    ({"environment": "product"}, False), ({"environment": "prodigy"}, False),
])
def test_production_is_a_setting_the_policies_read(settings: dict[str, object], prod: bool) -> None:
    assert facts(**settings).prod is prod

from components.policies.network import (
    INGRESS_RULE,
    NO_WORLD_INGRESS,
    NO_WORLD_SSH,
    SECURITY_GROUP,
    SECURITY_GROUP_RULE,
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
    open_prod = facts(environment="prod", network={"apiAllowList": ["0.0.0.0/0"]})
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

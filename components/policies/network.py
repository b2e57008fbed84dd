"""Security group ingress: nothing open to the world, never SSH, the API only as declared.

Rule shapes (pulumi-aws 7.x wire names): `aws:ec2/securityGroup:SecurityGroup` inline
`ingress[]{protocol, fromPort, toPort, cidrBlocks, ipv6CidrBlocks}`;
`aws:ec2/securityGroupRule:SecurityGroupRule` with `type: ingress`; and
`aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule{ipProtocol, fromPort, toPort, cidrIpv4, cidrIpv6}`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationPolicy,
)

from ..tables import tokens
from .facts import API_PORT, StackFacts, facts_of
from .props import get, is_unknown, items

SECURITY_GROUP = tokens.AWS_EC2_SECURITY_GROUP
SECURITY_GROUP_RULE = tokens.AWS_EC2_SECURITY_GROUP_RULE
INGRESS_RULE = tokens.AWS_VPC_SECURITY_GROUP_INGRESS_RULE
SSH_PORT = 22
_ALL_PROTOCOLS = {"-1", "all"}
_TCP = {"tcp", "6"}


@dataclass(frozen=True)
class Ingress:
    where: str  # how to find the rule in the resource, for messages
    protocol: str
    from_port: int
    to_port: int
    cidr: str

    @property
    def all_ports(self) -> bool:
        return self.protocol in _ALL_PROTOCOLS

    def covers(self, port: int) -> bool:
        if self.all_ports:
            return True
        return self.protocol in _TCP and self.from_port <= port <= self.to_port

    @property
    def only_api(self) -> bool:
        return self.protocol in _TCP and self.from_port == self.to_port == API_PORT

    @property
    def ports(self) -> str:
        if self.all_ports:
            return "all ports"
        return f"{self.protocol}/{self.from_port}" + (f"-{self.to_port}" if self.to_port != self.from_port else "")


def _port(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else -1


def ingress_rules(resource_type: str, props: Mapping[str, Any]) -> Iterator[Ingress]:
    """Every (rule, source CIDR) pair a resource opens; unknown CIDRs are skipped."""
    blocks: list[tuple[str, Mapping[str, Any], list[Any]]] = []
    if resource_type == SECURITY_GROUP:
        for i, rule in enumerate(items(props, "ingress")):
            blocks.append((f"ingress[{i}]", rule, items(rule, "cidrBlocks") + items(rule, "ipv6CidrBlocks")))
    elif resource_type == SECURITY_GROUP_RULE and props.get("type") == "ingress":
        blocks.append(("rule", props, items(props, "cidrBlocks") + items(props, "ipv6CidrBlocks")))
    elif resource_type == INGRESS_RULE:
        cidrs = [c for c in (props.get("cidrIpv4"), props.get("cidrIpv6")) if c is not None]
        blocks.append(("rule", {**props, "protocol": props.get("ipProtocol")}, cidrs))
    for where, rule, cidrs in blocks:
        protocol = str(get(rule, "protocol", "")).lower()
        for cidr in cidrs:
            if isinstance(cidr, str) and not is_unknown(cidr):
                yield Ingress(where, protocol, _port(rule.get("fromPort")), _port(rule.get("toPort")), cidr)


# Sources a security group rule can never see from the internet (IANA special-purpose registries,
# RFC 6890 and successors): private, shared, loopback, link-local, documentation, multicast, reserved.
_NON_PUBLIC_V4 = tuple(ipaddress.IPv4Network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
    "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
    "224.0.0.0/4", "240.0.0.0/4"))
_PUBLIC_V4 = 2**32 - sum(n.num_addresses for n in _NON_PUBLIC_V4)
_GLOBAL_V6 = ipaddress.IPv6Network("2000::/3")  # global unicast: where internet sources come from
# "Open to the world" means reaching most of the internet, however it is spelled: 0.0.0.0/0, two
# /1s, or a pile of /8s all count once their union covers half of the public address space.
WORLD_SHARE = 0.5


def _net(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return None


def public_share(cidrs: Iterable[str]) -> float:
    """The largest share of one family's public address space the union of `cidrs` covers."""
    nets = [n for c in cidrs if (n := _net(c)) is not None]
    v4 = list(ipaddress.collapse_addresses(n for n in nets if isinstance(n, ipaddress.IPv4Network)))
    v6 = list(ipaddress.collapse_addresses(n for n in nets if isinstance(n, ipaddress.IPv6Network)))
    public4 = sum(n.num_addresses - sum(_overlap(n, p) for p in _NON_PUBLIC_V4) for n in v4)
    public6 = sum(_overlap(n, _GLOBAL_V6) for n in v6)
    return max(public4 / _PUBLIC_V4, public6 / _GLOBAL_V6.num_addresses)


def _overlap(a: ipaddress.IPv4Network | ipaddress.IPv6Network, b: ipaddress.IPv4Network | ipaddress.IPv6Network) -> int:
    """Addresses two CIDRs share: one contains the other, or none (CIDRs never partly overlap)."""
    if a.version != b.version:
        return 0
    if a.subnet_of(b):  # type: ignore[arg-type]
        return a.num_addresses
    if b.subnet_of(a):  # type: ignore[arg-type]
        return b.num_addresses
    return 0


def is_world(cidr: str) -> bool:
    return public_share([cidr]) >= WORLD_SHARE


def _declared(cidr: str, facts: StackFacts) -> bool:
    return _net(cidr) is not None and _net(cidr) in {_net(c) for c in facts.api_allow_list}


def world_ingress_problems(resource_type: str, props: Mapping[str, Any], facts: StackFacts | None) -> list[str]:
    """World-open ingress is refused, except the API port when the stack's apiAllowList declares
    that world CIDR explicitly, and never in prod."""
    problems = []
    for rule in ingress_rules(resource_type, props):
        if not is_world(rule.cidr):
            continue
        if rule.only_api and facts is not None and _declared(rule.cidr, facts):
            if not facts.prod:
                continue
            problems.append(f"{rule.where}: the Kubernetes API is open to {rule.cidr} in prod; "
                            "declare the corporate/VPN ranges in network.apiAllowList instead")
            continue
        problems.append(f"{rule.where}: {rule.ports} open to {rule.cidr}")
    return problems


def world_ssh_problems(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    return [
        f"{rule.where}: SSH (22) reachable from {rule.cidr} ({rule.ports}); use SSM Session Manager"
        for rule in ingress_rules(resource_type, props)
        if is_world(rule.cidr) and rule.covers(SSH_PORT)
    ]


def validate_world_ingress(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for problem in world_ingress_problems(args.resource_type, args.props, facts_of(args)):
        report_violation(problem, None)


def validate_world_ssh(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for problem in world_ssh_problems(args.resource_type, args.props):
        report_violation(problem, None)


def world_union_problems(rules: Sequence[tuple[str, Ingress]], facts: StackFacts | None) -> list[str]:
    """Per port, the union of every ingress source in the stack (`rules`: resource name, rule):
    ranges that are each narrow can together open a port to most of the internet. The API port's
    sources all declared in apiAllowList stay allowed outside prod, as a declared 0.0.0.0/0 is."""
    problems = []
    keys = {(r.protocol, r.from_port, r.to_port) for _, r in rules if not r.all_ports}
    for key in [*sorted(keys), ("-1", 0, 0)]:
        protocol, low, high = key
        here = [(name, r) for name, r in rules if r.all_ports or (r.protocol == protocol and r.from_port <= low
                                                                  and high <= r.to_port)]
        share = public_share(r.cidr for _, r in here)
        if len(here) < 2 or share < WORLD_SHARE:
            continue  # one rule alone is judged by no-world-ingress
        api_only = protocol in _TCP and low == high == API_PORT
        if api_only and facts is not None and not facts.prod and all(_declared(r.cidr, facts) for _, r in here):
            continue
        port = "all ports" if protocol in _ALL_PROTOCOLS else f"{protocol}/{low}" + (f"-{high}" if high != low else "")
        sources = ", ".join(sorted({f"{r.cidr} ({name})" for name, r in here}))
        problems.append(f"{port} is open to {share:.0%} of the public address "
                        f"space through {len(here)} rules together: {sources}")
    return problems


def validate_world_union(args: Any, report_violation: ReportViolation) -> None:
    rules = [(r.name, rule) for r in args.resources for rule in ingress_rules(r.resource_type, r.props)]
    for problem in world_union_problems(rules, facts_of(args)):
        report_violation(problem, None)


NO_WORLD_INGRESS = ResourceValidationPolicy(
    name="no-world-ingress",
    description="No ingress from 0.0.0.0/0 or ::/0, except the API port for a declared apiAllowList outside prod.",
    validate=validate_world_ingress,
    enforcement_level=EnforcementLevel.MANDATORY,
)
NO_WORLD_INGRESS_SET = StackValidationPolicy(
    name="no-world-ingress-set",
    description="No port is open to most of the internet through several ingress rules together.",
    validate=validate_world_union,
    enforcement_level=EnforcementLevel.MANDATORY,
)
NO_WORLD_SSH = ResourceValidationPolicy(
    name="no-world-ssh",
    description="SSH (tcp/22) is never reachable from 0.0.0.0/0 or ::/0.",
    validate=validate_world_ssh,
    enforcement_level=EnforcementLevel.MANDATORY,
)

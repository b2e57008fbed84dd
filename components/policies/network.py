"""Security group ingress: nothing open to the world, never SSH, the API only as declared.

Rule shapes (pulumi-aws 7.x wire names): `aws:ec2/securityGroup:SecurityGroup` inline
`ingress[]{protocol, fromPort, toPort, cidrBlocks, ipv6CidrBlocks}`;
`aws:ec2/securityGroupRule:SecurityGroupRule` with `type: ingress`; and
`aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule{ipProtocol, fromPort, toPort, cidrIpv4, cidrIpv6}`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from components.policies.facts import API_PORT, StackFacts, facts_of
from components.policies.props import get, is_unknown, items

SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SECURITY_GROUP_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
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


def is_world(cidr: str) -> bool:
    try:
        return ipaddress.ip_network(cidr, strict=False).prefixlen == 0
    except ValueError:
        return False


def _declared(cidr: str, facts: StackFacts) -> bool:
    def net(c: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
        try:
            return ipaddress.ip_network(c, strict=False)
        except ValueError:
            return None

    return net(cidr) is not None and net(cidr) in {net(c) for c in facts.api_allow_list}


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


NO_WORLD_INGRESS = ResourceValidationPolicy(
    name="no-world-ingress",
    description="No ingress from 0.0.0.0/0 or ::/0, except the API port for a declared apiAllowList outside prod.",
    validate=validate_world_ingress,
    enforcement_level=EnforcementLevel.MANDATORY,
)
NO_WORLD_SSH = ResourceValidationPolicy(
    name="no-world-ssh",
    description="SSH (tcp/22) is never reachable from 0.0.0.0/0 or ::/0.",
    validate=validate_world_ssh,
    enforcement_level=EnforcementLevel.MANDATORY,
)

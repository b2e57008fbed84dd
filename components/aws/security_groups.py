"""Security groups with exactly the ports Canonical Kubernetes needs (pure rule table + thin shell).

The groups:
- `nodes` on every node (and the only group carrying the CCM ownership tag): k8sd 6400, kubelet
  10250, Cilium VXLAN 8472/udp and health 4240 between nodes; all egress (snap store, registries,
  AWS APIs through NAT).
- `control-plane` on control planes: 6443 from the API load balancer and from nodes (each node's
  k8s-apiserver-proxy talks to the API servers directly); etcd 2379-2380 between control planes only.
- `api-lb` on the API load balancer: 6443 from the allow-list (for an internal load balancer with an
  empty allow-list: the VPC), egress 6443 to the control planes. Targets allow the load balancer's
  group, which AWS honours with client-IP preservation on.
- `efa` (only when a pool has EFA) on the EFA interfaces of EFA nodes: all traffic from and to
  the group itself, inbound and outbound, as EFA requires (AWS EC2 User Guide efa-start.html,
  "Prepare an EFA-enabled security group"; its OS-bypass traffic uses no port), and nothing else:
  nodes without EFA never accept it.
- `endpoints` (only with network.endpoints: create) on the VPC interface endpoints
  (components/aws/endpoints.py): 443 from the VPC's CIDR and nothing else, no egress (the group
  is stateful: replies need none; pulumi-aws removes the allow-all egress AWS adds to a new group:
  its ec2.SecurityGroup docs, "NOTE on Egress rules").
Nothing is open to 0.0.0.0/0 unless the allow-list says so. No SSH: nodes are reached with SSM.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import pulumi
import pulumi_aws as aws

from ..facts.efa import efa_enabled
from ..settings.model import Settings
from ..tables import tokens
from .tags import named, ownership_tag

Group = Literal["nodes", "control-plane", "api-lb", "efa", "endpoints"]
GROUPS: tuple[Group, ...] = ("nodes", "control-plane", "api-lb")
EFA_GROUP: Group = "efa"
ENDPOINTS_GROUP: Group = "endpoints"
VPC = "vpc"  # peer placeholder: the VPC's CIDR, known only once the VPC exists


@dataclass(frozen=True)
class Rule:
    group: Group
    direction: Literal["ingress", "egress"]
    protocol: Literal["tcp", "udp", "-1"]
    from_port: int
    to_port: int
    peer: str  # "sg:<group>", a CIDR, or VPC
    description: str

    @property
    def key(self) -> str:
        peer = self.peer.replace("sg:", "").replace("/", "_").replace(":", "_")
        ports = f"{self.from_port}" if self.from_port == self.to_port else f"{self.from_port}-{self.to_port}"
        return f"{self.group}-{self.direction[:2]}-{self.protocol.replace('-1', 'all')}-{ports}-{peer}"


def api_sources(settings: Settings) -> tuple[str, ...]:
    """Who may reach the API on 6443 through the load balancer."""
    allow = settings.network.api_allow_list
    if allow:
        return tuple(allow)
    # An internal load balancer with no allow-list serves the VPC (bastions, VPN, CI runners in it);
    # an internet-facing one with no allow-list serves nobody rather than everybody.
    return (VPC,) if settings.control_plane.api_load_balancer == "internal" else ()


def cluster_rules(sources: Sequence[str]) -> list[Rule]:
    rules = [
        Rule("nodes", "ingress", "tcp", 6400, 6400, "sg:nodes", "k8sd: joins and cluster management"),
        Rule("nodes", "ingress", "tcp", 10250, 10250, "sg:nodes", "kubelet API"),
        Rule("nodes", "ingress", "udp", 8472, 8472, "sg:nodes", "Cilium VXLAN"),
        Rule("nodes", "ingress", "tcp", 4240, 4240, "sg:nodes", "Cilium health"),
        Rule("nodes", "egress", "-1", -1, -1, "0.0.0.0/0", "snap store, registries, AWS APIs"),
        Rule("control-plane", "ingress", "tcp", 6443, 6443, "sg:api-lb", "API through the load balancer"),
        Rule("control-plane", "ingress", "tcp", 6443, 6443, "sg:nodes", "API from nodes' apiserver proxies"),
        Rule("control-plane", "ingress", "tcp", 2379, 2380, "sg:control-plane", "etcd between control planes"),
        Rule("api-lb", "egress", "tcp", 6443, 6443, "sg:control-plane", "to the API servers"),
    ]
    rules += [Rule("api-lb", "ingress", "tcp", 6443, 6443, s, "API allow-list") for s in sources]
    return rules


EFA_RULES = (
    Rule("efa", "ingress", "-1", -1, -1, "sg:efa", "EFA: all traffic from EFA interfaces"),
    Rule("efa", "egress", "-1", -1, -1, "sg:efa", "EFA: all traffic to EFA interfaces"),
)


# The AWS APIs behind interface endpoints answer on HTTPS only (AWS PrivateLink Guide,
# create-interface-endpoint.html: the endpoint's security group must allow 443 from the clients).
ENDPOINT_RULES = (
    Rule("endpoints", "ingress", "tcp", 443, 443, VPC, "AWS APIs through VPC endpoints, from the VPC"),
)


def groups_for(settings: Settings) -> tuple[Group, ...]:
    """The groups this stack makes: `efa` only when some pool has EFA interfaces, `endpoints` only
    when the stack creates VPC endpoints."""
    return (GROUPS + ((EFA_GROUP,) if any(efa_enabled(p) for p in settings.node_pools) else ())
            + ((ENDPOINTS_GROUP,) if settings.network.endpoints == "create" else ()))


def rules_for(settings: Settings) -> list[Rule]:
    """Every rule of the groups this stack makes."""
    made = groups_for(settings)
    return (cluster_rules(api_sources(settings)) + (list(EFA_RULES) if EFA_GROUP in made else [])
            + (list(ENDPOINT_RULES) if ENDPOINTS_GROUP in made else []))


def _cidr_args(cidr: str) -> dict[str, str]:
    return {"cidr_ipv6": cidr} if ipaddress.ip_network(cidr).version == 6 else {"cidr_ipv4": cidr}


class ClusterSecurityGroups(pulumi.ComponentResource):
    """Outputs: `nodes`, `control_plane`, `api_lb` (aws.ec2.SecurityGroup)."""

    def __init__(
        self,
        name: str,
        settings: Settings,
        vpc_id: pulumi.Input[str],
        vpc_cidr: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(tokens.CLUSTER_SECURITY_GROUPS, name, None, opts)
        cluster = settings.cluster_name
        child = pulumi.ResourceOptions(parent=self)
        groups: dict[str, aws.ec2.SecurityGroup] = {}
        made = groups_for(settings)
        for group in made:
            tags = named(f"{cluster}-{group}", ownership_tag(cluster) if group == "nodes" else None)
            groups[group] = aws.ec2.SecurityGroup(
                f"{name}-{group}",
                vpc_id=vpc_id,
                description=f"ck8s-gpu {cluster} {group}",
                tags=tags,
                opts=child,
            )
        for rule in rules_for(settings):
            args: dict[str, pulumi.Input[str]] = {}
            if rule.peer.startswith("sg:"):
                args["referenced_security_group_id"] = groups[rule.peer[3:]].id
            elif rule.peer == VPC:
                args["cidr_ipv4"] = vpc_cidr
            else:
                args.update(_cidr_args(rule.peer))
            ports = {} if rule.protocol == "-1" else {"from_port": rule.from_port, "to_port": rule.to_port}
            cls = aws.vpc.SecurityGroupIngressRule if rule.direction == "ingress" else aws.vpc.SecurityGroupEgressRule
            cls(
                f"{name}-{rule.key}",
                security_group_id=groups[rule.group].id,
                ip_protocol=rule.protocol,
                description=rule.description,
                **ports,  # type: ignore[arg-type]
                **args,  # type: ignore[arg-type]
                opts=child,
            )
        self.nodes = groups["nodes"]
        self.control_plane = groups["control-plane"]
        self.api_lb = groups["api-lb"]
        self.efa: aws.ec2.SecurityGroup | None = groups.get(EFA_GROUP)
        self.endpoints: aws.ec2.SecurityGroup | None = groups.get(ENDPOINTS_GROUP)
        self.register_outputs({g: groups[g].id for g in made})

"""The cluster's network: a new VPC (private node subnets over >= 2 AZs, public subnets for NAT
and an internet-facing API load balancer) or the existing VPC and subnets named in settings.

`natGateways: none` makes the new VPC without NAT: the private route tables hold only the local
route (and the S3 gateway endpoint's), and the nodes reach AWS's APIs through the VPC endpoints
(components/aws/endpoints.py, docs/adr/0041) and nothing else."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from ..settings.model import Settings
from ..tables import tokens
from .protection import state_opts
from .tags import named, ownership_tag


@dataclass(frozen=True)
class SubnetPlan:
    private: tuple[str, ...]  # one per AZ, for nodes
    public: tuple[str, ...]  # one per AZ, for NAT gateways and an internet-facing API load balancer


def plan_subnets(vpc_cidr: str, az_count: int) -> SubnetPlan:
    """Split the VPC into quarters: the first `az_count` are the private node subnets (pods use the
    overlay, so nodes need addresses only, but GPU instances with many ENIs use several each); the
    last quarter is cut into small public subnets, which hold only NAT gateways and load balancers."""
    net = ipaddress.ip_network(vpc_cidr)
    if not isinstance(net, ipaddress.IPv4Network) or net.prefixlen > 24:
        raise ValueError(f"VPC CIDR {vpc_cidr} must be IPv4 and at least a /24")
    if not 2 <= az_count <= 3:
        raise ValueError(f"az_count must be 2 or 3, got {az_count}")
    quarters = list(net.subnets(prefixlen_diff=2))
    publics = list(quarters[3].subnets(prefixlen_diff=2))
    return SubnetPlan(
        private=tuple(str(q) for q in quarters[:az_count]),
        public=tuple(str(p) for p in publics[:az_count]),
    )


class AwsNetwork(pulumi.ComponentResource):
    """Outputs: `vpc_id`, `vpc_cidr`, `private_subnet_ids`, `public_subnet_ids` (may be empty for an
    existing VPC without public subnets), `private_route_table_ids` (the new VPC's; empty for an
    existing VPC, whose route tables are its owner's)."""

    vpc_id: pulumi.Output[str]
    vpc_cidr: pulumi.Output[str]
    private_subnet_ids: list[pulumi.Output[str]]
    public_subnet_ids: list[pulumi.Output[str]]
    private_route_table_ids: list[pulumi.Output[str]]

    def __init__(self, name: str, settings: Settings, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(tokens.AWS_NETWORK, name, None, opts)
        existing = settings.network.existing
        if existing is not None:
            self.vpc_id = pulumi.Output.from_input(existing.vpc_id)
            self.vpc_cidr = aws.ec2.get_vpc_output(
                id=existing.vpc_id, opts=pulumi.InvokeOutputOptions(parent=self)
            ).cidr_block
            self.private_subnet_ids = [pulumi.Output.from_input(s) for s in existing.private_subnet_ids]
            self.public_subnet_ids = [pulumi.Output.from_input(s) for s in existing.public_subnet_ids]
            self.private_route_table_ids = []
        else:
            self._create(name, settings)
        self._settings = settings
        self.register_outputs({
            "vpcId": self.vpc_id,
            "privateSubnetIds": self.private_subnet_ids,
            "publicSubnetIds": self.public_subnet_ids,
        })

    def _create(self, name: str, settings: Settings) -> None:
        cluster = settings.cluster_name
        plan = plan_subnets(settings.network.vpc_cidr, settings.network.az_count)
        child = pulumi.ResourceOptions(parent=self)
        zones = aws.get_availability_zones_output(state="available", opts=pulumi.InvokeOutputOptions(parent=self))

        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=settings.network.vpc_cidr,
            enable_dns_support=True,
            enable_dns_hostnames=True,  # nodes are named after their EC2 private DNS names
            tags=named(cluster),
            opts=state_opts(settings, child),
        )
        igw = aws.ec2.InternetGateway(f"{name}-igw", vpc_id=vpc.id, tags=named(cluster), opts=child)
        public_rt = aws.ec2.RouteTable(
            f"{name}-public", vpc_id=vpc.id, tags=named(f"{cluster}-public"), opts=child
        )
        aws.ec2.Route(
            f"{name}-public-default",
            route_table_id=public_rt.id,
            destination_cidr_block="0.0.0.0/0",
            gateway_id=igw.id,
            opts=child,
        )

        public: list[aws.ec2.Subnet] = []
        private: list[aws.ec2.Subnet] = []
        nats: list[aws.ec2.NatGateway] = []
        nat = settings.network.nat_gateways
        tables: list[aws.ec2.RouteTable] = []
        for i, (priv_cidr, pub_cidr) in enumerate(zip(plan.private, plan.public, strict=True)):
            named_zones = settings.network.availability_zones
            az = (pulumi.Output.from_input(named_zones[i]) if named_zones
                  else zones.names.apply(lambda names, i=i: names[i]))
            pub = aws.ec2.Subnet(
                f"{name}-public-{i}",
                vpc_id=vpc.id,
                cidr_block=pub_cidr,
                availability_zone=az,
                tags=named(f"{cluster}-public-{i}", {**ownership_tag(cluster), "kubernetes.io/role/elb": "1"}),
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-public-{i}", subnet_id=pub.id, route_table_id=public_rt.id, opts=child
            )
            public.append(pub)
            if nat == "per-az" or (nat == "single" and i == 0):
                eip = aws.ec2.Eip(f"{name}-nat-{i}", domain="vpc", tags=named(f"{cluster}-nat-{i}"), opts=child)
                nats.append(
                    aws.ec2.NatGateway(
                        f"{name}-nat-{i}",
                        allocation_id=eip.id,
                        subnet_id=pub.id,
                        tags=named(f"{cluster}-nat-{i}"),
                        opts=pulumi.ResourceOptions(parent=self, depends_on=[igw]),
                    )
                )
            priv = aws.ec2.Subnet(
                f"{name}-private-{i}",
                vpc_id=vpc.id,
                cidr_block=priv_cidr,
                availability_zone=az,
                private_dns_hostname_type_on_launch="ip-name",  # the CCM's IP-based node names
                tags=named(
                    f"{cluster}-private-{i}", {**ownership_tag(cluster), "kubernetes.io/role/internal-elb": "1"}
                ),
                opts=child,
            )
            rt = aws.ec2.RouteTable(
                f"{name}-private-{i}", vpc_id=vpc.id, tags=named(f"{cluster}-private-{i}"), opts=child
            )
            tables.append(rt)
            if nats:  # natGateways none: no default route; AWS APIs through the VPC endpoints
                aws.ec2.Route(
                    f"{name}-private-{i}-default",
                    route_table_id=rt.id,
                    destination_cidr_block="0.0.0.0/0",
                    nat_gateway_id=nats[-1].id,
                    opts=child,
                )
            aws.ec2.RouteTableAssociation(f"{name}-private-{i}", subnet_id=priv.id, route_table_id=rt.id, opts=child)
            private.append(priv)

        self.vpc_id = vpc.id
        self.vpc_cidr = vpc.cidr_block
        self.private_subnet_ids = [s.id for s in private]
        self.public_subnet_ids = [s.id for s in public]
        self.private_route_table_ids = [t.id for t in tables]

    def private_subnets_in(self, zone: str | None) -> list[pulumi.Output[str]]:
        """The private subnets a pool launches in: every one, or the one in `zone` (a pool in one zone:
        a capacity reservation, EFA, a cluster placement group). The new VPC's zones are named in
        settings (network.availabilityZones, checked by components/aws/launch_rules.py); an existing
        VPC's subnets are asked for theirs."""
        if zone is None:
            return list(self.private_subnet_ids)
        existing = self._settings.network.existing
        if existing is None:
            zones = self._settings.network.availability_zones or ()
            return [self.private_subnet_ids[zones.index(zone)]]
        found = aws.ec2.get_subnets_output(
            filters=[aws.ec2.GetSubnetsFilterArgs(name="subnet-id", values=list(existing.private_subnet_ids)),
                     aws.ec2.GetSubnetsFilterArgs(name="availability-zone", values=[zone])],
            opts=pulumi.InvokeOutputOptions(parent=self))
        return [found.ids.apply(lambda ids: _one_subnet(ids, zone))]


def _one_subnet(ids: list[str], zone: str) -> str:
    if not ids:
        raise ValueError(f"none of network.existing.privateSubnetIds is in zone {zone} (a pool's availabilityZone)")
    return sorted(ids)[0]

"""VPC endpoints for the AWS APIs the nodes call (pure table + rules, and a thin component).

Private subnets without NAT (network.natGateways: none, or an existing VPC without a default
route) reach AWS's regional APIs only through VPC endpoints (docs/adr/0041). ENDPOINTS is every
service a node or an in-cluster AWS caller of this project uses, with who calls it:
tests/unit/aws/test_vpc_endpoints.py reads components/aws/scripts/ck8s-node.sh and fails when the
boot script calls a service this table lacks.

Not here, on purpose: sts (instance-profile credentials come from IMDS, nothing calls STS),
autoscaling (workers no longer call it: they power off, docs/adr/0040), kms and logs (no caller).
Velero's bucket is in ANOTHER region (docs/adr/0010): a gateway endpoint serves only its own
Region's S3, and the cross-Region interface endpoints AWS offers for a few services, S3 among them
(AWS PrivateLink Guide, aws-services-cross-region-privatelink-support.html), are not made here, so
backups need egress whatever this table holds.

Service names (AWS PrivateLink Guide, aws-services-privatelink-support.html): `com.amazonaws.
<region>.<service>` in the aws and aws-us-gov partitions. aws-cn prefixes SOME services with
`cn.`: ec2 (eksctl pkg/cfn/builder/vpc_endpoint.go chinaPartitionServiceHasChinaPrefix, which
also keeps s3 unprefixed); ssm, ssmmessages, ec2messages and secretsmanager stay `com.amazonaws.`
(no AWS reference page lists China names: these come from public China-region guides and
Terraform, and pre-flight's DescribeVpcEndpointServices confirms each name in the region before
`up`). For a service whose China name nobody has confirmed (`china_prefix` None) and for the
isolated partitions, `endpoints: create` is refused rather than guessed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

import pulumi

from ..settings.model import Settings
from ..tables import tokens
from .tags import named

Problem = tuple[str, str]
ROOT = "settings"
Kind = Literal["Interface", "Gateway"]


@dataclass(frozen=True)
class Endpoint:
    service: str  # the service name's last label(s): com.amazonaws.<region>.<service>
    kind: Kind
    callers: str  # who calls it (why it is here)
    # Whether nodes cannot boot or run without it (no NAT and no endpoint: a pre-flight error).
    required: bool
    # aws-cn: True `cn.com.amazonaws.`, False `com.amazonaws.`, None: not confirmed (refused).
    china_prefix: bool | None
    cli: str = ""  # the aws-cli command name when it differs from `service` (elbv2)
    # Made only for stacks whose images.mirror is this Region's ECR (components/settings/
    # offline_rules.py ecr_mirror): the registry API and the token its containerd auth needs.
    ecr_mirror_only: bool = False


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("ssm", "Interface", "workers' `aws ssm send-command` / `get-command-invocation` (the join-token "
             "mint, docs/adr/0011); every node's SSM agent (registration, Run Command)", True, False),
    Endpoint("ssmmessages", "Interface", "the SSM agent's control channel (Session Manager, Run Command)",
             True, False),
    Endpoint("ec2messages", "Interface", "the SSM agent's Run Command messages (the mint runs on a control plane)",
             True, False),
    Endpoint("secretsmanager", "Interface", "control planes' `aws secretsmanager get-secret-value` (join auth "
             "token, CA material)", True, False),
    Endpoint("ec2", "Interface", "`aws ec2 describe-instances` (finding control planes); the cloud controller "
             "manager (node addresses, zones, instance types)", True, True),
    Endpoint("elasticloadbalancing", "Interface", "control planes' `aws elbv2 describe-load-balancers` (the API "
             "NLB's DNS name, docs/adr/0019); the cloud controller manager's Service load balancers", True, None,
             cli="elbv2"),
    # An ECR mirror (images.mirror, docs/adr/0043): Amazon ECR User Guide, vpc-endpoints.html: pulls
    # need com.amazonaws.<region>.ecr.dkr (the registry), ecr.api (GetAuthorizationToken) and the S3
    # gateway (layers are served from S3). aws-cn names unconfirmed here: refused, not guessed.
    Endpoint("ecr.api", "Interface", "nodes' `aws ecr get-authorization-token` (k8s-snap's containerd auth for an "
             "ECR mirror, refreshed by a timer)", False, None, cli="ecr", ecr_mirror_only=True),
    Endpoint("ecr.dkr", "Interface", "k8s-snap's containerd pulling from an ECR mirror (the registry's own API)",
             False, None, ecr_mirror_only=True),
    # Free, and serves in-region S3 only: ECR image layers, the SSM agent's own downloads.
    Endpoint("s3", "Gateway", "in-region S3 (ECR image layers, SSM agent downloads); not Velero's off-region "
             "bucket", False, False),
)
BY_SERVICE = {e.service: e for e in ENDPOINTS}
REQUIRED = tuple(e for e in ENDPOINTS if e.required)
PARTITIONS_WITH_PLAIN_NAMES = ("aws", "aws-us-gov")


@cache
def _partitions() -> tuple[tuple[str, str, frozenset[str]], ...]:
    """(partition, regionRegex, regions) from botocore's endpoints.json (pinned with boto3)."""
    import botocore.loaders

    data = botocore.loaders.create_loader().load_data("endpoints")
    return tuple((p["partition"], p["regionRegex"], frozenset(p["regions"])) for p in data["partitions"])


def partition_of(region: str) -> str:
    import re

    for name, regex, regions in _partitions():
        if region in regions or re.match(regex, region):
            return name
    return "aws"


def service_name(region: str, endpoint: Endpoint) -> str | None:
    """The endpoint service's name in `region`; None where this project does not know it."""
    partition = partition_of(region)
    plain = f"com.amazonaws.{region}.{endpoint.service}"
    if partition in PARTITIONS_WITH_PLAIN_NAMES:
        return plain
    if partition == "aws-cn" and endpoint.china_prefix is not None:
        return f"cn.{plain}" if endpoint.china_prefix else plain
    return None


def ecr_mirror_here(s: Settings) -> bool:
    """Whether the stack's mirror is an ECR registry in its own Region (served by ecr.* endpoints)."""
    from ..settings.offline_rules import ecr_mirror

    ecr = ecr_mirror(s.images.mirror)
    return ecr is not None and ecr.region == s.region


def relevant(s: Settings) -> tuple[Endpoint, ...]:
    """The endpoints this stack's nodes call: the ECR ones only with an ECR mirror."""
    return tuple(e for e in ENDPOINTS if not e.ecr_mirror_only or ecr_mirror_here(s))


def endpoint_problems(s: Settings) -> Iterator[Problem]:
    """What a network's endpoint settings cannot do (one (path, reason) per problem)."""
    if s.platform != "aws":
        return
    net = s.network
    path = f"{ROOT}.network"
    if net.nat_gateways == "none" and net.existing is not None:
        yield (f"{path}.natGateways", "none applies to the VPC this project makes; an existing VPC's egress is "
                                      "its own (drop natGateways with network.existing)")
    elif net.nat_gateways == "none" and not s.offline:
        # Without NAT the private subnets reach AWS's endpoints and nothing else: the Snap Store
        # (the k8s snap, aws-cli, their bases), the public registries and the driver's package
        # mirrors are all out of reach. A stack that boots without them is what `offline` promises
        # and checks (offline_rules._offline: snap files and images in the node images, a mirror,
        # the driver in the image); no setting short of it works, so this refuses it (issue 45).
        yield (f"{path}.natGateways", "none leaves the nodes no route beyond AWS's endpoints: they could not "
                                      "install the k8s snap from the Snap Store nor pull a public image. Set "
                                      "offline: true (node images carrying the snap and every image, a mirror; "
                                      "docs/offline.md) or natGateways: single")
    elif net.nat_gateways == "none" and net.endpoints == "off":  # `expect` has its own message below
        yield (f"{path}.endpoints", "is off, and natGateways: none leaves the private subnets no other way to the "
                                    "AWS APIs the nodes boot with (ssm, secretsmanager, ec2, elasticloadbalancing): "
                                    "set endpoints: create")
    if net.endpoints == "expect" and net.existing is None:
        yield (f"{path}.endpoints", "expect relies on endpoints an existing VPC already has (network.existing); "
                                    "the VPC this project makes has none: set endpoints: create")
    if net.endpoints == "create" and s.region is not None:
        unknown = [e.service for e in relevant(s) if service_name(s.region, e) is None]
        if unknown:
            yield (f"{path}.endpoints", f"the endpoint service names of {', '.join(unknown)} in {s.region} "
                                        f"(partition {partition_of(s.region)}) are not known to this project: "
                                        "create the endpoints yourself and set endpoints: expect")


def planned_endpoints(s: Settings, existing_vpc: bool) -> list[tuple[Endpoint, str]]:
    """(endpoint, service name) the program creates: none unless endpoints: create. An existing
    VPC's route tables are its owner's, so the S3 gateway (which adds routes to them) is made only
    in the VPC this project makes."""
    if s.network.endpoints != "create" or s.region is None:
        return []
    out = []
    for e in relevant(s):
        name = service_name(s.region, e)
        if name is not None and not (e.kind == "Gateway" and existing_vpc):
            out.append((e, name))
    return out


class VpcEndpoints(pulumi.ComponentResource):
    """Interface endpoints in the private subnets (one ENI per subnet, one subnet per AZ), private
    DNS on so the default regional API names resolve to them; the S3 gateway on the private
    route tables. The security group (components/aws/security_groups.py `endpoints`) admits 443
    from the VPC only."""

    def __init__(
        self,
        name: str,
        settings: Settings,
        vpc_id: pulumi.Input[str],
        subnet_ids: Sequence[pulumi.Input[str]],
        route_table_ids: Sequence[pulumi.Input[str]],
        security_group_id: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        # Here, not at the top: validate() imports this module's rules and must load no provider SDK.
        import pulumi_aws as aws

        super().__init__(tokens.VPC_ENDPOINTS, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        cluster = settings.cluster_name
        ids: dict[str, pulumi.Output[str]] = {}
        for endpoint, service in planned_endpoints(settings, existing_vpc=settings.network.existing is not None):
            tags = named(f"{cluster}-vpce-{endpoint.service}")
            if endpoint.kind == "Interface":
                made = aws.ec2.VpcEndpoint(
                    f"{name}-{endpoint.service}", vpc_id=vpc_id, service_name=service,
                    vpc_endpoint_type="Interface", subnet_ids=list(subnet_ids),
                    security_group_ids=[security_group_id], private_dns_enabled=True, tags=tags, opts=child)
            else:
                made = aws.ec2.VpcEndpoint(
                    f"{name}-{endpoint.service}", vpc_id=vpc_id, service_name=service,
                    vpc_endpoint_type="Gateway", route_table_ids=list(route_table_ids), tags=tags, opts=child)
            ids[endpoint.service] = made.id
        self.ids = ids
        self.register_outputs({"endpointIds": ids})

"""What the autoscaler needs from the aws platform, as pure functions: each autoscaled pool's
EC2NodeClass (the launch template's twin: same image, user-data, instance profile, subnets, security
groups, IMDS, root volume, EFA layout, placement group, reservation, tags) and the controller's IAM
policy (ADR 0049, docs/autoscaling.md).

API: karpenter.k8s.aws/v1 EC2NodeClass at github.com/aws/karpenter-provider-aws v1.15.0
(pkg/apis/v1/ec2nodeclass.go); its CEL rules are judged by a real API server with that CRD in
tests/integration/test_karpenter_local.py. The NodePool beside each class is
components/facts/autoscaling.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..facts import efa
from ..facts.autoscaling import EC2_NODE_CLASS_API_VERSION, EC2_NODE_CLASS_KIND, ec2_node_class_ref
from ..settings.model import NodePoolSettings, Settings
from .hardening import IMDS, ROOT_DEVICE
from .iam import Scope
from .tags import node_tags

# ec2nodeclass.go Tags: Karpenter writes these keys itself and the CRD refuses them in spec.tags.
KARPENTER_OWNED_TAG_PREFIXES = ("kubernetes.io/cluster/", "karpenter.sh/", "karpenter.k8s.aws/", "eks:")


def node_class_tags(settings: Settings, pool: NodePoolSettings) -> dict[str, str]:
    """The pool's instance tags (components/aws/tags.py node_tags) less the keys Karpenter owns:
    it tags every instance kubernetes.io/cluster/<clusterName>=owned itself (settings.clusterName)."""
    tags = node_tags(settings, "worker", f"{settings.cluster_name}-{pool.name}", pool=pool.name)
    return {k: v for k, v in sorted(tags.items()) if not k.startswith(KARPENTER_OWNED_TAG_PREFIXES)}


def ami_selector(ami: str) -> dict[str, str]:
    """An `ami-` id as it is; anything else is an SSM parameter path, which Karpenter resolves at
    launch and re-reads (amiSelectorTerms ssmParameter), as the launch template's lookup does at up."""
    return {"id": ami} if ami.startswith("ami-") else {"ssmParameter": ami}


def network_interfaces(pool: NodePoolSettings) -> list[dict[str, Any]]:
    """The EFA layout of the pool's launch template (components/facts/efa.py), in the class's terms."""
    if not efa.efa_enabled(pool):
        return []
    return [{"networkCardIndex": i.network_card_index, "deviceIndex": i.device_index,
             "interfaceType": i.interface_type} for i in efa.interfaces(pool.instance_type)]


def ec2_node_class_manifest(settings: Settings, pool: NodePoolSettings, *, ami: str, user_data: str,
                            instance_profile: str, subnet_ids: Sequence[str], security_group_ids: Sequence[str],
                            placement_group: str | None) -> dict[str, Any]:
    """The EC2NodeClass of autoscaled pool `pool`, from the values its launch template gets."""
    spec: dict[str, Any] = {
        # Custom: Karpenter passes userData verbatim (pkg/providers/amifamily/custom.go): the node's
        # own self-joining cloud-config, exactly the launch template's (no secret in it: the join
        # token comes from the SSM mint, components/aws/mint.py).
        "amiFamily": "Custom",
        "amiSelectorTerms": [ami_selector(ami)],
        "userData": user_data,
        # An existing profile (the pool's worker role): Karpenter then needs no IAM write action.
        "instanceProfile": instance_profile,
        "subnetSelectorTerms": [{"id": s} for s in subnet_ids],
        "securityGroupSelectorTerms": [{"id": g} for g in security_group_ids],
        "metadataOptions": {"httpEndpoint": IMDS["http_endpoint"], "httpTokens": IMDS["http_tokens"],
                            "httpPutResponseHopLimit": IMDS["http_put_response_hop_limit"],
                            "httpProtocolIPv6": "disabled"},
        "blockDeviceMappings": [{"deviceName": ROOT_DEVICE, "rootVolume": True, "ebs": {
            "volumeSize": f"{pool.root_volume_gib}Gi", "volumeType": "gp3", "encrypted": True,
            "deleteOnTermination": True}}],
        "tags": node_class_tags(settings, pool),
        "associatePublicIPAddress": False,
    }
    if interfaces := network_interfaces(pool):
        spec["networkInterfaces"] = interfaces
    if placement_group is not None:
        spec["placementGroupSelector"] = {"name": placement_group}
    cr = pool.capacity_reservation
    if cr is not None and cr.id is not None:
        # NodePool capacity-type `reserved` (components/facts/autoscaling.py capacity_types) launches
        # only into these; Karpenter reads a Capacity Block's own start and end from EC2.
        spec["capacityReservationSelectorTerms"] = [{"id": cr.id}]
    return {"apiVersion": EC2_NODE_CLASS_API_VERSION, "kind": EC2_NODE_CLASS_KIND,
            "metadata": {"name": ec2_node_class_ref(pool).name}, "spec": spec}


def controller_policy(scope: Scope, *, worker_role_arn: str, ssm_parameters: Sequence[str],
                      pricing: bool) -> dict[str, Any]:
    """The Karpenter controller's IAM policy (inline on the control-plane role: it runs there on the
    host network, ADR 0049). Upstream's KarpenterControllerPolicy (website getting-started
    cloudformation.yaml) less what this platform never asks of it: no instance profile management
    (classes name the worker profile), no eks:DescribeCluster (clusterEndpoint is set), no SQS
    (no interruption queue), pricing only where the VPC reaches the pricing API. Launches and
    deletions stay scoped to this cluster's ownership tag and a NodePool tag, as upstream's."""
    p, r, a, cluster = scope.partition, scope.region, scope.account, scope.cluster
    owned = {f"aws:RequestTag/kubernetes.io/cluster/{cluster}": "owned"}
    nodepool = {"aws:RequestTag/karpenter.sh/nodepool": "*"}
    created = [f"arn:{p}:ec2:{r}:{a}:{kind}/*"
               for kind in ("fleet", "instance", "volume", "network-interface", "launch-template")]
    statements: list[dict[str, Any]] = [
        {"Sid": "LaunchFromTheseResources", "Effect": "Allow", "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
         "Resource": [f"arn:{p}:ec2:{r}::image/*", f"arn:{p}:ec2:{r}::snapshot/*",
                      f"arn:{p}:ec2:{r}:{a}:spot-instances-request/*", f"arn:{p}:ec2:{r}:{a}:security-group/*",
                      f"arn:{p}:ec2:{r}:{a}:subnet/*", f"arn:{p}:ec2:{r}:{a}:launch-template/*",
                      f"arn:{p}:ec2:{r}:{a}:capacity-reservation/*", f"arn:{p}:ec2:{r}:{a}:placement-group/*"]},
        {"Sid": "CreateOnlyTaggedAsThisCluster", "Effect": "Allow",
         "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"], "Resource": created,
         "Condition": {"StringEquals": owned, "StringLike": nodepool}},
        {"Sid": "TagOnlyAtCreation", "Effect": "Allow", "Action": ["ec2:CreateTags"], "Resource": created,
         "Condition": {"StringEquals": {**owned, "ec2:CreateAction": ["RunInstances", "CreateFleet",
                                                                      "CreateLaunchTemplate"]},
                       "StringLike": nodepool}},
        {"Sid": "NameItsOwnInstances", "Effect": "Allow", "Action": ["ec2:CreateTags"],
         "Resource": [f"arn:{p}:ec2:{r}:{a}:instance/*"],
         "Condition": {"StringEquals": {f"aws:ResourceTag/kubernetes.io/cluster/{cluster}": "owned"},
                       "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                       "ForAllValues:StringEquals": {"aws:TagKeys": ["karpenter.sh/nodeclaim", "Name"]}}},
        {"Sid": "DeleteOnlyItsOwn", "Effect": "Allow", "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
         "Resource": [f"arn:{p}:ec2:{r}:{a}:instance/*", f"arn:{p}:ec2:{r}:{a}:launch-template/*"],
         "Condition": {"StringEquals": {f"aws:ResourceTag/kubernetes.io/cluster/{cluster}": "owned"},
                       "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}}},
        # Describe* has no resource-level scoping (Service Authorization Reference, Amazon EC2).
        {"Sid": "ReadTheRegion", "Effect": "Allow", "Resource": "*",
         "Action": ["ec2:DescribeAvailabilityZones", "ec2:DescribeImages", "ec2:DescribeInstances",
                    "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeInstanceTypes", "ec2:DescribeLaunchTemplates",
                    "ec2:DescribeSecurityGroups", "ec2:DescribeSpotPriceHistory", "ec2:DescribeSubnets",
                    "ec2:DescribeCapacityReservations", "ec2:DescribePlacementGroups"],
         "Condition": {"StringEquals": {"aws:RequestedRegion": r}}},
        {"Sid": "PassOnlyTheWorkerRole", "Effect": "Allow", "Action": ["iam:PassRole"], "Resource": [worker_role_arn],
         "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}},
        {"Sid": "ReadTheWorkerProfile", "Effect": "Allow", "Action": ["iam:GetInstanceProfile"],
         "Resource": [f"arn:{p}:iam::{a}:instance-profile/*"]},
    ]
    if ssm_parameters:
        statements.append({"Sid": "ReadThePoolImages", "Effect": "Allow", "Action": ["ssm:GetParameter"],
                           "Resource": sorted(_parameter_arn(scope, path) for path in ssm_parameters)})
    if pricing:
        # The Price List API has no resource-level scoping.
        statements.append({"Sid": "ReadPrices", "Effect": "Allow", "Action": ["pricing:GetProducts"], "Resource": "*"})
    return {"Version": "2012-10-17", "Statement": statements}


def existing_controller_policy(settings: Settings) -> dict[str, Any]:
    """The policy the controller needs on an existing cluster whose nodes are EC2 instances
    (`existingAws`): the same as on aws, scoped by the settings alone. Karpenter runs there as on aws
    (components/addons/karpenter.py: host network on the control planes), so the user attaches this
    to their control planes' instance role; `ck8s-gpu plan` writes it (iam/karpenter-controller-policy.json).
    Partition and account are the node role's (`nodeRoleArn`), never made up; the cluster is
    `clusterName` (ck8s-<environment>-<region>), the ownership tag Karpenter puts on what it launches."""
    e = settings.existing_aws
    if e is None or settings.region is None:
        raise ValueError("an existing cluster's controller policy needs settings.existingAws and settings.region")
    _arn, partition, _iam, _region, account, _rest = e.node_role_arn.split(":", 5)
    scope = Scope(partition, settings.region, account, settings.cluster_name)
    parameters = [t.ssm_parameter for t in e.ami_selector_terms if t.ssm_parameter is not None]
    return controller_policy(scope, worker_role_arn=e.node_role_arn, ssm_parameters=parameters,
                             pricing=not settings.offline)


def _parameter_arn(scope: Scope, path: str) -> str:
    # Public parameters (/aws/service/...) live in no account: their ARN has an empty account field.
    account = "" if path.startswith("/aws/service/") else scope.account
    return f"arn:{scope.partition}:ssm:{scope.region}:{account}:parameter{path}"

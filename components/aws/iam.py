"""Instance roles: SSM access instead of SSH, each role scoped to exactly what its nodes do at boot.

Control planes read the CAPI join auth secret and the CA-key secret, look up the API load
balancer's DNS name for their certificates (and, with the AWS cloud controller manager on, get its
policy: it runs on them with host networking). Workers read no
secret at all: they list the cluster's control planes (ec2:DescribeInstances has no resource-level
scoping), send the one mint document to them (components/aws/mint.py) and read its output. They
hold no Auto Scaling or EC2 write action: a worker whose first boot fails powers itself off and
its group's EC2 health check replaces it (docs/adr/0040), so no worker can act on another.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from ..tables import tokens
from ..tables.labels import CLUSTER_TAG, ROLE_TAG

# kubernetes/cloud-provider-aws docs/prerequisites.md ("Control Plane Policy"), read at 63ec440
# (2026-07). The CCM manages Service load balancers, node addresses/zones and instance lifecycle.
CCM_CONTROL_PLANE_ACTIONS: tuple[str, ...] = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeTags",
    "ec2:DescribeInstances",
    "ec2:DescribeRegions",
    "ec2:DescribeRouteTables",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSubnets",
    "ec2:DescribeVolumes",
    "ec2:DescribeAvailabilityZones",
    "ec2:CreateSecurityGroup",
    "ec2:CreateTags",
    "ec2:CreateVolume",
    "ec2:ModifyInstanceAttribute",
    "ec2:ModifyVolume",
    "ec2:AttachVolume",
    "ec2:AuthorizeSecurityGroupIngress",
    "ec2:CreateRoute",
    "ec2:DeleteRoute",
    "ec2:DeleteSecurityGroup",
    "ec2:DeleteVolume",
    "ec2:DetachVolume",
    "ec2:RevokeSecurityGroupIngress",
    "ec2:DescribeVpcs",
    "ec2:DescribeInstanceTopology",
    "elasticloadbalancing:AddTags",
    "elasticloadbalancing:AttachLoadBalancerToSubnets",
    "elasticloadbalancing:ApplySecurityGroupsToLoadBalancer",
    "elasticloadbalancing:CreateLoadBalancer",
    "elasticloadbalancing:CreateLoadBalancerPolicy",
    "elasticloadbalancing:CreateLoadBalancerListeners",
    "elasticloadbalancing:ConfigureHealthCheck",
    "elasticloadbalancing:DeleteLoadBalancer",
    "elasticloadbalancing:DeleteLoadBalancerListeners",
    "elasticloadbalancing:DescribeLoadBalancers",
    "elasticloadbalancing:DescribeLoadBalancerAttributes",
    "elasticloadbalancing:DetachLoadBalancerFromSubnets",
    "elasticloadbalancing:DeregisterInstancesFromLoadBalancer",
    "elasticloadbalancing:ModifyLoadBalancerAttributes",
    "elasticloadbalancing:RegisterInstancesWithLoadBalancer",
    "elasticloadbalancing:SetLoadBalancerPoliciesForBackendServer",
    "elasticloadbalancing:CreateListener",
    "elasticloadbalancing:CreateTargetGroup",
    "elasticloadbalancing:DeleteListener",
    "elasticloadbalancing:DeleteTargetGroup",
    "elasticloadbalancing:DescribeListeners",
    "elasticloadbalancing:DescribeLoadBalancerPolicies",
    "elasticloadbalancing:DescribeTargetGroups",
    "elasticloadbalancing:DescribeTargetHealth",
    "elasticloadbalancing:ModifyListener",
    "elasticloadbalancing:ModifyTargetGroup",
    "elasticloadbalancing:RegisterTargets",
    "elasticloadbalancing:DeregisterTargets",
    "elasticloadbalancing:SetLoadBalancerPoliciesOfListener",
    "elasticloadbalancing:SetSecurityGroups",
    "iam:CreateServiceLinkedRole",
    "kms:DescribeKey",
)
# Both roles: the SSM agent (sessions instead of SSH; control planes also run the mint document).
SSM_MANAGED_POLICY = "AmazonSSMManagedInstanceCore"


def assume_role_policy() -> str:
    return json.dumps({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Allow",
            "Principal": {"Service": "ec2.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }],
    })


def policy_json(document: dict[str, Any]) -> str:
    return json.dumps(document, sort_keys=True)


def _find_control_planes() -> dict[str, Any]:
    return {"Sid": "FindControlPlanes", "Effect": "Allow", "Action": ["ec2:DescribeInstances"], "Resource": "*"}


def control_plane_policy(secret_arns: Sequence[str], ccm: bool,
                         mirror: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The inline policy of the control-plane role (pure): the CAPI auth and CA-key secrets;
    `mirror`: the ECR mirror's pull statements (components/aws/registry.py)."""
    statements: list[dict[str, Any]] = [
        {
            "Sid": "ReadClusterSecrets",
            "Effect": "Allow",
            "Action": ["secretsmanager:GetSecretValue"],
            "Resource": sorted(secret_arns),
        },
        _find_control_planes(),
        # The API NLB's DNS name, an extra SAN of the node's certificates (docs/adr/0019). ELBv2's
        # Describe* actions have no resource-level scoping (Service Authorization Reference).
        {"Sid": "FindApiEndpoint", "Effect": "Allow", "Action": ["elasticloadbalancing:DescribeLoadBalancers"],
         "Resource": "*"},
    ]
    if ccm:
        statements.append({
            "Sid": "CloudControllerManager",
            "Effect": "Allow",
            "Action": sorted(set(CCM_CONTROL_PLANE_ACTIONS)),
            "Resource": "*",
        })
    return {"Version": "2012-10-17", "Statement": statements + list(mirror)}


@dataclass(frozen=True)
class Scope:
    """Where the cluster lives, for ARNs in the worker policy."""

    partition: str
    region: str
    account: str
    cluster: str


def worker_policy(scope: Scope, mint_document_name: str, mirror: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The inline policy of the GPU worker role (pure). No Secrets Manager action at all.

    ssm:SendCommand is authorised on the document AND on each target instance, so they are two
    statements: the instance one carries the tag conditions (ssm:resourceTag/*), which a document
    does not have. ssm:GetCommandInvocation has no resource-level scoping (Service Authorization
    Reference, Systems Manager); the output it can read is worker tokens only. Nothing here may
    act on an instance's health or state: autoscaling:SetInstanceHealth takes any instance id and
    no condition key binds it to the caller (docs/adr/0040).
    """
    p, r, a = scope.partition, scope.region, scope.account
    return {
        "Version": "2012-10-17",
        "Statement": [
            _find_control_planes(),
            {
                "Sid": "SendMintDocument",
                "Effect": "Allow",
                "Action": ["ssm:SendCommand"],
                "Resource": [f"arn:{p}:ssm:{r}:{a}:document/{mint_document_name}"],
            },
            {
                "Sid": "ToThisClustersControlPlanes",
                "Effect": "Allow",
                "Action": ["ssm:SendCommand"],
                "Resource": [f"arn:{p}:ec2:{r}:{a}:instance/*"],
                "Condition": {"StringEquals": {
                    f"ssm:resourceTag/{CLUSTER_TAG}": scope.cluster,
                    f"ssm:resourceTag/{ROLE_TAG}": "control-plane",
                }},
            },
            {
                "Sid": "ReadMintResult",
                "Effect": "Allow",
                "Action": ["ssm:GetCommandInvocation"],
                "Resource": "*",
            },
            *mirror,
        ],
    }


class NodeRole(pulumi.ComponentResource):
    """An EC2 role + instance profile for one node role: `instance_profile`, `role`, `grants`.

    `policy` is the role's inline policy document (JSON), built by the pure functions above.
    `role_name`: the role's logical name when `<name>-role` would auto-name past IAM's 64 characters
    (components/aws/inventory.py node_role_name, ADR 0042); aliased to the readable one."""

    def __init__(self, name: str, policy: pulumi.Input[str], opts: pulumi.ResourceOptions | None = None,
                 *, role_name: str | None = None) -> None:
        super().__init__(tokens.NODE_ROLE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        readable = f"{name}-role"
        role_name = role_name or readable
        aliases = [pulumi.Alias(name=readable)] if role_name != readable else None
        self.role = aws.iam.Role(role_name, assume_role_policy=assume_role_policy(),
                                 opts=pulumi.ResourceOptions(parent=self, aliases=aliases))
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition
        ssm = aws.iam.RolePolicyAttachment(
            f"{name}-ssm",
            role=self.role.id,  # an IAM role's id is its name
            policy_arn=partition.apply(lambda p: f"arn:{p}:iam::aws:policy/{SSM_MANAGED_POLICY}"),
            opts=child,
        )
        inline = aws.iam.RolePolicy(f"{name}-node", role=self.role.id, policy=policy, opts=child)
        self.instance_profile = aws.iam.InstanceProfile(f"{name}-profile", role=self.role.id, opts=child)
        # Instances depend on these too: a node must not boot before it may do its boot steps.
        self.grants: list[pulumi.Resource] = [ssm, inline]
        self.register_outputs({"role": self.role.arn, "instanceProfile": self.instance_profile.arn})

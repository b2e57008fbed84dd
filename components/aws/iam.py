"""Instance roles: SSM access instead of SSH, each role scoped to the secrets it needs.

Control planes read the join auth secret and the CA-key secret; workers read only the join auth
secret. Both list the cluster's control planes (ec2:DescribeInstances: the API has no
resource-level scoping for it) to find a k8sd to mint their join token from. With the AWS cloud
controller manager on, control planes also get its policy (it runs on them with host networking
and uses their instance credentials).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_aws as aws

from components.aws.tags import Role

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


def node_policy(role: Role, secret_arns: Sequence[str], ccm: bool) -> dict[str, Any]:
    """The inline policy of a node role (pure; `secret_arns` are exactly the secrets it may read)."""
    statements: list[dict[str, Any]] = [
        {
            "Sid": "ReadClusterSecrets",
            "Effect": "Allow",
            "Action": ["secretsmanager:GetSecretValue"],
            "Resource": sorted(secret_arns),
        },
        {
            "Sid": "FindControlPlanes",
            "Effect": "Allow",
            "Action": ["ec2:DescribeInstances"],
            "Resource": "*",
        },
    ]
    if role == "control-plane" and ccm:
        statements.append({
            "Sid": "CloudControllerManager",
            "Effect": "Allow",
            "Action": sorted(set(CCM_CONTROL_PLANE_ACTIONS)),
            "Resource": "*",
        })
    return {"Version": "2012-10-17", "Statement": statements}


class NodeRole(pulumi.ComponentResource):
    """An EC2 role + instance profile for one node role: `instance_profile`, `role`, `grants`."""

    def __init__(
        self,
        name: str,
        role: Role,
        secret_arns: Sequence[pulumi.Input[str]],
        ccm: bool,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("ck8s-gpu:index:NodeRole", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.role = aws.iam.Role(f"{name}-role", assume_role_policy=assume_role_policy(), opts=child)
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition
        ssm = aws.iam.RolePolicyAttachment(
            f"{name}-ssm",
            role=self.role.id,  # an IAM role's id is its name
            policy_arn=partition.apply(lambda p: f"arn:{p}:iam::aws:policy/{SSM_MANAGED_POLICY}"),
            opts=child,
        )
        policy = aws.iam.RolePolicy(
            f"{name}-node",
            role=self.role.id,  # an IAM role's id is its name
            policy=pulumi.Output.all(*secret_arns).apply(
                lambda arns: json.dumps(node_policy(role, [str(a) for a in arns], ccm), sort_keys=True)
            ),
            opts=child,
        )
        self.instance_profile = aws.iam.InstanceProfile(f"{name}-profile", role=self.role.id, opts=child)
        # Instances depend on these too: a node must not boot before it may read its secrets.
        self.grants: list[pulumi.Resource] = [ssm, policy]
        self.register_outputs({"role": self.role.arn, "instanceProfile": self.instance_profile.arn})

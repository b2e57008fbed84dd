"""Managed IAM policies judged by what they grant (pure: no pulumi_policy import).

A node role's attached managed policies are as much its permissions as its inline policy, so
`node-role-managed-policies` (components/policies/iam.py) reads their documents: a customer-managed
policy created in the same stack by its own `policy` input, an AWS-managed one from `AWS_MANAGED`
below. AWS-managed documents live in AWS, not in the plan; the table holds, for each policy the
project could meet, the statements of its default version that decide the verdict (abbreviated:
the grants on every resource, service-wide patterns kept exactly as AWS spells them). Source for
every entry: the AWS Managed Policy Reference Guide,
https://docs.aws.amazon.com/aws-managed-policy/latest/reference/<Name>.html (read 2026-12), whose
version each entry records. A policy that is not in the table cannot be reviewed.

`broad_grants` is the verdict: an Allow statement on every resource (`*`, a pattern matching every
ARN, a service's every ARN, or NotResource) that grants a whole service (an action pattern that
also matches an action the service has not defined yet: `s3:*`, `ec2:*`, `*`, `NotAction`) or that
reads a secret store account-wide (`s3:GetObject`, `secretsmanager:GetSecretValue`, `kms:Decrypt`:
the Velero backups hold every Kubernetes Secret, docs/adr/0010). Conditions are not evaluated (as
`no-wildcard-iam`): a tag condition on `ec2:*` is a reviewed inline policy, not a managed one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .props import is_seq

REFERENCE = "https://docs.aws.amazon.com/aws-managed-policy/latest/reference/"
# IAM ARNs of managed policies: arn:<partition>:iam::<aws|account>:policy/<path><name> (IAM User
# Guide, "IAM identifiers": paths begin and end with `/`; names [\w+=,.@-]). Partitions: aws,
# aws-cn, aws-us-gov, aws-iso, aws-iso-b, ... (AWS General Reference, "Amazon Resource Names").
POLICY_ARN = re.compile(r"^arn:(aws(?:-[a-z]+)*):iam::(aws|\d{12}):policy(/(?:[\x21-\x7e]*/)?)([\w+=,.@-]+)$")
# Read every object/secret/ciphertext when allowed on every resource.
SECRET_READS = ("s3:GetObject", "secretsmanager:GetSecretValue", "kms:Decrypt")
NEW_ACTION = "ZzzNewAction"  # an action no service defines: a pattern matching it matches all of them
PARTITIONS = ("aws", "aws-cn", "aws-us-gov")


@dataclass(frozen=True)
class ManagedPolicy:
    name: str
    path: str  # "/" or "/service-role/", "/job-function/": part of the ARN
    version: str  # the default version read, where recorded ("": the grants that decide, not the whole text)
    statements: tuple[Mapping[str, Any], ...]  # the grants that decide, as AWS spells them

    @property
    def source(self) -> str:
        return f"{REFERENCE}{self.name}.html"


def _allow(actions: str | tuple[str, ...], resource: str | tuple[str, ...] = "*", **extra: Any) -> Mapping[str, Any]:
    return {"Effect": "Allow", "Action": list(actions) if isinstance(actions, tuple) else actions,
            "Resource": list(resource) if isinstance(resource, tuple) else resource, **extra}


def _entry(name: str, version: str, *statements: Mapping[str, Any], path: str = "/") -> ManagedPolicy:
    return ManagedPolicy(name, path, version, statements)


_TABLE = (
    # --- what the project attaches (components/aws/iam.py SSM_MANAGED_POLICY) -----------------
    _entry("AmazonSSMManagedInstanceCore", "v2",
           _allow(("ssm:DescribeAssociation", "ssm:GetDeployablePatchSnapshotForInstance", "ssm:GetDocument",
                   "ssm:DescribeDocument", "ssm:GetManifest", "ssm:GetParameter", "ssm:GetParameters",
                   "ssm:ListAssociations", "ssm:ListInstanceAssociations", "ssm:PutInventory",
                   "ssm:PutComplianceItems", "ssm:PutConfigurePackageResult", "ssm:UpdateAssociationStatus",
                   "ssm:UpdateInstanceAssociationStatus", "ssm:UpdateInstanceInformation")),
           _allow(("ssmmessages:CreateControlChannel", "ssmmessages:CreateDataChannel",
                   "ssmmessages:OpenControlChannel", "ssmmessages:OpenDataChannel")),
           _allow(("ec2messages:AcknowledgeMessage", "ec2messages:DeleteMessage", "ec2messages:FailMessage",
                   "ec2messages:GetEndpoint", "ec2messages:GetMessages", "ec2messages:SendReply"))),
    # --- common on node roles -------------------------------------------------------------------
    _entry("AmazonEC2ContainerRegistryReadOnly", "v3",
           _allow(("ecr:GetAuthorizationToken", "ecr:BatchCheckLayerAvailability", "ecr:GetDownloadUrlForLayer",
                   "ecr:GetRepositoryPolicy", "ecr:DescribeRepositories", "ecr:ListImages", "ecr:DescribeImages",
                   "ecr:BatchGetImage", "ecr:GetLifecyclePolicy", "ecr:GetLifecyclePolicyPreview",
                   "ecr:ListTagsForResource", "ecr:DescribeImageScanFindings"))),
    _entry("CloudWatchAgentServerPolicy", "",
           _allow(("cloudwatch:PutMetricData", "ec2:DescribeVolumes", "ec2:DescribeTags", "logs:PutLogEvents",
                   "logs:PutRetentionPolicy", "logs:DescribeLogStreams", "logs:DescribeLogGroups",
                   "logs:CreateLogStream", "logs:CreateLogGroup", "xray:PutTraceSegments",
                   "xray:PutTelemetryRecords", "xray:GetSamplingRules", "xray:GetSamplingTargets",
                   "xray:GetSamplingStatisticSummaries")),
           _allow("ssm:GetParameter", "arn:aws:ssm:*:*:parameter/AmazonCloudWatch-*")),
    _entry("CloudWatchAgentAdminPolicy", "",
           _allow(("cloudwatch:PutMetricData", "ec2:DescribeTags", "logs:PutLogEvents", "logs:CreateLogStream",
                   "logs:CreateLogGroup")),
           _allow(("ssm:GetParameter", "ssm:PutParameter"), "arn:aws:ssm:*:*:parameter/AmazonCloudWatch-*")),
    _entry("AmazonEKSWorkerNodePolicy", "v3",
           _allow(("ec2:DescribeInstances", "ec2:DescribeInstanceTypes", "ec2:DescribeRouteTables",
                   "ec2:DescribeSecurityGroups", "ec2:DescribeSubnets", "ec2:DescribeVolumes",
                   "ec2:DescribeVolumesModifications", "ec2:DescribeVpcs", "eks:DescribeCluster",
                   "eks-auth:AssumeRoleForPodIdentity"))),
    _entry("AmazonEKSWorkerNodeMinimalPolicy", "v1", _allow("eks-auth:AssumeRoleForPodIdentity")),
    _entry("AmazonEKS_CNI_Policy", "v5",
           _allow(("ec2:AssignPrivateIpAddresses", "ec2:AttachNetworkInterface", "ec2:CreateNetworkInterface",
                   "ec2:DeleteNetworkInterface", "ec2:DescribeInstances", "ec2:DescribeTags",
                   "ec2:DescribeNetworkInterfaces", "ec2:DescribeInstanceTypes", "ec2:DescribeSubnets",
                   "ec2:DetachNetworkInterface", "ec2:ModifyNetworkInterfaceAttribute",
                   "ec2:UnassignPrivateIpAddresses")),
           _allow("ec2:CreateTags", "arn:aws:ec2:*:*:network-interface/*")),
    # Reads every bucket's objects: the Velero backups with them.
    _entry("AmazonS3ReadOnlyAccess", "v3",
           _allow(("s3:Get*", "s3:List*", "s3:Describe*", "s3-object-lambda:Get*", "s3-object-lambda:List*"))),
    _entry("AmazonSSMReadOnlyAccess", "v1", _allow(("ssm:Describe*", "ssm:Get*", "ssm:List*"))),
    _entry("AmazonEC2RoleforAWSCodeDeploy", "v2",
           _allow(("s3:GetObject", "s3:GetObjectVersion", "s3:ListBucket")), path="/service-role/"),
    # --- service-wide and account-wide ----------------------------------------------------------
    _entry("AdministratorAccess", "v1", _allow("*")),
    _entry("PowerUserAccess", "v12", {"Effect": "Allow", "NotAction": ["iam:*", "organizations:*", "account:*"],
                                      "Resource": "*"}),
    # Abbreviated: ReadOnlyAccess lists Get*/List*/Describe* of nearly every service, s3 included.
    _entry("ReadOnlyAccess", "", _allow(("s3:Get*", "s3:List*", "secretsmanager:ListSecrets", "ec2:Describe*"))),
    _entry("IAMFullAccess", "", _allow("iam:*")),  # plus organizations:Describe*/List* reads
    _entry("AmazonS3FullAccess", "", _allow(("s3:*", "s3-object-lambda:*"))),
    _entry("AmazonEC2FullAccess", "", _allow("ec2:*"), _allow("elasticloadbalancing:*"), _allow("cloudwatch:*"),
           _allow("autoscaling:*")),
    _entry("AutoScalingFullAccess", "v2", _allow("autoscaling:*"), _allow("cloudwatch:PutMetricAlarm")),
    _entry("SecretsManagerReadWrite", "v5", _allow(("secretsmanager:*", "kms:DescribeKey", "kms:ListAliases",
                                                    "kms:ListKeys", "tag:GetResources"))),
    _entry("AmazonSSMFullAccess", "", _allow(("cloudwatch:PutMetricData", "ds:CreateComputer",
                                                "ds:DescribeDirectories", "ec2:DescribeInstanceStatus", "logs:*",
                                                "ssm:*", "ec2messages:*"))),
    _entry("AmazonEC2ContainerRegistryFullAccess", "", _allow("ecr:*")),
    _entry("CloudWatchFullAccess", "", _allow(("autoscaling:Describe*", "cloudwatch:*", "logs:*", "sns:*"))),
)
# IAM resolves names case-insensitively ("IAM identifiers": names are unique regardless of case),
# and an AWS-managed name exists under exactly one path: look up by the lowercased name.
AWS_MANAGED: dict[str, ManagedPolicy] = {p.name.lower(): p for p in _TABLE}


@dataclass(frozen=True)
class PolicyRef:
    """A managed policy ARN, parsed."""

    partition: str
    account: str  # "aws" for AWS-managed
    path: str
    name: str

    @property
    def aws_managed(self) -> bool:
        return self.account == "aws"


def parse_policy_arn(arn: Any) -> PolicyRef | None:
    match = POLICY_ARN.match(arn) if isinstance(arn, str) else None
    return PolicyRef(*match.groups()) if match else None


def aws_managed(ref: PolicyRef) -> ManagedPolicy | None:
    return AWS_MANAGED.get(ref.name.lower()) if ref.aws_managed else None


def _as_list(value: Any) -> list[Any]:
    return list(value) if is_seq(value) else [value]


def _matches(pattern: str, value: str) -> bool:
    """IAM wildcard matching (`*`, `?`, case-insensitive): IAM User Guide, "Action" and "Resource"."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, flags=re.IGNORECASE | re.DOTALL) is not None


def _service_wide(action: str) -> str | None:
    """The service an action pattern grants whole (`*` for every service), else None."""
    if _matches(action, f"zzznewservice:{NEW_ACTION}"):
        return "*"
    service = action.split(":", 1)[0]
    if ":" in action and "*" not in service and "?" not in service and _matches(action, f"{service}:{NEW_ACTION}"):
        return service.lower()
    return None


def _every_resource(resources: list[Any], service: str) -> bool:
    """True when a Resource list covers every resource of `service` (any service when `*`): ARNs
    with region and account, and the S3 style without."""
    services = ["zzznewservice"] if service == "*" else [service]
    probes = [f"arn:{p}:{s}:zz-new-1:123456789012:zzz/zzz" for p in PARTITIONS for s in services]
    probes += [f"arn:{p}:{s}:::zzz" for p in PARTITIONS for s in services]
    return any(isinstance(r, str) and (r == "*" or any(_matches(r, probe) for probe in probes)) for r in resources)


def _statement_grants(statement: Mapping[str, Any]) -> Iterator[str]:
    if statement.get("Effect") != "Allow":
        return
    resources = _as_list(statement.get("Resource"))
    unbounded = "NotResource" in statement
    if "NotAction" in statement:
        if unbounded or _every_resource(resources, "*"):
            yield "NotAction (every action but a list) on every resource"
        return
    for action in (a for a in _as_list(statement.get("Action")) if isinstance(a, str)):
        service = _service_wide(action)
        if service is not None and (unbounded or _every_resource(resources, service)):
            yield f"'{action}' ({'every action' if service == '*' else 'all of ' + service}) on every resource"
        elif (reads := [r for r in SECRET_READS if _matches(action, r)]) and (
                unbounded or _every_resource(resources, reads[0].split(":")[0])):
            yield f"'{action}' ({reads[0]}) on every resource"


def broad_grants(document: Mapping[str, Any]) -> list[str]:
    """What a policy document grants too widely for a node role (empty: nothing)."""
    found: dict[str, None] = {}
    for statement in _as_list(document.get("Statement")):
        if isinstance(statement, Mapping):
            for grant in _statement_grants(statement):
                found.setdefault(grant)
    return list(found)


def table_document(policy: ManagedPolicy) -> Mapping[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(policy.statements)}

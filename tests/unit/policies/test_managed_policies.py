"""node-role-managed-policies: a node role's managed policies judged by what they grant (issue 27).

Each table row is one spelling of the same thing: a node role that holds a grant of a whole service
(or of every secret) through a managed policy; safe look-alikes must pass."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.policies.iam import NO_WILDCARD_IAM, NODE_ROLE_MANAGED_POLICIES, Node, node_role_problems
from components.policies.managed_policies import AWS_MANAGED, broad_grants, parse_policy_arn, table_document
from components.policies.offline import policy_resource
from tests.unit.policies.helpers import stack_violations, violations

ROLE = "aws:iam/role:Role"
ATTACH = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
POLICY_ATTACH = "aws:iam/policyAttachment:PolicyAttachment"
EXCLUSIVE = "aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive"
POLICY = "aws:iam/policy:Policy"
PROFILE = "aws:iam/instanceProfile:InstanceProfile"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"


def doc(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def trust(*services: str) -> str:
    principal: Any = services[0] if len(services) == 1 else list(services)
    return doc({"Effect": "Allow", "Principal": {"Service": principal}, "Action": "sts:AssumeRole"})


EC2_TRUST = trust("ec2.amazonaws.com")


def urn(rtype: str, name: str) -> str:
    return f"urn:pulumi:test::ck8s-gpu::{rtype}::{name}"


def node(rtype: str, name: str, props: dict[str, Any], deps: tuple[str, ...] = (),
         prop_deps: dict[str, tuple[str, ...]] | None = None) -> Node:
    return Node(rtype, urn(rtype, name), name, props, deps, prop_deps or {})


def role(logical: str = "worker-role", **props: Any) -> Node:
    return node(ROLE, logical, {"assumeRolePolicy": EC2_TRUST, **props})


def attach(arn: Any, role_ref: Any = "worker-role-1a2b3c4", name: str = "extra", **kw: Any) -> Node:
    return node(ATTACH, name, {"role": role_ref, "policyArn": arn}, **kw)


def problems(*nodes: Node) -> list[str]:
    return [m for _, m in node_role_problems(list(nodes))]


# --- the table ----------------------------------------------------------------------------------

def test_the_table_names_its_source_and_judges_its_own_documents() -> None:
    assert len(AWS_MANAGED) >= 20
    for policy in AWS_MANAGED.values():
        assert policy.source == f"https://docs.aws.amazon.com/aws-managed-policy/latest/reference/{policy.name}.html"
        assert policy.path.startswith("/") and policy.path.endswith("/")
    # What the project attaches, and the node-role policies, grant no service whole.
    for name in ("AmazonSSMManagedInstanceCore", "AmazonEC2ContainerRegistryReadOnly", "CloudWatchAgentServerPolicy",
                 "AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonSSMReadOnlyAccess"):
        assert broad_grants(table_document(AWS_MANAGED[name.lower()])) == [], name
    for name in ("AdministratorAccess", "PowerUserAccess", "IAMFullAccess", "AmazonS3FullAccess", "AmazonEC2FullAccess",
                 "SecretsManagerReadWrite", "AmazonSSMFullAccess", "AmazonS3ReadOnlyAccess", "ReadOnlyAccess"):
        assert broad_grants(table_document(AWS_MANAGED[name.lower()])), name


@pytest.mark.parametrize(("arn", "name"), [
    ("arn:aws:iam::aws:policy/AmazonS3FullAccess", "AmazonS3FullAccess"),
    ("arn:aws-cn:iam::aws:policy/AmazonS3FullAccess", "AmazonS3FullAccess"),
    ("arn:aws-us-gov:iam::aws:policy/AmazonS3FullAccess", "AmazonS3FullAccess"),
    ("arn:aws:iam::aws:policy/service-role/AmazonEC2RoleforAWSCodeDeploy", "AmazonEC2RoleforAWSCodeDeploy"),
    ("arn:aws:iam::123456789012:policy/team/extra", "extra"),
])
def test_policy_arns_parse_in_every_partition_and_path(arn: str, name: str) -> None:
    ref = parse_policy_arn(arn)
    assert ref is not None and ref.name == name


@pytest.mark.parametrize("arn", ["arn:aws:iam::aws:role/AmazonS3FullAccess", "AmazonS3FullAccess",
                                 "arn:aws:s3:::bucket", "arn:aws:iam::12345:policy/x", None, 7])
def test_what_is_not_a_policy_arn(arn: object) -> None:
    assert parse_policy_arn(arn) is None


# --- equivalent spellings of a broad managed policy on a node role ------------------------------

FULL = "arn:aws:iam::aws:policy/AmazonS3FullAccess"
CUSTOMER = doc({"Effect": "Allow", "Action": "ec2:*", "Resource": "*"})


def _customer_by_dependency() -> list[Node]:
    policy = node(POLICY, "extra-policy", {"policy": CUSTOMER})
    return [role(), policy, attach("arn:aws:mock:eu-west-1:123456789012:policy/extra-policy",
                                   deps=(urn(ROLE, "worker-role"), policy.urn))]


def _customer_by_property_dependency() -> list[Node]:
    policy = node(POLICY, "extra-policy", {"policy": CUSTOMER})
    return [role(), policy, attach("04da6b54-80e4-46f7-96ec-b56ff0331ba9", "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
                                   prop_deps={"role": (urn(ROLE, "worker-role"),), "policyArn": (policy.urn,)})]


def _customer_by_name() -> list[Node]:
    policy = node(POLICY, "extra-policy", {"name": "ck8s-extra", "policy": CUSTOMER})
    return [role("r", name="ck8s-worker"), policy,
            attach("arn:aws:iam::123456789012:policy/ck8s-extra", "ck8s-worker")]


BROAD_SPELLINGS: list[tuple[str, Any]] = [
    ("RolePolicyAttachment", lambda: [role(), attach(FULL)]),
    ("aws-cn partition", lambda: [role(), attach("arn:aws-cn:iam::aws:policy/AmazonS3FullAccess")]),
    ("aws-us-gov partition", lambda: [role(), attach("arn:aws-us-gov:iam::aws:policy/AmazonEC2FullAccess")]),
    ("name in another case (IAM names are case-insensitive)",
     lambda: [role(), attach("arn:aws:iam::aws:policy/amazons3fullaccess")]),
    ("service-role/ path spelled for a root policy", lambda: [role(), attach(
        "arn:aws:iam::aws:policy/service-role/AmazonS3FullAccess")]),
    ("Role.managedPolicyArns", lambda: [role(managedPolicyArns=[
        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore", "arn:aws:iam::aws:policy/SecretsManagerReadWrite"])]),
    ("PolicyAttachment.roles", lambda: [role(), node(POLICY_ATTACH, "pa", {
        "roles": ["other", "worker-role-1a2b3c4"], "policyArn": "arn:aws:iam::aws:policy/AmazonSSMFullAccess"})]),
    ("RolePolicyAttachmentsExclusive", lambda: [role(), node(EXCLUSIVE, "ex", {
        "roleName": "worker-role-1a2b3c4", "policyArns": ["arn:aws:iam::aws:policy/CloudWatchFullAccess"]})]),
    ("role by its ARN", lambda: [role(), attach(FULL, "arn:aws:iam::123456789012:role/worker-role-1a2b3c4")]),
    ("role by its explicit name", lambda: [role(name="ck8s-worker"), attach(FULL, "ck8s-worker")]),
    ("role named in another case", lambda: [role(name="ck8s-worker"), attach(FULL, "CK8S-WORKER")]),
    ("role linked only by dependency (offline ids)", lambda: [role(), attach(FULL, "mock-id",
                                                                             deps=(urn(ROLE, "worker-role"),))]),
    ("role linked by property dependency (the real engine, id unknown)", lambda: [role(), attach(
        FULL, "04da6b54-80e4-46f7-96ec-b56ff0331ba9", prop_deps={"role": (urn(ROLE, "worker-role"),)})]),
    ("instance role by trust in the China partition", lambda: [
        node(ROLE, "worker-role", {"assumeRolePolicy": trust("ec2.amazonaws.com.cn")}), attach(FULL)]),
    ("trust lists several services", lambda: [
        node(ROLE, "worker-role", {"assumeRolePolicy": trust("ssm.amazonaws.com", "ec2.amazonaws.com")}),
        attach(FULL)]),
    ("role outside the stack carried by an instance profile", lambda: [
        node(PROFILE, "profile", {"role": "legacy-node-role"}), attach(FULL, "legacy-node-role")]),
    ("role without EC2 trust carried by an instance profile", lambda: [
        node(ROLE, "worker-role", {"assumeRolePolicy": trust("ssm.amazonaws.com")}),
        node(PROFILE, "profile", {"role": "worker-role-1a2b3c4"}), attach(FULL)]),
    ("PowerUserAccess (NotAction)", lambda: [role(), attach("arn:aws:iam::aws:policy/PowerUserAccess")]),
    ("reads every bucket (AmazonS3ReadOnlyAccess)", lambda: [role(), attach(
        "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess")]),
    ("customer-managed, linked by dependency", _customer_by_dependency),
    ("customer-managed, linked by property dependency", _customer_by_property_dependency),
    ("customer-managed, by name", _customer_by_name),
    ("customer-managed `*:*`", lambda: [role(), node(POLICY, "p", {"policy": doc(
        {"Effect": "Allow", "Action": ["*:*"], "Resource": ["*"]})}), attach("x", deps=(urn(POLICY, "p"),))]),
    ("customer-managed service pattern on every ARN of the service", lambda: [role(), node(POLICY, "p", {
        "policy": doc({"Effect": "Allow", "Action": "S3:*", "Resource": "arn:aws:s3:::*"})}),
        attach("x", deps=(urn(POLICY, "p"),))]),
    ("customer-managed secret reads on every resource", lambda: [role(), node(POLICY, "p", {
        "policy": doc({"Effect": "Allow", "Action": "secretsmanager:Get*", "Resource": "*"})}),
        attach("x", deps=(urn(POLICY, "p"),))]),
    ("customer-managed NotResource", lambda: [role(), node(POLICY, "p", {
        "policy": doc({"Effect": "Allow", "Action": "kms:*", "NotResource": "arn:aws:kms:*:*:key/x"})}),
        attach("x", deps=(urn(POLICY, "p"),))]),
    ("inline RolePolicy", lambda: [role(), node(ROLE_POLICY, "inline", {
        "role": "worker-role-1a2b3c4", "policy": doc({"Effect": "Allow", "Action": "ssm:*", "Resource": "*"})})]),
    ("Role.inlinePolicies", lambda: [role(inlinePolicies=[{"name": "x", "policy": doc(
        {"Effect": "Allow", "Action": "ec2:*", "Resource": "*"})}])]),
]


@pytest.mark.parametrize("build", [b for _, b in BROAD_SPELLINGS], ids=[i for i, _ in BROAD_SPELLINGS])
def test_every_spelling_of_a_broad_grant_on_a_node_role_is_caught(build: Any) -> None:
    found = problems(*build())
    assert found and all("node role" in m for m in found), found


UNREVIEWABLE: list[tuple[str, Any]] = [
    ("AWS-managed policy not in the table", lambda: [role(), attach("arn:aws:iam::aws:policy/AmazonRDSFullAccess")]),
    ("customer-managed policy of another stack", lambda: [role(), attach(
        "arn:aws:iam::123456789012:policy/shared/node-extras")]),
    ("not a policy ARN at all", lambda: [role(), attach("AmazonS3FullAccess")]),
    ("deprecated SSM policy (left out of the table on purpose)", lambda: [role(), attach(
        "arn:aws:iam::aws:policy/service-role/AmazonEC2RoleforSSM")]),
]


@pytest.mark.parametrize("build", [b for _, b in UNREVIEWABLE], ids=[i for i, _ in UNREVIEWABLE])
def test_an_unknown_managed_policy_on_a_node_role_cannot_be_reviewed(build: Any) -> None:
    found = problems(*build())
    assert len(found) == 1 and "cannot review" in found[0], found


def test_a_message_names_the_role_why_it_is_a_node_role_and_the_source() -> None:
    source = "https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AmazonS3FullAccess.html"
    assert problems(role(), attach(FULL)) == [
        f"node role worker-role (EC2 may assume it) attaches AWS-managed AmazonS3FullAccess, which allows '{grant}' "
        f"(all of {service}) on every resource ({source})"
        for grant, service in (("s3:*", "s3"), ("s3-object-lambda:*", "s3-object-lambda"))]


# --- safe look-alikes ---------------------------------------------------------------------------

SAFE: list[tuple[str, Any]] = [
    ("what the project attaches", lambda: [role(), attach("arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore")]),
    ("the same in aws-cn", lambda: [role(), attach("arn:aws-cn:iam::aws:policy/AmazonSSMManagedInstanceCore")]),
    ("node-role policies", lambda: [role(managedPolicyArns=[
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly", "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy", "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy"])]),
    ("a broad policy on a role EC2 cannot assume", lambda: [
        node(ROLE, "ci-role", {"assumeRolePolicy": trust("codebuild.amazonaws.com")}),
        attach(FULL, "ci-role-1a2b3c4")]),
    ("a broad policy on another role of the stack", lambda: [role(), node(ROLE, "ci-role", {
        "assumeRolePolicy": trust("codebuild.amazonaws.com")}), attach(FULL, "ci-role-9f8e7d6")]),
    ("a scoped customer policy", lambda: [role(), node(POLICY, "p", {"policy": doc(
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::backups/*"},
        {"Effect": "Allow", "Action": "ec2:Describe*", "Resource": "*"},
        {"Effect": "Allow", "Action": "s3:*", "Resource": "arn:aws:s3:::backups/*"},
        {"Effect": "Deny", "Action": "*", "Resource": "*"})}), attach("x", deps=(urn(POLICY, "p"),))]),
    ("an ARN not yet known and nothing it depends on", lambda: [role(), attach("<computed>")]),
    ("dependencies outside the IAM resources", lambda: [role(), attach(
        "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore", deps=(urn("aws:s3/bucket:Bucket", "b"),),
        prop_deps={"policyArn": (urn("aws:s3/bucket:Bucket", "b"),)})]),
    ("the project's worker inline policy", lambda: [role(), node(ROLE_POLICY, "inline", {
        "role": "worker-role-1a2b3c4", "policy": doc(
            {"Effect": "Allow", "Action": ["ec2:DescribeInstances"], "Resource": "*"},
            {"Effect": "Allow", "Action": ["ssm:GetCommandInvocation"], "Resource": "*"})})]),
]


@pytest.mark.parametrize("build", [b for _, b in SAFE], ids=[i for i, _ in SAFE])
def test_safe_look_alikes_pass(build: Any) -> None:
    assert problems(*build()) == []


def test_the_policy_reports_on_the_attachment_through_the_pack_interface() -> None:
    resources = [policy_resource(ROLE, {"assumeRolePolicy": EC2_TRUST}, name="worker-role"),
                 policy_resource(ATTACH, {"role": "worker-role-1a2b3c4", "policyArn": FULL}, name="extra")]
    found = stack_violations(NODE_ROLE_MANAGED_POLICIES, resources)
    assert found and all(at == urn(ATTACH, "extra") and "AmazonS3FullAccess" in m for m, at in found)


def test_admin_policies_are_refused_on_any_principal_in_any_case() -> None:
    for arn in ("arn:aws:iam::aws:policy/administratoraccess", "arn:aws:iam::aws:policy/IAMFULLACCESS"):
        assert violations(NO_WILDCARD_IAM, ATTACH, {"policyArn": arn, "role": "ci"}), arn


# --- IAM users: standing credentials, the node roles' rules (issue 45) ------------------------------

USER = "aws:iam/user:User"
USER_POLICY = "aws:iam/userPolicy:UserPolicy"
USER_ATTACH = "aws:iam/userPolicyAttachment:UserPolicyAttachment"


def user(logical: str = "backup-user", **props: Any) -> Node:
    return node(USER, logical, {"name": "ck8s-backup", **props})


USER_SPELLINGS: list[tuple[str, Any]] = [
    ("UserPolicyAttachment by the user's name", lambda: [user(), node(USER_ATTACH, "a", {
        "user": "ck8s-backup", "policyArn": FULL})]),
    ("UserPolicyAttachment by name in another case", lambda: [user(), node(USER_ATTACH, "a", {
        "user": "CK8S-Backup", "policyArn": FULL})]),
    ("UserPolicyAttachment linked by property dependency", lambda: [user(), node(USER_ATTACH, "a", {
        "user": "<computed>", "policyArn": FULL}, prop_deps={"user": (urn(USER, "backup-user"),)})]),
    ("a user of another stack, by name", lambda: [node(USER_ATTACH, "a", {"user": "velero", "policyArn": FULL})]),
    ("PolicyAttachment.users", lambda: [user(), node(POLICY_ATTACH, "pa", {
        "users": ["ck8s-backup"], "policyArn": "arn:aws:iam::aws:policy/SecretsManagerReadWrite"})]),
    ("inline UserPolicy, every action of a service", lambda: [user(), node(USER_POLICY, "p", {
        "user": "ck8s-backup", "policy": doc({"Effect": "Allow", "Action": "s3:*", "Resource": "*"})})]),
    ("inline UserPolicy, every bucket", lambda: [user(), node(USER_POLICY, "p", {
        "user": "ck8s-backup", "policy": doc({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"})})]),
    ("inline UserPolicy, every secret", lambda: [user(), node(USER_POLICY, "p", {
        "user": "ck8s-backup", "policy": doc({"Effect": "Allow", "Action": "secretsmanager:GetSecretValue",
                                              "Resource": "*"})})]),
    ("customer-managed policy by dependency", lambda: [user(), node(POLICY, "p", {"policy": CUSTOMER}),
                                                       node(USER_ATTACH, "a", {"user": "ck8s-backup", "policyArn": "x"},
                                                            deps=(urn(POLICY, "p"),))]),
    ("an AWS-managed policy this pack cannot review", lambda: [user(), node(USER_ATTACH, "a", {
        "user": "ck8s-backup", "policyArn": "arn:aws:iam::aws:policy/AmazonRDSFullAccess"})]),
]


@pytest.mark.parametrize("build", [b for _, b in USER_SPELLINGS], ids=[i for i, _ in USER_SPELLINGS])
def test_a_user_with_standing_credentials_is_held_to_the_node_roles_rules(build: Any) -> None:
    found = problems(*build())
    assert found and all(m.startswith("IAM user ") and "(standing credentials)" in m for m in found), found


def test_the_backup_users_own_policy_passes() -> None:
    from components.dr.policies import velero_policy
    from components.settings.model import RestoreSource

    scoped = velero_policy(partition="aws", bucket_arn="arn:aws:s3:::ck8s-gpu-backups-abc",
                           key_arn="arn:aws:kms:eu-west-2:123456789012:key/1234",
                           restore_from=RestoreSource(cluster_name="old", region="eu-west-1"),
                           source_ips=["203.0.113.7/32"])
    assert problems(user(), node(USER_POLICY, "p", {"user": "ck8s-backup", "policy": json.dumps(scoped)})) == []

import json

import pytest

from components.policies.iam import NO_WILDCARD_IAM
from tests.unit.policies.helpers import violations

ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"


def doc(*statements: dict[str, object]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def test_scoped_statements_pass() -> None:
    scoped = doc(
        {"Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"], "Resource": ["arn:aws:secretsmanager:x"]},
        {"Effect": "Allow", "Action": ["ec2:DescribeInstances"], "Resource": "*"},
        {"Effect": "Deny", "Action": "*", "Resource": "*"},  # a deny restricts; it grants nothing
        {"Effect": "Allow", "Action": "*", "Resource": "arn:aws:s3:::backups/*"},
    )
    assert violations(NO_WILDCARD_IAM, ROLE_POLICY, {"policy": scoped}) == []


def test_star_on_star_violates() -> None:
    found = violations(NO_WILDCARD_IAM, ROLE_POLICY, {"policy": doc(
        {"Sid": "Ok", "Effect": "Allow", "Action": "ec2:DescribeInstances", "Resource": "*"},
        {"Sid": "Admin", "Effect": "Allow", "Action": ["*"], "Resource": ["*"]},
    )})
    assert found == ["policy Statement[1] (Admin) allows Action '*' on Resource '*'"]
    # A single statement object (not a list) and the `*:*` spelling.
    single = json.dumps({"Version": "2012-10-17", "Statement": {"Effect": "Allow", "Action": "*:*", "Resource": "*"}})
    assert violations(NO_WILDCARD_IAM, "aws:iam/policy:Policy", {"policy": single})


def test_not_action_and_not_resource_count_as_unbounded() -> None:
    assert violations(NO_WILDCARD_IAM, ROLE_POLICY, {"policy": doc(
        {"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"})})
    assert violations(NO_WILDCARD_IAM, ROLE_POLICY, {"policy": doc(
        {"Effect": "Allow", "Action": "*", "NotResource": "arn:aws:s3:::x"})})


def test_role_inline_policies_and_admin_attachments() -> None:
    role = {"assumeRolePolicy": doc({"Effect": "Allow", "Action": "sts:AssumeRole",
                                     "Principal": {"Service": "ec2.amazonaws.com"}}),
            "inlinePolicies": [{"name": "x", "policy": doc({"Effect": "Allow", "Action": "*", "Resource": "*"})}]}
    assert violations(NO_WILDCARD_IAM, "aws:iam/role:Role", role) == [
        "inlinePolicies[0].policy Statement[0] allows Action '*' on Resource '*'"
    ]
    attach = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
    assert violations(NO_WILDCARD_IAM, attach, {"policyArn": "arn:aws:iam::aws:policy/AdministratorAccess"})
    ssm = "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
    assert violations(NO_WILDCARD_IAM, attach, {"policyArn": ssm}) == []


def test_unknown_documents_are_not_judged_but_garbage_is_reported() -> None:
    assert violations(NO_WILDCARD_IAM, ROLE_POLICY, {"policy": "<computed>"}) == []
    assert violations(NO_WILDCARD_IAM, ROLE_POLICY, {"policy": "{not json"}) == [
        "policy is not valid JSON; it cannot be reviewed"
    ]


def test_bucket_policies_are_documents_too() -> None:
    tls_only = doc({"Sid": "TlsOnly", "Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "*",
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}}})
    assert violations(NO_WILDCARD_IAM, "aws:s3/bucketPolicy:BucketPolicy", {"policy": tls_only}) == []
    public = doc({"Effect": "Allow", "Principal": "*", "Action": "*", "Resource": "*"})
    assert violations(NO_WILDCARD_IAM, "aws:s3/bucketPolicy:BucketPolicy", {"policy": public})


# --- meaning, not spelling (issue 14) ----------------------------------------------------------

@pytest.mark.parametrize("action", ["*", "*:*", "**", "?*", "*:?*", "*:*Action*", "*Z*"])
def test_every_spelling_of_every_action_on_every_resource_violates(action: str) -> None:
    for resource in ("*", "arn:*", "arn:aws:*", "arn:*:*:*:*:*", "arn:aws:*:*:*:*"):
        found = violations(NO_WILDCARD_IAM, ROLE_POLICY, {"policy": doc(
            {"Effect": "Allow", "Action": [action], "Resource": resource})})
        assert found, (action, resource)


@pytest.mark.parametrize("action", ["iam:*", "IAM:Put*", "iam:Attach*Policy", "iam:CreatePolicyVersion",
                                    "iam:PassRole", "iam:?ut*"])
def test_privilege_escalation_on_every_resource_violates(action: str) -> None:
    found = violations(NO_WILDCARD_IAM, ROLE_POLICY, {"policy": doc(
        {"Effect": "Allow", "Action": action, "Resource": "*"})})
    assert found and "grant itself anything" in found[0]
    scoped = doc({"Effect": "Allow", "Action": action, "Resource": "arn:aws:iam::123456789012:role/ci-*"})
    assert violations(NO_WILDCARD_IAM, ROLE_POLICY, {"policy": scoped}) == []


@pytest.mark.parametrize("resource", ["arn:aws:s3:::*", "arn:aws:ec2:*:*:instance/*"])
def test_a_service_wide_resource_is_not_every_resource(resource: str) -> None:
    assert violations(NO_WILDCARD_IAM, ROLE_POLICY, {"policy": doc(
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": resource})}) == []


@pytest.mark.parametrize("arn", ["arn:aws:iam::aws:policy/AdministratorAccess",
                                 "arn:aws-us-gov:iam::aws:policy/AdministratorAccess",
                                 "arn:aws:iam::aws:policy/AdministratorAccess-Amplify",
                                 "arn:aws:iam::aws:policy/PowerUserAccess", "arn:aws:iam::aws:policy/IAMFullAccess"])
def test_managed_policies_that_grant_the_same_violate(arn: str) -> None:
    assert violations(NO_WILDCARD_IAM, "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
                      {"policyArn": arn, "role": "r"})


@pytest.mark.parametrize(("principal", "condition", "bad"), [
    ("*", None, True), ({"AWS": "*"}, None, True), ({"AWS": ["arn:aws:iam::123456789012:root", "*"]}, None, True),
    ({"AWS": "*"}, {"StringEquals": {"aws:PrincipalOrgID": "o-abc"}}, False),
    ({"Service": "ec2.amazonaws.com"}, None, False),
])
def test_a_role_anyone_may_assume_violates(principal: object, condition: object, bad: bool) -> None:
    statement: dict[str, object] = {"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": principal}
    if condition:
        statement["Condition"] = condition
    found = violations(NO_WILDCARD_IAM, "aws:iam/role:Role", {"assumeRolePolicy": doc(statement)})
    assert bool(found) is bad, found


# --- "every resource" in disguise (issue 45): what a pattern covers, in any account, region and
# partition, judged by matching, not by spelling.

@pytest.mark.parametrize(("action", "resource"), [
    ("*", "arn:aws:s3:::*"),                       # every bucket and object
    ("*", "arn:aws:ec2:*:*:*"),                    # every EC2 resource, every region and account
    ("*", "arn:aws:ec2:*:*:*/*"),
    ("*", "arn:aws:ec2:??-*:*:*"),
    ("*", "arn:aws:iam::*:*"),                     # IAM has no region segment
    ("*", "ARN:aws:iam::*:*"),
    ("*", "arn:*:secretsmanager:*:*:secret:*"),    # every secret of every account: the service's one type
    ("*", "arn:aws:ec2:*:*:instance/*"),           # every instance of every account
    ("NotAction", "arn:aws:ec2:*:*:*"),
    ("*", "arn:aws-cn:dynamodb:*:*:*"),
    ("*", "arn:aws*:sqs:*:*:*"),
    ("iam:PassRole", "arn:aws:iam::*:role/*"),     # every role of every account
    ("iam:PassRole", "arn:aws:iam::*:role*"),
    ("iam:PassRole", "arn:*:iam::*:*"),
    ("iam:Pass*", "arn:aws:iam::??????????*:role/*"),
    ("sts:AssumeRole", "arn:aws:iam::*:role/*"),
    ("sts:AssumeRole", "arn:aws-us-gov:iam::*:*"),
    ("iam:AttachUserPolicy", "arn:aws:iam::*:user/*"),
    ("iam:CreateAccessKey", "arn:aws:iam::*:user*"),
    ("iam:CreatePolicyVersion", "arn:aws:iam::*:policy/*"),
    ("iam:*", "arn:aws:iam::*:role/*"),
])
def test_every_resource_in_disguise_violates(action: str, resource: str) -> None:
    statement = ({"Effect": "Allow", "NotAction": "s3:*", "Resource": resource} if action == "NotAction"
                 else {"Effect": "Allow", "Action": action, "Resource": resource})
    found = violations(NO_WILDCARD_IAM, ROLE_POLICY, {"policy": doc(statement)})
    assert found, (action, resource)
    assert "every" in found[0] and resource in found[0], found


@pytest.mark.parametrize(("action", "resource"), [
    ("*", "arn:aws:s3:::backups/*"),               # one bucket's objects
    ("*", "arn:aws:ec2:eu-west-1:123456789012:*"),  # one account, one region
    ("*", "arn:aws:ec2:*:123456789012:*"),         # one account
    ("*", "arn:aws:iam::123456789012:*"),
    ("*", "arn:aws:s3:::logs-*"),                  # buckets by a name prefix, not every bucket
    ("*", "arn:aws:ec2:*:123456789012:instance/*"),
    ("s3:GetObject", "arn:aws:s3:::*"),            # a read, not every action and no escalation
    ("ec2:DescribeInstances", "arn:aws:ec2:*:*:*"),
    ("iam:PassRole", "arn:aws:iam::123456789012:role/ck8s-gpu-worker-*"),   # this stack's roles
    ("iam:PassRole", "arn:aws:iam::*:role/ck8s-gpu-worker"),                # one role name
    ("sts:AssumeRole", "arn:aws:iam::123456789012:role/backup-writer"),
    ("iam:CreateAccessKey", "arn:aws:iam::*:user/ci-*"),
    ("iam:GetRole", "arn:aws:iam::*:role/*"),      # a read of every role: not an escalation
    ("iam:PassRole", "arn:aws:ec2:*:*:instance/*"),  # nothing IAM acts on
])
def test_look_alikes_stay_quiet(action: str, resource: str) -> None:
    assert violations(NO_WILDCARD_IAM, ROLE_POLICY, {"policy": doc(
        {"Effect": "Allow", "Action": action, "Resource": resource})}) == []


def test_deny_statements_are_never_judged() -> None:
    assert violations(NO_WILDCARD_IAM, ROLE_POLICY, {"policy": doc(
        {"Effect": "Deny", "Action": "*", "Resource": "arn:aws:iam::*:*"})}) == []

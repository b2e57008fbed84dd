"""no-public-resource-policy: a secret, key or bucket policy open to every AWS account (issue 27).

One table of equivalent spellings of "everyone, unconditionally" (every row must be caught, on
every resource type), one of safe look-alikes (every row must pass)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.policies.resource_policies import NO_PUBLIC_RESOURCE_POLICY, RESOURCE_POLICY_TYPES
from tests.unit.policies.helpers import violations

TYPES = sorted(RESOURCE_POLICY_TYPES)
ARN = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:ck8s-x-capi"


def doc(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def allow(principal: Any = "*", condition: dict[str, Any] | None = None, key: str = "Principal",
          action: Any = "secretsmanager:GetSecretValue", resource: Any = "*") -> dict[str, Any]:
    st: dict[str, Any] = {"Effect": "Allow", key: principal, "Action": action, "Resource": resource}
    if condition is not None:
        st["Condition"] = condition
    return st


OPEN: list[tuple[str, Any]] = [
    ("Principal '*'", doc(allow())),
    ('{"AWS": "*"}', doc(allow({"AWS": "*"}))),
    ('{"AWS": ["*"]}', doc(allow({"AWS": ["*"]}))),
    ("a list holding '*' among accounts", doc(allow({"AWS": ["arn:aws:iam::111122223333:root", "*"]}))),
    ("an account wildcard (IAM refuses it; the intent is everyone)", doc(allow({"AWS": "arn:aws:iam::*:root"}))),
    ("CanonicalUser '*'", doc(allow({"CanonicalUser": "*"}))),
    ("NotPrincipal with Allow", doc(allow({"AWS": "arn:aws:iam::111122223333:root"}, key="NotPrincipal"))),
    ("a single statement object", json.dumps({"Version": "2012-10-17", "Statement": allow()})),
    ("a mapping, not a JSON string", {"Version": "2012-10-17", "Statement": [allow()]}),
    ("a condition that narrows nothing (TLS only)", doc(allow(condition={"Bool": {"aws:SecureTransport": "true"}}))),
    ("...IfExists: true when the key is absent",
     doc(allow(condition={"StringEqualsIfExists": {"aws:PrincipalAccount": "111122223333"}}))),
    ("ForAllValues: true when the key is absent",
     doc(allow(condition={"ForAllValues:StringEquals": {"aws:PrincipalOrgID": "o-abc123"}}))),
    ("a negated operator: everyone else",
     doc(allow(condition={"StringNotEquals": {"aws:PrincipalAccount": "111122223333"}}))),
    ("a wildcard value", doc(allow(condition={"StringLike": {"aws:PrincipalAccount": "*"}}))),
    ("a wildcard organisation", doc(allow(condition={"StringLike": {"aws:PrincipalOrgID": "o-*"}}))),
    ("a principal ARN of any account",
     doc(allow(condition={"ArnLike": {"aws:PrincipalArn": "arn:aws:iam::*:role/ck8s-*"}}))),
    ("Null: only that the key exists", doc(allow(condition={"Null": {"aws:PrincipalOrgID": "false"}}))),
    ("a network that is not an account", doc(allow(condition={"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}))),
    ("the caller's own account as its own condition",
     doc(allow(condition={"StringEquals": {"aws:PrincipalAccount": "${aws:PrincipalAccount}"}}))),
    ("a Deny guard that covers fewer actions",
     doc(allow(action="secretsmanager:*"), {"Effect": "Deny", "Principal": "*", "Action": "secretsmanager:Put*",
                                            "Resource": "*", "Condition": {"StringNotEquals": {
                                                "aws:PrincipalOrgID": "o-abc123"}}})),
    ("a Deny guard with an IfExists-free positive operator (denies the org, not the rest)",
     doc(allow(), {"Effect": "Deny", "Principal": "*", "Action": "*", "Resource": "*",
                   "Condition": {"StringEquals": {"aws:PrincipalOrgID": "o-abc123"}}})),
    ("one open statement among narrowed ones",
     doc(allow(condition={"StringEquals": {"aws:PrincipalOrgID": "o-abc123"}}), allow({"AWS": "*"}))),
]


@pytest.mark.parametrize("rtype", TYPES)
@pytest.mark.parametrize("policy", [p for _, p in OPEN], ids=[i for i, _ in OPEN])
def test_every_spelling_of_everyone_is_caught_on_every_resource_policy(rtype: str, policy: Any) -> None:
    found = violations(NO_PUBLIC_RESOURCE_POLICY, rtype, {"policy": policy})
    assert found and all("to every AWS account" in m for m in found), found


NARROWED: list[tuple[str, Any]] = [
    ("named account", doc(allow({"AWS": "arn:aws:iam::111122223333:root"}))),
    ("a role", doc(allow({"AWS": "arn:aws:iam::111122223333:role/ck8s-x-control-plane"}))),
    ("a service principal", doc(allow({"Service": "cloudtrail.amazonaws.com"}))),
    ("aws:PrincipalAccount", doc(allow(condition={"StringEquals": {"aws:PrincipalAccount": "111122223333"}}))),
    ("aws:PrincipalOrgID", doc(allow(condition={"StringEquals": {"aws:PrincipalOrgID": "o-abc123"}}))),
    ("key in another case (condition keys are case-insensitive)",
     doc(allow(condition={"StringEquals": {"AWS:principalorgid": "o-abc123"}}))),
    ("operator in another case", doc(allow(condition={"stringequals": {"aws:PrincipalOrgID": "o-abc123"}}))),
    ("ForAnyValue:StringLike on org paths",
     doc(allow(condition={"ForAnyValue:StringLike": {
         "aws:PrincipalOrgPaths": ["o-abc123/r-ab12/ou-ab12-11111111/"]}}))),
    ("aws:PrincipalArn with an account", doc(allow(condition={"ArnLike": {
        "aws:PrincipalArn": "arn:aws:iam::111122223333:role/ck8s-*"}}))),
    ("aws:SourceAccount", doc(allow({"Service": "*"}, condition={
        "StringEquals": {"aws:SourceAccount": "111122223333"}}))),
    ("aws:SourceArn with an account", doc(allow(condition={"ArnEquals": {
        "aws:SourceArn": "arn:aws:cloudtrail:eu-west-1:111122223333:trail/t"}}))),
    ("kms:CallerAccount (AWS-managed key style)", doc(allow({"AWS": "*"}, action=["kms:Decrypt"], condition={
        "StringEquals": {"kms:CallerAccount": "111122223333", "kms:ViaService": "s3.eu-west-1.amazonaws.com"}}))),
    ("aws:SourceVpce", doc(allow(condition={"StringEquals": {"aws:SourceVpce": "vpce-1a2b3c4d"}}))),
    ("aws:SourceVpc", doc(allow(condition={"StringEquals": {"aws:SourceVpc": "vpc-1a2b3c4d"}}))),
    ("the resource's own account", doc(allow(condition={"StringEquals": {
        "aws:PrincipalAccount": "${aws:ResourceAccount}"}}))),
    ("a Deny guard for everyone outside the organisation",
     doc(allow(action="secretsmanager:GetSecretValue"), {"Effect": "Deny", "Principal": "*", "Action": "*",
                                                         "Resource": "*", "Condition": {"StringNotEquals": {
                                                             "aws:PrincipalOrgID": "o-abc123"}}})),
    ("a Deny guard with IfExists (stricter)",
     doc(allow(action=["s3:GetObject"], resource="arn:aws:s3:::b/*"), {
         "Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:*",
         "Resource": ["arn:aws:s3:::b", "arn:aws:s3:::b/*"],
         "Condition": {"StringNotEqualsIfExists": {"aws:SourceVpce": "vpce-1a2b3c4d"}}})),
    ("Deny to everyone (the backup bucket's TLS-only statement)",
     doc({"Sid": "TlsOnly", "Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "*",
          "Condition": {"Bool": {"aws:SecureTransport": "false"}}})),
    ("the default KMS key policy", doc(allow({"AWS": "arn:aws:iam::111122223333:root"}, action="kms:*"))),
    ("unknown during a preview", "<computed>"),
    ("absent", None),
]


@pytest.mark.parametrize("rtype", TYPES)
@pytest.mark.parametrize("policy", [p for _, p in NARROWED], ids=[i for i, _ in NARROWED])
def test_narrowed_and_named_principals_pass(rtype: str, policy: Any) -> None:
    assert violations(NO_PUBLIC_RESOURCE_POLICY, rtype, {"policy": policy}) == []


def test_the_message_names_the_statement_and_what_it_holds() -> None:
    found = violations(NO_PUBLIC_RESOURCE_POLICY, "aws:kms/key:Key", {"policy": doc(
        {"Sid": "Root", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::111122223333:root"}, "Action": "kms:*",
         "Resource": "*"},
        {"Sid": "Anyone", "Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "kms:Decrypt", "Resource": "*"})})
    assert found == ["policy Statement[1] (Anyone) opens the KMS key to every AWS account: Principal {AWS: '*'} "
                     "without a Condition pinning the caller to this account or organisation (aws:PrincipalAccount, "
                     "aws:PrincipalOrgID, aws:SourceVpce...)"]


def test_other_resources_and_garbage() -> None:
    assert violations(NO_PUBLIC_RESOURCE_POLICY, "aws:iam/policy:Policy", {"policy": doc(allow())}) == []
    assert violations(NO_PUBLIC_RESOURCE_POLICY, "aws:kms/key:Key", {"policy": "{not json"}) == [
        "policy is not valid JSON; it cannot be reviewed"]


def test_the_committed_stacks_resource_policies_pass() -> None:
    """The backup bucket's policy as the program writes it (components/backup.py via the plan)."""
    from components.plan.run import plan_stack

    policies = [r for r in plan_stack("aws-prod").resources if r.type in RESOURCE_POLICY_TYPES]
    assert any(r.type == "aws:s3/bucketPolicy:BucketPolicy" for r in policies)
    for r in policies:
        assert violations(NO_PUBLIC_RESOURCE_POLICY, r.type, dict(r.raw_inputs)) == [], r.name


# --- issue 45: every resource type with a resource policy, found by what the document is -------------

OPEN_DOC = doc(allow(action="*"))


@pytest.mark.parametrize(("rtype", "props"), [
    ("aws:s3/accessPoint:AccessPoint", {"policy": OPEN_DOC}),
    ("aws:s3control/accessPointPolicy:AccessPointPolicy", {"policy": OPEN_DOC}),
    ("aws:s3control/multiRegionAccessPointPolicy:MultiRegionAccessPointPolicy", {"details": {"policy": OPEN_DOC}}),
    ("aws:s3control/objectLambdaAccessPointPolicy:ObjectLambdaAccessPointPolicy", {"policy": OPEN_DOC}),
    ("aws:s3/directoryBucketPolicy:DirectoryBucketPolicy", {"policy": OPEN_DOC}),  # a type no list named
    ("aws:efs/fileSystemPolicy:FileSystemPolicy", {"policy": OPEN_DOC}),
    ("aws:opensearch/domain:Domain", {"accessPolicies": OPEN_DOC}),
    ("aws:opensearch/domainPolicy:DomainPolicy", {"accessPolicies": OPEN_DOC}),
    ("aws:glacier/vault:Vault", {"accessPolicy": OPEN_DOC}),
    ("aws:cloudwatch/logResourcePolicy:LogResourcePolicy", {"policyDocument": OPEN_DOC}),
    ("aws:cloudwatch/eventBusPolicy:EventBusPolicy", {"policy": OPEN_DOC}),
    ("aws:apigateway/restApiPolicy:RestApiPolicy", {"policy": OPEN_DOC}),
    ("aws:backup/vaultPolicy:VaultPolicy", {"policy": OPEN_DOC}),
    ("aws:ecr/registryPolicy:RegistryPolicy", {"policy": OPEN_DOC}),
    ("aws:iam/role:Role", {"assumeRolePolicy": doc(allow(action="sts:AssumeRole"))}),  # anyone may assume it
    ("aws:dynamodb/resourcePolicy:ResourcePolicy", {"policy": {"Version": "2012-10-17", "Statement": [allow()]}}),
    ("aws:codeartifact/repositoryPermissionsPolicy:RepositoryPermissionsPolicy", {"policyDocument": OPEN_DOC}),
    ("aws:lambda/permission:Permission", {"principal": "*", "action": "lambda:InvokeFunction"}),
    ("aws:lambda/layerVersionPermission:LayerVersionPermission", {"principal": "*",
                                                                  "action": "lambda:GetLayerVersion"}),
    ("aws:ec2/amiLaunchPermission:AmiLaunchPermission", {"imageId": "ami-1", "group": "all"}),
    ("aws:rds/snapshot:Snapshot", {"sharedAccounts": ["111122223333", "all"]}),
    ("aws:imagebuilder/distributionConfiguration:DistributionConfiguration", {"distributions": [
        {"region": "eu-west-1", "amiDistributionConfiguration": {"launchPermission": {"userGroups": ["all"]}}}]}),
])
def test_a_public_grant_is_caught_on_every_type(rtype: str, props: dict[str, Any]) -> None:
    found = violations(NO_PUBLIC_RESOURCE_POLICY, rtype, props)
    assert len(found) == 1 and ("every AWS account" in found[0] or "public" in found[0]), found


@pytest.mark.parametrize(("rtype", "props"), [
    ("aws:iam/rolePolicy:RolePolicy", {"policy": OPEN_DOC}),  # an identity policy: AWS refuses a Principal there
    ("aws:iam/role:Role", {"assumeRolePolicy": doc(allow({"Service": "ec2.amazonaws.com"}, action="sts:AssumeRole"))}),
    ("aws:efs/fileSystemPolicy:FileSystemPolicy", {"policy": doc(allow(condition={
        "StringEquals": {"aws:PrincipalAccount": "111122223333"}}))}),
    ("aws:ec2/instance:Instance", {"tags": {"note": 'see the "Statement" in the runbook'}}),  # mentions, not a document
    ("aws:lambda/permission:Permission", {"principal": "*", "sourceAccount": "111122223333"}),
    ("aws:lambda/permission:Permission", {"principal": "s3.amazonaws.com", "sourceArn": "arn:aws:s3:::b"}),
    ("aws:lambda/layerVersionPermission:LayerVersionPermission", {"principal": "*", "organizationId": "o-abc123"}),
    ("aws:ec2/amiLaunchPermission:AmiLaunchPermission", {"imageId": "ami-1", "accountId": "111122223333"}),
    ("aws:rds/snapshot:Snapshot", {"sharedAccounts": ["111122223333"]}),
    ("aws:imagebuilder/distributionConfiguration:DistributionConfiguration", {"distributions": [
        {"region": "eu-west-1", "amiDistributionConfiguration": {"launchPermission": {"userIds": ["111122223333"]}}}]}),
])
def test_look_alike_grants_pass(rtype: str, props: dict[str, Any]) -> None:
    assert violations(NO_PUBLIC_RESOURCE_POLICY, rtype, props) == []


@pytest.mark.parametrize("stack", ["aws-dev", "aws-prod", "aws-airgap"])
def test_no_resource_of_a_committed_stack_is_public(stack: str) -> None:
    from components.plan.run import plan_stack

    for r in plan_stack(stack).resources:
        assert violations(NO_PUBLIC_RESOURCE_POLICY, r.type, dict(r.raw_inputs)) == [], (r.type, r.name)

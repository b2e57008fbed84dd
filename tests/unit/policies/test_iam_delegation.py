"""`iam-delegates-own-roles` (issue 45): iam:PassRole and sts:AssumeRole, in every spelling that
matches them, only on this stack's roles named exactly; look-alikes stay quiet."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.policies.iam import IAM_DELEGATES_OWN_ROLES, Node, delegation_problems
from components.policies.offline import policy_resource
from tests.unit.policies.helpers import stack_violations

ROLE = "aws:iam/role:Role"
POLICY = "aws:iam/policy:Policy"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
USER_POLICY = "aws:iam/userPolicy:UserPolicy"
WORKER = "arn:aws:iam::123456789012:role/ck8s-dev-worker-role"


def urn(rtype: str, name: str) -> str:
    return f"urn:pulumi:test::ck8s-gpu::{rtype}::{name}"


def node(rtype: str, name: str, props: dict[str, Any]) -> Node:
    return Node(rtype, urn(rtype, name), name, props)


def stack_roles() -> list[Node]:
    return [node(ROLE, "worker-role", {"name": "ck8s-dev-worker-role"}),
            node(ROLE, "control-plane-role", {})]


def grant(statement: dict[str, Any], rtype: str = ROLE_POLICY) -> Node:
    return node(rtype, "controller", {"policy": json.dumps({"Version": "2012-10-17", "Statement": [statement]})})


def problems(statement: dict[str, Any], rtype: str = ROLE_POLICY) -> list[str]:
    return [m for _, m in delegation_problems([*stack_roles(), grant(statement, rtype)])]


@pytest.mark.parametrize("statement", [
    {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "arn:aws:iam::123456789012:role/*"},
    {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "arn:aws:iam::123456789012:role/ck8s-dev-*"},
    {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "arn:aws:iam::123456789012:role/someone-elses"},
    {"Effect": "Allow", "Action": "IAM:passrole", "Resource": "arn:aws:iam::123456789012:role/admin"},
    {"Effect": "Allow", "Action": "iam:Pass*", "Resource": "*"},
    {"Effect": "Allow", "Action": ["ec2:RunInstances", "iam:*"], "Resource": "arn:aws:iam::*:role/x"},
    {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "arn:aws:iam::999999999999:role/ops"},
    {"Effect": "Allow", "Action": "sts:Assume*", "Resource": ["arn:aws:iam::123456789012:role/ck8s-dev-worker-role",
                                                              "arn:aws:iam::123456789012:role/other"]},
    {"Effect": "Allow", "Action": "iam:PassRole", "NotResource": "arn:aws:iam::123456789012:role/admin"},
    {"Effect": "Allow", "NotAction": "s3:*", "Resource": "arn:aws:iam::123456789012:role/admin"},
    {"Effect": "Allow", "Action": "*", "Resource": "arn:aws:iam::123456789012:role/admin"},
])
def test_every_spelling_of_delegating_a_role_not_ours_violates(statement: dict[str, Any]) -> None:
    found = problems(statement)
    assert found, statement
    assert all("iam:PassRole" in m or "sts:AssumeRole" in m for m in found), found


@pytest.mark.parametrize("rtype", [POLICY, USER_POLICY])
def test_every_document_kind_is_read(rtype: str) -> None:
    assert problems({"Effect": "Allow", "Action": "iam:PassRole", "Resource": "*"}, rtype)


@pytest.mark.parametrize("statement", [
    {"Effect": "Allow", "Action": "iam:PassRole", "Resource": WORKER,                     # the explicit name
     "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}},
    {"Effect": "Allow", "Action": "iam:PassRole",
     "Resource": "arn:aws:mock:eu-west-1:123456789012:role/control-plane-role"},       # offline mock ARN, logical
    {"Effect": "Allow", "Action": "iam:PassRole",
     "Resource": "arn:aws:iam::123456789012:role/control-plane-role-1a2b3c4"},         # its auto-name
    {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "<computed>"},            # not known yet
    {"Effect": "Deny", "Action": "iam:PassRole", "Resource": "*"},
    {"Effect": "Allow", "Action": "iam:GetRole", "Resource": "arn:aws:iam::123456789012:role/*"},
    {"Effect": "Allow", "Action": "iam:PassRoles", "Resource": "*"},                    # no such action: not a match
    {"Effect": "Allow", "NotAction": ["iam:*", "sts:*"], "Resource": "*"},              # everything but delegation
])
def test_look_alikes_stay_quiet(statement: dict[str, Any]) -> None:
    assert problems(statement) == []


def test_the_policy_reports_through_the_pack_interface() -> None:
    resources = [policy_resource(ROLE, {"name": "ck8s-dev-worker-role"}, name="worker-role"),
                 policy_resource(ROLE_POLICY, {"policy": json.dumps({"Statement": [
                     {"Effect": "Allow", "Action": "iam:PassRole", "Resource": "arn:aws:iam::1:role/other"}]})},
                     name="controller")]
    found = stack_violations(IAM_DELEGATES_OWN_ROLES, resources)
    assert found and "not one of this stack's roles (worker-role), named exactly" in found[0][0], found

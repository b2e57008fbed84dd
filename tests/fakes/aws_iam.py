"""A strict evaluator for the identity policies our node roles carry (what the fake AWS CLI enforces).

Modelled on the AWS IAM User Guide, "Policy evaluation logic" (an action is allowed only when some
Allow statement matches it and no Deny does), "IAM JSON policy elements: Action / Resource"
(case-insensitive action names, `*` and `?` wildcards; case-sensitive resource ARNs) and
"Condition operators" (StringEquals, StringLike; every key of a condition must match; a key the
request lacks does not match). It refuses any policy element it does not model (NotAction,
NotResource, other condition operators, Principal): a judgement it cannot make is an error, never
a silent allow or deny.

`granted_actions` lists what a policy set allows by name (for proofs over every allowed action);
a wildcard action cannot be listed without the service's own action list, so it is refused.
ACCESS_LEVELS is the Service Authorization Reference's "Access level" column for the actions the
node roles' inline policies name: List and Read actions change nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MODELLED_STATEMENT_KEYS = {"Sid", "Effect", "Action", "Resource", "Condition"}
MODELLED_OPERATORS = {"StringEquals", "StringLike"}

# AWS managed policy AmazonSSMManagedInstanceCore (AWS Managed Policy Reference Guide, version v2):
# what both node roles get besides their inline policy. Agent-side actions only: no SendCommand,
# no StartSession, no Secrets Manager.
SSM_MANAGED_INSTANCE_CORE: dict[str, Any] = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Action": [
                "ssm:DescribeAssociation", "ssm:GetDeployablePatchSnapshotForInstance", "ssm:GetDocument",
                "ssm:DescribeDocument", "ssm:GetManifest", "ssm:GetParameter", "ssm:GetParameters",
                "ssm:ListAssociations", "ssm:ListInstanceAssociations", "ssm:PutInventory",
                "ssm:PutComplianceItems", "ssm:PutConfigurePackageResult", "ssm:UpdateAssociationStatus",
                "ssm:UpdateInstanceAssociationStatus", "ssm:UpdateInstanceInformation",
            ],
            "Resource": "*",
        },
        {
            "Effect": "Allow",
            "Action": ["ssmmessages:CreateControlChannel", "ssmmessages:CreateDataChannel",
                       "ssmmessages:OpenControlChannel", "ssmmessages:OpenDataChannel"],
            "Resource": "*",
        },
        {
            "Effect": "Allow",
            "Action": ["ec2messages:AcknowledgeMessage", "ec2messages:DeleteMessage", "ec2messages:FailMessage",
                       "ec2messages:GetEndpoint", "ec2messages:GetMessages", "ec2messages:SendReply"],
            "Resource": "*",
        },
    ],
}


# Service Authorization Reference: "Actions defined by Amazon EC2" / "AWS Systems Manager".
ACCESS_LEVELS: dict[str, str] = {
    "ec2:DescribeInstances": "List",
    "ssm:SendCommand": "Write",
    "ssm:GetCommandInvocation": "Read",
}


class UnmodelledPolicy(ValueError):
    """The policy uses an element this evaluator does not model."""


@dataclass(frozen=True)
class Request:
    action: str
    resource: str
    context: Mapping[str, str] = field(default_factory=dict)  # condition keys, e.g. ssm:resourceTag/k


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _glob(pattern: str, value: str, *, case_sensitive: bool) -> bool:
    """IAM wildcards: `*` any run of characters, `?` one character; nothing else is special."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, 0 if case_sensitive else re.IGNORECASE | re.DOTALL) is not None


def _condition_matches(condition: Mapping[str, Any], context: Mapping[str, str]) -> bool:
    for operator, pairs in condition.items():
        if operator not in MODELLED_OPERATORS:
            raise UnmodelledPolicy(f"condition operator {operator} is not modelled")
        for key, wanted in pairs.items():
            # Condition keys are case-insensitive; their values here are case-sensitive.
            actual = next((v for k, v in context.items() if k.lower() == key.lower()), None)
            if actual is None:
                return False
            options = _as_list(wanted)
            if operator == "StringEquals" and actual not in options:
                return False
            if operator == "StringLike" and not any(_glob(o, actual, case_sensitive=True) for o in options):
                return False
    return True


def _statement_matches(statement: Mapping[str, Any], request: Request) -> bool:
    unknown = set(statement) - MODELLED_STATEMENT_KEYS
    if unknown:
        raise UnmodelledPolicy(f"statement elements {sorted(unknown)} are not modelled")
    if not any(_glob(a, request.action, case_sensitive=False) for a in _as_list(statement["Action"])):
        return False
    if not any(_glob(r, request.resource, case_sensitive=True) for r in _as_list(statement["Resource"])):
        return False
    return _condition_matches(statement.get("Condition") or {}, request.context)


def allowed(policies: Sequence[Mapping[str, Any]], request: Request) -> bool:
    """Explicit deny wins, then any allow; otherwise the implicit deny."""
    verdicts = [
        s["Effect"] for p in policies for s in p["Statement"] if _statement_matches(s, request)
    ]
    if any(v not in ("Allow", "Deny") for v in verdicts):
        raise UnmodelledPolicy(f"unknown Effect in {verdicts}")
    return "Allow" in verdicts and "Deny" not in verdicts


def granted_actions(policies: Sequence[Mapping[str, Any]]) -> set[str]:
    """Every action an Allow statement names, as written. A Deny statement is refused: what it
    takes away depends on its resources and conditions, not on names alone."""
    out: set[str] = set()
    for p in policies:
        for s in p["Statement"]:
            unknown = set(s) - MODELLED_STATEMENT_KEYS
            if unknown:
                raise UnmodelledPolicy(f"statement elements {sorted(unknown)} are not modelled")
            if s["Effect"] != "Allow":
                raise UnmodelledPolicy(f"granted_actions lists Allow statements only, not {s['Effect']}")
            for action in _as_list(s["Action"]):
                if "*" in action or "?" in action:
                    raise UnmodelledPolicy(f"{action} is a wildcard: its actions cannot be listed here")
                out.add(action)
    return out

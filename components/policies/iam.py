"""IAM: no statement allows every action on every resource.

Policy documents appear as JSON strings on `aws:iam/policy:Policy.policy`,
`aws:iam/rolePolicy:RolePolicy.policy`, `aws:iam/userPolicy`, `aws:iam/groupPolicy` and
`aws:iam/role:Role.inlinePolicies[].policy`, `aws:s3/bucketPolicy:BucketPolicy.policy`;
AWS-managed admin policies arrive through `*PolicyAttachment.policyArn` and `Role.managedPolicyArns`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from components.policies.props import is_seq, is_unknown, items

DOCUMENT_TYPES = {
    "aws:iam/policy:Policy",
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/userPolicy:UserPolicy",
    "aws:iam/groupPolicy:GroupPolicy",
    "aws:s3/bucketPolicy:BucketPolicy",  # a resource policy: `*` on `*` there is just as open
}
ATTACHMENT_TYPES = {
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
    "aws:iam/userPolicyAttachment:UserPolicyAttachment",
    "aws:iam/groupPolicyAttachment:GroupPolicyAttachment",
    "aws:iam/policyAttachment:PolicyAttachment",
}
ROLE = "aws:iam/role:Role"
# AWS-managed policies that are `*` on `*` in all but name.
ADMIN_POLICIES = ("/AdministratorAccess", "/PowerUserAccess", "/IAMFullAccess")


def documents(resource_type: str, props: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    if resource_type in DOCUMENT_TYPES:
        yield "policy", props.get("policy")
    if resource_type == ROLE:
        for i, inline in enumerate(items(props, "inlinePolicies")):
            if isinstance(inline, Mapping):
                yield f"inlinePolicies[{i}].policy", inline.get("policy")


def _as_list(value: Any) -> list[Any]:
    return list(value) if is_seq(value) else [value]


def _wild_action(action: Any) -> bool:
    return action in ("*", "*:*")


def statement_problem(statement: Mapping[str, Any]) -> str | None:
    """Allow statements whose actions AND resources are unbounded. NotAction/NotResource count as
    unbounded: they grant everything except a list, including whatever AWS adds later."""
    if statement.get("Effect") != "Allow":
        return None
    if any(_wild_action(a) for a in _as_list(statement.get("Action"))):
        actions = "Action '*'"
    elif "NotAction" in statement:
        actions = "NotAction (every action but a list)"
    else:
        return None
    if "*" in _as_list(statement.get("Resource")):
        return f"allows {actions} on Resource '*'"
    if "NotResource" in statement:
        return f"allows {actions} on NotResource (every resource but a list)"
    return None


def document_problems(where: str, document: Any) -> list[str]:
    if document is None or is_unknown(document):
        return []
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except json.JSONDecodeError:
            return [f"{where} is not valid JSON; it cannot be reviewed"]
    if not isinstance(document, Mapping):
        return []
    problems = []
    for i, statement in enumerate(_as_list(document.get("Statement"))):
        if isinstance(statement, Mapping):
            problem = statement_problem(statement)
            if problem:
                sid = f" ({statement['Sid']})" if statement.get("Sid") else ""
                problems.append(f"{where} Statement[{i}]{sid} {problem}")
    return problems


def wildcard_problems(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    problems = [p for where, doc in documents(resource_type, props) for p in document_problems(where, doc)]
    arns = [props.get("policyArn")] if resource_type in ATTACHMENT_TYPES else []
    if resource_type == ROLE:
        arns += items(props, "managedPolicyArns")
    for arn in arns:
        if isinstance(arn, str) and arn.startswith("arn:") and arn.endswith(ADMIN_POLICIES):
            problems.append(f"attaches {arn.rsplit('/', 1)[-1]}, which allows (nearly) '*' on '*'")
    return problems


def validate_no_wildcard_iam(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for problem in wildcard_problems(args.resource_type, args.props):
        report_violation(problem, None)


NO_WILDCARD_IAM = ResourceValidationPolicy(
    name="no-wildcard-iam",
    description="No IAM policy allows '*' actions on '*' resources (nor AWS admin policies).",
    validate=validate_no_wildcard_iam,
    enforcement_level=EnforcementLevel.MANDATORY,
)

"""IAM: no statement allows every action on every resource.

Policy documents appear as JSON strings on `aws:iam/policy:Policy.policy`,
`aws:iam/rolePolicy:RolePolicy.policy`, `aws:iam/userPolicy`, `aws:iam/groupPolicy` and
`aws:iam/role:Role.inlinePolicies[].policy`, `aws:s3/bucketPolicy:BucketPolicy.policy`;
AWS-managed admin policies arrive through `*PolicyAttachment.policyArn` and `Role.managedPolicyArns`.
"""

from __future__ import annotations

import json
import re
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
# AWS-managed policies that are `*` on `*` in all but name (any partition: the ARN's tail decides).
ADMIN_POLICIES = ("/AdministratorAccess", "/AdministratorAccess-Amplify", "/AdministratorAccess-AWSElasticBeanstalk",
                  "/PowerUserAccess", "/IAMFullAccess")
# Judged by what a pattern MATCHES, as IAM does (case-insensitive `*` and `?`; IAM User Guide, "IAM
# JSON policy elements: Action" and "Resource"): an action no policy names on purpose, and an ARN of
# a service that does not exist yet. A pattern that matches them matches everything.
ANY_ACTION = "zzznewservice:ZzzNewAction"
ANY_ARN = "arn:aws:zzznewservice:zz-new-1:123456789012:thing/zzz"
# Actions that let a principal grant itself anything else (IAM privilege escalation): allowed on
# every resource they are as good as `*`.
ESCALATION = ("iam:AttachRolePolicy", "iam:AttachUserPolicy", "iam:PutRolePolicy", "iam:PutUserPolicy",
              "iam:CreatePolicyVersion", "iam:UpdateAssumeRolePolicy", "iam:CreateAccessKey", "iam:PassRole")


def documents(resource_type: str, props: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    if resource_type in DOCUMENT_TYPES:
        yield "policy", props.get("policy")
    if resource_type == ROLE:
        for i, inline in enumerate(items(props, "inlinePolicies")):
            if isinstance(inline, Mapping):
                yield f"inlinePolicies[{i}].policy", inline.get("policy")


def _as_list(value: Any) -> list[Any]:
    return list(value) if is_seq(value) else [value]


def matches(pattern: str, value: str) -> bool:
    """IAM wildcard matching: `*` any run, `?` one character, case-insensitive, everything else literal."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, flags=re.IGNORECASE | re.DOTALL) is not None


def _wild_action(action: Any) -> bool:
    return isinstance(action, str) and matches(action, ANY_ACTION)


def _escalating(actions: list[Any]) -> list[str]:
    return [e for e in ESCALATION if any(isinstance(a, str) and matches(a, e) for a in actions)]


def _wild_resource(resource: Any) -> bool:
    return isinstance(resource, str) and (resource == "*" or matches(resource, ANY_ARN))


def statement_problem(statement: Mapping[str, Any]) -> str | None:
    """Allow statements whose actions AND resources are unbounded. NotAction/NotResource count as
    unbounded: they grant everything except a list, including whatever AWS adds later."""
    if statement.get("Effect") != "Allow":
        return None
    listed = _as_list(statement.get("Action"))
    if wild := [a for a in listed if _wild_action(a)]:
        actions = f"Action '{wild[0]}'" + ("" if wild[0] == "*" else " (every action)")
    elif "NotAction" in statement:
        actions = "NotAction (every action but a list)"
    elif escalating := _escalating(listed):
        actions = f"{', '.join(escalating)} (lets it grant itself anything)"
    else:
        return None
    if wild_resource := [r for r in _as_list(statement.get("Resource")) if _wild_resource(r)]:
        shown = wild_resource[0]
        return f"allows {actions} on Resource '{shown}'" + ("" if shown == "*" else " (every resource)")
    if "NotResource" in statement:
        return f"allows {actions} on NotResource (every resource but a list)"
    return None


def _parsed(where: str, document: Any) -> tuple[Mapping[str, Any] | None, list[str]]:
    """A policy document as a mapping (None: unknown, absent or not a mapping), or why it is unreadable."""
    if document is None or is_unknown(document):
        return None, []
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except json.JSONDecodeError:
            return None, [f"{where} is not valid JSON; it cannot be reviewed"]
    return (document if isinstance(document, Mapping) else None), []


def document_problems(where: str, raw: Any) -> list[str]:
    document, problems = _parsed(where, raw)
    if document is None:
        return problems
    for i, statement in enumerate(_as_list(document.get("Statement"))):
        if isinstance(statement, Mapping):
            problem = statement_problem(statement)
            if problem:
                sid = f" ({statement['Sid']})" if statement.get("Sid") else ""
                problems.append(f"{where} Statement[{i}]{sid} {problem}")
    return problems


def trust_problems(raw: Any) -> list[str]:
    """A role anyone in any account may assume: Allow, a `*` principal, no Condition."""
    document, problems = _parsed("assumeRolePolicy", raw)
    for i, st in enumerate(_as_list(document.get("Statement")) if document is not None else []):
        if not isinstance(st, Mapping) or st.get("Effect") != "Allow" or st.get("Condition"):
            continue
        principal = st.get("Principal")
        values = [principal] if isinstance(principal, str) else [
            v for vs in (principal or {}).values() for v in _as_list(vs)] if isinstance(principal, Mapping) else []
        # IAM allows no partial wildcard in a principal ("*" alone): IAM User Guide, "Principal".
        if "*" in values:
            problems.append(f"assumeRolePolicy Statement[{i}] lets any principal of any account assume the role "
                            "(Principal '*' without a Condition)")
    return problems


def wildcard_problems(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    problems = [p for where, doc in documents(resource_type, props) for p in document_problems(where, doc)]
    if resource_type == ROLE:
        problems += trust_problems(props.get("assumeRolePolicy"))
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

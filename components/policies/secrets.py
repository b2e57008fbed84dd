"""Secret material only ever as Pulumi secrets; never in EC2 user-data.

`no-plaintext-secrets` needs to know which inputs are Pulumi secrets. The offline adapter knows
(the mock engine records secret paths). The real policy pack does not: pulumi-policy 1.21 for
Python unwraps secrets before `validate` runs (policy.py `Analyze` -> `deserialize_properties`
without `proxy_secrets`), so there the policy declares itself not applicable and CI's offline
run is the enforcement point (docs/adr: policies offline and in the pack).

`user-data-without-secrets` needs no such knowledge: EC2 serves user-data in plain text to
anyone with `ec2:DescribeInstanceAttribute` and to every process that reaches the instance
metadata service, whatever Pulumi's state says. Nodes should fetch secrets at boot (Secrets
Manager / SSM with their instance role).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from components.policies.aws_nodes import NODE_TYPES
from components.policies.props import decode_user_data, leaves, under
from components.policies.secret_material import findings

USER_DATA_KEYS = ("userData", "userDataBase64")
STACK = "pulumi:pulumi:Stack"


def secret_paths_of(args: Any) -> frozenset[str] | None:
    """Input paths that are Pulumi secrets, when the caller knows them (offline); else None."""
    paths = getattr(args, "secret_paths", None)
    return frozenset(paths) if paths is not None else None


def _text_at(resource_type: str, path: str, value: str) -> str:
    if resource_type in NODE_TYPES and path in USER_DATA_KEYS:
        return decode_user_data({path: value}) or value
    return value


def plaintext_secret_problems(resource_type: str, props: Mapping[str, Any], secret_paths: frozenset[str]) -> list[str]:
    if "$" in secret_paths:
        return []
    problems = []
    for path, value in leaves(props):
        if not isinstance(value, str) or under(path, secret_paths):
            continue
        kinds = findings(_text_at(resource_type, path, value))
        if kinds:
            what = "stack output" if resource_type == STACK else "input"
            problems.append(f"{what} {path} holds {', '.join(kinds)} but is not a Pulumi secret; "
                            "wrap it with pulumi.Output.secret (or mark the output secret)")
    return problems


def user_data_secret_problems(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    if resource_type not in NODE_TYPES:
        return []
    text = decode_user_data(props)
    kinds = findings(text) if text else []
    if not kinds:
        return []
    return [f"user-data carries {', '.join(kinds)}: EC2 exposes user-data in plain text (API and metadata "
            "service); store it in Secrets Manager/SSM and fetch it at boot with the instance role"]


def validate_no_plaintext_secrets(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    secret_paths = secret_paths_of(args)
    if secret_paths is None:
        args.not_applicable("pulumi-policy (Python) unwraps secrets before validation; "
                            "enforced by the offline policy run (tests/unit/policies)")
        return
    for problem in plaintext_secret_problems(args.resource_type, args.props, secret_paths):
        report_violation(problem, None)


def validate_user_data_without_secrets(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    for problem in user_data_secret_problems(args.resource_type, args.props):
        report_violation(problem, None)


NO_PLAINTEXT_SECRETS = ResourceValidationPolicy(
    name="no-plaintext-secrets",
    description="Keys, tokens and kubeconfigs appear only as Pulumi secrets (inputs, user-data, stack outputs).",
    validate=validate_no_plaintext_secrets,
    enforcement_level=EnforcementLevel.MANDATORY,
)
USER_DATA_WITHOUT_SECRETS = ResourceValidationPolicy(
    name="user-data-without-secrets",
    description="EC2 user-data carries no secret material at all, not even as a Pulumi secret.",
    validate=validate_user_data_without_secrets,
    enforcement_level=EnforcementLevel.MANDATORY,
)

"""Call a policy's validate directly, as the engine would, and collect what it reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pulumi_policy import PolicyResource, ResourceValidationPolicy, StackValidationPolicy

from components.policies.facts import StackFacts
from components.policies.offline import policy_resource, resource_args, stack_args
from components.validate import parse as parse_settings


def facts(**settings: Any) -> StackFacts:
    """Facts from real settings (defaults from the model), e.g. facts(environment="prod", production=True)."""
    return StackFacts.from_settings(parse_settings({"platform": "aws", "region": "eu-north-1", **settings}))


def violations(policy: ResourceValidationPolicy, resource_type: str, props: dict[str, Any], **kw: Any) -> list[str]:
    found: list[str] = []
    policy.validate(resource_args(resource_type, props, **kw), lambda m, _u=None: found.append(m))
    return found


def stack_violations(
    policy: StackValidationPolicy, resources: Sequence[PolicyResource], stack_facts: StackFacts | None = None
) -> list[tuple[str, str | None]]:
    found: list[tuple[str, str | None]] = []
    policy.validate(stack_args(resources, stack_facts), lambda m, u=None: found.append((m, u)))
    return found


res = policy_resource

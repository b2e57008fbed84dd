"""Run the pack's policies without the Pulumi CLI: over an offline plan, or over hand-made inputs.

The same policy objects run in the real pack; this adapter only builds the arguments the engine
would (pulumi-policy 1.21 `ResourceValidationArgs` / `StackValidationArgs` / `PolicyResource`)
from the mock engine's recording, and attaches what the real engine cannot give a Python pack:
which input paths are Pulumi secrets, and the stack facts (settings) directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.policy import _NotApplicableError  # what `args.not_applicable()` raises

from . import POLICIES
from .facts import StackFacts
from .secrets import STACK

if TYPE_CHECKING:
    from ..plan.mockengine import Recorded
    from ..plan.run import Plan

MASK = "[secret]"  # the mock engine's mask for secret values (components/cli/mockengine.py)


class OfflineResourceArgs(ResourceValidationArgs):
    """ResourceValidationArgs plus what only the offline run knows."""

    def __init__(self, *args: Any, facts: StackFacts | None, secret_paths: frozenset[str] | None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.facts = facts
        self.secret_paths = secret_paths


class OfflineStackArgs(StackValidationArgs):
    def __init__(self, *args: Any, facts: StackFacts | None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.facts = facts


@dataclass(frozen=True)
class Finding:
    policy: str
    level: str  # "mandatory" | "advisory"
    urn: str
    message: str

    def __str__(self) -> str:
        return f"[{self.level}] {self.policy}: {self.urn.rsplit('::', 1)[-1] or '(stack)'}: {self.message}"


@dataclass(frozen=True)
class NotApplicable:
    policy: str
    urn: str
    reason: str


@dataclass(frozen=True)
class Result:
    findings: tuple[Finding, ...]
    not_applicable: tuple[NotApplicable, ...]

    def at(self, level: str) -> list[Finding]:
        return [f for f in self.findings if f.level == level]

    @property
    def mandatory(self) -> list[Finding]:
        return self.at("mandatory")

    @property
    def advisory(self) -> list[Finding]:
        return self.at("advisory")

    def policies(self, level: str | None = None) -> set[str]:
        return {f.policy for f in self.findings if level is None or f.level == level}


def options(protect: bool = False, parent: str | None = None) -> PolicyResourceOptions:
    return PolicyResourceOptions(protect, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], parent)


def urn_for(resource_type: str, name: str, stack: str = "test") -> str:
    return f"urn:pulumi:{stack}::ck8s-gpu::{resource_type}::{name}"


def resource_args(
    resource_type: str,
    props: Mapping[str, Any],
    *,
    name: str = "r",
    facts: StackFacts | None = None,
    secret_paths: Iterable[str] | None = (),
    protect: bool = False,
    config: Mapping[str, Any] | None = None,
) -> OfflineResourceArgs:
    """Arguments for one resource policy. `secret_paths=None` behaves like the real pack (unknown)."""
    return OfflineResourceArgs(
        resource_type, props, urn_for(resource_type, name), name, options(protect), None, config,
        facts=facts, secret_paths=None if secret_paths is None else frozenset(secret_paths),
    )


def policy_resource(
    resource_type: str, props: Mapping[str, Any], *, name: str = "r", protect: bool = False, urn: str | None = None
) -> PolicyResource:
    return PolicyResource(resource_type, props, urn or urn_for(resource_type, name), name, options(protect), None,
                          None, [], {})


def stack_args(
    resources: Sequence[PolicyResource], facts: StackFacts | None = None, config: Mapping[str, Any] | None = None
) -> OfflineStackArgs:
    return OfflineStackArgs(list(resources), config, facts=facts)


def _level(policy: Policy) -> str:
    return "advisory" if policy.enforcement_level == EnforcementLevel.ADVISORY else "mandatory"


def _reporter(findings: list[Finding], policy: str, level: str, default_urn: str) -> ReportViolation:
    """A report_violation that records; resource policies always report on their own resource."""

    def report(message: str, urn: str | None = None) -> None:
        findings.append(Finding(policy, level, default_urn or urn or "", message))

    return report


def evaluate(
    resources: Sequence[tuple[PolicyResource, frozenset[str] | None]],
    facts: StackFacts | None,
    policies: Sequence[Policy] = POLICIES,
    config: Mapping[str, Mapping[str, Any]] | None = None,
) -> Result:
    """Every policy over `resources` ((resource, its secret paths)), as the engine would run them."""
    findings: list[Finding] = []
    skipped: list[NotApplicable] = []
    for policy in policies:
        level = _level(policy)
        cfg = dict((config or {}).get(policy.name, {}))

        if isinstance(policy, ResourceValidationPolicy):
            for res, secrets in resources:
                args = OfflineResourceArgs(res.resource_type, res.props, res.urn, res.name, res.opts, None, cfg,
                                           facts=facts, secret_paths=secrets)
                try:
                    policy.validate(args, _reporter(findings, policy.name, level, res.urn))
                except _NotApplicableError as exc:
                    skipped.append(NotApplicable(policy.name, res.urn, exc.reason or ""))
        elif isinstance(policy, StackValidationPolicy):
            args_s = OfflineStackArgs([r for r, _ in resources], cfg, facts=facts)
            try:
                policy.validate(args_s, _reporter(findings, policy.name, level, ""))
            except _NotApplicableError as exc:
                skipped.append(NotApplicable(policy.name, "", exc.reason or ""))
    return Result(tuple(findings), tuple(skipped))


def from_records(records: Sequence[Recorded], outputs: Mapping[str, Any], stack: str) -> list[
        tuple[PolicyResource, frozenset[str] | None]]:
    """PolicyResources (parents and dependencies linked as the engine links them) from a
    recording, plus a `pulumi:pulumi:Stack` resource carrying the stack outputs."""
    built: dict[str, PolicyResource] = {}
    pairs: list[tuple[PolicyResource, frozenset[str] | None]] = []
    for rec in records:
        res = PolicyResource(rec.type, rec.raw_inputs, rec.urn, rec.name, options(rec.protect, rec.parent or None),
                             None, None, [], {})
        built[rec.urn] = res
        pairs.append((res, frozenset(rec.secret_paths)))
    for rec in records:
        res = built[rec.urn]
        res.parent = built.get(rec.parent)
        res.dependencies = [built[d] for d in rec.dependencies if d in built]
    stack_res = PolicyResource(STACK, dict(outputs), f"urn:pulumi:{stack}::ck8s-gpu::{STACK}::ck8s-gpu-{stack}",
                               f"ck8s-gpu-{stack}", options(), None, None, [], {})
    pairs.append((stack_res, frozenset(k for k, v in outputs.items() if v == MASK)))
    return pairs


def evaluate_plan(plan: Plan, config: Mapping[str, Mapping[str, Any]] | None = None) -> Result:
    facts = StackFacts.from_settings(plan.settings)
    return evaluate(from_records(plan.resources, plan.outputs, plan.stack), facts, POLICIES, config)

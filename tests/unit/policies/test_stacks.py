"""Every policy over every resource of every stack's offline plan.

Committed stacks (stacks/) must pass every mandatory policy, and must contain what the policies
judge: a stack whose components are not wired into the program would otherwise pass vacuously.
Deliberately unsafe variants (tests/data/unsafe_stacks/) must be caught by the policies their
header names (`# expect mandatory|advisory: a, b`). A variant may also name what the program
itself refuses it with (`# or refused: <text of the error>`): a component that rejects an unsafe
stack before registering anything is an earlier guardrail, and then no plan exists to check.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path

import pulumi
import pytest

from components.plan.run import PROJECT_DIR, Plan, plan_config, plan_stack
from components.policies.offline import Result, evaluate_plan
from components.settings.load import SettingsError, read_stack_file

# Stack files only: stacks/ also holds per-region overrides (<template>.regions.yaml).
STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml")
                for p in (PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))
UNSAFE_DIR = PROJECT_DIR / "tests" / "data" / "unsafe_stacks"
UNSAFE = sorted(UNSAFE_DIR.glob("Pulumi.*.yaml"))
EXPECT = re.compile(r"^# expect (mandatory|advisory): (.+)$", re.MULTILINE)
REFUSED = re.compile(r"^# or refused: (.+)$", re.MULTILINE)

# What each committed stack must contain for the policies to have something to judge.
EVERY_STACK = ("ck8s-gpu:index:SmokeTest", "kubernetes:core/v1:Namespace", "kubernetes:helm.sh/v3:Release")
AWS_STACK = (
    "aws:ec2/launchTemplate:LaunchTemplate",  # IMDSv2, encryption, user-data (GPU pools)
    "aws:ec2/instance:Instance",  # control planes
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    "aws:iam/rolePolicy:RolePolicy",
)


@cache
def committed(stack: str) -> tuple[Plan, Result]:
    plan = plan_stack(stack)
    return plan, evaluate_plan(plan)


@cache
def unsafe(path: Path) -> tuple[Plan, Result] | str:
    """The plan and its policy result, or the error the program refused the stack with."""
    try:
        plan = plan_config(read_stack_file(path), path.name.removeprefix("Pulumi.").removesuffix(".yaml"), str(path))
    except (pulumi.RunError, SettingsError) as exc:
        return str(exc)
    return plan, evaluate_plan(plan)


def test_there_is_something_to_check() -> None:
    assert len(STACKS) >= 5 and len(UNSAFE) >= 5


@pytest.mark.parametrize("stack", STACKS)
def test_committed_stack_passes_every_mandatory_policy(stack: str) -> None:
    _, result = committed(stack)
    assert result.mandatory == [], "\n".join(str(f) for f in result.mandatory)
    assert result.not_applicable == ()


@pytest.mark.parametrize("stack", STACKS)
def test_committed_stack_contains_what_the_policies_judge(stack: str) -> None:
    plan, _ = committed(stack)
    present = Counter(r.type for r in plan.resources)
    needed = EVERY_STACK + (AWS_STACK if plan.settings.platform == "aws" else ())
    missing = [t for t in needed if not present[t]]
    assert missing == [], f"{stack}: the plan has no {missing}; the policies above judged nothing there"


def test_committed_prod_stack_is_advisory_clean() -> None:
    _, result = committed("aws-prod")
    assert result.advisory == [], "\n".join(str(f) for f in result.advisory)


@pytest.mark.parametrize("path", UNSAFE, ids=lambda p: p.name)
def test_unsafe_variant_is_caught(path: Path) -> None:
    text = path.read_text()
    expected = EXPECT.findall(text)
    assert expected, f"{path.name} names no expected policy on an '# expect <level>: ...' line"
    outcome = unsafe(path)
    if isinstance(outcome, str):
        refusals = REFUSED.findall(text)
        assert any(r.strip() in outcome for r in refusals), f"{path.name}: the program failed unexpectedly:\n{outcome}"
        return
    _, result = outcome
    for level, names in expected:
        wanted = {n.strip() for n in names.split(",")}
        caught = result.policies(level)
        assert wanted <= caught, f"{path.name}: {sorted(wanted - caught)} not reported at {level} level; " \
                                 f"reported: {sorted(str(f) for f in result.findings)}"

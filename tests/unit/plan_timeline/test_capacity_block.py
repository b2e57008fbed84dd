"""A pool on a Capacity Block that starts later: its wait is a step of its own, measured from `now`,
and an Auto Scaling group that waits for capacity past its timeout is a warning."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from functools import cache

import pytest

from components.plan.run import Plan, plan_config
from components.plan.timeline import ASG, CLUSTER_POLICY_READY, SMOKE_RUN, Timeline, block_waits, timeout_seconds
from components.plan.timeline_docs import BLOCK_STARTS, BLOCK_VARIANT, DOCS_NOW, block_variant_config
from components.plan.timeline_of_plan import timeline_for_plan
from components.plan.timeline_render import text_lines

from .conftest import planned

WAIT = "synthetic:pool h100 Capacity Block starts"


@cache
def block_plan() -> Plan:
    return plan_config(block_variant_config(), BLOCK_VARIANT, BLOCK_VARIANT)


def _waiting_asgs(plan: Plan, timeout: str) -> Plan:
    """The same plan with the groups waiting for capacity (`timeout`) instead of not at all."""
    resources = [replace(r, inputs={**r.inputs, "waitForCapacityTimeout": timeout}) if r.type == ASG else r
                 for r in plan.resources]
    return replace(plan, resources=resources)


def _start(tl: Timeline, name: str) -> float:
    return next(tl.high[s.id][0] for s in tl.steps.values() if s.name == name)


def test_the_wait_is_the_block_start_less_now_and_the_gpu_steps_come_after_it() -> None:
    tl = timeline_for_plan(block_plan(), now=DOCS_NOW)
    wait = tl.steps[WAIT]
    assert wait.duration.low == wait.duration.high == 2 * 3600 and wait.deps == ()
    assert tl.path[0] == WAIT  # two hours dominate a ~20 minute cluster
    gpu_gates = [s.id for s in tl.steps.values() if s.type in (CLUSTER_POLICY_READY, SMOKE_RUN)]
    for bound in (tl.low, tl.high):
        assert all(bound[g][0] >= 2 * 3600 for g in gpu_gates)
        assert bound[next(s.id for s in tl.steps.values() if s.name == "pool h100 instances launch")][0] == 7200
    # The other pool and the add-ons do not wait for the block.
    assert _start(tl, "pool l40s boot") < 3600 and _start(tl, "gpu-stack-gpu-operator") < 3600
    # An hour later the wait is an hour shorter.
    later = timeline_for_plan(block_plan(), now=DOCS_NOW + timedelta(hours=1))
    assert later.steps[WAIT].duration.high == 3600 and later.total[1] == pytest.approx(tl.total[1] - 3600)


def test_a_group_that_does_not_wait_for_capacity_is_an_api_call_its_launch_a_step() -> None:
    tl = timeline_for_plan(block_plan(), now=DOCS_NOW)
    [group] = [s for s in tl.steps.values() if s.type == ASG and "h100" in s.name]
    assert group.key == "aws-api" and WAIT not in group.deps
    assert tl.warnings == []
    assert any(line.startswith("Waits for reserved capacity: pool h100 Capacity Block starts 2h00m00s after")
               for line in text_lines(tl))


def test_a_group_that_waits_for_capacity_past_its_timeout_is_a_warning() -> None:
    tl = timeline_for_plan(_waiting_asgs(block_plan(), "20m"), now=DOCS_NOW)
    [group] = [s for s in tl.steps.values() if s.type == ASG and WAIT in s.deps]
    assert group.key == "aws-asg-capacity" and "h100" in group.name
    [warning] = tl.warnings
    assert "past its waitForCapacityTimeout 20m00s: the create fails" in warning
    assert 'must not wait (waitForCapacityTimeout "0")' in warning
    assert any(line.startswith("WARNING ") for line in text_lines(tl))
    # A block starting within the timeout only delays the group's create: no warning.
    soon = timeline_for_plan(_waiting_asgs(block_plan(), "20m"), now=BLOCK_STARTS - timedelta(minutes=15))
    assert soon.warnings == [] and soon.steps[WAIT].duration.high == 15 * 60


def test_no_wait_for_an_active_block_a_past_start_or_an_odcr() -> None:
    s = block_plan().settings
    assert block_waits(s, DOCS_NOW) == {"h100": 7200.0}
    assert block_waits(s, BLOCK_STARTS + timedelta(seconds=1)) == {}
    assert block_waits(planned("aws-prod").settings, DOCS_NOW) == {}  # an ODCR: capacity is there already
    tl = timeline_for_plan(block_plan(), now=BLOCK_STARTS)
    assert WAIT not in tl.steps


@pytest.mark.parametrize(("text", "seconds"), [("0", 0), ("20m", 1200), ("1h30m", 5400), ("45s", 45)])
def test_timeout_seconds(text: str, seconds: float) -> None:
    assert timeout_seconds(text) == seconds


def test_a_timeout_that_is_no_duration_is_refused() -> None:
    with pytest.raises(ValueError, match="not a duration"):
        timeout_seconds("20 minutes")

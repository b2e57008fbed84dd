"""Plan every committed stack once per session: the timeline tests only read the results."""

from __future__ import annotations

from functools import cache

import pytest

from components.plan.run import Plan, plan_stack
from components.plan.timeline import Timeline
from components.plan.timeline_docs import DOCS_NOW, block_timeline, committed_stacks
from components.plan.timeline_of_plan import timeline_for_plan

STACKS = committed_stacks()


@cache
def planned(stack: str) -> Plan:
    return plan_stack(stack)


@cache
def timeline(stack: str) -> Timeline:
    return timeline_for_plan(planned(stack), now=DOCS_NOW)  # the clock docs/benchmarks.md is made with


@cache
def capacity_block_timeline() -> Timeline:
    return block_timeline()


@pytest.fixture(params=STACKS)
def stack_timeline(request: pytest.FixtureRequest) -> Timeline:
    return timeline(request.param)

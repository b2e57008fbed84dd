"""docs/benchmarks.md's timeline section is what the code generates today."""

from __future__ import annotations

import pytest

from components import PROJECT_DIR
from components.plan.clock import clock
from components.plan.timeline_docs import (
    RUNBOOK,
    RUNBOOK_END,
    RUNBOOK_START,
    committed_stacks,
    current_section,
    replace_section,
    runbook_section,
    section,
)

from .conftest import capacity_block_timeline, timeline

BENCHMARKS = PROJECT_DIR / "docs" / "benchmarks.md"


def test_benchmarks_section_is_up_to_date() -> None:
    expected = section([timeline(s) for s in committed_stacks()], block=capacity_block_timeline())
    assert current_section(BENCHMARKS.read_text()) == expected, (
        "docs/benchmarks.md is stale: python -m components.plan.timeline_docs --write docs/benchmarks.md")


def test_every_committed_stack_is_in_the_section() -> None:
    text = current_section(BENCHMARKS.read_text())
    assert committed_stacks() == ["aws-airgap", "aws-dev", "aws-elastic", "aws-prod", "existing", "kind", "local",
                                 "local-kubelet"]
    for stack in committed_stacks():
        assert f"| `{stack}` | " in text
    # and the reserved-capacity variant: aws-prod with its h100 pool on a Capacity Block 2 h out
    assert "| `aws-prod-capacity-block` | 2h" in text
    assert "Waits for reserved capacity: pool h100 Capacity Block starts 2h00m00s after `up` begins" in text


def test_replace_section_keeps_the_rest_and_needs_markers() -> None:
    new = section([timeline(s) for s in committed_stacks()], block=capacity_block_timeline())
    text = BENCHMARKS.read_text()
    replaced = replace_section(text.replace(current_section(text), current_section(text)[:200] + "\n" +
                                            current_section(text)[-30:]), new)
    assert replaced == text.replace(current_section(text), new)
    with pytest.raises(ValueError, match="markers"):
        replace_section("no markers here", new)


def test_the_dr_runbook_quotes_the_modeled_rebuild_time_of_every_committed_stack() -> None:
    marks = (RUNBOOK_START, RUNBOOK_END)
    expected = runbook_section([timeline(s) for s in committed_stacks()])
    text = current_section(RUNBOOK.read_text(), marks)
    assert text == expected, ("docs/runbooks/dr-rebuild.md is stale: python -m components.plan.timeline_docs "
                              "--write docs/benchmarks.md --runbook docs/runbooks/dr-rebuild.md")
    for stack in committed_stacks():
        low, high = (clock(t) for t in timeline(stack).total)
        assert f"| `{stack}` | {low}-{high} | " in text


def test_the_issue_targets_are_stated_with_their_verdicts() -> None:
    text = current_section(BENCHMARKS.read_text())
    for stack, target in (("aws-dev", "10m00s"), ("aws-prod", "15m00s")):
        high = timeline(stack).total[1]
        verdict = "met" if high <= {"aws-dev": 600, "aws-prod": 900}[stack] else "not met"
        line = f"Target (issue 29): `{stack}` at most {target} at the upper bounds: **{verdict}** ({clock(high)}"
        assert line in text

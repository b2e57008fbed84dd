"""Smoke verdicts from the stack output and the summary table."""

from __future__ import annotations

import json

import pytest

from components.stamping.summary import RegionResult, format_changes, smoke_verdict, table


@pytest.mark.parametrize(("report", "text", "passed"), [
    ({"results": {"summary": {"tests": 4, "passed": 4, "failed": 0}}}, "passed (4/4 checks)", True),
    ({"results": {"summary": {"tests": 4, "passed": 2, "failed": 2}}}, "failed (2/4 checks)", False),
    ({"results": {"summary": {"tests": 2, "passed": 0, "failed": 0, "skipped": 2}}}, "no checks ran", False),
    (json.dumps({"results": {"summary": {"tests": 1, "passed": 1, "failed": 0}}}), "passed (1/1 checks)", True),
    ({"status": "disabled", "reason": "smokeTest.enabled is false"}, "disabled", None),
    (None, "no report", None),
    (True, "passed", True),
    ({"verdict": "FAIL"}, "FAIL", False),
])
def test_smoke_verdict(report: object, text: str, passed: bool | None) -> None:
    assert smoke_verdict(report) == (text, passed)


def test_table_lists_every_region_and_the_failures_detail() -> None:
    ok = RegionResult("us-east-2", "aws-dev-us-east-2", "up", True, "create", True, 61.0, {"create": 40, "same": 0},
                      "passed (6/6 checks)")
    bad = RegionResult("ap-south-1", "aws-dev-ap-south-1", "up", False, "update", False, 5.0, {},
                       error="line one\nline two")
    lines = table([ok, bad])
    assert lines[0].split() == ["region", "stack", "file", "result", "changes", "duration", "smoke", "test"]
    assert "created" in lines[2] and "+40" in lines[2] and "1m01s" in lines[2]
    assert "failed" in lines[3]
    assert "ap-south-1 (aws-dev-ap-south-1) failed:" in lines and "  line two" in lines
    assert lines[-1] == "1 of 2 region(s) succeeded, 1 failed"
    assert format_changes({"create": 2, "update": 1, "delete": 0}) == "+2 ~1"

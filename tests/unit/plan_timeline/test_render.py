"""The printed table, timeline.md and its Mermaid gantt chart, and `plan --timeline`."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from components.cli.main import main
from components.plan.clock import clock, span
from components.plan.timeline import SMOKE_RUN, Step, Timeline, make_timeline
from components.plan.timeline_render import mermaid_gantt, timeline_markdown
from components.plan.what_if import what_if_results

from .conftest import timeline


def test_clock_and_span() -> None:
    assert [clock(s) for s in (0, 7, 65, 3600, 3725.4)] == ["0s", "7s", "1m05s", "1h00m00s", "1h02m05s"]
    assert span(5, 5) == "5s" and span(5, 125) == "5s-2m05s"


def test_gantt_marks_the_critical_path_and_ends_at_the_smoke_pass() -> None:
    tl = timeline("aws-dev")
    chart = mermaid_gantt(tl)
    lines = chart.splitlines()
    assert lines[:2] == ["```mermaid", "gantt"] and lines[-1] == "```"
    assert "    dateFormat x" in lines and "    axisFormat %M:%S" in lines
    end = round(tl.total[1] * 1000)  # milliseconds
    assert f"    smoke pass :milestone, crit, {end}, {end}" in lines
    tasks = [line for line in lines if re.match(r"    [^ %].* :", line) and "section" not in line]
    for task in tasks:  # one ':' per task: the name never carries one
        name, _, spec = task.strip().partition(" :")
        assert ":" not in name and "#" not in name
        start, finish = (int(x) for x in spec.split(", ")[-2:])
        assert 0 <= start <= finish
    crit = [t for t in tasks if ":crit," in t]
    assert crit[0].strip().startswith("network-vpc :crit, 0,")


def test_gantt_switches_to_hours_past_one_hour() -> None:
    steps = [Step("a", "a: with colon # and hash", "kind-create", (), type="t")]
    for n in range(7):  # 7 x 8 min of compiling drivers
        steps.append(Step(f"c{n}", f"c{n}", "gpu-driver-compiled", (steps[-1].id,), type="t"))
    steps.append(Step("f", "smoke", "smoke-run", (steps[-1].id,), type=SMOKE_RUN))
    chart = mermaid_gantt(make_timeline("long", steps))
    assert "axisFormat %H:%M" in chart and "    a  with colon   and hash :crit, 0, 300000" in chart


def compiled(tl: Timeline) -> Timeline:
    """The same graph with the driver compiled on the node: a stack that has what-ifs to show."""
    steps = [replace(s, key="gpu-driver-compiled", name="GPU Operator driver (compiled)")
             if s.key.startswith("gpu-driver-") else s for s in tl.steps.values()]
    out = make_timeline(tl.stack, steps, "compiled", tl.prefix)
    out.what_ifs = what_if_results(tl.stack, steps, out.total)
    return out


def test_timeline_markdown_has_summary_gantt_path_and_sources() -> None:
    text = timeline_markdown(compiled(timeline("aws-prod")))
    assert text.startswith("# Timeline: aws-prod\n")
    for heading in ("## Critical path (upper bounds)", "## What would shorten it", "## Durations on the path"):
        assert heading in text
    assert "```mermaid\ngantt" in text and "| `gpu-driver-compiled` |" in text
    assert "## What would shorten it" not in timeline_markdown(timeline("aws-prod"))  # host driver: nothing


def test_plan_timeline_prints_the_path_and_writes_timeline_md(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "aws-prod", "--quiet", "--timeline", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Modeled time to smoke pass (aws-prod): " in out and "Dominating step: " in out
    assert ("Node media: cp-0, cp-1, cp-2, pool h100, pool l40s: snap from the image, images preloaded "
            "(containerd side-loads them)") in out
    assert "NAT gateway on the critical path: none by upper bounds" in out
    assert (tmp_path / "timeline.md").read_text().startswith("# Timeline: aws-prod")
    assert (tmp_path / "resources.json").is_file()


def test_plan_without_timeline_prints_none(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "local", "--quiet"]) == 0
    assert "Modeled time" not in capsys.readouterr().out

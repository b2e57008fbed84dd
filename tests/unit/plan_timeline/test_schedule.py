"""Scheduling, critical path, 'beside it' and what-ifs on small hand-made graphs (pure)."""

from __future__ import annotations

import pytest

from components.plan.durations import DURATIONS
from components.plan.timeline import (
    API_READY,
    ASG,
    SMOKE_RUN,
    WHAT_IFS,
    Step,
    make_timeline,
    schedule,
    what_if_results,
)


def step(sid: str, key: str, *deps: str, typ: str = "t") -> Step:
    return Step(sid, sid, key, tuple(deps), type=typ)


def graph() -> list[Step]:
    # a(vpc 5-14) -> b(nlb 120-180) -> d(smoke 5-180)
    # a           -> c(nat 84-124) -/
    return [step("a", "aws-vpc"), step("b", "aws-nlb", "a"), step("c", "aws-nat", "a"),
            step("d", "smoke-run", "b", "c", typ=SMOKE_RUN)]


def test_steps_start_when_every_dependency_has_finished() -> None:
    high = schedule(graph(), "high")
    assert high["a"] == (0, 14) and high["b"] == (14, 194) and high["c"] == (14, 138)
    assert high["d"] == (194, 374)
    assert schedule(graph(), "low")["d"] == (125, 130)


def test_critical_path_total_dominating_and_beside() -> None:
    tl = make_timeline("t", graph())
    assert tl.path == ["a", "b", "d"] and tl.path_low == ["a", "b", "d"]
    assert tl.total == (130, 374)
    assert tl.dominating.id == "b"  # 180 s beats the smoke run's 180 s on its low bound
    assert [s.id for s in tl.beside("b")] == ["c"] and tl.beside("a") == [] and tl.beside("d") == []


def test_paths_by_lower_and_upper_bounds_can_differ() -> None:
    steps = [step("a", "aws-vpc"), step("x", "aws-nlb", "a"), step("y", "node-ready-cni", "a"),
             step("z", "smoke-run", "x", "y", typ=SMOKE_RUN)]
    steps[2] = Step("y", "y", "aws-nat", ("a",), type="t")
    tl = make_timeline("t", steps)
    assert tl.path[1] == "x" and tl.path_low[1] == "x"
    steps[1] = Step("x", "x", "k8s-join-worker", ("a",), type="t")  # 14-150 against the NAT's 84-124
    tl = make_timeline("t", steps)
    assert tl.path[1] == "x" and tl.path_low[1] == "y"


def test_a_timeline_needs_exactly_one_smoke_run_and_no_cycle() -> None:
    with pytest.raises(ValueError, match="one smoke run"):
        make_timeline("t", [step("a", "aws-vpc")])
    with pytest.raises(ValueError, match="cycle"):
        make_timeline("t", [step("a", "aws-vpc", "b"), step("b", "aws-vpc", "a"),
                            step("d", "smoke-run", "b", typ=SMOKE_RUN)])


def test_what_ifs_drop_only_their_dependencies_and_report_savings() -> None:
    steps = [step("gate", "api-ready-poll", typ=API_READY), step("slow", "aws-nlb"),
             step("gate2", "api-ready-poll", "slow", typ=API_READY),
             step("asg", "aws-asg-capacity", "gate2", typ=ASG), step("d", "smoke-run", "asg", typ=SMOKE_RUN)]
    base = make_timeline("t", steps).total
    results = {r.what_if.name: r for r in what_if_results("t", steps, base)}
    assert set(results) == {"pools-after-control-planes"}  # nothing else applies, so no "all" either
    r = results["pools-after-control-planes"]
    assert r.total == (DURATIONS["aws-asg-capacity"].low + 5, 30 + 180)
    assert r.saved[1] == base[1] - r.total[1] > 0


def test_every_what_if_has_a_name_and_a_reason() -> None:
    names = [w.name for w in WHAT_IFS]
    assert len(names) == len(set(names)) and all(w.change for w in WHAT_IFS)

"""Scheduling, critical path, 'beside it' and what-ifs on small hand-made graphs (pure)."""

from __future__ import annotations

import pytest

from components.plan.durations import DURATIONS
from components.plan.timeline import SMOKE_RUN, Step, make_timeline, schedule
from components.plan.what_if import WHAT_IFS, what_if_results


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


def test_driver_what_ifs_swap_the_driver_row() -> None:
    steps = [step("drv", "gpu-driver-compiled"), step("d", "smoke-run", "drv", typ=SMOKE_RUN)]
    steps[0] = Step("drv", "GPU Operator driver (compiled)", "gpu-driver-compiled", (), type="")
    base = make_timeline("t", steps).total
    results = {r.what_if.name: r for r in what_if_results("t", steps, base)}
    assert set(results) == {"precompiled-driver", "host-driver"}
    assert results["host-driver"].total == (DURATIONS["smoke-run"].low, DURATIONS["smoke-run"].high)
    assert results["host-driver"].saved[1] == DURATIONS["gpu-driver-compiled"].high
    # a stack already on the host driver: no choice shortens it, so none is printed
    host = next(w for w in WHAT_IFS if w.name == "host-driver").apply(steps)
    assert what_if_results("t", host, make_timeline("t", host).total) == []
    pre = next(w for w in WHAT_IFS if w.name == "precompiled-driver").apply(steps)[0]
    assert pre.key == "gpu-driver-precompiled" and pre.name == "GPU Operator driver (precompiled)"


def test_every_what_if_has_a_name_and_a_reason() -> None:
    names = [w.name for w in WHAT_IFS]
    assert len(names) == len(set(names)) and all(w.change for w in WHAT_IFS)

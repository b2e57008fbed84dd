"""Measured timeline (components/plan/measured.py) on synthetic engine event sequences.

The events are real `pulumi.automation.EngineEvent`s parsed from the JSON the CLI sends
(`resourcePreEvent`, `resOutputsEvent`, `resOpFailedEvent` with step metadata), each given an
arrival time as the `on_event` callback would.
"""

from __future__ import annotations

from typing import Any

import pytest
from pulumi.automation import EngineEvent

from components.plan.measured import (
    ORDER_TOLERANCE,
    WAIT_SLACK,
    Arrival,
    Recorder,
    compare,
    markdown,
    measure,
    resource_deps,
)
from components.plan.run import plan_stack
from components.plan.timeline import Step, build_steps

PREFIX = "urn:pulumi:t::ck8s-gpu::"
STACK = f"{PREFIX}pulumi:pulumi:Stack::ck8s-gpu-t"
COMPONENT = f"{PREFIX}pulumi:pulumi:Stack$ck8s-gpu:index:AddonSet::gpu-stack"
DEFAULT_PROVIDER = f"{PREFIX}pulumi:providers:pulumi-python::default"
WALL0 = 1_800_000_000.0  # arrival wall clock of the first event


def urn(name: str) -> str:
    return f"{PREFIX}ck8s-gpu:index:AddonSet$kubernetes:core/v1:ConfigMap::{name}"


KINDS = {"pre": "resourcePreEvent", "out": "resOutputsEvent", "fail": "resOpFailedEvent"}


class Stream:
    """Builds an event sequence: `at(t, kind, urn)` appends one event arriving at t seconds."""

    def __init__(self, clock_at_start: float = 0.0) -> None:
        self.arrivals: list[Arrival] = []
        self.clock_at_start = clock_at_start  # the monotonic clock's reading at the first event

    def at(self, t: float, kind: str, target: str, op: str = "create", custom: bool = True,
           type_: str = "kubernetes:core/v1:ConfigMap", provider: str = "") -> Stream:
        state: dict[str, Any] = {"type": type_, "urn": target}
        if custom:  # the engine's JSON leaves `custom: false` out
            state["custom"] = True
        ref = f"{provider}::0f3c1e2a-provider-id" if provider else ""  # the engine's `<urn>::<id>`
        payload: dict[str, Any] = {"metadata": {"op": op, "urn": target, "type": type_, "provider": ref,
                                                "new": state}}
        if kind == "fail":
            payload |= {"status": 1, "steps": 0}
        seq = len(self.arrivals)
        wall = WALL0 + t + 0.003  # delivered 3 ms after emission
        event = EngineEvent.from_json({"sequence": seq, "timestamp": int(WALL0 + t), KINDS[kind]: payload})
        self.arrivals.append(Arrival(self.clock_at_start + t, wall, event))
        return self

    def program(self, t: float = 0.5) -> Stream:
        self.at(0.0, "pre", STACK, custom=False, type_="pulumi:pulumi:Stack")  # the first event: time 0
        return self.at(t, "pre", COMPONENT, custom=False, type_="ck8s-gpu:index:AddonSet")


def step(name: str, *deps: str) -> Step:
    return Step(urn(name), name, "k8s-object", tuple(urn(d) for d in deps), type="kubernetes:core/v1:ConfigMap")


def diamond() -> list[Step]:
    # a -> b -> d, a -> c -> d: b and c may run at the same time
    return [step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c")]


def good_run(clock_at_start: float = 0.0) -> Stream:
    s = Stream(clock_at_start).program()
    (s.at(0.6, "pre", urn("a")).at(1.0, "out", urn("a"))
     .at(1.1, "pre", urn("b")).at(1.2, "pre", urn("c")).at(1.8, "out", urn("c")).at(2.0, "out", urn("b"))
     .at(2.3, "pre", urn("d")).at(2.9, "out", urn("d")))
    s.at(3.0, "out", COMPONENT, custom=False, type_="ck8s-gpu:index:AddonSet")
    return s.at(3.1, "out", STACK, custom=False, type_="pulumi:pulumi:Stack")


def problems_of(stream: Stream, steps: list[Step] | None = None) -> list[str]:
    return compare(steps if steps is not None else diamond(), measure(stream.arrivals)).problems


def test_a_run_in_the_modeled_order_matches_with_its_parallel_pair() -> None:
    measured = measure(good_run().arrivals)
    assert measured.intervals() == {urn("a"): (0.6, 1.0), urn("b"): (1.1, 2.0), urn("c"): (1.2, 1.8),
                                    urn("d"): (2.3, 2.9)}
    assert measured.program_start == 0.0 and measured.end == pytest.approx(3.1)
    shifted = measure(good_run(clock_at_start=4711.25).arrivals).intervals()  # relative to the first event
    assert {u: pytest.approx(v) for u, v in shifted.items()} == measured.intervals()
    assert set(measured.skipped) == {STACK, COMPONENT}
    report = compare(diamond(), measured)
    assert report.ok, report.problems
    assert [(r.name, round(r.wait or 0, 2)) for r in report.rows] == [("a", 0.6), ("b", 0.1), ("c", 0.2),
                                                                      ("d", 0.3)]
    assert [(p.a, p.b) for p in report.pairs] == [(urn("b"), urn("c"))]
    pair = report.pairs[0]
    assert pair.overlapped and pair.overlap == pytest.approx(0.6) and pair.together == pytest.approx(0.8)
    text = markdown(report)
    assert "| `d` | `b`, `c` | 2.30 | 2.90 | 0.30 |" in text
    assert "| `b` and `c` | 0.60 | 0.80 |" in text
    assert "Measured order matches the modeled graph: **yes**" in text


def test_a_resource_started_before_its_dependency_ended_is_an_order_problem() -> None:
    s = Stream().program()
    (s.at(0.6, "pre", urn("a")).at(0.7, "pre", urn("c")).at(1.0, "out", urn("a")).at(1.1, "pre", urn("b"))
     .at(1.8, "out", urn("c")).at(2.0, "out", urn("b")).at(2.3, "pre", urn("d")).at(2.9, "out", urn("d")))
    problems = problems_of(s)
    assert problems == ["order: c started at 0.70 s before its modeled dependency a (ended at 1.00 s)"]
    assert "**no**" in markdown(compare(diamond(), measure(s.arrivals)))


def test_order_is_by_sequence_number_even_when_arrival_times_tie() -> None:
    s = Stream().program()
    (s.at(0.6, "pre", urn("a")).at(1.0, "pre", urn("b")).at(1.0, "out", urn("a")).at(1.1, "out", urn("b")))
    assert problems_of(s, diamond()[:2]) == [
        "order: b started at 1.00 s before its modeled dependency a (ended at 1.00 s)"]


def test_order_falls_back_to_times_with_the_tolerance_without_sequence_numbers() -> None:
    s = Stream().program()
    s.at(0.6, "pre", urn("a")).at(1.0, "out", urn("a")).at(1.0 - ORDER_TOLERANCE / 2, "pre", urn("b"))
    s.at(1.5, "out", urn("b"))
    for a in s.arrivals:
        a.event.sequence = None
    assert problems_of(s, diamond()[:2]) == []  # 25 ms early: within the tolerance
    late = Stream().program()
    late.at(0.6, "pre", urn("a")).at(0.8, "pre", urn("b")).at(1.0, "out", urn("a")).at(1.5, "out", urn("b"))
    for a in late.arrivals:
        a.event.sequence = None
    assert problems_of(late, diamond()[:2]) == [
        "order: b started at 0.80 s before its modeled dependency a (ended at 1.00 s)"]


def test_a_wait_the_graph_does_not_explain_is_a_problem() -> None:
    # d waits for b and c (ended at 2.0 s) but starts at 3.5 s: held by something unmodeled
    s = Stream().program()
    (s.at(0.6, "pre", urn("a")).at(1.0, "out", urn("a")).at(1.1, "pre", urn("b")).at(1.2, "pre", urn("c"))
     .at(1.8, "out", urn("c")).at(2.0, "out", urn("b")).at(3.5, "pre", urn("d")).at(3.9, "out", urn("d")))
    assert problems_of(s) == [f"wait: d started 1.50 s after its last modeled dependency b ended, more than the "
                              f"{WAIT_SLACK:.2f} s slack: something the modeled graph does not have held it back"]


def test_add_ons_serialised_although_the_graph_allows_them_together_fail_the_wait_check() -> None:
    # b and c only need a; the engine ran c after b (a needless dependency c -> b): c waited 1 s + more
    s = Stream().program()
    (s.at(0.6, "pre", urn("a")).at(1.0, "out", urn("a")).at(1.1, "pre", urn("b")).at(2.5, "out", urn("b"))
     .at(2.6, "pre", urn("c")).at(3.0, "out", urn("c")).at(3.1, "pre", urn("d")).at(3.5, "out", urn("d")))
    report = compare(diamond(), measure(s.arrivals))
    assert report.problems == [f"wait: c started 1.60 s after its last modeled dependency a ended, more than the "
                               f"{WAIT_SLACK:.2f} s slack: something the modeled graph does not have held it back"]
    assert [(p.overlapped, round(p.together, 2)) for p in report.pairs] == [(False, 1.5)]


def test_a_first_resource_starting_long_after_the_program_is_a_wait_problem() -> None:
    s = Stream().program()
    s.at(2.0, "pre", urn("a")).at(2.2, "out", urn("a"))
    assert problems_of(s, diamond()[:1]) == [
        f"wait: a started 2.00 s after the program started (it has no modeled dependency), more than the "
        f"{WAIT_SLACK:.2f} s slack: something the modeled graph does not have held it back"]


def test_urns_in_one_and_not_the_other_are_listed_and_are_problems() -> None:
    s = Stream().program()
    s.at(0.6, "pre", urn("a")).at(1.0, "out", urn("a")).at(1.1, "pre", urn("x")).at(1.2, "out", urn("x"))
    report = compare(diamond()[:2], measure(s.arrivals))
    assert report.only_modeled == [urn("b")] and report.only_measured == [urn("x")]
    assert report.problems == [
        f"b ({urn('b')}): in the modeled graph, but the engine reported no step for it",
        f"x ({urn('x')}): the engine ran a step for it (create), the modeled graph has no such resource"]


def test_components_default_providers_and_the_root_stack_are_not_resources() -> None:
    s = Stream().program()
    s.at(0.55, "pre", DEFAULT_PROVIDER, type_="pulumi:providers:pulumi-python")
    s.at(0.58, "out", DEFAULT_PROVIDER, type_="pulumi:providers:pulumi-python")
    s.at(0.6, "pre", urn("a")).at(1.0, "out", urn("a"))
    measured = measure(s.arrivals)
    assert list(measured.spans) == [urn("a")] and list(measured.providers) == [DEFAULT_PROVIDER]
    assert "default provider" in measured.skipped[DEFAULT_PROVIDER]
    assert "component" in measured.skipped[COMPONENT] and "root stack" in measured.skipped[STACK]
    assert compare(diamond()[:1], measured).ok


def dynamic_run(provider_at: float, resource_at: float) -> Stream:
    """The engine starts the default provider's process while registering it (before its step)."""
    s = Stream().program()
    s.at(provider_at, "pre", DEFAULT_PROVIDER, type_="pulumi:providers:pulumi-python")
    s.at(provider_at + 0.01, "out", DEFAULT_PROVIDER, type_="pulumi:providers:pulumi-python")
    s.at(resource_at, "pre", urn("a"), provider=DEFAULT_PROVIDER)
    return s.at(resource_at + 0.5, "out", urn("a"), provider=DEFAULT_PROVIDER)


def test_a_resource_on_a_default_provider_waits_from_that_providers_step() -> None:
    # 1.5 s before the provider's step (its process starting) is not the resource's wait
    report = compare(diamond()[:1], measure(dynamic_run(provider_at=2.0, resource_at=2.05).arrivals))
    assert report.ok, report.problems
    assert report.rows[0].last_dep == DEFAULT_PROVIDER and report.rows[0].wait == pytest.approx(0.04)
    assert "| `a` | default provider `default` | 2.05 | 2.55 | 0.04 |" in markdown(report)
    late = compare(diamond()[:1], measure(dynamic_run(provider_at=2.0, resource_at=3.5).arrivals))
    assert late.problems == [f"wait: a started 1.49 s after its last default provider default ended, more than "
                             f"the {WAIT_SLACK:.2f} s slack: something the modeled graph does not have held it back"]
    early = Stream().program()
    early.at(1.8, "pre", DEFAULT_PROVIDER, type_="pulumi:providers:pulumi-python")
    early.at(1.9, "pre", urn("a"), provider=DEFAULT_PROVIDER)
    early.at(2.0, "out", DEFAULT_PROVIDER, type_="pulumi:providers:pulumi-python")
    early.at(2.4, "out", urn("a"), provider=DEFAULT_PROVIDER)
    assert problems_of(early, diamond()[:1]) == [
        "order: a started at 1.90 s before its default provider default (ended at 2.00 s)"]


def test_unchanged_resources_are_not_checked_but_end_their_dependants_wait() -> None:
    s = Stream().program()
    (s.at(0.6, "pre", urn("a"), op="same").at(0.61, "out", urn("a"), op="same")
     .at(0.9, "pre", urn("b"), op="update").at(1.4, "out", urn("b"), op="update"))
    report = compare(diamond()[:2], measure(s.arrivals))
    assert report.ok, report.problems
    assert report.unchanged == [urn("a")] and [r.name for r in report.rows] == ["b"]
    assert report.rows[0].wait == pytest.approx(0.29)


def test_a_failed_step_is_a_problem() -> None:
    s = Stream().program()
    s.at(0.6, "pre", urn("a")).at(1.0, "fail", urn("a"))
    report = compare(diamond()[:1], measure(s.arrivals))
    assert report.problems == ["a: create failed at 1.00 s"]
    assert "1.00 (failed)" in markdown(report)


def test_a_step_that_never_finished_is_a_problem() -> None:
    s = Stream().program()
    s.at(0.6, "pre", urn("a"))
    assert problems_of(s, diamond()[:1]) == ["a: started at 0.60 s and never finished"]


def test_delivery_latency_is_bounded_at_second_boundaries() -> None:
    measured = measure(good_run().arrivals)  # every event arrives 3 ms after it was emitted
    assert measured.boundaries == 3  # t = 1.0, 2.0 (b's end: first event of that second) and 3.0
    assert measured.latency_bound == pytest.approx(0.003, abs=1e-6)


def test_the_recorder_stamps_each_event_with_its_clock() -> None:
    ticks = iter([5.0, 5.25])
    rec = Recorder(clock=lambda: next(ticks), wall=lambda: WALL0)
    events = [a.event for a in good_run().arrivals[:2]]
    for e in events:
        rec(e)
    assert [(a.at, a.event) for a in rec.arrivals] == [(5.0, events[0]), (5.25, events[1])]


def test_synthetic_steps_pass_their_resource_dependencies_through() -> None:
    steps = [step("asg"), Step("synthetic:boot", "boot", "node-boot", (urn("asg"),)),
             Step("synthetic:join", "join", "k8s-join-worker", ("synthetic:boot",)),
             Step(urn("smoke"), "smoke", "smoke-run", (urn("a"), "synthetic:join"), type="t"), step("a")]
    assert resource_deps(steps) == {urn("asg"): (), urn("smoke"): (urn("a"), urn("asg")), urn("a"): ()}


def test_the_local_stacks_modeled_graph_matches_events_in_its_order() -> None:
    """URNs of the offline plan are the engine's: events named after them in dependency order match."""
    plan = plan_stack("local")
    steps = build_steps(plan.resources, platform="local")
    s = Stream().program()
    t = 0.6
    for st in steps:  # build_steps lists them in registration order, dependencies first
        s.at(t, "pre", st.id, type_=st.type).at(t + 0.2, "out", st.id, type_=st.type)
        t += 0.3
    report = compare(steps, measure(s.arrivals))
    assert report.ok, report.problems
    assert [r.name for r in report.rows] == ["ck8s-ci-api-ready", "ck8s-ci-k8s", "smoke-test-namespace",
                                             "smoke-test-chart", "smoke-test-run"]
    assert report.pairs == []  # the local stack's graph is a chain
    assert "no two resources may run at the same time" in markdown(report)

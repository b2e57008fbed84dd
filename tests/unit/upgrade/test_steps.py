"""`upgrade --plan`: order, nodes per step, batches, durations, refusals."""

from __future__ import annotations

import pytest

from components.upgrade import steps
from tests.unit.aws.conftest import settings_for


def _max_unavailable(n: int):  # type: ignore[no-untyped-def]
    def change(raw):  # type: ignore[no-untyped-def]
        raw.setdefault("kubernetes", {})["upgrade"] = {"maxUnavailable": n}
    return change


def test_control_planes_one_at_a_time_then_pools_then_addons_then_smoke() -> None:
    s = settings_for("aws-prod")
    plan = steps.upgrade_steps(s, "1.34-classic", "1.35-classic")
    titles = [p.title for p in plan]
    cps = [f"control plane ck8s-prod-us-east-1-cp-{i}" for i in range(3)]
    assert titles == ["preflight", *cps, "pool l40s", "pool l40s", "pool h100", "pool h100",
                      "launch templates and add-ons", "smoke test"]
    assert all(len(p.nodes) == 1 for p in plan[1:8])
    assert [p.number for p in plan] == list(range(1, len(plan) + 1))


def test_max_unavailable_batches_a_pool() -> None:
    s = settings_for("aws-prod", _max_unavailable(2))
    plan = steps.upgrade_steps(s, "1.34-classic", "1.35-classic")
    pools = [p for p in plan if p.title.startswith("pool ")]
    assert [(p.title, p.nodes) for p in pools] == [("pool l40s", ("l40s-node-1", "l40s-node-2")),
                                                   ("pool h100", ("h100-node-1", "h100-node-2"))]


def test_known_nodes_replace_the_placeholders() -> None:
    s = settings_for("aws-dev")
    inv = steps.Inventory(("ip-10-20-1-5.eu-west-1.compute.internal",), {"l4": ("ip-10-20-2-9.x", "ip-10-20-3-1.x")})
    plan = steps.upgrade_steps(s, "1.34-classic", "1.35-classic", inv)
    assert [p.nodes for p in plan if p.title == "pool l4"] == [("ip-10-20-2-9.x",), ("ip-10-20-3-1.x",)]


def test_skipped_minor_and_unknown_track_are_refused() -> None:
    s = settings_for("aws-dev")
    with pytest.raises(steps.PlanRefused, match="skips 1 minor"):
        steps.upgrade_steps(s, "1.34-classic", "1.36-classic")
    with pytest.raises(steps.PlanRefused, match="unknown track"):
        steps.upgrade_steps(s, "1.34-classic", "2.0-classic")


def test_no_change_is_no_step() -> None:
    assert steps.upgrade_steps(settings_for("aws-dev"), "1.34-classic", "1.34-classic") == []


def test_rendered_plan_states_ranges_and_bounded_waits() -> None:
    s = settings_for("aws-dev")
    plan = steps.upgrade_steps(s, "1.34-classic", "1.35-classic")
    text = steps.render(s, "1.34-classic", "1.35-classic", plan)
    low = sum(p.seconds[0] for p in plan)
    assert f"expected: {low // 60}m{low % 60:02d}s" in text
    # one control plane drain + one pool batch (job grace + drain) with the defaults
    assert "could add up to 60m00s" in text
    assert "snap refresh k8s --channel=1.35-classic/stable" in text

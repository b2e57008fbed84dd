"""Autoscaled node pools (`nodePools[].autoscaling`): what the settings accept and what they refuse,
each at its field path (components/settings/rules/autoscaling.py, docs/autoscaling.md)."""

from __future__ import annotations

from typing import Any

import pytest

from components.settings import parse_settings
from components.tables.instance_types import AUTOSCALER_UNMODELED, GPU_INSTANCE_TYPES
from tests.unit.helpers import model_problems, settings_problems

AWS: dict[str, Any] = {"platform": "aws", "environment": "dev", "region": "eu-west-1"}
POOL = "settings.nodePools[0]"


def aws(*pools: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {**AWS, "nodePools": list(pools), **extra}


def test_an_autoscaled_pool_starts_at_its_floor_and_tops_out_at_its_ceiling() -> None:
    s = parse_settings(aws({"name": "h100", "instanceType": "p5.48xlarge",
                            "autoscaling": {"maxSize": 4, "scaleDownAfter": "15m"}},
                           {"name": "l4", "instanceType": "g6.xlarge", "autoscaling": {"minSize": 1, "maxSize": 6}}))
    h100, l4 = s.node_pools
    assert (h100.start_size, h100.max_nodes) == (0, 4)
    assert (l4.start_size, l4.max_nodes) == (1, 6)
    assert h100.autoscaling is not None and h100.autoscaling.consolidation == "WhenEmpty"  # never moves a job


def test_every_bad_autoscaling_field_is_named_in_one_refusal() -> None:
    p = settings_problems(aws({
        "name": "h100", "instanceType": "p5.48xlarge", "desiredSize": 2, "maxSize": 3, "ignoreScalingChanges": True,
        "autoscaling": {"minSize": 5, "maxSize": 2},
    }))
    assert {f"{POOL}.desiredSize", f"{POOL}.maxSize", f"{POOL}.ignoreScalingChanges",
            f"{POOL}.autoscaling.minSize"} <= set(p)
    assert "would fix it" in p[f"{POOL}.desiredSize"]


def test_malformed_durations_and_budgets_are_named_together() -> None:
    p = model_problems(aws({"name": "h100", "instanceType": "p5.48xlarge", "autoscaling": {
        "maxSize": 2, "scaleDownAfter": "Never", "disruptionBudget": "150%", "expireAfter": "1d"}}))
    assert {f"{POOL}.autoscaling.{k}" for k in ("scaleDownAfter", "disruptionBudget", "expireAfter")} <= set(p)


def test_min_above_max_is_refused_at_min() -> None:
    p = model_problems(aws({"name": "l4", "instanceType": "g6.xlarge", "autoscaling": {"minSize": 3, "maxSize": 2}}))
    assert "3 > 2" in p[f"{POOL}.autoscaling.minSize"]


@pytest.mark.parametrize("autoscaling", [{"maxSize": 0}, {}, {"maxSize": 5001}])
def test_a_max_of_zero_none_or_past_a_cluster_is_refused(autoscaling: dict[str, Any]) -> None:
    p = model_problems(aws({"name": "l4", "instanceType": "g6.xlarge", "autoscaling": autoscaling}))
    assert f"{POOL}.autoscaling.maxSize" in p


@pytest.mark.parametrize("platform", ["kind", "local", "existing"])
def test_platforms_that_launch_no_ec2_instances_refuse_it_with_the_reason(platform: str) -> None:
    # existing: unless settings.existingAws says how an instance joins (tests/unit/test_settings_existing_aws.py)
    raw: dict[str, Any] = {"platform": platform, "nodePools": [
        {"name": "gpu", "instanceType": "g6.xlarge", "autoscaling": {"maxSize": 2}}]}
    p = model_problems(raw)
    assert "launches EC2 instances" in p[f"{POOL}.autoscaling"]


def test_a_block_pool_needs_both_dates_and_an_end_after_its_start() -> None:
    block = {"id": "cr-0123456789abcdef0", "marketType": "capacity-block"}
    pool = {"name": "h100", "instanceType": "p5.48xlarge", "availabilityZone": "eu-west-1a",
            "autoscaling": {"maxSize": 2}}
    undated = model_problems(aws({**pool, "capacityReservation": block}))
    assert "startsAt and endsAt" in undated[f"{POOL}.capacityReservation"]
    backwards = model_problems(aws({**pool, "capacityReservation": {
        **block, "startsAt": "2026-12-10T08:00Z", "endsAt": "2026-12-09T08:00Z"}}))
    assert f"{POOL}.capacityReservation.endsAt" in backwards
    ok = parse_settings(aws({**pool, "capacityReservation": {
        **block, "startsAt": "2026-12-10T08:00Z", "endsAt": "2026-12-17T08:00Z"}}))
    assert ok.node_pools[0].capacity_reservation is not None


def test_an_end_date_belongs_to_capacity_blocks_only() -> None:
    p = model_problems(aws({"name": "h100", "instanceType": "p5.48xlarge", "availabilityZone": "eu-west-1a",
                            "capacityReservation": {"id": "cr-0123456789abcdef0", "endsAt": "2026-12-17T08:00Z"},
                            "autoscaling": {"maxSize": 2}}))
    assert f"{POOL}.capacityReservation.endsAt" in p


@pytest.mark.parametrize("instance_type", sorted(AUTOSCALER_UNMODELED))
def test_a_type_the_autoscaler_cannot_model_is_refused(instance_type: str) -> None:
    p = model_problems(aws({"name": "gpu", "instanceType": instance_type, "autoscaling": {"maxSize": 2}}))
    assert "knows no GPU devices" in p[f"{POOL}.instanceType"]


def test_a_type_outside_the_table_is_refused_even_with_declared_gpus() -> None:
    p = model_problems(aws({"name": "gpu", "instanceType": "gr6.4xlarge", "autoscaling": {"maxSize": 2},
                            "gpu": {"count": 1, "productName": "NVIDIA L4", "memoryGiB": 24}}))
    assert "knows no GPU devices" in p[f"{POOL}.instanceType"]


def test_mig_partitioned_gpus_cannot_scale_from_claims() -> None:
    p = model_problems(aws({"name": "h100", "instanceType": "p5.48xlarge", "autoscaling": {"maxSize": 2}},
                           gpuStack={"migStrategy": "mixed"}))
    assert "whole GPUs only" in p[f"{POOL}.autoscaling"]
    # a type without MIG in the same stack is fine
    assert parse_settings(aws({"name": "h100", "instanceType": "p5.48xlarge"},
                              {"name": "l4", "instanceType": "g6.xlarge", "autoscaling": {"maxSize": 2}},
                              gpuStack={"migStrategy": "mixed"}))


def test_durations_past_a_go_duration_are_refused() -> None:
    p = model_problems(aws({"name": "l4", "instanceType": "g6.xlarge",
                            "autoscaling": {"maxSize": 2, "expireAfter": "99999999999h"}}))
    assert f"{POOL}.autoscaling.expireAfter" in p


def test_every_modeled_type_of_the_table_is_accepted() -> None:
    for name in sorted(set(GPU_INSTANCE_TYPES) - AUTOSCALER_UNMODELED):
        s = parse_settings(aws({"name": "gpu", "instanceType": name, "autoscaling": {"maxSize": 2}}))
        assert s.node_pools[0].max_nodes == 2, name

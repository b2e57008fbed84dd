"""nodePools[].ignoreScalingChanges: an autoscaler owns the desired capacity (pulumi-eks'
ignoreScalingChanges); `up` must not scale the pool back to desiredSize."""

from __future__ import annotations

from typing import Any

from tests.unit.aws.conftest import run_cluster, settings_for

ASG = "aws:autoscaling/group:Group"


def test_the_desired_capacity_is_left_to_an_autoscaler_only_where_asked() -> None:
    def change(raw: dict[str, Any]) -> None:
        raw["nodePools"][0]["ignoreScalingChanges"] = True

    run = run_cluster(settings_for("aws-prod", change))
    groups = {r.name: r for r in run.resources if r.type == ASG}
    pools = settings_for("aws-prod", change).node_pools
    by_pool = {p.name: p for p in pools}
    for name, group in groups.items():
        pool = next(p for p in by_pool.values() if name.endswith(f"pool-{p.name}-asg"))
        assert group.inputs["desiredCapacity"] == pool.desired_size  # set on create either way
        assert group.ignore_changes == (["desiredCapacity"] if pool.ignore_scaling_changes else [])
    assert len(groups) == 2 and sum(1 for g in groups.values() if g.ignore_changes) == 1

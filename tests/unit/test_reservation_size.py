"""A pool's reservation size, `capacityReservation.instanceCount` (issue 46 e): AWS's TotalInstanceCount
(botocore ec2 2016-11-15 CapacityReservation), declared in the settings.

- validate() refuses a pool that grows past it (maxSize, autoscaled: autoscaling.maxSize): a launch
  into a targeted reservation without room fails, and a Capacity Block launches nowhere else; and a
  count beside a resource group, whose members each have their own;
- `ck8s-gpu preflight` compares it with AWS's TotalInstanceCount (recorded answers, validated
  against botocore's shapes on replay);
- `plan --cost` prices an On-Demand reservation's reserved but unused instances (instanceCount less
  the pool's count at each size, never below 0) as their own line at the On-Demand rate: AWS bills
  them running or not. Expected prices come from the EC2 table, never from the code.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from components.plan.cost import CAPACITY_BLOCK, ClusterCost, cluster_cost
from components.preflight.checks import Finding, failed
from components.preflight.run import preflight
from components.settings.load import read_stack_file
from components.settings.model import MAX_CLUSTER_NODES, CapacityReservationSettings, Settings
from components.tables.ec2_prices import ON_DEMAND
from components.validate import from_config, parse
from tests.unit.helpers import listed_by_path, raised_problems
from tests.unit.preflight.recorded import RecordedSession

ODCR, BLOCK = "cr-0a1b2c3d4e5f60718", "cr-0b1c2d3e4f5a60719"
GROUP = "arn:aws:resource-groups:us-east-1:123456789012:group/h100-reservations"
P5 = ON_DEMAND["us-east-1"]["p5.48xlarge"]  # $/h, the Karpenter table the plan prices us-east-1 from
HERE = "settings.nodePools[0].capacityReservation.instanceCount"


def _stack(pool: dict[str, Any]) -> dict[str, Any]:
    """One p5.48xlarge pool in us-east-1a on reserved capacity (EFA on by default: one zone, maxSize > 1)."""
    return {"platform": "aws", "region": "us-east-1",
            "network": {"availabilityZones": ["us-east-1a", "us-east-1b"]},
            "nodePools": [{"name": "h100", "instanceType": "p5.48xlarge", "availabilityZone": "us-east-1a",
                           **pool}]}


def _fixed(lo: int, mid: int, hi: int, **reservation: Any) -> dict[str, Any]:
    return _stack({"minSize": lo, "desiredSize": mid, "maxSize": hi,
                   "capacityReservation": {"id": ODCR, **reservation}})


def _scaled(lo: int, hi: int, **reservation: Any) -> dict[str, Any]:
    return _stack({"autoscaling": {"minSize": lo, "maxSize": hi}, "capacityReservation": {"id": ODCR, **reservation}})


def _block(hi: int, **reservation: Any) -> dict[str, Any]:
    return _stack({"minSize": hi, "desiredSize": hi, "maxSize": hi,
                   "capacityReservation": {"id": BLOCK, "marketType": "capacity-block", **reservation}})


# --- validate() ------------------------------------------------------------------------------------

REFUSED = [
    pytest.param(_fixed(2, 2, 4, instanceCount=2), [f"{ODCR} holds 2 instance(s), but the pool grows to maxSize 4",
                                                    "2 node(s) could never launch", "lower maxSize to 2",
                                                    f"--capacity-reservation-id {ODCR} --instance-count 4",
                                                    "set instanceCount: 4"], id="fixed-pool"),
    pytest.param(_fixed(1, 1, 4, instanceCount=3), ["holds 3 instance(s)", "maxSize 4", "1 node(s)"],
                 id="one-over"),
    pytest.param(_scaled(0, 4, instanceCount=3), ["grows to autoscaling.maxSize 4", "lower autoscaling.maxSize to 3"],
                 id="autoscaled-pool"),
    pytest.param(_block(4, instanceCount=2), [f"{BLOCK} holds 2 instance(s), but the pool grows to maxSize 4",
                                              "buy a block that holds them or target several blocks with "
                                              "resourceGroupArn"], id="capacity-block"),
    pytest.param(_stack({"maxSize": 2, "capacityReservation": {"resourceGroupArn": GROUP, "instanceCount": 2}}),
                 ["is the size of one reservation (AWS's TotalInstanceCount)", "capacityReservation.id only"],
                 id="resource-group"),
]


@pytest.mark.parametrize(("raw", "fragments"), REFUSED)
def test_a_pool_beyond_its_declared_reservation_is_refused_at_the_size(raw: dict[str, Any],
                                                                        fragments: list[str]) -> None:
    found = listed_by_path(raised_problems(parse, raw))
    assert list(found) == [HERE], found  # this problem alone, at the size's own path
    [reason] = found[HERE]
    for fragment in fragments:
        assert fragment in reason, reason


ACCEPTED = [
    pytest.param(_fixed(2, 2, 4, instanceCount=4), id="equal-to-maxSize"),
    pytest.param(_fixed(1, 1, 2, instanceCount=8), id="larger-than-the-pool"),
    pytest.param(_fixed(2, 2, 4), id="no-size-declared"),
    pytest.param(_scaled(0, 4, instanceCount=4), id="autoscaled-equal"),
    pytest.param(_block(2, instanceCount=2), id="capacity-block-equal"),
    pytest.param(_stack({"maxSize": 4, "capacityReservation": {"resourceGroupArn": GROUP}}),
                 id="resource-group-without-a-size"),
]


@pytest.mark.parametrize("raw", ACCEPTED)
def test_look_alikes_are_accepted(raw: dict[str, Any]) -> None:
    parse(raw)


@pytest.mark.parametrize("count", [0, -1, MAX_CLUSTER_NODES + 1])
def test_the_count_is_one_reservation_at_most_a_cluster(count: int) -> None:
    found = listed_by_path(raised_problems(parse, _fixed(1, 1, 1, instanceCount=count)))
    assert HERE in found, found


def test_the_size_is_refused_with_every_other_problem_in_one_message() -> None:
    raw = _fixed(2, 2, 4, instanceCount=2)
    raw["nodePools"][0]["capacityType"] = "spot"
    found = listed_by_path(raised_problems(parse, raw))
    assert {HERE, "settings.nodePools[0].capacityType"} <= set(found), found


# --- pre-flight ------------------------------------------------------------------------------------

NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)  # reservations-ok.json: the block starts 11:30Z
TEMPLATE = Path(__file__).resolve().parents[1] / "data" / "stamping" / "Pulumi.gpu-prod.yaml"


def _recorded(odcr: int | None, block: int | None = None) -> Settings:
    """gpu-prod's pools (l40s, h100 on ODCR) and a Capacity Block pool, as the recorded answers hold
    them: both reservations have TotalInstanceCount 2 (tests/data/aws_responses/reservations-ok.json)."""
    s = from_config(read_stack_file(TEMPLATE), "gpu-prod", offline=True)
    l40s, h100, *_ = s.node_pools
    h100 = h100.model_copy(update={
        "availability_zone": "us-east-1a", "desired_size": 2, "max_size": 2,
        "capacity_reservation": CapacityReservationSettings(id=ODCR, instance_count=odcr)})
    blocked = h100.model_copy(update={
        "name": "h100-block", "availability_zone": "us-east-1b", "min_size": 2,
        "capacity_reservation": CapacityReservationSettings(id=BLOCK, market_type="capacity-block",
                                                            starts_at="2026-12-01T11:30:00Z", instance_count=block)})
    return s.model_copy(update={"node_pools": (l40s, h100, blocked)})


def _sizes(findings: list[Finding]) -> list[Finding]:
    """The declared-size findings: a mismatch between the settings and AWS at instanceCount."""
    return [f for f in findings if f.kind == "reservation-mismatch" and f.subject.endswith(".instanceCount")]


@pytest.mark.parametrize(("odcr", "block"), [(None, None), (2, None), (None, 2), (2, 2)])
def test_preflight_is_quiet_when_the_declared_size_is_aws_or_none_is_declared(odcr: int | None,
                                                                               block: int | None) -> None:
    findings = preflight(_recorded(odcr, block), RecordedSession("reservations-ok.json"), clock=lambda: NOW)
    assert _sizes(findings) == [] and not failed(findings), findings


@pytest.mark.parametrize(("odcr", "block", "subject", "message"), [
    (4, None, "settings.nodePools[1].capacityReservation.instanceCount",
     f"instanceCount 4 is not the size of {ODCR}: AWS's TotalInstanceCount is 2"),
    (1, None, "settings.nodePools[1].capacityReservation.instanceCount",
     f"instanceCount 1 is not the size of {ODCR}: AWS's TotalInstanceCount is 2"),
    (None, 8, "settings.nodePools[2].capacityReservation.instanceCount",
     f"instanceCount 8 is not the size of {BLOCK}: AWS's TotalInstanceCount is 2"),
])
def test_preflight_names_both_counts_when_they_differ(odcr: int | None, block: int | None, subject: str,
                                                      message: str) -> None:
    findings = preflight(_recorded(odcr, block), RecordedSession("reservations-ok.json"), clock=lambda: NOW)
    [size] = _sizes(findings)
    assert [f for f in findings if f.kind == "reservation-mismatch"] == [size]
    assert (size.severity, size.subject) == ("warning", subject)
    assert size.message.startswith(message) and size.message.endswith("set instanceCount: 2"), size.message
    assert not failed(findings)


# --- plan --cost -----------------------------------------------------------------------------------

def _cost(raw: dict[str, Any]) -> ClusterCost:
    return cluster_cost(Settings.model_validate(raw))


def _items(cost: ClusterCost) -> dict[str, Any]:
    return {i.what: i for i in cost.items}


UNUSED = f"pool h100 reserved, not running ({ODCR})"
NODES = "pool h100 (p5.48xlarge, on-demand)"
AUTOSCALED = "pool h100 (p5.48xlarge, autoscaled, on-demand)"


@pytest.mark.parametrize(("raw", "nodes", "unused"), [
    (_fixed(1, 2, 3, instanceCount=4), NODES, (3, 2, 1)),
    (_fixed(2, 2, 4, instanceCount=4), NODES, (2, 2, 0)),  # aws-prod's h100 pool
    (_fixed(1, 1, 6, instanceCount=4), NODES, (3, 3, 0)),  # never below 0 (refused by validate, priced anyway)
    (_scaled(0, 4, instanceCount=4), AUTOSCALED, (4, 4, 0)),
])
def test_the_unused_reserved_instances_are_their_own_line_at_the_on_demand_rate(
        raw: dict[str, Any], nodes: str, unused: tuple[int, int, int]) -> None:
    cost = _cost(raw)
    items = _items(cost)
    line = items[UNUSED]
    assert (line.counts, line.unit) == (unused, P5)
    assert line.hourly == pytest.approx(tuple(n * P5 for n in unused))
    running = items[nodes]
    assert "instanceCount" in running.note and "not in the settings" not in running.note
    assert "their own line" in running.note
    # The pool's nodes plus the unused reserved ones: 4 reserved instances billed at every size up to 4.
    assert [r + u for r, u in zip(running.counts, unused, strict=True)] == [
        max(4, n) for n in running.counts]
    assert cost.complete and any("whether you run instances" in s for s in cost.sources)


def test_a_reservation_the_pool_fills_at_every_size_adds_no_line() -> None:
    items = _items(_cost(_fixed(4, 4, 4, instanceCount=4)))
    assert UNUSED not in items
    assert "the pool runs every one at each size" in items[NODES].note


def test_without_a_declared_size_the_plan_says_it_leaves_the_unused_part_out() -> None:
    items = _items(_cost(_fixed(2, 2, 4)))
    assert UNUSED not in items
    assert "its size is not in the settings (declare capacityReservation.instanceCount" in items[NODES].note


def test_a_capacity_block_is_still_priced_at_purchase() -> None:
    items = _items(_cost(_block(2, instanceCount=4)))
    assert items["pool h100 (p5.48xlarge, on-demand)"].unpriced == CAPACITY_BLOCK
    assert not any(w.startswith("pool h100 reserved") for w in items)


def test_the_stack_file_bound_is_the_cluster_bound() -> None:
    field = CapacityReservationSettings.model_fields["instance_count"]
    assert [getattr(m, "le", None) for m in field.metadata if hasattr(m, "le")] == [MAX_CLUSTER_NODES]

"""Pre-flight of a pool's existing placement group (components/preflight/placement.py): it exists in
the region, is available, and has the strategy the settings declare. Over recorded answers (real
boto3 clients, each answer validated against botocore's output shape) and over hand-made facts."""

from __future__ import annotations

import pytest

from components.preflight.checks import check, failed
from components.preflight.facts import PlacementGroup, RegionFacts
from components.preflight.findings import Finding
from components.preflight.run import preflight
from components.settings.model import PlacementSettings, Settings
from tests.unit.preflight.recorded import RecordedSession
from tests.unit.preflight.test_recorded_regions import _settings

GROUP = "train-odcr-group"
WHERE = "settings.nodePools[0].placement.groupName"


def with_group(s: Settings, **placement: object) -> Settings:
    pool = s.node_pools[0].model_copy(update={"placement": PlacementSettings(group_name=GROUP, **placement)})
    return s.model_copy(update={"node_pools": (pool, *s.node_pools[1:])})


def run(scenario: str, **placement: object) -> tuple[list[Finding], RecordedSession]:
    session = RecordedSession(scenario)
    return preflight(with_group(_settings(session.region), **placement), session), session


def ours(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.subject == WHERE]


def test_an_available_cluster_group_passes_and_is_asked_for_by_name() -> None:
    findings, session = run("placement-group-ok.json")
    assert findings == [] and not failed(findings)
    assert session.called("ec2.DescribePlacementGroups") == [{"Filters": [{"Name": "group-name", "Values": [GROUP]}]}]


def test_a_group_of_another_strategy_is_an_error_naming_the_fix() -> None:
    findings, _ = run("placement-group-spread.json")
    [f] = ours(findings)
    assert (f.kind, f.severity) == ("placement-group-mismatch", "error")
    assert "its strategy is spread, the pool declares cluster: set placement.strategy: spread" in f.message


def test_a_group_that_does_not_exist_is_an_error_naming_the_region() -> None:
    findings, _ = run("placement-group-missing.json")
    [f] = ours(findings)
    assert (f.kind, f.severity) == ("placement-group-missing", "error")
    assert f"no placement group '{GROUP}' in us-east-1" in f.message


def facts(group: PlacementGroup | None, **errors: str) -> RegionFacts:
    return RegionFacts(region="us-east-1", zones=("us-east-1a", "us-east-1b"), placement_groups={GROUP: group},
                       errors=dict(errors))


@pytest.mark.parametrize(("group", "declared", "kind", "words"), [
    (PlacementGroup(GROUP, "pending", "cluster"), {}, "placement-group-state", "is pending"),
    (PlacementGroup(GROUP, "deleting", "cluster"), {}, "placement-group-state", "launch only into an available group"),
    (PlacementGroup(GROUP, "available", "partition", partition_count=3), {"strategy": "partition",
                                                                          "partition_count": 7},
     "placement-group-mismatch", "it has 3 partition(s), the pool declares 7"),
    (PlacementGroup(GROUP, "available", "spread", spread_level="host"), {"strategy": "spread", "spread_level": "rack"},
     "placement-group-mismatch", "its spread level is host, the pool declares rack"),
])
def test_each_difference_is_named(group: PlacementGroup, declared: dict[str, object], kind: str, words: str) -> None:
    s = with_group(_settings("us-east-1"), **declared)
    found = [f for f in check(s, facts(group)) if f.subject == WHERE]
    assert [f.kind for f in found] == [kind] and words in found[0].message, found


def test_a_group_as_declared_passes() -> None:
    s = with_group(_settings("us-east-1"), strategy="partition", partition_count=3)
    assert [f for f in check(s, facts(PlacementGroup(GROUP, "available", "partition", 3))) if f.subject == WHERE] == []


def test_a_call_that_failed_is_said_not_passed() -> None:
    s = with_group(_settings("us-east-1"))
    [f] = [f for f in check(s, facts(None, **{"placement-groups": "AccessDenied"})) if f.subject == WHERE]
    assert (f.kind, f.severity) == ("could-not-check", "warning") and "AccessDenied" in f.message

"""Training pools' launches: AWS's EFA layout, placement groups, reserved capacity and zones, as the
plan registers them and as AWS's rules refuse them (components/facts/efa.py, launch.py, launch_rules.py)."""

from __future__ import annotations

from typing import Any

import pytest

from components.aws.launch import launch_plan
from components.aws.launch_rules import launch_problems
from components.facts import efa
from components.settings.load import SettingsError
from components.settings.model import NodePoolSettings, Settings
from components.validate import validate
from tests.unit.aws.conftest import of_type, run_cluster, settings_for
from tests.unit.helpers import joined_by_path

LT = "aws:ec2/launchTemplate:LaunchTemplate"
ASG = "aws:autoscaling/group:Group"
PG = "aws:ec2/placementGroup:PlacementGroup"


def _aws(*pools: dict[str, Any], **extra: Any) -> Settings:
    raw: dict[str, Any] = {"platform": "aws", "region": "us-east-1",
                           "network": {"availabilityZones": ["us-east-1a", "us-east-1b"]},
                           "nodePools": list(pools) or [{"name": "gpu"}], **extra}
    return Settings.model_validate(raw)


def _problems(*pools: dict[str, Any], **extra: Any) -> dict[str, str]:
    return joined_by_path(validate(_aws(*pools, **extra)), "; ")


P5 = {"name": "h100", "instanceType": "p5.48xlarge", "minSize": 2, "desiredSize": 2, "maxSize": 4,
      "availabilityZone": "us-east-1a"}


@pytest.mark.parametrize(("instance_type", "efa_count", "cards"), [
    ("p5.48xlarge", 32, set(range(32))), ("p5e.48xlarge", 32, set(range(32))), ("p5en.48xlarge", 16, set(range(16))),
    ("p6-b200.48xlarge", 8, set(range(8))), ("p4d.24xlarge", 4, set(range(4))),
    ("p6e-gb200.36xlarge", 4, {1, 5, 9, 13}),
])
def test_the_layout_is_awss_one_efa_only_interface_per_card_behind_an_ena_primary(
        instance_type: str, efa_count: int, cards: set[int]) -> None:
    layout = efa.interfaces(instance_type)
    assert (layout[0].network_card_index, layout[0].device_index, layout[0].interface_type) == (0, 0, "interface")
    extra = layout[1:]
    assert all(i.interface_type == "efa-only" for i in extra) and len(extra) == efa_count
    assert {i.network_card_index for i in extra} == cards
    assert efa.efa_device_count(instance_type) == efa_count


def test_a_single_card_type_gets_one_efa_as_its_primary() -> None:
    assert [(i.network_card_index, i.device_index, i.interface_type) for i in efa.interfaces("g6e.8xlarge")] == [
        (0, 0, "efa")]
    with pytest.raises(ValueError, match="no EFA"):
        efa.interfaces("g6.xlarge")


@pytest.mark.parametrize(("pool", "on"), [
    ({**P5}, True),
    ({**P5, "availabilityZone": None}, False),  # several zones: EFA cannot span subnets
    ({**P5, "minSize": 1, "desiredSize": 1, "maxSize": 1}, False),  # one node: nothing between nodes
    ({"name": "l40s", "instanceType": "g6e.48xlarge", "maxSize": 4, "availabilityZone": "us-east-1a"}, False),  # PCIe
    ({**P5, "efa": False}, False),
    ({"name": "l40s", "instanceType": "g6e.12xlarge", "maxSize": 4, "availabilityZone": "us-east-1a",
      "efa": True}, True),
])
def test_efa_defaults_on_for_multi_node_training_pools_in_one_zone(pool: dict[str, Any], on: bool) -> None:
    assert efa.efa_enabled(NodePoolSettings.model_validate(pool)) is on


def test_the_plan_launches_an_efa_pool_in_its_zone_with_its_interfaces_group_and_reservation() -> None:
    def change(raw: dict[str, Any]) -> None:
        pass

    run = run_cluster(settings_for("aws-prod", change))
    [lt] = [r for r in of_type(run, LT) if "h100" in r.name]
    nics = lt.inputs["networkInterfaces"]
    assert len(nics) == 33 and sum(n["interfaceType"] == "efa-only" for n in nics) == 32
    assert "vpcSecurityGroupIds" not in lt.inputs  # groups ride on every interface instead
    assert all(len(n["securityGroups"]) == 2 and n["associatePublicIpAddress"] == "false" for n in nics)
    target = lt.inputs["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target == {"capacityReservationId": "cr-0a1b2c3d4e5f60718"}
    [asg] = [r for r in of_type(run, ASG) if "h100" in r.name]
    assert asg.inputs["placementGroup"] == "ck8s-prod-us-east-1-h100" and len(asg.inputs["vpcZoneIdentifiers"]) == 1
    assert not of_type(run, PG)  # an existing group (groupName): nothing made
    [l40s] = [r for r in of_type(run, LT) if "l40s" in r.name]
    assert "networkInterfaces" not in l40s.inputs and l40s.inputs["vpcSecurityGroupIds"]


def test_a_capacity_block_pool_targets_the_block_does_not_wait_and_makes_no_group() -> None:
    s = _aws({**P5, "capacityReservation": {"id": "cr-0123456789abcdef0", "marketType": "capacity-block"}})
    plan = launch_plan(s.node_pools[0])
    assert plan.market_type == "capacity-block" and plan.wait_for_capacity_timeout == "0"
    assert plan.placement is None and plan.efa
    assert validate(s) == []


def test_a_default_cluster_group_is_made_per_efa_pool() -> None:
    def change(raw: dict[str, Any]) -> None:
        for pool in raw["nodePools"]:
            pool.pop("placement", None)

    run = run_cluster(settings_for("aws-prod", change))
    [pg] = of_type(run, PG)
    assert pg.inputs["strategy"] == "cluster"
    [asg] = [r for r in of_type(run, ASG) if "h100" in r.name]
    assert pg.urn in asg.dependencies and asg.inputs["placementGroup"].startswith("ck8s-prod-us-east-1-pool-h100-pg")


@pytest.mark.parametrize(("pool", "extra", "path", "fragment"), [
    ({**P5, "efa": True, "availabilityZone": None}, {}, "settings.nodePools[0].availabilityZone", "one subnet"),
    ({"name": "g", "instanceType": "g6.xlarge", "efa": True}, {}, "settings.nodePools[0].efa", "has no EFA"),
    ({**P5, "availabilityZone": "us-east-1c"}, {}, "settings.nodePools[0].availabilityZone", "has no subnet"),
    ({**P5, "availabilityZone": "eu-west-1a"}, {}, "settings.nodePools[0].availabilityZone", "not a zone of region"),
    ({**P5, "placement": {"strategy": "cluster", "partitionCount": 3}}, {},
     "settings.nodePools[0].placement.partitionCount", "strategy partition only"),
    ({**P5, "placement": {"strategy": "spread", "spreadLevel": "host"}}, {},
     "settings.nodePools[0].placement.spreadLevel", "Outposts"),
    ({**P5, "efa": False, "maxSize": 8, "placement": {"strategy": "spread"}}, {},
     "settings.nodePools[0].maxSize", "at most 7 running instances per zone"),
    ({**P5, "placement": {"strategy": "cluster"},
      "capacityReservation": {"id": "cr-0123456789abcdef0", "marketType": "capacity-block"}}, {},
     "settings.nodePools[0].placement", "no placement group"),
    ({**P5, "capacityType": "spot", "capacityReservation": {"id": "cr-0123456789abcdef0"}}, {},
     "settings.nodePools[0].capacityType", "On-Demand"),
    ({**P5, "capacityReservation": {"id": "cr-0123456789abcdef0",
                                    "resourceGroupArn": "arn:aws:resource-groups:us-east-1:123456789012:group/g"}}, {},
     "settings.nodePools[0].capacityReservation", "exactly one of id and resourceGroupArn"),
    ({**P5, "capacityReservation": {"id": "cr-0123456789abcdef0", "startsAt": "2026-12-03T08:00Z"}}, {},
     "settings.nodePools[0].capacityReservation.startsAt", "capacity-block only"),
    ({**P5, "efa": False, "placement": {"strategy": "cluster"}, "availabilityZone": None}, {},
     "settings.nodePools[0].availabilityZone", "cluster placement group lives in one zone"),
    ({"name": "gpu"}, {"network": {"availabilityZones": ["us-east-1a", "us-east-1a"]}},
     "settings.network.availabilityZones[0]", "listed 2 times"),
])
def test_aws_refuses_it_so_validate_does_first(pool: dict[str, Any], extra: dict[str, Any], path: str,
                                               fragment: str) -> None:
    problems = _problems(pool, **extra)
    assert path in problems, problems
    assert fragment in problems[path]


def test_every_problem_in_one_message_and_nothing_registered() -> None:
    from components.validate import parse

    raw = {"platform": "aws", "region": "us-east-1", "nodePools": [
        {**P5, "efa": True, "availabilityZone": None, "placement": {"strategy": "spread", "spreadLevel": "host"}},
        {"name": "g", "instanceType": "g6.xlarge", "efa": True}]}
    with pytest.raises(SettingsError) as err:
        parse(raw)
    paths = {p for p, _ in err.value.problems}
    assert {"settings.nodePools[0].availabilityZone", "settings.nodePools[0].placement.spreadLevel",
            "settings.nodePools[1].efa"} <= paths


def test_launch_fields_elsewhere_than_aws_are_refused() -> None:
    s = Settings.model_validate({"platform": "kind", "nodePools": [{"name": "g", "efa": True}]})
    assert launch_problems(s) == [("settings.nodePools[0].efa", "applies to platform aws only")]


def test_the_efa_group_opens_all_traffic_to_itself_only() -> None:
    run = run_cluster(settings_for("aws-prod"))
    efa_rules = [r for r in run.resources if r.type.startswith("aws:vpc/securityGroup") and "-sg-efa-" in r.name]
    assert len(efa_rules) == 2
    for rule in efa_rules:
        assert rule.inputs["ipProtocol"] == "-1"
        assert rule.inputs["referencedSecurityGroupId"] == rule.inputs["securityGroupId"]
    dev = run_cluster(settings_for("aws-dev"))
    assert not [r for r in dev.resources if "-sg-efa" in r.name]  # no EFA pool, no group

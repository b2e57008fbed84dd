"""GB200-class pools (arm64 Grace nodes in NVL72 UltraServers) on aws: NVLink facts, ComputeDomains
derived from them, the arm64 image, EFA layout and UltraServer Capacity Blocks, planned under the
mock engine, and what AWS refuses for them refused offline."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from components.addons import dra_driver
from components.aws.ami import ssm_parameter
from components.aws.launch_rules import launch_problems
from components.images.settings import parse_image_settings
from components.plan.mockengine import PlanMocks, PlanRun
from components.settings.facts import compute_domains_on
from components.settings.load import SettingsError
from components.settings.model import Settings
from components.tables.instance_types import GPU_INSTANCE_TYPES, nvlink_domain
from tests.unit.addons.helpers import final_values
from tests.unit.aws.conftest import of_type, run_cluster, settings_for
from tests.unit.helpers import by_path, raised_problems

GB200 = "p6e-gb200.36xlarge"
LOCAL_ZONE = "us-east-1-dfw-2a"  # capacity-blocks-launch.html: GB200 UltraServer blocks are in the Dallas Local Zone


def _gb200_pool(**over: Any) -> dict[str, Any]:
    pool: dict[str, Any] = {
        "name": "gb200", "instanceType": GB200, "minSize": 18, "desiredSize": 18, "maxSize": 18,
        "availabilityZone": LOCAL_ZONE, "capacityReservation": {"id": "cr-0123456789abcdef0",
                                                                "marketType": "capacity-block"}}
    pool.update(over)
    return pool


def _with_gb200(gpu_stack: dict[str, Any] | None = None, **over: Any) -> Settings:
    def change(raw: dict[str, Any]) -> None:
        raw["network"]["availabilityZones"] = ["us-east-1a", "us-east-1b", LOCAL_ZONE]
        raw["nodePools"].append(_gb200_pool(**over))
        # GB200 pools boot Canonical's arm64 AMI (no image can be built on an UltraServer-only type),
        # so the operator installs their driver; aws-prod's own pools keep their host-driver images,
        # which the GPU Operator finds pre-installed; so it installs the toolkit too (gpuStack.toolkit
        # host needs the driver in every pool's image: settings/rules/gpu_stack.py _toolkit).
        raw.setdefault("gpuStack", {}).update(driver="operator", toolkit="operator")
        if gpu_stack is not None:
            raw["gpuStack"].update(gpu_stack)

    return settings_for("aws-prod", change)


def _refusals(**over: Any) -> dict[str, str]:
    return by_path(raised_problems(_with_gb200, **over))


def test_nvlink_domains_per_instance_type() -> None:
    gb = nvlink_domain(GB200)
    assert (gb.scope, gb.gpus, gb.nvswitch) == ("multi-node", 72, True)
    assert {(u.name, u.instances) for u in gb.ultraservers} == {("u-p6e-gb200x36", 9), ("u-p6e-gb200x72", 18)}
    assert (nvlink_domain("p5.48xlarge").scope, nvlink_domain("p5.48xlarge").gpus) == ("single-node", 8)
    assert nvlink_domain("p5.4xlarge").scope == "none"  # one GPU
    assert nvlink_domain("g6e.48xlarge").scope == "none"  # L40S: PCIe only
    assert nvlink_domain("m7i.large").scope == "none"  # not a GPU type of the table
    for itype, facts in GPU_INSTANCE_TYPES.items():
        d = nvlink_domain(itype)
        assert d.source, itype
        if d.scope == "single-node":
            assert d.gpus == facts.count and not d.ultraservers, itype
        if d.scope == "multi-node":
            assert facts.cpu_arch == "arm64" and d.gpus % facts.count == 0, itype


def test_compute_domains_follow_multi_node_nvlink_unless_set() -> None:
    assert compute_domains_on(settings_for("aws-prod")) is False  # NVSwitch and PCIe pools only
    assert compute_domains_on(_with_gb200()) is True
    assert compute_domains_on(_with_gb200({"computeDomains": False})) is False
    assert compute_domains_on(settings_for("aws-prod", lambda r: r.setdefault("gpuStack", {}).update(
        {"computeDomains": True}))) is True


@pytest.fixture(scope="module")
def gb200_run() -> PlanRun:
    return run_cluster(_with_gb200())


def _mock_ami(parameter: str, region: str = "us-east-1") -> str:
    return str(PlanMocks(region).call(SimpleNamespace(  # type: ignore[arg-type]
        token="aws:ssm/getParameter:getParameter", args={"name": parameter}))["value"])


def test_a_gb200_pool_plans_arm64_with_efa_in_its_ultraserver_block(gb200_run: PlanRun) -> None:
    templates = {r.name.rsplit("-pool-", 1)[-1]: r for r in of_type(gb200_run, "aws:ec2/launchTemplate:LaunchTemplate")}
    gb = templates["gb200-lt"]
    assert gb.inputs["instanceType"] == GB200
    assert gb.inputs["imageId"] == _mock_ami(ssm_parameter("arm64"))  # Canonical's arm64 Ubuntu
    # aws-prod's H100 pool boots the image program's GPU image (its own ami), not Canonical's.
    gpu_image = "/ck8s-gpu/images/gpu-node/ubuntu-24.04/amd64/nvidia-595-server-open"
    assert templates["h100-lt"].inputs["imageId"] == _mock_ami(gpu_image)
    layout = [(i["networkCardIndex"], i["deviceIndex"], i["interfaceType"]) for i in gb.inputs["networkInterfaces"]]
    assert layout == [(0, 0, "interface"), (1, 0, "efa-only"), (5, 0, "efa-only"), (9, 0, "efa-only"),
                      (13, 0, "efa-only")]
    assert gb.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert gb.inputs["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}}
    groups = {r.name: r for r in of_type(gb200_run, "aws:autoscaling/group:Group")}
    gb_group = next(r for n, r in groups.items() if "-pool-gb200" in n)
    assert not gb_group.inputs.get("placementGroup")  # AWS places a block's instances itself
    assert gb_group.inputs["waitForCapacityTimeout"] == "0"
    assert not [r for r in of_type(gb200_run, "aws:ec2/placementGroup:PlacementGroup") if "gb200" in r.name]


def test_the_dra_driver_serves_compute_domains_for_a_gb200_pool() -> None:
    assert final_values(dra_driver.ADDON, _with_gb200())["resources"]["computeDomains"]["enabled"] is True
    assert final_values(dra_driver.ADDON, settings_for("aws-prod"))["resources"]["computeDomains"]["enabled"] is False


def test_gb200_without_an_ultraserver_capacity_block_is_refused() -> None:
    path = "settings.nodePools[2].capacityReservation"
    problems = _refusals(capacityReservation=None)
    assert "u-p6e-gb200x36 or u-p6e-gb200x72" in problems[path], problems
    problems = _refusals(capacityReservation={"id": "cr-0123456789abcdef0"})  # On-Demand reservation
    assert "capacity-block" in problems[path], problems


def test_one_block_reservation_holds_one_ultraserver() -> None:
    problems = _refusals(maxSize=36, desiredSize=36, minSize=36)
    assert "at most 18" in problems["settings.nodePools[2].maxSize"], problems
    # Several UltraServer blocks through a resource group (cb-group.html): no per-block bound.
    arn = "arn:aws:resource-groups:us-east-1:123456789012:group/gb200-blocks"
    s = _with_gb200(maxSize=36, capacityReservation={"resourceGroupArn": arn, "marketType": "capacity-block"})
    assert launch_problems(s) == []


def test_an_image_line_cannot_build_on_an_ultraserver_type() -> None:
    with pytest.raises(SettingsError) as err:
        parse_image_settings({"region": "us-east-1", "architecture": "arm64", "buildInstanceType": GB200}, "test")
    problems = dict(err.value.problems)
    assert "UltraServer Capacity Block" in problems["image.buildInstanceType"], problems

"""nodePools[].ami under the mock engine: a pool that names its image boots it (launch template
imageId), the others and the control planes keep Canonical's Ubuntu from SSM (docs/adr/0018)."""

from __future__ import annotations

from typing import Any

import pulumi.runtime.mocks as pmocks

from components.aws.ami import ssm_parameter
from components.plan.mockengine import PlanMocks, PlanRun, Recorded
from tests.unit.aws.cluster_sim import from_the_store
from tests.unit.aws.conftest import of_type, run_cluster, settings_for

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
OWN_ID = "ami-0a1b2c3d4e5f60718"
OWN_PATH = "/ml-platform/images/ubuntu-24.04-nvidia-595/ami-id"


def mock_parameter(region: str, name: str) -> str:
    """What the mock engine answers for SSM parameter `name` (as a real lookup would: one id per name)."""
    answer: dict[str, Any] = PlanMocks(region).call(
        pmocks.MockCallArgs(token="aws:ssm/getParameter:getParameter", args={"name": name}, provider=""))
    return str(answer["value"])


def launch_template(run: PlanRun, pool: str) -> Recorded:
    (lt,) = [r for r in of_type(run, LAUNCH_TEMPLATE) if r.name.endswith(f"-pool-{pool}-lt")]
    return lt


def test_a_pool_boots_the_image_it_names_and_the_rest_keep_canonicals() -> None:
    def change(raw: dict[str, Any]) -> None:
        from_the_store(raw)  # the control planes on Canonical's AMI: no image media to carry
        raw["controlPlane"].pop("ami")
        raw["gpuStack"] = {"driver": "host"}
        l40s, h100 = raw["nodePools"]
        l40s["ami"] = OWN_ID
        h100["ami"] = OWN_PATH

    s = settings_for("aws-prod", change)
    names = [p.name for p in s.node_pools]
    run = run_cluster(s)
    region = s.region or ""
    assert launch_template(run, names[0]).inputs["imageId"] == OWN_ID  # an id is used as it is
    assert launch_template(run, names[1]).inputs["imageId"] == mock_parameter(region, OWN_PATH)  # a path is looked up
    stock = mock_parameter(region, ssm_parameter("amd64"))
    assert stock not in (OWN_ID, mock_parameter(region, OWN_PATH))
    control_planes = of_type(run, INSTANCE)
    assert control_planes and {r.inputs["ami"] for r in control_planes} == {stock}


def _canonical_everywhere(raw: dict[str, Any]) -> None:
    """aws-prod before its nodes booted image-program images (docs/adr/0043): the store path."""
    from_the_store(raw)
    raw["controlPlane"].pop("ami")
    raw["gpuStack"] = {"driver": "operator", "toolkit": "operator"}
    for pool in raw["nodePools"]:
        pool.pop("ami", None)


def test_without_an_ami_every_node_boots_canonicals_ubuntu() -> None:
    s = settings_for("aws-prod", _canonical_everywhere)
    run = run_cluster(s)
    stock = mock_parameter(s.region or "", ssm_parameter("amd64"))
    nodes = of_type(run, LAUNCH_TEMPLATE) + of_type(run, INSTANCE)
    images = {r.inputs.get("imageId") or r.inputs.get("ami") for r in nodes}
    assert images == {stock}


def test_pools_naming_the_same_image_share_it() -> None:
    def change(raw: dict[str, Any]) -> None:
        for pool in raw["nodePools"]:
            pool["ami"] = OWN_PATH

    s = settings_for("aws-prod", change)
    run = run_cluster(s)
    images = {launch_template(run, p.name).inputs["imageId"] for p in s.node_pools}
    assert images == {mock_parameter(s.region or "", OWN_PATH)}


def test_the_control_planes_boot_the_image_they_name() -> None:
    """controlPlane.ami (docs/adr/0043): the image program's control-plane line, looked up like a pool's."""
    s = settings_for("aws-dev")
    assert s.control_plane.ami is not None
    run = run_cluster(s)
    control_planes = of_type(run, INSTANCE)
    assert control_planes and {r.inputs["ami"] for r in control_planes} == {
        mock_parameter(s.region or "", s.control_plane.ami)}

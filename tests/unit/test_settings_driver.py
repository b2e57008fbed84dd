"""gpuStack.driver (operator | precompiled | host) and nodePools[].ami: what the settings refuse, with
the exact field path, and what they accept (docs/adr/0018)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.settings import parse_settings
from components.settings.load import read_stack_file
from components.tables import pins
from components.validate import from_config as settings_from_config
from tests.unit.helpers import model_problems

ROOT = Path(__file__).resolve().parents[2]
AWS = {"platform": "aws", "region": "eu-west-1"}
AMI = "ami-0123456789abcdef0"
STOCK_PATH = "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"
VALUES = "settings.gpuStack.addons.gpuOperator.values"


problems = model_problems  # the settings' own rules (components.settings.parse_settings)


def gpu_operator_values(driver: str, values: dict[str, Any], platform: str = "existing") -> dict[str, Any]:
    return {"platform": platform, "gpuStack": {"driver": driver, "addons": {"gpuOperator": {"values": values}}}}


# -- existing stacks --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted((ROOT / "stacks").glob("Pulumi.*.yaml")), ids=lambda p: p.name)
def test_every_committed_stack_still_loads(path: Path) -> None:
    """Stack files written before precompiled existed load unchanged (offline: no kubeconfig needed)."""
    s = settings_from_config(read_stack_file(path), str(path), offline=True)
    assert s.gpu_stack.driver in ("operator", "host")
    # Pools name their own image only where the driver lives in it (aws-dev, docs/adr/0020).
    assert all(p.ami is None for p in s.node_pools) or (s.platform, s.gpu_stack.driver) == ("aws", "host")


@pytest.mark.parametrize("platform", ["aws", "kind", "local", "existing"])
def test_operator_stays_the_default_and_needs_no_ami(platform: str) -> None:
    s = parse_settings({"platform": platform, "region": "eu-west-1", "gpuStack": {"driver": "operator"}})
    assert parse_settings({"platform": platform, "region": "eu-west-1"}).gpu_stack.driver == "operator"
    assert s.node_pools[0].ami is None


@pytest.mark.parametrize("platform", ["kind", "local", "existing"])
@pytest.mark.parametrize("driver", ["host", "precompiled"])
def test_platforms_that_make_no_nodes_need_no_ami(platform: str, driver: str) -> None:
    assert parse_settings({"platform": platform, "gpuStack": {"driver": driver}}).gpu_stack.driver == driver


# -- aws: the pools' images ---------------------------------------------------------------------------


@pytest.mark.parametrize("driver", ["host", "precompiled"])
def test_aws_refuses_the_stock_ami_for_host_and_precompiled_drivers_naming_each_pool(driver: str) -> None:
    p = problems({**AWS, "gpuStack": {"driver": driver}, "nodePools": [
        {"name": "a"}, {"name": "b", "ami": AMI}, {"name": "c", "instanceType": "g6e.xlarge"}]})
    assert set(p) == {"settings.nodePools[0].ami", "settings.nodePools[2].ami"}
    if driver == "host":
        assert "Canonical's Ubuntu AMI has none" in p["settings.nodePools[0].ami"]
    else:
        assert "ImagePullBackOff" in p["settings.nodePools[0].ami"]


@pytest.mark.parametrize("driver", ["host", "precompiled"])
@pytest.mark.parametrize("ami", [AMI, "ami-0123abcd", STOCK_PATH, "/team/gpu-images/ubuntu-24.04-r595/latest"])
def test_aws_accepts_a_named_image_for_every_pool(driver: str, ami: str) -> None:
    s = parse_settings({**AWS, "gpuStack": {"driver": driver}, "nodePools": [{"name": "gpu", "ami": ami}]})
    assert s.node_pools[0].ami == ami


@pytest.mark.parametrize("ami", [
    "ami-123",  # neither 8 nor 17 characters
    "ami-0123456789abcdef",  # 16
    "ami-0123456789ABCDEF0",  # EC2 ids are lowercase
    "ubuntu-24.04",  # neither an id nor a path
    "/team/has space/ami",
    "/a/b//c",
    "/" + "/".join(["l"] * 16),  # 16 levels: SSM allows 15
    "arn:aws:ssm:eu-west-1:123456789012:parameter/x",  # a path, not an ARN
])
def test_a_malformed_ami_is_refused_with_its_path(ami: str) -> None:
    p = problems({**AWS, "nodePools": [{"name": "gpu", "ami": ami}]})
    assert set(p) == {"settings.nodePools[0].ami"}


def test_an_ami_parameter_path_of_the_other_architecture_is_refused() -> None:
    arm_path = STOCK_PATH.replace("/amd64/", "/arm64/")
    p = problems({**AWS, "nodePools": [{"name": "gpu", "instanceType": "g6.xlarge", "ami": arm_path}]})
    assert set(p) == {"settings.nodePools[0].ami"}
    assert "names an image for arm64 but g6.xlarge is amd64" in p["settings.nodePools[0].ami"]
    t4g = {"name": "gpu", "instanceType": "g5g.xlarge", "gpu": {"count": 1, "productName": "T4G", "memoryGiB": 16}}
    graviton = parse_settings({**AWS, "nodePools": [{**t4g, "ami": arm_path}]})
    assert graviton.node_pools[0].ami == arm_path
    dlami = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
    assert set(problems({**AWS, "nodePools": [{**t4g, "ami": dlami}]})) == {"settings.nodePools[0].ami"}


def test_an_ami_is_optional_with_the_operator_driver() -> None:
    s = parse_settings({**AWS, "nodePools": [{"name": "gpu", "ami": AMI}, {"name": "stock"}]})
    assert [p.ami for p in s.node_pools] == [AMI, None]


# -- precompiled: what the GPU Operator supports --------------------------------------------------------


@pytest.mark.parametrize("version", ["595.91.07", "580.95.05", "latest", "sha256:" + "0" * 64, "R580", ""])
def test_precompiled_needs_a_branch_not_a_version(version: str) -> None:
    p = problems(gpu_operator_values("precompiled", {"driver": {"version": version}}))
    assert set(p) == {f"{VALUES}.driver.version"}
    assert "not a driver branch" in p[f"{VALUES}.driver.version"]


@pytest.mark.parametrize("branch", ["580", "595", 580])
def test_precompiled_accepts_a_branch_nvidia_publishes(branch: object) -> None:
    s = parse_settings(gpu_operator_values("precompiled", {"driver": {"version": branch}}))
    assert s.gpu_stack.driver == "precompiled"


def test_precompiled_refuses_an_unpublished_branch_unless_the_images_are_ones_own() -> None:
    p = problems(gpu_operator_values("precompiled", {"driver": {"version": "570"}}))
    assert set(p) == {f"{VALUES}.driver.version"}
    assert "580, 595" in p[f"{VALUES}.driver.version"]
    own = {"driver": {"version": "570", "repository": "registry.example.com/nvidia"}}
    assert parse_settings(gpu_operator_values("precompiled", own)).gpu_stack.driver == "precompiled"


def test_the_pinned_branch_is_one_nvidia_publishes_for_the_stock_ubuntu() -> None:
    assert pins.GPU_OPERATOR_PRECOMPILED_DRIVER_BRANCH in pins.GPU_OPERATOR_PRECOMPILED_BRANCHES["ubuntu24.04"]
    assert "/24.04/" in pins.UBUNTU_AMI_SSM_PARAMETER


def test_a_full_version_stays_allowed_with_the_compiled_driver() -> None:
    s = parse_settings(gpu_operator_values("operator", {"driver": {"version": "580.95.05"}}))
    assert s.gpu_stack.driver == "operator"


@pytest.mark.parametrize(("key", "feature"), [("gds", "GPUDirect Storage"), ("gdrcopy", "GDRCopy"),
                                              ("vgpuManager", "NVIDIA vGPU")])
def test_precompiled_refuses_what_precompiled_images_cannot_do(key: str, feature: str) -> None:
    p = problems(gpu_operator_values("precompiled", {key: {"enabled": True}}))
    assert set(p) == {f"{VALUES}.{key}.enabled"}
    assert feature in p[f"{VALUES}.{key}.enabled"]
    assert parse_settings(gpu_operator_values("operator", {key: {"enabled": True}})).gpu_stack.driver == "operator"


# -- one setting decides the mode -------------------------------------------------------------------------


@pytest.mark.parametrize(("driver", "values", "path"), [
    ("operator", {"usePrecompiled": True}, "driver.usePrecompiled"),
    ("host", {"usePrecompiled": "true"}, "driver.usePrecompiled"),
    ("precompiled", {"usePrecompiled": False}, "driver.usePrecompiled"),
    ("host", {"enabled": True}, "driver.enabled"),
    ("operator", {"enabled": False}, "driver.enabled"),
    ("precompiled", {"enabled": "false"}, "driver.enabled"),
])
def test_values_overrides_that_contradict_the_driver_mode_are_refused(
    driver: str, values: dict[str, Any], path: str
) -> None:
    p = problems(gpu_operator_values(driver, {"driver": values}))
    assert set(p) == {f"{VALUES}.{path}"}
    assert f"contradicts gpuStack.driver {driver}" in p[f"{VALUES}.{path}"]


@pytest.mark.parametrize(("driver", "values"), [
    ("operator", {"usePrecompiled": False, "enabled": True}),
    ("precompiled", {"usePrecompiled": True, "enabled": "true"}),
    ("host", {"usePrecompiled": False, "enabled": False}),
])
def test_values_overrides_that_agree_with_the_driver_mode_are_accepted(driver: str, values: dict[str, Any]) -> None:
    assert parse_settings(gpu_operator_values(driver, {"driver": values})).gpu_stack.driver == driver


def test_an_unknown_driver_mode_is_refused() -> None:
    p = problems({**AWS, "gpuStack": {"driver": "dkms"}})
    assert set(p) == {"settings.gpuStack.driver"}
    assert "'operator', 'precompiled' or 'host'" in p["settings.gpuStack.driver"]

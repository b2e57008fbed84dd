"""The image program's settings: defaults, and one message naming every bad field path."""

from __future__ import annotations

import pytest

from components import pins
from components.images.settings import image_settings_from_config, parse_image_settings
from components.settings.load import SettingsError


def _problems(raw: object) -> dict[str, str]:
    with pytest.raises(SettingsError) as err:
        parse_image_settings(raw, "test")
    return dict(err.value.problems)


def test_defaults_build_the_branch_the_gpu_operator_would_install() -> None:
    s = parse_image_settings({"region": "eu-west-1"}, "test")
    assert s.driver_branch == pins.GPU_OPERATOR_PRECOMPILED_DRIVER_BRANCH
    assert (s.architecture, s.kernel_modules, s.rebuild, s.build_on_up) == ("amd64", "open", "weekly", True)
    assert s.parameter == "/ck8s-gpu/images/gpu-node/ubuntu-24.04/amd64/nvidia-595-server-open"
    assert s.regions == ("eu-west-1",)
    assert s.efa is True  # one image line serves EFA pools and the rest


def test_every_bad_field_in_one_message() -> None:
    problems = _problems({
        "region": "eu-westish",
        "distributionRegions": ["us-east-1", "us-east-1", "eu-westish"],
        "architecture": "arm64",
        "driverBranch": "550",
        "buildInstanceType": "g6.xlarge",  # amd64 for an arm64 image
        "parameterName": "/aws/mine/amd64/x",
        "subnetId": "subnet-0123456789abcdef0",
        "tags": {"aws:owner": "me"},
    })
    assert set(problems) == {
        "image.region", "image.distributionRegions[1]", "image.distributionRegions[2]", "image.driverBranch",
        "image.buildInstanceType", "image.parameterName", "image.securityGroupIds", "image.tags"}
    assert "DRA needs 580+" in problems["image.driverBranch"]
    assert "g6.xlarge is amd64, the image is arm64" in problems["image.buildInstanceType"]


def test_parameter_names_follow_ssm_rules() -> None:
    assert "cannot begin with 'aws' or 'ssm'" in _problems({"region": "eu-west-1", "parameterName": "/SSM/x"})[
        "image.parameterName"]
    assert "not an SSM parameter path" in _problems({"region": "eu-west-1", "parameterName": "no/slash"})[
        "image.parameterName"]
    deep = "/" + "/".join(["a"] * 16)
    assert "image.parameterName" in _problems({"region": "eu-west-1", "parameterName": deep})
    # The arch word pools check against their instance type must match the image's.
    assert "names arm64 but the image is amd64" in _problems(
        {"region": "eu-west-1", "parameterName": "/img/arm64/latest"})["image.parameterName"]


def test_a_build_instance_needs_a_gpu_and_open_modules_need_turing_or_newer(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "not a GPU instance type" in _problems({"region": "eu-west-1", "buildInstanceType": "m7i.xlarge"})[
        "image.buildInstanceType"]
    # The instance table has no pre-Turing GPU today; a Volta one (p3) shows the rule.
    import components.images.settings as image_settings
    from components.instance_types import GpuFacts

    monkeypatch.setattr(image_settings, "gpu_facts", lambda t: GpuFacts(1, "Tesla V100-SXM2-16GB", 16384, "Volta"))
    assert "Turing or newer" in _problems({"region": "eu-west-1", "buildInstanceType": "p3.2xlarge"})[
        "image.kernelModules"]
    assert parse_image_settings({"region": "eu-west-1", "buildInstanceType": "p3.2xlarge",
                                 "kernelModules": "proprietary"}, "t").kernel_modules == "proprietary"


def test_structural_errors_name_their_paths_and_unknown_keys_are_refused() -> None:
    problems = _problems({"region": "eu-west-1", "architecture": "x86", "rootVolumeGib": 4, "buildOnUP": True})
    assert set(problems) == {"image.architecture", "image.rootVolumeGib", "image.buildOnUP"}
    assert "unknown setting" in problems["image.buildOnUP"]
    assert _problems(["eu-west-1"]) == {"image": "must be a mapping, got list"}


def test_the_config_key_is_required_and_others_of_the_namespace_are_refused() -> None:
    with pytest.raises(SettingsError) as err:
        image_settings_from_config({"ck8s-gpu-images:imag": {}, "aws:region": "eu-west-1"}, "stack x")
    assert dict(err.value.problems) == {
        "config.ck8s-gpu-images:imag": "unknown key; known: ck8s-gpu-images:image",
        "config.ck8s-gpu-images:image": "required"}

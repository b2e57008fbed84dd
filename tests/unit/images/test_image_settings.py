"""The image program's settings: defaults, and one message naming every bad field path."""

from __future__ import annotations

import pytest

from components.images.settings import image_settings_from_config, parse_image_settings
from components.settings.load import SettingsError
from components.tables import pins
from tests.unit.helpers import by_path, raised_problems

PIN = {"kubernetes": {"track": "1.34-classic", "snap": {"version": "v1.34.4", "revision": 5325}}}
ARM_PIN = {"kubernetes": {"snap": {"version": "v1.34.4", "revision": 5328}}}


def _problems(raw: object) -> dict[str, str]:
    return by_path(raised_problems(parse_image_settings, raw, "test"))


def test_defaults_build_the_branch_the_gpu_operator_would_install() -> None:
    s = parse_image_settings({"region": "eu-north-1", **PIN}, "test")
    assert s.driver_branch == pins.GPU_OPERATOR_PRECOMPILED_DRIVER_BRANCH
    assert (s.architecture, s.kernel_modules, s.rebuild, s.build_on_up) == ("amd64", "open", "weekly", True)
    assert s.parameter == "/ck8s-gpu/images/gpu-node/ubuntu-24.04/amd64/nvidia-595-server-open"
    assert s.regions == ("eu-north-1",)
    assert s.with_efa is True  # one image line serves EFA pools and the rest
    assert (s.role, s.build_instance, s.root_volume, s.preload, s.mirror) == ("gpu-node", "g6.xlarge", 60, True, None)
    assert (s.snap.version, s.snap.revision, s.track) == ("v1.34.4", 5325, "1.34-classic")


def test_a_control_plane_line_has_no_driver_and_builds_without_a_gpu() -> None:
    s = parse_image_settings({"region": "eu-north-1", "role": "control-plane", **PIN}, "test")
    assert (s.with_efa, s.build_instance, s.root_volume) == (False, "m7i.large", 40)
    assert s.parameter == "/ck8s-gpu/images/control-plane/ubuntu-24.04/amd64/k8s-1.34-classic"
    arm = parse_image_settings({"region": "eu-north-1", "role": "control-plane", "architecture": "arm64",
                                **ARM_PIN}, "t")
    assert arm.build_instance == "m7g.large"
    problems = _problems({"region": "eu-north-1", "role": "control-plane", "driverBranch": "595", "efa": True,
                          "buildInstanceType": "g6.xlarge", **PIN})
    assert set(problems) == {"image.driverBranch", "image.efa", "image.buildInstanceType"}
    assert "has a GPU" in problems["image.buildInstanceType"]
    wrong_arch = _problems({"region": "eu-north-1", "role": "control-plane", "buildInstanceType": "m7g.large", **PIN})
    assert "m7g.large is arm64, the image is amd64" in wrong_arch["image.buildInstanceType"]


def test_bad_role_and_a_missing_snap_pin_are_named() -> None:
    problems = _problems({"region": "eu-north-1", "role": "worker", **PIN})
    assert set(problems) == {"image.role"}
    problems = _problems({"region": "eu-north-1"})
    assert set(problems) == {"image.kubernetes.snap"} and "required" in problems["image.kubernetes.snap"]
    problems = _problems({"region": "eu-north-1", "kubernetes": {"snap": {"version": "1.34.4", "revision": "5325"}}})
    assert set(problems) == {"image.kubernetes.snap.version", "image.kubernetes.snap.revision"}
    problems = _problems({"region": "eu-north-1", "kubernetes": {"track": "1.35-classic", "snap": {
        "version": "v1.34.4", "revision": 5325}}})
    assert "v1.34.4 is not in track 1.35-classic" in problems["image.kubernetes.snap.version"]
    assert "is not a track" in _problems({"region": "eu-north-1", "kubernetes": {"track": "latest", "snap": {
        "version": "v1.34.4", "revision": 5325}}})["image.kubernetes.track"]


def test_a_revision_is_per_architecture() -> None:
    """canonical/k8s-operator#947: v1.34.4 is 5325 on amd64 and 5328 on arm64."""
    problems = _problems({"region": "eu-north-1", "role": "control-plane", "architecture": "arm64", **PIN})
    assert problems["image.kubernetes.snap.revision"] == (
        "5325 is the amd64 revision of k8s v1.34.4, not v1.34.4's arm64 one (5328): a revision is one version on "
        "one architecture (`snapcraft status k8s`; components/tables/pins.py KNOWN_SNAP_REVISIONS); set the "
        "version's own revisions with it")
    assert "image.kubernetes.snap.revision" in _problems({"region": "eu-north-1", **ARM_PIN})
    unknown = {"kubernetes": {"snap": {"version": "v1.34.9", "revision": 5999}}}  # not in the table: not judged
    assert parse_image_settings({"region": "eu-north-1", **unknown}, "t").snap.revision == 5999


def test_mirror_and_preload() -> None:
    s = parse_image_settings({"region": "eu-north-1", "mirror": "123456789012.dkr.ecr.eu-north-1.amazonaws.com",
                              "preload": False, "rootVolumeGib": 80, **PIN}, "t")
    assert (s.mirror, s.preload, s.root_volume) == ("123456789012.dkr.ecr.eu-north-1.amazonaws.com", False, 80)
    assert set(_problems({"region": "eu-north-1", "mirror": "https://Mirror", **PIN})) == {"image.mirror"}


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
        **PIN,
    })
    assert set(problems) == {
        "image.region", "image.distributionRegions[1]", "image.distributionRegions[2]", "image.driverBranch",
        "image.buildInstanceType", "image.parameterName", "image.securityGroupIds", "image.tags",
        "image.kubernetes.snap.revision"}  # 5325 is amd64's
    assert "DRA needs 580+" in problems["image.driverBranch"]
    assert "g6.xlarge is amd64, the image is arm64" in problems["image.buildInstanceType"]


def test_parameter_names_follow_ssm_rules() -> None:
    assert "cannot begin with 'aws' or 'ssm'" in _problems({"region": "eu-north-1", "parameterName": "/SSM/x", **PIN})[
        "image.parameterName"]
    assert "not an SSM parameter path" in _problems({"region": "eu-north-1", "parameterName": "no/slash", **PIN})[
        "image.parameterName"]
    deep = "/" + "/".join(["a"] * 16)
    assert "image.parameterName" in _problems({"region": "eu-north-1", "parameterName": deep, **PIN})
    # The arch word pools check against their instance type must match the image's.
    assert "names arm64 but the image is amd64" in _problems(
        {"region": "eu-north-1", "parameterName": "/img/arm64/latest", **PIN})["image.parameterName"]


def test_a_build_instance_needs_a_gpu_and_open_modules_need_turing_or_newer(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "not a GPU instance type" in _problems({"region": "eu-north-1", "buildInstanceType": "m7i.xlarge", **PIN})[
        "image.buildInstanceType"]
    # The instance table has no pre-Turing GPU today; a Volta one (p3) shows the rule.
    import components.images.settings as image_settings
    from components.tables.instance_types import GpuFacts

    monkeypatch.setattr(image_settings, "gpu_facts", lambda t: GpuFacts(1, "Tesla V100-SXM2-16GB", 16384, "Volta"))
    assert "Turing or newer" in _problems({"region": "eu-north-1", "buildInstanceType": "p3.2xlarge", **PIN})[
        "image.kernelModules"]
    assert parse_image_settings({"region": "eu-north-1", "buildInstanceType": "p3.2xlarge",
                                 "kernelModules": "proprietary", **PIN}, "t").kernel_modules == "proprietary"


def test_structural_errors_name_their_paths_and_unknown_keys_are_refused() -> None:
    problems = _problems({"region": "eu-north-1", "architecture": "x86", "rootVolumeGib": 4, "buildOnUP": True, **PIN})
    assert set(problems) == {"image.architecture", "image.rootVolumeGib", "image.buildOnUP"}
    assert "unknown setting" in problems["image.buildOnUP"]
    assert _problems(["eu-north-1"]) == {"image": "must be a mapping, got list"}


def test_the_config_key_is_required_and_others_of_the_namespace_are_refused() -> None:
    with pytest.raises(SettingsError) as err:
        image_settings_from_config({"ck8s-gpu-images:imag": {}, "aws:region": "eu-north-1"}, "stack x")
    assert dict(err.value.problems) == {
        "config.ck8s-gpu-images:imag": "unknown key; known: ck8s-gpu-images:image",
        "config.ck8s-gpu-images:image": "required"}


def test_keep_images_defaults_to_two_months_of_weekly_builds_and_is_bounded() -> None:
    """docs/adr/0057: 8 by default; null keeps every AMI; 1-1000 (the lifecycle count filter's range), a
    whole number (no `true`, no "8")."""
    assert parse_image_settings({"region": "eu-north-1", **PIN}, "test").keep_images == 8
    assert parse_image_settings({"region": "eu-north-1", "keepImages": None, **PIN}, "test").keep_images is None
    assert parse_image_settings({"region": "eu-north-1", "keepImages": 1000, **PIN}, "test").keep_images == 1000
    for bad in (0, 1001, True, "8", 2.5):
        assert set(_problems({"region": "eu-north-1", "keepImages": bad, **PIN})) == {"image.keepImages"}, bad

"""The `images/` program under the mock engine: what it registers, and that aws-dev boots its image."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from components import PROJECT_DIR, pins
from components.images.document import document_problems
from components.images.settings import image_settings_from_config
from components.plan.mockengine import PlanRun, Recorded, run_program
from components.plan.names import recorded_problems
from components.validate import load_stack
from tests.helpers.registrations import resources_only, watch_registrations

PROGRAM = PROJECT_DIR / "images" / "__main__.py"
STACKS = sorted((PROJECT_DIR / "images").glob("Pulumi.*.yaml"))


def _config(path: Path) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text())["config"])


def _run(config: dict[str, Any], stack: str = "eu-west-1") -> PlanRun:
    return run_program(lambda: runpy.run_path(str(PROGRAM), run_name="__main__"), config, stack=stack,
                       project="ck8s-gpu-images", region=str(config.get("ck8s-gpu-images:image", {}).get("region", "")))


def _one(run: PlanRun, token: str) -> Recorded:
    found = [r for r in run.resources if r.type == token]
    assert len(found) == 1, f"{token}: {[r.name for r in found]}"
    return found[0]


def test_there_is_a_committed_image_stack() -> None:
    assert [p.name for p in STACKS] == ["Pulumi.eu-west-1.yaml"]


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.stem)
def test_the_committed_stack_plans_with_names_aws_accepts(path: Path) -> None:
    run = _run(_config(path))
    assert recorded_problems(run.resources) == []
    s = image_settings_from_config(_config(path), str(path))
    recipe = _one(run, "aws:imagebuilder/imageRecipe:ImageRecipe")
    assert recipe.inputs["parentImage"] == "ssm:" + pins.UBUNTU_AMI_SSM_PARAMETER.format(arch=s.architecture)
    assert recipe.inputs["blockDeviceMappings"][0]["ebs"]["encrypted"] is True
    component = _one(run, "aws:imagebuilder/component:Component")
    assert document_problems(yaml.safe_load(component.inputs["data"])) == []
    infrastructure = _one(run, "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration")
    assert infrastructure.inputs["instanceTypes"] == [s.build_instance_type]
    assert infrastructure.inputs["instanceMetadataOptions"]["httpTokens"] == "required"
    assert infrastructure.inputs["terminateInstanceOnFailure"] is True
    distribution = _one(run, "aws:imagebuilder/distributionConfiguration:DistributionConfiguration")
    regions = [d["region"] for d in distribution.inputs["distributions"]]
    assert regions == list(s.regions)
    for d in distribution.inputs["distributions"]:
        assert d["ssmParameterConfigurations"] == [{"parameterName": s.parameter, "dataType": "aws:ec2:image"}]
        assert "{{ imagebuilder:buildDate }}" in d["amiDistributionConfiguration"]["name"]
    pipeline = _one(run, "aws:imagebuilder/imagePipeline:ImagePipeline")
    assert pipeline.inputs["imageTestsConfiguration"]["imageTestsEnabled"] is True
    assert ("schedule" in pipeline.inputs) == (s.rebuild == "weekly")
    first = _one(run, "aws:imagebuilder/image:Image")
    assert first.timeouts.get("create") == "120m"
    assert run.outputs["parameter"] == s.parameter


def test_a_changed_document_is_a_new_component_and_recipe_version() -> None:
    """Image Builder refuses a second component or recipe with the same name and version; Pulumi
    creates the replacement before deleting the old one, so any change must move the version."""
    base = _config(STACKS[0])
    other = {**base, "ck8s-gpu-images:image": {**base["ck8s-gpu-images:image"], "driverBranch": "580"}}
    a, b = _run(base), _run(other)
    for token in ("aws:imagebuilder/component:Component", "aws:imagebuilder/imageRecipe:ImageRecipe"):
        assert _one(a, token).inputs["version"] != _one(b, token).inputs["version"]


def test_manual_rebuild_has_no_schedule_and_no_first_build_when_asked() -> None:
    base = _config(STACKS[0])
    cfg = {**base, "ck8s-gpu-images:image": {**base["ck8s-gpu-images:image"], "rebuild": "manual",
                                             "buildOnUp": False}}
    run = _run(cfg)
    assert "schedule" not in _one(run, "aws:imagebuilder/imagePipeline:ImagePipeline").inputs
    assert [r for r in run.resources if r.type == "aws:imagebuilder/image:Image"] == []


def test_bad_settings_register_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = watch_registrations(monkeypatch)
    with pytest.raises(pulumi.RunError) as err:
        _run({"ck8s-gpu-images:image": {"region": "eu-west-1", "driverBranch": "470", "subnetId": "subnet-x"}})
    message = str(err.value)
    assert "image.driverBranch" in message and "image.subnetId" in message and "Traceback" not in message
    assert resources_only(recorded) == []


def test_aws_dev_pools_boot_the_image_the_committed_image_stack_publishes() -> None:
    """aws-dev runs `gpuStack.driver: host` (docs/adr/0020): every pool names the parameter the image
    program writes, in a region the image is distributed to, for the pool's architecture."""
    dev = load_stack(PROJECT_DIR / "stacks" / "Pulumi.aws-dev.yaml")
    assert dev.gpu_stack.driver == "host"
    published = {}
    for path in STACKS:
        s = image_settings_from_config(_config(path), str(path))
        for region in s.regions:
            published[(region, s.parameter)] = s.architecture
    from components.instance_types import arch_for_instance_type

    for pool in dev.node_pools:
        assert (dev.region, pool.ami) in published, f"pool {pool.name}: {pool.ami} is not built for {dev.region}"
        assert published[(dev.region, pool.ami)] == arch_for_instance_type(pool.instance_type)

"""The `images/` program under the mock engine: what it registers, and that aws-dev boots its image."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from components import PROJECT_DIR
from components.images.document import document_problems
from components.images.plan import FIRST_BUILD_TAG, LIFECYCLE_POLICY_ARN
from components.images.settings import image_settings_from_config
from components.plan.mockengine import PlanRun, Recorded, run_program
from components.plan.names import recorded_problems
from components.tables import pins
from components.validate import load_stack
from tests.helpers.registrations import resources_only, watch_registrations

PROGRAM = PROJECT_DIR / "images" / "__main__.py"
STACKS = sorted((PROJECT_DIR / "images").glob("Pulumi.*.yaml"))
GPU_STACK = PROJECT_DIR / "images" / "Pulumi.us-east-1.yaml"


def _config(path: Path) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text())["config"])


def _run(config: dict[str, Any], stack: str = "us-east-1") -> PlanRun:
    return run_program(lambda: runpy.run_path(str(PROGRAM), run_name="__main__"), config, stack=stack,
                       project="ck8s-gpu-images", region=str(config.get("ck8s-gpu-images:image", {}).get("region", "")))


def _one(run: PlanRun, token: str) -> Recorded:
    found = [r for r in run.resources if r.type == token]
    assert len(found) == 1, f"{token}: {[r.name for r in found]}"
    return found[0]


def test_there_are_committed_image_stacks_for_both_roles() -> None:
    assert [p.name for p in STACKS] == ["Pulumi.us-east-1-airgap-control-plane.yaml", "Pulumi.us-east-1-airgap.yaml",
                                        "Pulumi.us-east-1-control-plane.yaml", "Pulumi.us-east-1.yaml"]
    roles = {image_settings_from_config(_config(p), str(p)).role for p in STACKS}
    assert roles == {"gpu-node", "control-plane"}


def test_every_cluster_stack_image_is_published_by_an_image_stack_in_its_region() -> None:
    """A stack's controlPlane.ami / nodePools[].ami under /ck8s-gpu/images/ is some image stack's
    parameter in the cluster's region (its region or distributionRegions), with the cluster's snap
    pin and, for a stack with a mirror, the same mirror (its tars are named by mirrored refs)."""
    from components.settings.load import read_stack_file
    from components.validate import parse

    published = {}
    for path in STACKS:
        s = image_settings_from_config(_config(path), str(path))
        for region in s.regions:
            published[(s.parameter, region)] = s
    for stack in sorted((PROJECT_DIR / "stacks").glob("Pulumi.aws-*.yaml")):
        c = parse(read_stack_file(stack)["ck8s-gpu:settings"], str(stack))
        amis = [c.control_plane.ami, *(p.ami for p in c.node_pools)]
        for ami in (a for a in amis if a and a.startswith("/ck8s-gpu/images/")):
            image = published.get((ami, c.region))
            assert image is not None, f"{stack.name}: {ami} is published by no image stack in {c.region}"
            assert c.kubernetes.snap is not None and image.kubernetes.snap is not None
            assert image.kubernetes.snap.revision == c.kubernetes.snap.revisions[image.architecture], stack.name
            assert image.mirror == c.images.mirror, f"{stack.name}: {ami} carries images named for {image.mirror}"
    for path in STACKS:  # the cluster's pin (canonical/k8s-operator#947: 1.34-classic v1.34.4 amd64 5325)
        s = image_settings_from_config(_config(path), str(path))
        assert (s.track, s.snap.version, s.snap.revision, s.architecture) == ("1.34-classic", "v1.34.4", 5325, "amd64")


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.stem)
def test_the_committed_stack_plans_with_names_aws_accepts(path: Path) -> None:
    run = _run(_config(path), stack=path.stem.removeprefix("Pulumi."))
    assert recorded_problems(run.resources) == []
    s = image_settings_from_config(_config(path), str(path))
    recipe = _one(run, "aws:imagebuilder/imageRecipe:ImageRecipe")
    assert recipe.inputs["parentImage"] == "ssm:" + pins.UBUNTU_AMI_SSM_PARAMETER.format(arch=s.architecture)
    assert recipe.inputs["blockDeviceMappings"][0]["ebs"]["encrypted"] is True
    components = [r for r in run.resources if r.type == "aws:imagebuilder/component:Component"]
    assert len(components) == (2 if s.role == "gpu-node" else 1)
    for component in components:
        assert document_problems(yaml.safe_load(component.inputs["data"])) == []
    assert len(recipe.inputs["components"]) == len(components)
    assert recipe.inputs["blockDeviceMappings"][0]["ebs"]["volumeSize"] == s.root_volume
    infrastructure = _one(run, "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration")
    assert infrastructure.inputs["instanceTypes"] == [s.build_instance]
    assert infrastructure.inputs["instanceMetadataOptions"]["httpTokens"] == "required"
    assert infrastructure.inputs["terminateInstanceOnFailure"] is True
    distribution = _one(run, "aws:imagebuilder/distributionConfiguration:DistributionConfiguration")
    regions = [d["region"] for d in distribution.inputs["distributions"]]
    assert regions == list(s.regions)
    for d in distribution.inputs["distributions"]:
        assert d["ssmParameterConfigurations"] == [{"parameterName": s.parameter, "dataType": "aws:ec2:image"}]
        assert "{{ imagebuilder:buildDate }}" in d["amiDistributionConfiguration"]["name"]
        tags = d["amiDistributionConfiguration"]["amiTags"]
        assert tags["ck8s-gpu:role"] == s.role
        assert (tags["ck8s-gpu:k8s-snap-version"], tags["ck8s-gpu:k8s-snap-revision"]) == ("v1.34.4", "5325")
        assert int(tags["ck8s-gpu:images"]) > 10
        assert tags.get("ck8s-gpu:nvidia-container-toolkit") == ("1.20.0" if s.role == "gpu-node" else None)
        assert tags.get("ck8s-gpu:fabric-manager-mode") == (s.fabric_manager_mode if s.role == "gpu-node" else None)
    pipeline = _one(run, "aws:imagebuilder/imagePipeline:ImagePipeline")
    assert pipeline.inputs["imageTestsConfiguration"]["imageTestsEnabled"] is True
    assert ("schedule" in pipeline.inputs) == (s.rebuild == "weekly")
    first = _one(run, "aws:imagebuilder/image:Image")
    assert first.timeouts.get("create") == "120m"
    assert first.inputs["tags"] == FIRST_BUILD_TAG  # the lifecycle policy leaves the stack's own image alone
    _assert_lifecycle(run, s.keep_images, recipe.inputs["name"])
    assert run.outputs["parameter"] == s.parameter
    assert _one(run, "ck8s-gpu:index:NodeImage").name == f"{s.role}-image"  # gpu-node-image: as before


def _assert_lifecycle(run: PlanRun, keep: int | None, recipe: str) -> None:
    """keepImages: a lifecycle policy deleting the line's AMIs (and snapshots) beyond the newest
    `keep`, every recipe version, never the first build nor one launched from within `keep` weeks."""
    policy = _one(run, "aws:imagebuilder/lifecyclePolicy:LifecyclePolicy")
    assert policy.inputs["resourceType"] == "AMI_IMAGE"
    assert policy.inputs["resourceSelection"] == {"recipes": [{"name": recipe, "semanticVersion": "x.x.x"}]}
    [detail] = policy.inputs["policyDetails"]
    assert detail["action"] == {"type": "DELETE", "includeResources": {"amis": True, "snapshots": True}}
    assert detail["filter"] == {"type": "COUNT", "value": keep}
    assert detail["exclusionRules"] == {"tagMap": FIRST_BUILD_TAG,
                                        "amis": {"lastLaunched": {"unit": "WEEKS", "value": keep}}}
    roles = {r.name: r for r in run.resources if r.type == "aws:iam/role:Role"}
    role = next(r for name, r in roles.items() if name.endswith("-lifecycle-role"))
    assert len(role.inputs["name"]) <= 64 and role.inputs["name"].endswith("-lifecycle")
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]["Principal"]
    assert trust == {"Service": "imagebuilder.amazonaws.com"}
    attachment = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
    attached = [r.inputs["policyArn"] for r in run.resources
                if r.type == attachment and r.name.endswith("-lifecycle-execution")]
    assert attached == [LIFECYCLE_POLICY_ARN]


def test_keep_images_null_makes_no_lifecycle_policy() -> None:
    base = _config(GPU_STACK)
    run = _run({**base, "ck8s-gpu-images:image": {**base["ck8s-gpu-images:image"], "keepImages": None}})
    assert [r for r in run.resources if r.type == "aws:imagebuilder/lifecyclePolicy:LifecyclePolicy"] == []
    assert not any(r.name.endswith("-lifecycle-role") for r in run.resources)
    three = _run({**base, "ck8s-gpu-images:image": {**base["ck8s-gpu-images:image"], "keepImages": 3}})
    _assert_lifecycle(three, 3, _one(three, "aws:imagebuilder/imageRecipe:ImageRecipe").inputs["name"])


def test_a_changed_document_is_a_new_component_and_recipe_version() -> None:
    """Image Builder refuses a second component or recipe with the same name and version; Pulumi
    creates the replacement before deleting the old one, so any change must move the version."""
    base = _config(GPU_STACK)
    other = {**base, "ck8s-gpu-images:image": {**base["ck8s-gpu-images:image"], "driverBranch": "580"}}
    a, b = _run(base), _run(other)
    token = "aws:imagebuilder/component:Component"
    versions = [{r.name: r.inputs["version"] for r in run.resources if r.type == token} for run in (a, b)]
    assert versions[0]["gpu-node-image-component"] != versions[1]["gpu-node-image-component"]
    assert versions[0]["gpu-node-image-component-carried"] == versions[1]["gpu-node-image-component-carried"]
    recipe = "aws:imagebuilder/imageRecipe:ImageRecipe"
    assert _one(a, recipe).inputs["version"] != _one(b, recipe).inputs["version"]
    pinned = {**base, "ck8s-gpu-images:image": {**base["ck8s-gpu-images:image"], "kubernetes": {
        "snap": {"version": "v1.34.5", "revision": 5400}}}}
    moved = {r.name: r.inputs["version"] for r in _run(pinned).resources if r.type == token}
    assert moved["gpu-node-image-component-carried"] != versions[0]["gpu-node-image-component-carried"]


def test_manual_rebuild_has_no_schedule_and_no_first_build_when_asked() -> None:
    base = _config(GPU_STACK)
    cfg = {**base, "ck8s-gpu-images:image": {**base["ck8s-gpu-images:image"], "rebuild": "manual",
                                             "buildOnUp": False}}
    run = _run(cfg)
    assert "schedule" not in _one(run, "aws:imagebuilder/imagePipeline:ImagePipeline").inputs
    assert [r for r in run.resources if r.type == "aws:imagebuilder/image:Image"] == []


def test_bad_settings_register_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = watch_registrations(monkeypatch)
    with pytest.raises(pulumi.RunError) as err:
        _run({"ck8s-gpu-images:image": {"region": "eu-north-1", "driverBranch": "470", "subnetId": "subnet-x"}})
    assert "image.kubernetes.snap" in str(err.value)
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
    from components.tables.instance_types import arch_for_instance_type

    for pool in dev.node_pools:
        assert (dev.region, pool.ami) in published, f"pool {pool.name}: {pool.ami} is not built for {dev.region}"
        assert published[(dev.region, pool.ami)] == arch_for_instance_type(pool.instance_type)

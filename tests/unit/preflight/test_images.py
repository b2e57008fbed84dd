"""Pre-flight of the node images (components/preflight/images.py): they exist in the region and
their image program tags (ck8s-gpu:role, k8s-snap-version, k8s-snap-revision, images) carry what
the stack relies on. Recorded answers (tests/data/aws_responses/image*.json) replay through real
boto3 clients; the rest runs over plain facts."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from components.preflight import images
from components.preflight.checks import Finding, check, failed, image_sources
from components.preflight.facts import RegionFacts
from components.preflight.quotas import BY_CODE
from components.preflight.run import preflight
from components.settings.load import read_stack_file
from components.settings.model import Settings
from components.validate import from_config
from tests.unit.preflight.recorded import RecordedSession

ROOT = Path(__file__).resolve().parents[3]
TEMPLATE = ROOT / "tests" / "data" / "stamping" / "Pulumi.gpu-prod.yaml"
NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
CP = "/ck8s-gpu/images/control-plane/ubuntu-24.04/amd64/k8s-1.34-classic"
GPU = "/ck8s-gpu/images/gpu-node/ubuntu-24.04/amd64/nvidia-595-server-open"
CP_ID, GPU_ID, HAND = "ami-0c1d2e3f4a5b60701", "ami-0c1d2e3f4a5b60702", "ami-0d2e3f4a5b6c70803"
CANONICAL = "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"
PIN = {"version": "v1.34.4", "revisions": {"amd64": 5325, "arm64": 5328}, "fromImage": True}


def _stack(name: str) -> Settings:
    return from_config(read_stack_file(ROOT / "stacks" / f"Pulumi.{name}.yaml"), name, offline=True)


def _kinds(findings: list[Finding]) -> list[tuple[str, str, str]]:
    return [(f.kind, f.severity, f.subject) for f in findings]


def _offline_gpu_prod(pool_ami: str = HAND) -> Settings:
    """The gpu-prod template made offline in us-east-1, validated like a stack file."""
    config = copy.deepcopy(read_stack_file(TEMPLATE))
    raw: dict[str, Any] = config["ck8s-gpu:settings"]
    raw.pop("backup")  # an offline VPC cannot reach another Region's bucket (offline_rules)
    raw["offline"] = True
    raw["kubernetes"] = {"track": "1.34-classic", "snap": PIN}
    raw["controlPlane"]["ami"] = CP
    for pool in raw["nodePools"]:
        pool["ami"] = pool_ami
    raw["gpuStack"] = {"driver": "host"}
    raw["images"] = {"preloaded": True, "mirror": "123456789012.dkr.ecr.us-east-1.amazonaws.com",
                     "pullThroughCache": "create"}
    raw["network"].update({"natGateways": "none", "endpoints": "create"})
    return from_config(config, "gpu-prod", offline=True)


# --- which images the stack boots ---

def test_the_control_planes_own_image_replaces_canonicals_parameter() -> None:
    s = _stack("aws-prod")
    assert image_sources(s) == {CP: ["settings.controlPlane.ami"],
                                GPU: ["settings.nodePools[0].ami", "settings.nodePools[1].ami"]}
    plain = s.model_copy(update={"control_plane": s.control_plane.model_copy(update={"ami": None})})
    assert image_sources(plain)[CANONICAL] == ["settings.controlPlane.instanceType"]


# --- recorded answers ---

def test_aws_prod_with_its_images_built_and_tagged_passes() -> None:
    session = RecordedSession("images-tagged.json")
    findings = preflight(_stack("aws-prod"), session, clock=lambda: NOW)
    assert findings == [] and not failed(findings)
    # Each own parameter read, then the AMI it names described (its State and Tags); Canonical's
    # parameter is not asked: no node boots it.
    assert sorted(p["Name"] for p in session.called("ssm.GetParameter")) == [CP, GPU]
    assert sorted(p["ImageIds"][0] for p in session.called("ec2.DescribeImages")) == [CP_ID, GPU_ID]


def test_an_image_built_with_another_snap_pin_fails_and_a_deregistered_one_is_missing() -> None:
    findings = preflight(_stack("aws-prod"), RecordedSession("image-snap-mismatch.json"), clock=lambda: NOW)
    assert _kinds(findings) == [
        ("ami-missing", "error", "settings.controlPlane.ami"),
        ("image-snap-mismatch", "error",
         "settings.nodePools[0].ami, settings.nodePools[1].ami, settings.kubernetes.snap"),
        # built before the image program installed the toolkit: aws-prod's gpuStack.toolkit host needs it
        ("image-no-toolkit", "error",
         "settings.nodePools[0].ami, settings.nodePools[1].ami, settings.gpuStack.toolkit")]
    gone, snap, _ = findings
    assert f"{CP} names {CP_ID}, which is deregistered in us-east-1" in gone.message
    assert "`pulumi up -C images`" in gone.message
    assert f"{GPU} ({GPU_ID}) carries k8s v1.34.3 revision 5201" in snap.message
    assert "pins v1.34.4 revision 5325 for amd64" in snap.message
    assert "rebuild the image with this pin" in snap.message and "move the pin" in snap.message


def test_offline_with_an_image_the_image_program_did_not_tag_is_an_error() -> None:
    session = RecordedSession("image-untagged-offline.json")
    findings = preflight(_offline_gpu_prod(), session)
    # One finding for the image both pools boot; the control planes' image is the program's.
    assert _kinds(findings) == [
        ("image-untagged", "error", "settings.nodePools[0].ami, settings.nodePools[1].ami, settings.offline"),
        ("cache-first-pull", "warning", "settings.images.pullThroughCache")]
    assert f"{HAND} carries no ck8s-gpu: tags" in findings[0].message
    assert "shared from another account" in findings[0].message
    assert session.called("ec2.DescribeImages") == [{"ImageIds": [CP_ID]}, {"ImageIds": [HAND]}]
    # Offline and NAT-less by design: no "nodes cannot reach the Snap Store" warning.
    assert "no-egress" not in {f.kind for f in findings}


def test_an_ecr_mirror_adds_its_endpoint_services_to_the_endpoints_checked() -> None:
    session = RecordedSession("image-untagged-offline.json")
    preflight(_offline_gpu_prod(), session)
    [asked] = session.called("ec2.DescribeVpcEndpointServices")
    names = asked["Filters"][0]["Values"]
    assert "com.amazonaws.us-east-1.ecr.api" in names and "com.amazonaws.us-east-1.ecr.dkr" in names


def test_an_ecr_endpoint_service_the_region_lacks_fails_endpoints_create() -> None:
    session = RecordedSession("image-untagged-offline.json")
    answer = session.doc["responses"]["ec2.DescribeVpcEndpointServices"]
    dkr = "com.amazonaws.us-east-1.ecr.dkr"
    answer["ServiceNames"] = [n for n in answer["ServiceNames"] if n != dkr]
    answer["ServiceDetails"] = [d for d in answer["ServiceDetails"] if d["ServiceName"] != dkr]
    missing = [f for f in preflight(_offline_gpu_prod(), session) if f.kind == "endpoint-service-missing"]
    assert [f.subject for f in missing] == ["settings.network.endpoints"]
    assert f"{dkr} is not an endpoint service in us-east-1" in missing[0].message


def test_an_image_that_cannot_be_described_is_could_not_check() -> None:
    session = RecordedSession("images-tagged.json")
    session.doc["responses"]["ec2.DescribeImages"] = {
        "Error": {"Code": "UnauthorizedOperation", "Message": "You are not authorized to perform this operation."}}
    findings = preflight(_stack("aws-prod"), session, clock=lambda: NOW)
    assert _kinds(findings) == [
        ("could-not-check", "error", "settings.controlPlane.ami"),
        ("could-not-check", "error", "settings.nodePools[0].ami, settings.nodePools[1].ami")]
    assert all("allow ec2:DescribeImages" in f.message and "UnauthorizedOperation" in f.message for f in findings)


# --- plain facts ---

def _facts(settings: Settings, tags: dict[str, dict[str, str]], **over: object) -> RegionFacts:
    zones = ("us-east-1a", "us-east-1b", "us-east-1c")
    types = {settings.control_plane.instance_type, *(p.instance_type for p in settings.node_pools)}
    base: dict[str, object] = {
        "region": "us-east-1", "zones": zones, "offerings": {t: frozenset(zones) for t in types},
        "vcpus": {"m7i.xlarge": 4}, "amis": {s: "ami-0123456789abcdef0" for s in image_sources(settings)},
        "image_tags": tags, "quotas": {q: 10_000.0 for q in BY_CODE}}
    base.update(over)
    return RegionFacts(**base)  # type: ignore[arg-type]


def _tags(role: str, revision: str = "5325", count: str = "12", version: str = "v1.34.4") -> dict[str, str]:
    """What the image program tags (components/images/plan.py): a gpu-node image its toolkit too."""
    return {images.TAG_ROLE: role, images.TAG_SNAP_VERSION: version, images.TAG_SNAP_REVISION: revision,
            images.TAG_IMAGES: count, **({images.TAG_TOOLKIT: "1.20.0"} if role == "gpu-node" else {})}


def _settings(**extra: object) -> Settings:
    raw: dict[str, object] = {
        "platform": "aws", "region": "us-east-1",
        "kubernetes": {"track": "1.34-classic", "snap": PIN}, "controlPlane": {"ami": CP},
        "gpuStack": {"driver": "host"}, "images": {"preloaded": True},
        "nodePools": [{"name": "l4", "instanceType": "g6.12xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 3,
                       "ami": GPU}]}
    raw.update(extra)
    return Settings.model_validate(raw)


def test_matching_tags_pass() -> None:
    s = _settings()
    assert check(s, _facts(s, {CP: _tags("control-plane"), GPU: _tags("gpu-node")})) == []


@pytest.mark.parametrize(("tags", "said"), [
    (_tags("gpu-node", revision="5328"), "carries k8s v1.34.4 revision 5328"),  # arm64's number
    (_tags("gpu-node", version="v1.34.3"), "carries k8s v1.34.3 revision 5325"),
    ({images.TAG_ROLE: "gpu-node", images.TAG_IMAGES: "12"}, "has no ck8s-gpu:k8s-snap-revision tag"),
])
def test_a_snap_the_pin_does_not_name_fails(tags: dict[str, str], said: str) -> None:
    s = _settings()
    [f] = check(s, _facts(s, {CP: _tags("control-plane"), GPU: tags}))
    assert (f.kind, f.severity, f.subject) == ("image-snap-mismatch", "error",
                                               "settings.nodePools[0].ami, settings.kubernetes.snap")
    assert said in f.message


def test_without_from_image_the_images_snap_is_not_checked() -> None:
    s = _settings(kubernetes={"track": "1.34-classic", "snap": {**PIN, "fromImage": False}})
    assert check(s, _facts(s, {CP: _tags("control-plane"), GPU: _tags("gpu-node", revision="1")})) == []


@pytest.mark.parametrize("count", ["0", None, "many"])
def test_preloaded_needs_images_in_the_image(count: str | None) -> None:
    s = _settings()
    gpu = _tags("gpu-node")
    gpu.pop(images.TAG_IMAGES)
    if count is not None:
        gpu[images.TAG_IMAGES] = count
    [f] = check(s, _facts(s, {CP: _tags("control-plane"), GPU: gpu}))
    assert (f.kind, f.subject) == ("image-not-preloaded", "settings.nodePools[0].ami, settings.images.preloaded")
    assert "carries no preloaded images" in f.message
    unpreloaded = _settings(images={"preloaded": False})
    assert check(unpreloaded, _facts(unpreloaded, {CP: _tags("control-plane"), GPU: gpu})) == []


def test_an_image_of_the_other_role_only_warns() -> None:
    s = _settings()
    findings = check(s, _facts(s, {CP: _tags("gpu-node"), GPU: _tags("control-plane")}))
    assert _kinds(findings) == [("image-role", "warning", "settings.controlPlane.ami"),
                                ("image-role", "warning", "settings.nodePools[0].ami")]
    assert "lacks the NVIDIA driver" in findings[1].message
    assert not failed(findings)


def test_untagged_images_are_fine_when_nothing_relies_on_their_contents() -> None:
    s = Settings.model_validate({"platform": "aws", "region": "us-east-1", "nodePools": [
        {"name": "l4", "instanceType": "g6.12xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 3, "ami": HAND}]})
    assert check(s, _facts(s, {HAND: {"Name": "hand-built"}})) == []


def test_images_whose_tags_are_unknown_are_not_judged() -> None:
    """Not resolved or not described: ami-missing or could-not-check says so, not a tag finding."""
    s = _settings()
    assert images.check(s, _facts(s, {})) == []


@pytest.mark.parametrize("stack", ["aws-dev", "aws-airgap"])
def test_the_committed_eu_west_1_stacks_accept_the_image_programs_images_and_nothing_less(stack: str) -> None:
    """Their images' tags only (no eu-west-1 answers are recorded: offerings there are not claimed)."""
    s = _stack(stack)
    cp, gpu = s.control_plane.ami or "", s.node_pools[0].ami or ""  # aws-airgap: its own mirrored lines
    assert cp.endswith("/control-plane/ubuntu-24.04/amd64/k8s-1.34-classic") and gpu.endswith(GPU.split("/images")[1])
    built = {cp: _tags("control-plane"), gpu: _tags("gpu-node")}
    assert images.check(s, _facts(s, built)) == []
    kinds = {f.kind for f in images.check(s, _facts(s, {cp: built[cp], gpu: {"Name": "hand-built"}}))}
    assert kinds == ({"image-untagged"} if s.offline else
                     {"image-snap-mismatch", "image-not-preloaded", "image-no-toolkit"})  # aws-dev: toolkit host


def test_a_host_toolkit_needs_the_toolkit_in_the_gpu_image() -> None:
    s = _settings(gpuStack={"driver": "host", "toolkit": "host"})
    assert check(s, _facts(s, {CP: _tags("control-plane"), GPU: _tags("gpu-node")})) == []
    without = _tags("gpu-node")
    without.pop(images.TAG_TOOLKIT)  # an image built before the toolkit was in it
    [f] = check(s, _facts(s, {CP: _tags("control-plane"), GPU: without}))
    assert (f.kind, f.severity, f.subject) == ("image-no-toolkit", "error",
                                               "settings.nodePools[0].ami, settings.gpuStack.toolkit")
    assert "stop at boot" in f.message and failed([f])
    other = {**_tags("gpu-node"), images.TAG_TOOLKIT: "1.19.0"}
    [w] = check(s, _facts(s, {CP: _tags("control-plane"), GPU: other}))
    assert (w.kind, w.severity) == ("image-toolkit-version", "warning") and not failed([w])
    # the operator's own toolkit: what the image has does not matter
    operator = _settings()
    assert check(operator, _facts(operator, {CP: _tags("control-plane"), GPU: without})) == []


def _nvswitch_pool(**pool: object) -> dict[str, object]:
    return {"name": "h100", "instanceType": "p5.48xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 2,
            "ami": GPU, **pool}


def test_nvlink_partitions_need_fabric_manager_in_shared_nvswitch_mode_in_the_image() -> None:
    s = _settings(gpuStack={"driver": "host", "nvlinkPartitions": True}, nodePools=[_nvswitch_pool()])
    cp = _tags("control-plane")
    shared = {**_tags("gpu-node"), images.TAG_FABRIC_MODE: "shared-nvswitch"}
    assert check(s, _facts(s, {CP: cp, GPU: shared})) == []
    for tags, why in (({**shared, images.TAG_FABRIC_MODE: "full-passthrough"}, "fabric-manager-mode=full-passthrough"),
                      (_tags("gpu-node"), "has no ck8s-gpu:fabric-manager-mode tag")):
        [f] = check(s, _facts(s, {CP: cp, GPU: tags}))
        assert (f.kind, f.severity, f.subject) == ("image-fabric-manager-mode", "error",
                                                   "settings.nodePools[0].ami, settings.gpuStack.nvlinkPartitions")
        assert why in f.message and "p5.48xlarge" in f.message and failed([f])
    # not judged: partitions off; a PCIe pool (no NVSwitch); the operator's driver container runs FM
    passthrough = {**shared, images.TAG_FABRIC_MODE: "full-passthrough"}
    for other in (_settings(gpuStack={"driver": "host"}, nodePools=[_nvswitch_pool()]),
                  _settings(gpuStack={"driver": "host", "nvlinkPartitions": True}),
                  _settings(gpuStack={"driver": "operator", "nvlinkPartitions": True}, nodePools=[_nvswitch_pool()])):
        assert check(other, _facts(other, {CP: cp, GPU: passthrough})) == []

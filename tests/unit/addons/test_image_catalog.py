"""The image catalog: every chart pin has its images, and the mirror rewrite leaves no public reference."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from components.addons import image_catalog as catalog
from components.addons.base import deep_merge
from components.addons.catalog import ADDONS
from components.addons.gpu_operator import IMAGES as GPU_OPERATOR
from components.addons.graph import cluster_capabilities, select
from components.addons.image_refs import PUBLIC_HOSTS, ImageRef, parse_ref, public_image_refs
from components.settings import Settings, parse_settings
from components.tables import pins
from tests.unit.addons.helpers import DRIVER_MODES, final_values, stack

MIRROR = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"


def mirror_values(chart: str, mirror: str, settings: Settings) -> dict[str, Any]:
    """What the add-on installing `chart` sets to put its images under `mirror` (Addon.mirror)."""
    return next(a for a in ADDONS if a.chart_pin == chart).mirror(settings, mirror)


def _get(values: dict[str, Any], path: str) -> Any:
    node: Any = values
    for part in path.split("."):
        node = node[part]
    return node


# EFA is on by default for a p5 pool of more than one node in one zone (tests/unit/addons/test_efa.py).
P5 = {"name": "h100", "instanceType": "p5.48xlarge", "maxSize": 4, "availabilityZone": "us-west-2a"}
P5_OWN_IMAGE = {**P5, "ami": "ami-0123456789abcdef0"}  # host and precompiled pools name their image


def _aws_everything(pool: dict[str, Any] = P5, **gpu_stack: Any) -> Settings:
    """An aws stack that installs every aws add-on: an EFA pool (p5) and backups."""
    return parse_settings({
        "platform": "aws", "environment": "prod", "production": True, "region": "us-west-2",
        "nodePools": [pool],
        "backup": {"region": "us-east-2"},
        "gpuStack": gpu_stack,
    })


def _installed(s: Settings) -> list[Any]:
    return [a for a in select(ADDONS, s, cluster_capabilities(s)) if a.chart_pin]


def test_every_chart_pin_has_entries() -> None:
    assert {e.chart for e in catalog.CATALOG} == set(pins.CHARTS)


def test_every_entry_names_its_upstream_and_keys() -> None:
    for e in catalog.CATALOG:
        assert e.image.source.strip(), e.name
        assert e.image.tag and e.image.repository and e.image.registry in PUBLIC_HOSTS, e.name
        assert e.keys or e.image.note, f"{e.chart}/{e.name}: no values key and no reason why"
        assert e.image.verified or e.image.note, f"{e.chart}/{e.name}: unverified without a reason"


def test_the_dra_driver_tag_is_marked_unverified() -> None:
    # The 0.5.0 chart tag is not in the upstream mirror; the entry must say so, not pretend.
    [dra] = catalog.entries("dra-driver-nvidia-gpu")
    assert dra.image.verified is False and "0.5.0" in dra.image.note


def test_ref_and_mirrored_shape() -> None:
    r = ImageRef("nvcr.io", "nvidia/gpu-operator", "v26.7.0", "src")
    assert r.ref() == "nvcr.io/nvidia/gpu-operator:v26.7.0"
    assert r.mirrored(MIRROR + "/") == f"{MIRROR}/nvcr.io/nvidia/gpu-operator:v26.7.0"
    hub = parse_ref("ubuntu:24.04", "s")
    assert hub.ref() == "docker.io/library/ubuntu:24.04"
    pinned = parse_ref(pins.IMAGES["smoke-test"].ref, "s")
    assert pinned.pull_ref() == pins.IMAGES["smoke-test"].ref
    assert pinned.ref() == "docker.io/library/ubuntu:24.04"


@pytest.mark.parametrize(("value", "public"), [
    ("nvcr.io/nvidia/x:1", True),
    ("ubuntu:24.04", True),
    ("docker.io/library/ubuntu@sha256:" + "a" * 64, True),
    ("quay.io", True),
    ("public.ecr.aws/eks/aws-efa-k8s-device-plugin", True),
    (f"{MIRROR}/nvcr.io/nvidia/x:1", False),
    (f"{MIRROR}/docker.io/library/ubuntu:24.04", False),
    ("kopia", False),
    ("IfNotPresent", False),
    ("/run/nvidia/driver", False),
    ("/etc/containerd/conf.d/99-nvidia.toml", False),
    ("node-role.kubernetes.io/control-plane", False),
    ("resource.k8s.io/v1", False),
    ("pods=[kai.scheduler/queue]", False),
    ("10.0.0.1:6443", False),
    ("--cloud-provider=aws", False),
])
def test_public_image_refs_classifies(value: str, public: bool) -> None:
    assert bool(public_image_refs({"a": [{"b": value}]})) is public


def test_public_image_refs_names_paths() -> None:
    doc = {"spec": {"containers": [{"image": "ghcr.io/x/y:1"}, {"image": f"{MIRROR}/ghcr.io/x/y:1"}]},
           "note": "plain words"}
    assert public_image_refs(doc) == [("spec.containers[0].image", "ghcr.io/x/y:1")]


CELLS = list(itertools.product(DRIVER_MODES, ("dra", "device-plugin"), ("none", "single")))


@pytest.mark.parametrize(("driver", "allocation", "mig"), CELLS)
def test_mirror_values_leave_no_public_image_in_any_addon(driver: str, allocation: str, mig: str) -> None:
    s = _aws_everything(P5 if driver == "operator" else P5_OWN_IMAGE,
                        driver=driver, allocation=allocation, migStrategy=mig)
    installed = _installed(s)
    assert {a.chart_pin for a in installed} >= {"gpu-operator", "kai-scheduler", "kube-prometheus-stack",
                                                "aws-cloud-controller-manager", "velero",
                                                "aws-efa-k8s-device-plugin"}
    for addon in installed:
        merged = deep_merge(final_values(addon, s), mirror_values(addon.chart_pin, MIRROR, s))
        assert public_image_refs(merged) == [], addon.name
        for e in catalog.entries(addon.chart_pin):
            for path, _ in e.mirror:
                assert _get(merged, path).startswith(f"{MIRROR}/{e.image.registry}"), (addon.name, path)


def test_mirror_values_rebuild_each_image_under_the_mirror() -> None:
    # The rewritten keys, put together the way each chart's template does, give `mirrored`.
    s = _aws_everything()
    op = mirror_values("gpu-operator", MIRROR, s)
    assert f"{op['toolkit']['repository']}/container-toolkit:v1.20.0" == next(
        e.image.mirrored(MIRROR) for e in GPU_OPERATOR if e.name == "container-toolkit")
    kai = mirror_values("kai-scheduler", MIRROR, s)
    assert f"{kai['global']['registry']}/scheduler:v0.17.0" == (
        f"{MIRROR}/ghcr.io/kai-scheduler/kai-scheduler/scheduler:v0.17.0")
    kps = mirror_values("kube-prometheus-stack", MIRROR, s)
    assert kps["prometheus"]["prometheusSpec"]["image"] == {"registry": f"{MIRROR}/quay.io"}
    velero = mirror_values("velero", MIRROR, s)
    plugin = pins.IMAGES["velero-plugin-aws"]
    assert velero["initContainers"][0]["image"] == (
        f"{MIRROR}/docker.io/velero/velero-plugin-for-aws:{plugin.tag}@{plugin.digest}")
    assert velero["image"]["repository"] == f"{MIRROR}/docker.io/velero/velero"


def test_mirror_values_refuse_a_url() -> None:
    with pytest.raises(ValueError, match="no scheme"):
        mirror_values("velero", "https://" + MIRROR, _aws_everything())


def test_chart_images_follow_the_settings() -> None:
    dra = {r.repository for r in catalog.chart_images("gpu-operator", stack("1.34-classic", "host", "dra"))}
    assert "nvidia/driver" not in dra and "nvidia/cloud-native/k8s-driver-manager" not in dra
    # GFD keeps the device plugin's image even when DRA allocates GPUs.
    assert "nvidia/k8s-device-plugin" in dra
    compiled = catalog.chart_images("gpu-operator", stack("1.34-classic", "operator", "device-plugin"))
    assert "nvcr.io/nvidia/driver:595.91.07-ubuntu24.04" in {r.ref() for r in compiled}
    precompiled = catalog.chart_images("gpu-operator", stack("1.34-classic", "precompiled", "device-plugin"))
    assert "nvidia/driver" not in {r.repository for r in precompiled}  # its tag names the node's kernel


def test_stack_images_are_sorted_unique_and_carry_the_smoke_probe() -> None:
    s = _aws_everything(allocation="dra")
    refs = catalog.stack_images(s)
    keys = [r.pull_ref() for r in refs]
    assert keys == sorted(set(keys))
    assert pins.IMAGES["smoke-test"].ref in keys
    assert pins.IMAGES["nccl-tests"].ref not in keys
    assert not any(r.repository.startswith("run-ai/") for r in refs)
    with_all_reduce = parse_settings({**s.model_dump(by_alias=True, exclude_unset=True),
                                      "smokeTest": {"allReduce": {"enabled": True}}})
    assert pins.IMAGES["nccl-tests"].ref in {r.pull_ref() for r in catalog.stack_images(with_all_reduce)}


def test_kind_stacks_run_the_fake_operator_images() -> None:
    s = parse_settings({"platform": "kind"})
    refs = {r.ref() for r in catalog.stack_images(s)}
    assert "ghcr.io/run-ai/fake-gpu-operator/status-updater:0.2.0" in refs
    assert not any(r.startswith("nvcr.io/nvidia/driver") for r in refs)


def test_preload_images() -> None:
    refs = catalog.preload_images("arm64")
    assert refs == catalog.preload_images("amd64")
    names = {r.ref() for r in refs}
    assert not any("kindest/node" in n or "fake-gpu-operator" in n for n in names)
    assert "docker.io/library/ubuntu:24.04" in names
    # Everything any aws stack can run: both advertisers, the compiled driver, MIG manager, EFA.
    for ref in ("nvcr.io/nvidia/k8s-device-plugin:v0.20.0", "nvcr.io/nvidia/driver:595.91.07-ubuntu24.04",
                "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.15.0",
                "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.5.0",
                "public.ecr.aws/eks/aws-efa-k8s-device-plugin:v0.5.20"):
        assert ref in names
    # Rendered, never run: not carried.
    assert "quay.io/thanos/thanos:v0.42.4" not in names
    assert "nvcr.io/nvidia/cloud-native/k8s-cc-manager:v0.4.3" not in names
    # Every aws stack's images are in the node image (smoke probe included).
    for driver, allocation in itertools.product(("operator", "host"), ("dra", "device-plugin")):
        s = _aws_everything(P5 if driver == "operator" else P5_OWN_IMAGE, driver=driver, allocation=allocation)
        assert {r.ref() for r in catalog.stack_images(s)} <= names


def test_preload_with_a_kernel_adds_the_precompiled_driver() -> None:
    refs = {r.ref() for r in catalog.preload_images("amd64", kernel="6.8.0-1024-aws")}
    assert "nvcr.io/nvidia/driver:595-6.8.0-1024-aws-ubuntu24.04" in refs
    with pytest.raises(ValueError, match="kernel"):
        catalog.preload_images("amd64", kernel="latest")
    with pytest.raises(ValueError, match="architecture"):
        catalog.preload_images("x86_64")


def test_unknown_chart_is_refused() -> None:
    with pytest.raises(KeyError, match=r"not in components/tables/pins\.py"):
        catalog.chart_images("nope", _aws_everything())


def test_version_overrides_are_named() -> None:
    s = _aws_everything(addons={"kaiScheduler": {"version": "v0.16.0"}})
    assert catalog.catalog_version_mismatches(s) == ("kai-scheduler",)
    assert catalog.catalog_version_mismatches(_aws_everything()) == ()


def test_the_host_toolkit_pin_is_the_toolkit_the_operator_chart_deploys() -> None:
    """One toolkit either way (docs/adr/0046): the catalog entry takes its tag from the host pin, so
    the pin must be what NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator/values.yaml deploys
    (`toolkit.version: v1.20.0`); move both with the operator pin."""
    assert pins.CHARTS["gpu-operator"].version == "v26.7.0"
    assert f"v{pins.NVIDIA_CONTAINER_TOOLKIT.version}" == "v1.20.0"

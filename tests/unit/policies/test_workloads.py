"""Workloads installed other than through Helm: pinned images (workload-images-pinned), and GPU
advertisers counted by one-gpu-advertiser however they were installed."""

from collections.abc import Callable
from itertools import product
from typing import Any

import pytest

from components.policies.helm import CHART_V4, ONE_GPU_ADVERTISER, RELEASE
from components.policies.workloads import WORKLOAD_IMAGES_PINNED, image_problem
from components.tables import pins
from tests.unit.policies.helpers import res, stack_violations

DIGEST = "sha256:" + "0123456789abcdef" * 4

UNPINNED = [
    "nginx",  # no tag: the kubelet pulls :latest
    "nginx:latest",
    "docker.io/library/nginx:latest",
    "nginx:LATEST",
    "registry.local:5000/team/app",  # a registry port is not a tag
    "registry.local:5000/team/app:latest",
    "app:1",
    "app:1.27",
    "ubuntu:24.04",
    "app:v1",
    "app:stable",
    "app:main",
    "app:sha-4f2a9c1",
    "app@sha256:0123",  # malformed digest
    "app:1.2.3@md5:0123456789abcdef",
    " app ",
]
PINNED = [
    "app:1.2.3",
    "nvcr.io/nvidia/k8s-device-plugin:v0.17.0",
    "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
    "registry.local:5000/team/app:v1.2.3-rc.1",
    f"app@{DIGEST}",
    f"app:latest@{DIGEST}",  # the digest wins
    pins.image("smoke-test").ref,
    "<computed>",  # unknown in a preview: not judged
]


def container(image: str) -> dict[str, Any]:
    return {"name": "c", "image": image}


def pod_spec(image: str, where: str = "containers") -> dict[str, Any]:
    """A pod spec whose `where` list holds `image` (beside a pinned app container)."""
    return {"containers": [container("app:1.0.0")], where: [container(image)]}


def obj(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The fields of a `kind` object whose pod spec is `spec`."""
    meta = {"name": "w", "namespace": "apps"}
    template = {"metadata": {"labels": {"a": "b"}}, "spec": spec}
    if kind == "Pod":
        return {"metadata": meta, "spec": spec}
    if kind == "PodTemplate":
        return {"metadata": meta, "template": template}
    if kind == "CronJob":
        return {"metadata": meta, "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"template": template}}}}
    return {"metadata": meta, "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template}}


GROUPS = {"Pod": "core/v1", "PodTemplate": "core/v1", "ReplicationController": "core/v1", "Job": "batch/v1",
          "CronJob": "batch/v1"}


def typed(kind: str, image: str, where: str = "containers", patch: bool = False) -> list[Any]:
    suffix = "Patch" if patch else ""
    return [res(f"kubernetes:{GROUPS.get(kind, 'apps/v1')}:{kind}{suffix}", obj(kind, pod_spec(image, where)),
                name=f"{kind}-w")]


def in_config_group(kind: str, image: str) -> list[Any]:
    manifest = {"apiVersion": "apps/v1", "kind": kind, **obj(kind, pod_spec(image))}
    return [res("kubernetes:yaml/v2:ConfigGroup", {"objs": [{"kind": "List", "items": [manifest]}]}, name="objs")]


def in_yaml_text(image: str) -> list[Any]:
    text = ("---\napiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec:\n  schedule: '@daily'\n"
            f"  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers:\n"
            f"          - name: job\n            image: {image!r}\n")
    return [res("kubernetes:yaml/v2:ConfigGroup", {"yaml": [text]}, name="text")]


def child_of_config_file(image: str) -> list[Any]:
    """What the real engine shows for a ConfigFile: the component, and its typed child."""
    parent = res("kubernetes:yaml/v2:ConfigFile", {"file": "manifests/app.yaml"}, name="file")
    child = res("kubernetes:apps/v1:DaemonSet", obj("DaemonSet", pod_spec(image)),
                urn="urn:pulumi:t::ck8s-gpu::kubernetes:yaml/v2:ConfigFile$kubernetes:apps/v1:DaemonSet::apps/w")
    child.parent = parent
    return [parent, child]


PLACES: dict[str, Callable[[str], list[Any]]] = {
    **{kind: (lambda image, k=kind: typed(k, image)) for kind in (
        "Pod", "PodTemplate", "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "ReplicationController", "Job",
        "CronJob")},
    "init container": lambda image: typed("Deployment", image, "initContainers"),
    "ephemeral container": lambda image: typed("Pod", image, "ephemeralContainers"),
    "DeploymentPatch": lambda image: typed("Deployment", image, patch=True),
    "ConfigGroup objs (a List)": lambda image: in_config_group("StatefulSet", image),
    "ConfigGroup yaml text, CronJob": in_yaml_text,
    "ConfigFile child": child_of_config_file,
}


@pytest.mark.parametrize(("image", "place"), list(product(UNPINNED, PLACES)))
def test_every_unpinned_image_violates_wherever_the_workload_sits(image: str, place: str) -> None:
    resources = PLACES[place](image)
    found = stack_violations(WORKLOAD_IMAGES_PINNED, resources)
    assert len(found) == 1 and found[0][1] == resources[-1].urn, found
    assert repr(image) in found[0][0] or repr(image.strip()) in found[0][0]


@pytest.mark.parametrize(("image", "place"), list(product(PINNED, PLACES)))
def test_pinned_images_pass(image: str, place: str) -> None:
    assert stack_violations(WORKLOAD_IMAGES_PINNED, PLACES[place](image)) == []


def test_image_problems_say_why() -> None:
    assert "pulls ':latest'" in (image_problem("nginx") or "")
    assert "'latest' can move" in (image_problem("nginx:latest") or "")
    assert "malformed digest" in (image_problem("app@sha256:0123") or "")


def test_objects_a_helm_chart_renders_are_the_charts_business() -> None:
    child = res("kubernetes:apps/v1:Deployment", obj("Deployment", pod_spec("nginx:latest")),
                urn="urn:pulumi:t::ck8s-gpu::kubernetes:helm.sh/v4:Chart$kubernetes:apps/v1:Deployment::x")
    assert stack_violations(WORKLOAD_IMAGES_PINNED, [child]) == []
    # The SDK-side v3 Chart is judged by no Helm policy: its objects count as registered directly.
    v3 = res("kubernetes:apps/v1:Deployment", obj("Deployment", pod_spec("nginx:latest")),
             urn="urn:pulumi:t::ck8s-gpu::kubernetes:helm.sh/v3:Chart$kubernetes:apps/v1:Deployment::x")
    assert stack_violations(WORKLOAD_IMAGES_PINNED, [v3])


def test_unreadable_manifests_violate() -> None:
    for props in ({"yaml": "a: &x [1]\nb: *x\n"}, {"yaml": "[" * 5000}, {"files": ["https://example.com/x.yaml"]},
                  {"file": "does/not/exist.yaml"}):
        found = stack_violations(WORKLOAD_IMAGES_PINNED, [res("kubernetes:yaml/v2:ConfigGroup", props, name="g")])
        assert len(found) == 1 and "cannot be reviewed" in found[0][0], (props, found)


# --- GPU advertisers outside Helm ---------------------------------------------------------------

def daemonset(*containers: dict[str, Any], group: str = "apps/v1", kind: str = "DaemonSet") -> list[Any]:
    return [res(f"kubernetes:{group}:{kind}", obj("DaemonSet", {"containers": list(containers)}), name="raw")]


DEVICE_PLUGINS: dict[str, list[Any]] = {
    "NVIDIA static manifest": daemonset({"name": "nvidia-device-plugin-ctr",
                                         "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}),
    "a mirror of the image": daemonset({"name": "p", "image": "registry.local/mirror/k8s-device-plugin:v0.20.0",
                                        "args": ["--fail-on-init-error=false"]}),
    "the binary from another image": daemonset({"name": "p", "image": "registry.local/gpu/tools:1.0.0",
                                                "command": ["nvidia-device-plugin"]}),
    "the binary from a shell": daemonset({"name": "p", "image": "x:1.0.0", "command": ["bash", "-c"],
                                          "args": ["exec nvidia-device-plugin --mig-strategy=none"]}),
    "a DaemonSetPatch": daemonset({"name": "p", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"},
                                  kind="DaemonSetPatch"),
    "fake-gpu-operator device plugin": daemonset({"name": "p",
                                                  "image": "ghcr.io/run-ai/fake-gpu-operator/device-plugin:0.2.0"}),
    "fake-gpu-operator KWOK device plugin (a Deployment)": daemonset(
        {"name": "p", "image": "ghcr.io/run-ai/fake-gpu-operator/kwok-gpu-device-plugin:0.2.0"}, kind="Deployment"),
    "a ClusterPolicy (devicePlugin defaults on)": [res("kubernetes:nvidia.com/v1:ClusterPolicy",
                                                       {"metadata": {"name": "cluster-policy"}, "spec": {}})],
    "a ClusterPolicy with devicePlugin.enabled": [res("kubernetes:nvidia.com/v1:ClusterPolicy", {
        "metadata": {"name": "cluster-policy"}, "spec": {"devicePlugin": {"enabled": True}}})],
    "a manifest in a ConfigGroup": [res("kubernetes:yaml/v2:ConfigGroup", {"yaml": (
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: dp, namespace: kube-system}\nspec:\n  template:\n"
        "    spec:\n      containers:\n      - name: dp\n        image: nvcr.io/nvidia/k8s-device-plugin:v0.20.0\n")},
        name="manifests")],
}
DRA_ADVERTISERS: dict[str, list[Any]] = {
    "NVIDIA kubelet plugin (gpus container)": daemonset({
        "name": "gpus", "image": "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1",
        "command": ["bash", "-c"], "args": ["if [ x ]; then :; fi\ngpu-kubelet-plugin -v $(LOG_VERBOSITY)"]}),
    "fake-gpu-operator DRA plugin": daemonset({"name": "plugin", "command": ["dra-plugin-gpu"],
                                               "image": "ghcr.io/run-ai/fake-gpu-operator/dra-plugin-gpu:0.2.0"}),
    "fake-gpu-operator KWOK DRA plugin": daemonset(
        {"name": "k", "image": "ghcr.io/run-ai/fake-gpu-operator/kwok-dra-plugin:0.2.0"}, kind="Deployment"),
    "a ResourceSlice written directly": [res("kubernetes:resource.k8s.io/v1:ResourceSlice", {
        "metadata": {"name": "node-1-gpus"}, "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-1"}})],
}
NOT_ADVERTISERS: dict[str, list[Any]] = {
    "gpu-feature-discovery from the plugin's image": daemonset({
        "name": "gfd", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0", "command": ["gpu-feature-discovery"]}),
    "the config-manager sidecar": daemonset({"name": "cm", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
                                             "command": ["config-manager"]}),
    "MPS control daemon": daemonset({"name": "mps", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0",
                                     "command": ["mps-control-daemon"]}),
    "compute-domain kubelet plugin": daemonset({
        "name": "compute-domains", "image": "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1",
        "command": ["bash", "-c"], "args": ["compute-domain-kubelet-plugin -v 4"]}),
    "a ClusterPolicy with the device plugin off": [res("kubernetes:nvidia.com/v1:ClusterPolicy", {
        "metadata": {"name": "cluster-policy"}, "spec": {"devicePlugin": {"enabled": False}}})],
    "another driver's ResourceSlice": [res("kubernetes:resource.k8s.io/v1:ResourceSlice",
                                           {"spec": {"driver": "gpu.example.com"}})],
    "a chart's own DaemonSet": [res("kubernetes:apps/v1:DaemonSet", obj("DaemonSet", {"containers": [
        {"name": "p", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"}]}),
        urn="urn:pulumi:t::ck8s-gpu::kubernetes:helm.sh/v4:Chart$kubernetes:apps/v1:DaemonSet::dp")],
}


def release(name: str, values: dict[str, Any], rtype: str = RELEASE) -> Any:
    pin = pins.chart(name)
    chart = f"{pin.repo}/{pin.name}" if pin.is_oci else pin.name
    props = {"name": name, "chart": chart, "version": pin.version, "values": values}
    if not pin.is_oci:
        props["repositoryOpts"] = {"repo": pin.repo}
    return res(rtype, props, name=name)


DRA_RELEASE = release("dra-driver-nvidia-gpu", {"gpuResourcesEnabledOverride": True})
PLUGIN_RELEASE = release("gpu-operator", {})  # devicePlugin.enabled defaults to true


@pytest.mark.parametrize("plugin", DEVICE_PLUGINS)
def test_a_device_plugin_outside_helm_counts_against_dra(plugin: str) -> None:
    for dra in [[DRA_RELEASE], *DRA_ADVERTISERS.values()]:
        found = stack_violations(ONE_GPU_ADVERTISER, [*DEVICE_PLUGINS[plugin], *dra])
        assert {u for _, u in found} == {DEVICE_PLUGINS[plugin][-1].urn, dra[-1].urn}, found
    # Alone, it is the one advertiser.
    assert stack_violations(ONE_GPU_ADVERTISER, DEVICE_PLUGINS[plugin]) == []


@pytest.mark.parametrize("dra", DRA_ADVERTISERS)
def test_dra_outside_helm_counts_against_a_device_plugin(dra: str) -> None:
    for plugin_rtype in (RELEASE, CHART_V4):
        plugin = release("gpu-operator", {}, plugin_rtype)
        found = stack_violations(ONE_GPU_ADVERTISER, [plugin, *DRA_ADVERTISERS[dra]])
        assert {u for _, u in found} == {plugin.urn, DRA_ADVERTISERS[dra][-1].urn}, found
    assert stack_violations(ONE_GPU_ADVERTISER, DRA_ADVERTISERS[dra]) == []


@pytest.mark.parametrize("other", NOT_ADVERTISERS)
def test_look_alikes_advertise_nothing(other: str) -> None:
    assert stack_violations(ONE_GPU_ADVERTISER, [*NOT_ADVERTISERS[other], DRA_RELEASE]) == []
    assert stack_violations(ONE_GPU_ADVERTISER, [*NOT_ADVERTISERS[other], PLUGIN_RELEASE]) == []

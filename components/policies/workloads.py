"""Workloads installed other than through a Helm release: as typed resources, or inside
`kubernetes:yaml` ConfigFile/ConfigGroup (components/policies/k8s_objects.py).

`workload-images-pinned`: every container of a pod-carrying object (Pod, PodTemplate, Deployment,
DaemonSet, StatefulSet, ReplicaSet, ReplicationController, Job, CronJob, and their `*Patch`
types) names an image the runtime cannot swap under it: a digest, or a tag naming an exact
release (`v1.2.3`, `12.4.1-base-ubuntu22.04`). Forbidden: no tag (the kubelet pulls `:latest`,
Kubernetes docs "Images"), `latest`, and every other moving tag (`1.2`, `24.04`, `stable`,
`main`); a malformed digest. A tag beside a valid digest is fine: the digest wins. Init and
ephemeral containers count; a `helm.sh/v4` Chart's objects do not (helm-release-pinned pins it).
Image grammar: distribution/reference regexp.go (`name[:tag][@digest]`, a registry port is not a tag).

Whole-GPU advertisers among these objects (`gpu_advertisers`) feed one-gpu-advertiser, as upstream
names them:
- NVIDIA device plugin: image `*/k8s-device-plugin` (NVIDIA/k8s-device-plugin v0.20.0,
  deployments/static/nvidia-device-plugin.yml) whose command is the image's ENTRYPOINT
  `nvidia-device-plugin` (deployments/container/Dockerfile), or any container that runs
  `nvidia-device-plugin`; the same image running `gpu-feature-discovery`, `mps-control-daemon` or
  `config-manager` advertises nothing;
- NVIDIA DRA driver: a container running `gpu-kubelet-plugin` (kubernetes-sigs/dra-driver-nvidia-gpu
  templates/kubeletplugin.yaml 9593204, container `gpus`); `compute-domain-kubelet-plugin` allocates
  no GPUs; a `ResourceSlice` of driver `gpu.nvidia.com` is the same advertisement written directly;
- fake-gpu-operator v0.2.0 (values.yaml): images `fake-gpu-operator/device-plugin` and
  `kwok-gpu-device-plugin` (device plugins), `dra-plugin-gpu` and `kwok-dra-plugin` (DRA);
- the GPU Operator's `ClusterPolicy` (nvidia.com/v1): the operator runs the device plugin unless
  `spec.devicePlugin.enabled` is false (api/nvidia/v1 clusterpolicy_types.go
  `DevicePluginSpec.IsEnabled`: nil is true).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy

from .k8s_objects import K8sObject, Unreadable, containers, objects
from .props import get, is_unknown, items

_DIGEST = re.compile(r"^(?:sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})$")
_RELEASE_TAG = re.compile(r"^v?\d+\.\d+\.\d+(?:[-+._][0-9A-Za-z][0-9A-Za-z.+_-]*)?$")


def split_image(image: str) -> tuple[str, str | None, str | None]:
    """(repository, tag, digest) of an image reference; a `host:port/` prefix is not a tag."""
    name, _, digest = image.partition("@")
    head, slash, last = name.rpartition("/")
    repo_last, colon, tag = last.partition(":")
    return head + slash + repo_last, (tag if colon else None), (digest or None)


def image_problem(image: Any) -> str | None:
    """Why `image` is not pinned; None when it is, or cannot be judged (absent, unknown)."""
    if not isinstance(image, str) or not image or is_unknown(image):
        return None
    _, tag, digest = split_image(image.strip())
    if digest is not None:
        return None if _DIGEST.match(digest) else f"malformed digest {digest!r}"
    if tag is None:
        return "no tag: the kubelet pulls ':latest', whatever that is at the time"
    if not _RELEASE_TAG.match(tag):
        return f"tag {tag!r} can move (not an exact release); pin a digest or an exact version tag"
    return None


def image_problems(objs: Iterable[K8sObject], unreadable: Iterable[Unreadable] = ()) -> list[tuple[str, str]]:
    """(urn, message) for every unpinned container image of an object not rendered by a chart."""
    problems = [(u.urn, f"manifests cannot be reviewed ({u.why}): their images are unknown") for u in unreadable]
    for o in objs:
        if o.in_chart:
            continue
        for where, container in containers(o):
            image = container.get("image")
            if (why := image_problem(image)) is not None:
                problems.append((o.urn, f"{o} {where} ({container.get('name')}) image {image!r}: {why}"))
    return problems


# --- GPU advertisers ----------------------------------------------------------------------------

_DEVICE_PLUGIN_IMAGES = ("/k8s-device-plugin", "fake-gpu-operator/device-plugin",
                         "fake-gpu-operator/kwok-gpu-device-plugin")
_DRA_IMAGES = ("fake-gpu-operator/dra-plugin-gpu", "fake-gpu-operator/kwok-dra-plugin")
_RUNS_DEVICE_PLUGIN = re.compile(r"(?<![\w-])nvidia-device-plugin(?![\w-])")
_RUNS_DRA_GPU_PLUGIN = re.compile(r"(?<![\w-])(?:gpu-kubelet-plugin|dra-plugin-gpu)(?![\w-])")
NVIDIA_DRA_DRIVER = "gpu.nvidia.com"


def _command(container: Mapping[str, Any]) -> str:
    words = [w for key in ("command", "args") for w in items(container, key)]
    return " ".join(w for w in words if isinstance(w, str))


def container_advertises(container: Mapping[str, Any]) -> str | None:
    """'device-plugin', 'dra' or None for one (long-running) container."""
    image = container.get("image")
    repo = "/" + split_image(image)[0] if isinstance(image, str) else ""  # "/": a bare name matches too
    command = _command(container)
    if _RUNS_DRA_GPU_PLUGIN.search(command) or repo.endswith(_DRA_IMAGES):
        return "dra"
    if _RUNS_DEVICE_PLUGIN.search(command):
        return "device-plugin"
    if repo.endswith(_DEVICE_PLUGIN_IMAGES) and not container.get("command"):
        return "device-plugin"  # the image's own ENTRYPOINT
    return None


def gpu_advertisers(o: K8sObject) -> tuple[list[str], list[str]]:
    """(device-plugin advertisers, DRA GPU advertisers) one object installs, as 'what (how)'."""
    if o.in_chart:
        return [], []  # the chart's values decide (helm.py advertisers)
    if o.kind == "ClusterPolicy":
        enabled = get(o.obj, "spec.devicePlugin.enabled")
        return ([] if enabled is False or is_unknown(enabled) else [f"{o} (spec.devicePlugin)"]), []
    if o.kind == "ResourceSlice" and get(o.obj, "spec.driver") == NVIDIA_DRA_DRIVER:
        return [], [f"{o} (driver {NVIDIA_DRA_DRIVER})"]
    plugins: list[str] = []
    dra: list[str] = []
    for where, container in containers(o, ("containers",)):
        what = container_advertises(container)
        if what == "device-plugin":
            plugins.append(f"{o} {where}")
        elif what == "dra":
            dra.append(f"{o} {where}")
    return plugins, dra


def validate_images_pinned(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    for urn, message in image_problems(*objects(args.resources)):
        report_violation(message, urn)


WORKLOAD_IMAGES_PINNED = StackValidationPolicy(
    name="workload-images-pinned",
    description="Pods, Deployments, DaemonSets, StatefulSets, ReplicaSets, Jobs and CronJobs registered outside "
                "Helm run images pinned by digest or an exact release tag.",
    validate=validate_images_pinned,
    enforcement_level=EnforcementLevel.MANDATORY,
)

"""Settings rules: the GPU stack: driver and toolkit modes, who manages DRA, add-on versions and
repositories, MIG."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

from ...tables import pins
from ..facts import (
    nested,
    pool_gpus,
    truthy,
)
from ..model import Settings
from ..problems import ROOT, Problem, cut

# A GPU driver branch, as the GPU Operator's precompiled images are tagged (components/tables/pins.py).
DRIVER_BRANCH = re.compile(r"^\d+$")


def _driver(s: Settings) -> Iterator[Problem]:
    """gpuStack.driver against what the GPU Operator supports and what the nodes hold (docs/adr/0018)."""
    mode = s.gpu_stack.driver
    values = s.gpu_stack.addons.gpu_operator.values
    base = f"{ROOT}.gpuStack.addons.gpuOperator.values.driver"
    # The mode is one setting: a values override must not make the operator do another.
    enabled = nested(values, "driver.enabled")
    if enabled is not None and truthy(enabled) != (mode != "host"):
        yield (f"{base}.enabled", f"contradicts gpuStack.driver {mode}: choose the driver with gpuStack.driver "
                                  "(host: the image has it, the operator installs none)")
    precompiled = nested(values, "driver.usePrecompiled")
    if precompiled is not None and truthy(precompiled) != (mode == "precompiled"):
        yield (f"{base}.usePrecompiled", f"contradicts gpuStack.driver {mode}: choose precompiled drivers with "
                                         "gpuStack.driver precompiled (it also sets driver.version to a branch)")
    if mode == "precompiled":
        yield from _precompiled(values, base)
    if s.platform == "aws" and mode in ("host", "precompiled"):
        why = {
            "host": "gpuStack.driver host on aws needs every pool's image to carry the NVIDIA driver: Canonical's "
                    "Ubuntu AMI has none, so its GPUs would never work. Name an AMI (ami-... or an SSM parameter "
                    "path) with the driver installed and no containerd of its own (docs/adr/0018)",
            "precompiled": "gpuStack.driver precompiled on aws needs every pool's image to run a kernel NVIDIA "
                           "publishes driver images for (Ubuntu 24.04: 6.8 only). Canonical's Ubuntu AMI runs the "
                           "rolling linux-aws kernel, which moves on from 6.8 with each interim release: on a newer "
                           "kernel the driver pod stays in ImagePullBackOff. Name the AMI (docs/adr/0018)",
        }[mode]
        for i, p in enumerate(s.node_pools):
            if p.ami is None:
                yield f"{ROOT}.nodePools[{i}].ami", why


def _toolkit(s: Settings) -> Iterator[Problem]:
    """gpuStack.toolkit against the driver mode and the operator's values (docs/adr/0046)."""
    mode = s.gpu_stack.toolkit
    enabled = nested(s.gpu_stack.addons.gpu_operator.values, "toolkit.enabled")
    if enabled is not None and truthy(enabled) != (mode == "operator"):
        yield (f"{ROOT}.gpuStack.addons.gpuOperator.values.toolkit.enabled",
               f"contradicts gpuStack.toolkit {mode}: choose the toolkit with gpuStack.toolkit (host: the node "
               "image has it, the operator installs none)")
    if mode == "host" and s.gpu_stack.driver != "host":
        # The image that carries the toolkit is the one that carries the driver (components/images):
        # a host toolkit under the operator's driver container would need its runtime pointed at
        # /run/nvidia/driver, which the node script does not do.
        yield (f"{ROOT}.gpuStack.toolkit", f"host needs gpuStack.driver host (is {s.gpu_stack.driver}): the GPU "
                                           "node image carries driver and toolkit together (docs/adr/0046)")


# Kubernetes pkg/features/kube_features.go: DRAAdminAccess alpha (off) from 1.32, beta and on by default
# from 1.34. The GPUCluster's DRA validator and DCGM exporter claim GPUs with `adminAccess: true`
# (gpu-operator v26.7.0 manifests/state-dra-validation/0400_resourceclaimtemplate.yaml,
# state-dcgm-exporter/0400_resourceclaimtemplate.yaml); with the gate off the API server drops the
# field, and each becomes an ordinary claim holding a GPU of every node for good.
ADMIN_ACCESS_DEFAULT_ON_MINOR = 34


def _dra_manager(s: Settings) -> Iterator[Problem]:
    """gpuStack.draManagedBy operator: what a GPUCluster cannot do (docs/adr/0048). GPU Operator
    v26.7.0 api/nvidia/v1alpha1/gpucluster_types.go and internal/state/manager.go: it manages the DRA
    driver, ComputeDomains, DCGM, the DCGM exporter and a DRA validator, nothing else."""
    g = s.gpu_stack
    if g.dra_managed_by != "operator":
        return
    mode = f"{ROOT}.gpuStack.draManagedBy is operator"
    if g.allocation != "dra":
        yield (f"{ROOT}.gpuStack.allocation", f"{g.allocation} needs the device plugin, which only the ClusterPolicy "
                                              f"deploys; {mode} (a GPUCluster), which allocates GPUs through DRA only")
    if g.toolkit != "host":
        yield (f"{ROOT}.gpuStack.toolkit", f"{g.toolkit}: a GPUCluster installs no container toolkit ({mode}); the GPU "
                                           "node image must carry it and configure containerd for CDI: toolkit host "
                                           "(docs/adr/0046)")
    if g.mig_strategy != "none":
        yield (f"{ROOT}.gpuStack.migStrategy", f"{g.mig_strategy}: a GPUCluster deploys no MIG manager ({mode}); "
                                               "MIG layouts need the ClusterPolicy (draManagedBy chart)")
    track = pins.SNAP_TRACKS.get(s.kubernetes.track)  # an unknown track: the kubernetes rule says so
    if track is not None and (minor := track.minor) < ADMIN_ACCESS_DEFAULT_ON_MINOR:
        yield (f"{ROOT}.kubernetes.track", f"{s.kubernetes.track}: {mode}, and a GPUCluster's DRA validator and DCGM "
                                           f"exporter claim GPUs with adminAccess, which Kubernetes 1.{minor} drops "
                                           "(DRAAdminAccess is alpha and off before 1.34): each would hold a GPU "
                                           "of every node. Use 1.34-classic or newer")


def _precompiled(values: dict[str, object], base: str) -> Iterator[Problem]:
    """NVIDIA/gpu-operator v26.7.0 with driver.usePrecompiled, and the precompiled-drivers page."""
    version = nested(values, "driver.version")
    if version is not None:
        if not DRIVER_BRANCH.match(str(version)):
            # The image is <repository>/<image>:<version>-<kernel>-<os tag> (controllers/object_controls.go
            # resolveDriverTag): a full version or a digest names no image.
            yield (f"{base}.version", f"'{cut(str(version))}' is not a driver branch (like "
                                      f"{pins.GPU_OPERATOR_PRECOMPILED_DRIVER_BRANCH}): with precompiled drivers "
                                      "the version is the branch, the node's kernel completes the image tag")
        elif nested(values, "driver.repository") is None:
            # NVIDIA's registry has the validated branches; a repository of one's own may build any
            # (precompiled-drivers.rst, "Building a Custom Driver Container Image").
            known = sorted({b for branches in pins.GPU_OPERATOR_PRECOMPILED_BRANCHES.values() for b in branches})
            if str(version) not in known:
                yield (f"{base}.version", f"NVIDIA publishes precompiled drivers of branches {', '.join(known)} for "
                                          f"this GPU Operator, not {version} (or set driver.repository to a registry "
                                          "with images you built)")
    # controllers/object_controls.go transformGDSContainer / transformGDRCopyContainer refuse them;
    # precompiled-drivers.rst: "do not support NVIDIA vGPU or GPUDirect Storage (GDS)".
    for key, name in (("gds.enabled", "GPUDirect Storage"), ("gdrcopy.enabled", "GDRCopy"),
                      ("vgpuManager.enabled", "NVIDIA vGPU")):
        if truthy(nested(values, key)):
            yield (f"{ROOT}.gpuStack.addons.gpuOperator.values.{key}",
                   f"{name} does not work with precompiled drivers (gpuStack.driver precompiled)")


def _addon_versions(s: Settings) -> Iterator[Problem]:
    for key, addon in s.gpu_stack.addons.by_key():
        if addon.version is not None and not pins.is_exact_version(addon.version):
            yield (f"{ROOT}.gpuStack.addons.{key}.version",
                   f"'{addon.version}' is not an exact version (no 'latest', ranges or empty)")


MIRROR_SCHEMES = ("https", "http", "oci")


def repository_problems(url: str) -> list[str]:
    """Why `url` cannot be a chart mirror (`gpuStack.addons.<x>.repository`); [] when it can."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number
    except ValueError as exc:
        return [f"'{cut(url)}' is not a URL ({exc})"]
    problems = []
    if parts.scheme not in MIRROR_SCHEMES:
        problems.append(f"'{cut(url)}' must start with https://, http:// or oci:// (a Helm repository "
                        "or an OCI registry path)")
    if not parts.hostname:
        problems.append(f"'{cut(url)}' names no host")
    if parts.username is not None or parts.password is not None:
        problems.append("credentials in the URL would be stored in clear in the Pulumi state: "
                        "configure registry/repository credentials on the deploying machine instead")
    if parts.query or parts.fragment:
        problems.append(f"'{cut(url)}' has a query or fragment: give the repository's base URL")
    return problems


def _addon_repositories(s: Settings) -> Iterator[Problem]:
    for key, addon in s.gpu_stack.addons.by_key():
        if addon.repository is not None:
            for reason in repository_problems(addon.repository):
                yield f"{ROOT}.gpuStack.addons.{key}.repository", reason


def _mig(s: Settings) -> Iterator[Problem]:
    if s.gpu_stack.mig_strategy != "none" and not any(
        (f := pool_gpus(p)) is not None and f.mig_capable for p in s.node_pools
    ):
        yield f"{ROOT}.gpuStack.migStrategy", "no node pool has MIG-capable GPUs (A100, H100, H200, B200)"

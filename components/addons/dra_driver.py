"""NVIDIA DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu), NVIDIA's "Pattern A".

Installed beside the GPU Operator, not after its ClusterPolicy is ready: the kubelet plugin's init
container (hack/kubelet-plugin-prestart.sh, "long-running init container that retries at constant
frequency", every 10 s) waits until nvidia-smi runs from the driver root, and the link to
/run/nvidia/driver "heals once the driver becomes mounted". The smoke test waits for the slices.
Values keys verified against deployments/helm/dra-driver-nvidia-gpu/ (values.yaml, templates/
validation.yaml, templates/_helpers.tpl, templates/kubeletplugin.yaml) at main 95932046 (chart
0.5.0-dev, 2026-08-07; the 0.5.0 tag itself is not in the mirror) and v0.4.1 (764900e): every key
set here exists in both with the same meaning; 0.5.0 adds `consumableShares` and
`resources.computeDomains.imex` (left at their defaults) and removes none. Its feature gates:
components/addons/dra_driver_gates.py; docs/compatibility.md "DRA driver 0.5.0".
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

from ..facts.nodes import gpu_tolerations
from ..settings.facts import compute_domains_on
from ..settings.model import Settings
from ..settings.problems import Problem
from ..tables import pins
from ..tables.labels import DRA_NODE_LABEL, GPU_CLIENT_LABEL
from .base import Addon, AddonContext, Capability, Default
from .dra_driver_gates import SHARING_FEATURE_GATES as SHARING_FEATURE_GATES
from .dra_driver_gates import feature_gates, partition_problems, problems
from .gpu_operator import GPU_CLUSTER_DRA_DRIVER, driver_root, manages_dra
from .image_refs import Entry, ImageRef

# Upstream's documented namespace; the chart refuses `default` (templates/validation.yaml).
NAMESPACE = "nvidia-dra-driver-gpu"

# The resource.k8s.io versions handed to `resourceApiVersion`, which templates/deviceclass-*.yaml put
# into DeviceClass.apiVersion (0.4.1 and 0.5.0). The chart's helper accepts v1beta2 too; these two are
# the ones every platform serves where DRA runs (components/tables/pins.py dra_apis).
DRIVER_APIS = ("resource.k8s.io/v1", "resource.k8s.io/v1beta1")


def resource_api_version(kubernetes_minor: int) -> str:
    """The FULL group/version: the chart puts it verbatim into DeviceClass.apiVersion.

    Set explicitly because the chart's auto-detection reads the API server's discovery, which an
    offline render (plan, preview) does not have. Below 1.34, DRA runs as beta behind the
    `resource.k8s.io/v1beta1=true` runtime-config the platforms enable.
    """
    return pins.newest_dra_api(kubernetes_minor, DRIVER_APIS) or DRIVER_APIS[-1]


def allocates_gpus(settings: Settings) -> bool:
    return settings.gpu_stack.allocation == "dra"


def values(ctx: AddonContext) -> dict[str, Any]:
    s = ctx.settings
    gpus = allocates_gpus(s)
    plugin: dict[str, Any] = {"tolerations": gpu_tolerations(s)}
    if gpus:
        # The label the operator's driver manager toggles to evict this plugin before a driver
        # reload (gpu_operator.values sets NODE_LABEL_FOR_GPU_POD_EVICTION to the same key).
        plugin["nodeSelector"] = {DRA_NODE_LABEL: "true"}
        if "gpu-operator" in ctx.enabled:
            # Beside a ClusterPolicy: also the operator's GPU-client label, the only one its MIG
            # manager pauses, so a MIG change stops this plugin (which holds the GPUs) first and
            # restarts it after (components/tables/labels.py GPU_CLIENT_LABEL). Without the operator
            # nothing sets it, so it is asked for only here.
            plugin["nodeSelector"][GPU_CLIENT_LABEL] = "true"
    extra: dict[str, Any] = {}
    if gates := feature_gates(s):
        extra["featureGates"] = gates
    return {
        # /run/nvidia/driver with the operator's driver container (compiled or precompiled), / with
        # the host's driver (values.yaml nvidiaDriverRoot).
        "nvidiaDriverRoot": driver_root(s),
        "resourceApiVersion": resource_api_version(ctx.facts.kubernetes_minor),
        # GPUs through DRA only in allocation `dra`; in `device-plugin` mode the device plugin is
        # the one advertiser and this chart serves ComputeDomains at most.
        "gpuResourcesEnabledOverride": gpus,
        "resources": {
            "gpus": {"enabled": gpus},
            "computeDomains": {"enabled": compute_domains_on(s)},
        },
        "kubeletPlugin": plugin,
        **extra,
    }


def _provides(settings: Settings) -> tuple[Capability, ...]:
    return ("dra-gpus",) if allocates_gpus(settings) else ()


def _check(settings: Settings) -> tuple[str, ...]:
    if not allocates_gpus(settings) and not compute_domains_on(settings):
        return ("has nothing to serve: allocation is device-plugin and computeDomains is false",)
    return ()


def gate_problems(settings: Settings, installed: Collection[str]) -> Iterator[Problem]:
    """A rule of components/validate.py: what the driver at the version this stack installs refuses in
    its gates (only where this stack installs it: `installed`, the add-ons it installs), and NVLink
    partitions without DRA allocation."""
    yield from partition_problems(settings)
    if ADDON.name in installed:
        yield from problems(settings, ADDON.version(settings))
    elif manages_dra(settings) and "gpu-operator" in installed:
        # The GPUCluster runs the same driver release with the gates this stack would hand it.
        yield from problems(settings, GPU_CLUSTER_DRA_DRIVER)


# --- Images: DRA driver 0.5.0 ------------------------------------------------------------------------
# kubernetes-sigs/dra-driver-nvidia-gpu deployments/helm/dra-driver-nvidia-gpu: one image for the
# controller, webhook and kubelet plugin, `<image.repository>:<image.tag | v+appVersion>`
# (templates/_helpers.tpl fullimage). Read at main 95932046 (chart 0.5.0-dev); the 0.5.0 tag is not
# in the mirror, so the v0.5.0 tag is the template's rule applied to appVersion 0.5.0.
IMAGES: tuple[Entry, ...] = (
    Entry("dra-driver-nvidia-gpu", "dra-driver",
          ImageRef("registry.k8s.io", "dra-driver-nvidia/dra-driver-nvidia-gpu", "v0.5.0",
                   "kubernetes-sigs/dra-driver-nvidia-gpu main 95932046 (0.5.0-dev) "
                   "deployments/helm/dra-driver-nvidia-gpu/values.yaml, templates/_helpers.tpl",
                   verified=False,
                   note="chart 0.5.0 not in the mirror: tag is v<appVersion> applied to 0.5.0"),
          keys=("image.repository", "image.tag"),
          mirror=(("image.repository", "dra-driver-nvidia/dra-driver-nvidia-gpu"),)),
)


def _default(settings: Settings) -> Default:
    """on with allocation dra or computeDomains, off with draManagedBy operator"""
    # GPUs through DRA, or ComputeDomains next to the device plugin; otherwise nothing to serve.
    # Under a GPUCluster the operator runs the driver (docs/adr/0048).
    if manages_dra(settings):
        return "off"
    return "on" if settings.gpu_stack.allocation == "dra" or compute_domains_on(settings) else "off"


ADDON = Addon(
    name="dra-driver",
    settings_key="dra_driver",
    description="DRA driver for NVIDIA GPUs: DeviceClass gpu.nvidia.com, ResourceSlices per GPU node",
    namespace=NAMESPACE,
    platform_defaults={"aws": _default, "existing": _default, "kind": "off", "local": "off"},
    pod_security="privileged",
    values=values,
    chart_pin="dra-driver-nvidia-gpu",
    images=IMAGES,
    uses=("gpu-driver",),
    provides=_provides,
    conflicts=("fake-gpu-operator",),
    timeout_seconds=10 * 60,
    check=_check,
)

"""run-ai/fake-gpu-operator: simulated GPUs for kind (no NVIDIA hardware, same DRA driver name).

Its DRA plugin is named `gpu.nvidia.com`, creates the same DeviceClass and publishes `type`,
`uuid`, `productName` and capacity `memory`, so the smoke test's manifests work unchanged.
Values keys verified against run-ai/fake-gpu-operator v0.2.0 (commit 3a3f644,
deploy/fake-gpu-operator/values.yaml; topology format in internal/common/topology/normalize.go).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..facts.cluster import GpuPoolFacts
from ..facts.nodes import gpu_tolerations
from ..settings.model import Settings
from ..tables import pins
from ..tables.labels import SIMULATED_POOL_LABEL
from .base import Addon, AddonContext, Capability
from .image_refs import Entry, ImageRef, always

NAMESPACE = "gpu-operator"  # what KAI's own CI uses; also where observability looks for the exporter


def _pool(p: GpuPoolFacts) -> dict[str, Any]:
    return {
        "gpu": {
            "backend": "fake",
            "overrides": {
                "device_defaults": {"name": p.product_name, "memory": {"total_bytes": p.memory_mib * 1024 * 1024}},
                "devices": [{} for _ in range(p.gpus_per_node)],
            },
        },
    }


def values(ctx: AddonContext) -> dict[str, Any]:
    dra = ctx.settings.gpu_stack.allocation == "dra"
    pools: dict[str, Any] = {p.name: _pool(p) for p in ctx.facts.pools}
    # Helm merges these over the chart's own `default` pool (2 x Tesla-K80); null deletes it so
    # only the stack's pools exist.
    pools.setdefault("default", None)
    return {
        "topology": {"nodePoolLabelKey": SIMULATED_POOL_LABEL, "nodePools": pools},
        # One advertiser per node, as on real GPUs: the DRA plugin or the device plugin.
        "draPlugin": {"enabled": dra, "kubeletPlugin": {"tolerations": gpu_tolerations(ctx.settings)}},
        "devicePlugin": {"enabled": not dra},
        "kwokGpuDevicePlugin": {"enabled": False},  # kind nodes have kubelets; no KWOK here
        "environment": {"resourceReservationNamespace": "kai-resource-reservation"},
    }


def _provides(settings: Settings) -> tuple[Capability, ...]:
    return ("gpu-driver", "dra-gpus") if settings.gpu_stack.allocation == "dra" else ("gpu-driver",)


# --- Images: run-ai/fake-gpu-operator 0.2.0 (kind only) ----------------------------------------------
# run-ai/fake-gpu-operator tag v0.2.0 (commit 3a3f644) deploy/fake-gpu-operator/values.yaml and
# templates: `<repository>:<tag | .Chart.AppVersion>`; CI packages chart and app at the release
# version (.github/workflows/ci.yml `helm package --version X --app-version X`), the pin's 0.2.0.
_FAKE = "run-ai/fake-gpu-operator v0.2.0 (3a3f644) deploy/fake-gpu-operator/values.yaml"
_FAKE_TAG = pins.CHARTS["fake-gpu-operator"].version


def _fake(name: str, key: str, image: str, runs: Callable[[Settings], bool] = always) -> Entry:
    repo = f"run-ai/fake-gpu-operator/{image}"
    return Entry("fake-gpu-operator", name, ImageRef("ghcr.io", repo, _FAKE_TAG, _FAKE),
                 keys=(f"{key}.image.repository", f"{key}.image.tag"),
                 mirror=((f"{key}.image.repository", repo),), runs=runs)


def _fake_dra(s: Settings) -> bool:
    # components/addons/fake_gpu_operator.py: draPlugin with allocation dra, else devicePlugin.
    return s.gpu_stack.allocation == "dra"


IMAGES: tuple[Entry, ...] = (
    _fake("device-plugin", "devicePlugin", "device-plugin", runs=lambda s: not _fake_dra(s)),
    _fake("dra-plugin", "draPlugin", "dra-plugin-gpu", runs=_fake_dra),
    _fake("status-updater", "statusUpdater", "status-updater"),
    _fake("topology-server", "topologyServer", "topology-server"),
    _fake("status-exporter", "statusExporter", "status-exporter"),
    _fake("mig-faker", "migFaker", "mig-faker"),
    # The status exporter's hostpath-init container (templates/status-exporter/daemonset.yaml).
    Entry("fake-gpu-operator", "ubuntu", ImageRef("docker.io", "library/ubuntu", "24.04", _FAKE),
          keys=("ubuntu.image.repository", "ubuntu.image.tag"),
          mirror=(("ubuntu.image.repository", "library/ubuntu"),)),
    # templates/gpu-operator/deployment.yml (when gpuOperator.enabled is false, the default)
    # hard-codes `ubuntu:22.04`: no value redirects it, so a mirror cannot serve it.
    Entry("fake-gpu-operator", "gpu-operator-standin",
          ImageRef("docker.io", "library/ubuntu", "22.04",
                   "run-ai/fake-gpu-operator v0.2.0 (3a3f644) deploy/fake-gpu-operator/templates/"
                   "gpu-operator/deployment.yml", note="hard-coded in the template: not mirrorable"),
          keys=(), mirror=()),
)


ADDON = Addon(
    name="fake-gpu-operator",
    settings_key="fake_gpu_operator",
    description="simulated GPUs for kind: DRA plugin gpu.nvidia.com, fake nvidia-smi and DCGM metrics",
    namespace=NAMESPACE,
    platform_defaults={"aws": "off", "existing": "off", "kind": "on", "local": "off"},
    pod_security="privileged",
    values=values,
    chart_pin="fake-gpu-operator",
    images=IMAGES,
    provides=_provides,
    conflicts=("gpu-operator", "dra-driver"),
    timeout_seconds=10 * 60,
)

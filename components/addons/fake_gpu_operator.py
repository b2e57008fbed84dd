"""run-ai/fake-gpu-operator: simulated GPUs for kind (no NVIDIA hardware, same DRA driver name).

Its DRA plugin is named `gpu.nvidia.com`, creates the same DeviceClass and publishes `type`,
`uuid`, `productName` and capacity `memory`, so the smoke test's manifests work unchanged.
Values keys verified against run-ai/fake-gpu-operator v0.2.0 (commit 3a3f644,
deploy/fake-gpu-operator/values.yaml; topology format in internal/common/topology/normalize.go).
"""

from __future__ import annotations

from typing import Any

from ..cluster_facts import GpuPoolFacts
from ..labels import SIMULATED_POOL_LABEL
from ..nodes import gpu_tolerations
from ..settings.model import Settings
from .base import Addon, AddonContext, Capability

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


ADDON = Addon(
    name="fake-gpu-operator",
    settings_key="fake_gpu_operator",
    description="simulated GPUs for kind: DRA plugin gpu.nvidia.com, fake nvidia-smi and DCGM metrics",
    namespace=NAMESPACE,
    pod_security="privileged",
    values=values,
    chart_pin="fake-gpu-operator",
    provides=_provides,
    conflicts=("gpu-operator", "dra-driver"),
    timeout_seconds=10 * 60,
)

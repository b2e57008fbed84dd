"""Exactly one whole-GPU advertiser per cluster: the device plugin XOR DRA GPU allocation, and at
most one DRA driver (the standalone chart's or the GPU Operator's GPUCluster).

Judged on the FINAL values (computed + the stack's overrides) with each chart's own defaults for
keys left unset, so an override can never sneak a second advertiser in. Chart defaults read from
upstream values.yaml: gpu-operator v26.7.0 `devicePlugin.enabled: true`, `gpuCluster.deployCR:
false`; dra-driver-nvidia-gpu 0.4.1 `resources.gpus.enabled: true`, `gpuResourcesEnabledOverride:
false` (GPUs are allocated only when both are true); fake-gpu-operator 0.2.0 `devicePlugin.enabled:
true`, `kwokGpuDevicePlugin.enabled: true`, `draPlugin.enabled: false`, `kwokDraPlugin.enabled:
false`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..settings.facts import nested, truthy

# add-on -> ((values key, chart default), ...) that each turn on an advertiser on their own.
DEVICE_PLUGIN_SWITCHES: dict[str, tuple[tuple[str, bool], ...]] = {
    "gpu-operator": (("devicePlugin.enabled", True),),
    "fake-gpu-operator": (("devicePlugin.enabled", True), ("kwokGpuDevicePlugin.enabled", True)),
}
# add-on -> groups of switches that must ALL be on for DRA to allocate GPUs.
DRA_SWITCHES: dict[str, tuple[tuple[tuple[str, bool], ...], ...]] = {
    "dra-driver": ((("resources.gpus.enabled", True), ("gpuResourcesEnabledOverride", False)),),
    # The GPUCluster's DRA driver always serves GPUs (values.yaml draDriver.gpus: "always deployed").
    "gpu-operator": ((("gpuCluster.deployCR", False),),),
    "fake-gpu-operator": ((("draPlugin.enabled", False),), (("kwokDraPlugin.enabled", False),)),
}


def _on(values: Mapping[str, Any], key: str, default: bool) -> bool:
    value = nested(dict(values), key)
    return default if value is None else truthy(value)


def advertisers(final_values: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """(device plugins, DRA GPU allocators) among add-on -> final values, as `addon (key)`."""
    plugins = [
        f"{name} ({key})"
        for name, switches in DEVICE_PLUGIN_SWITCHES.items() if name in final_values
        for key, default in switches if _on(final_values[name], key, default)
    ]
    dra = [
        f"{name} ({' + '.join(k for k, _ in group)})"
        for name, groups in DRA_SWITCHES.items() if name in final_values
        for group in groups if all(_on(final_values[name], k, d) for k, d in group)
    ]
    return plugins, dra


def problems(final_values: Mapping[str, Mapping[str, Any]]) -> list[str]:
    plugins, dra = advertisers(final_values)
    if plugins and dra:
        return [f"two GPU advertisers would hand out the same GPUs: device plugin from {', '.join(plugins)} "
                f"and DRA allocation from {', '.join(dra)}; keep one (gpuStack.allocation)"]
    if len(dra) > 1:
        # Each publishes driver gpu.nvidia.com and creates its DeviceClasses (the GPU Operator's
        # manifests/state-dra-driver, the chart's templates/deviceclass-*.yaml): one would fail on the
        # other's objects, and two plugins would prepare the same GPUs.
        return [f"two DRA drivers would publish the same GPUs as gpu.nvidia.com: {', '.join(dra)}; keep one "
                "(gpuStack.draManagedBy)"]
    return []

"""What the GPU Operator's release values choose for the GPU nodes (pure): the driver mode (compiled,
precompiled, host) and the toolkit mode (operator, host). The timeline's steps depend on both."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .artifacts import RELEASE, chart_name
from .mockengine import Recorded


def _operator_values(resources: Iterable[Recorded], key: str) -> dict[str, Any]:
    """`values.<key>` of the GPU Operator's release ({} without the release or the key)."""
    for r in resources:
        if r.type == RELEASE and chart_name(r) == "gpu-operator":
            section = (r.inputs.get("values") or {}).get(key) or {}
            return section if isinstance(section, dict) else {}
    return {}


def driver_mode_of(resources: list[Recorded], settings_driver: str) -> str:
    """settings.gpuStack.driver (`operator` compiles on the node), or what the operator's values say."""
    if settings_driver in ("host", "precompiled"):
        return settings_driver
    return "precompiled" if _operator_values(resources, "driver").get("usePrecompiled") is True else "compiled"


def toolkit_mode_of(resources: Iterable[Recorded]) -> str:
    """`host` where the GPU Operator's release turns its toolkit off (the node image carries it:
    gpuStack.toolkit host, components/addons/gpu_operator.py toolkit_values), else `operator`."""
    return "host" if _operator_values(resources, "toolkit").get("enabled") is False else "operator"

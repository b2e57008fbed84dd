"""Facts derived from settings that several components need (pure functions)."""

from __future__ import annotations

from typing import Any

from components import pins
from components.instance_types import GpuFacts, gpu_facts
from components.settings.model import NodePoolSettings, Settings

DRA_GATE = "DynamicResourceAllocation=true"


def pool_gpus(pool: NodePoolSettings) -> GpuFacts | None:
    """The pool's GPU facts: declared ones win over the built-in table."""
    if pool.gpu is not None:
        return GpuFacts(
            count=pool.gpu.count,
            product_name=pool.gpu.product_name,
            memory_mib=pool.gpu.memory_gib * 1024,
            architecture="unknown",
            mig_capable=pool.gpu.mig_capable,
        )
    return gpu_facts(pool.instance_type)


def gpus_provided(settings: Settings) -> int:
    """GPUs the stack provides at its desired size (what the smoke test can count on)."""
    total = 0
    for pool in settings.node_pools:
        facts = pool_gpus(pool)
        if facts is not None:
            total += facts.count * pool.desired_size
    return total


def dra_enabled_by_track(settings: Settings) -> bool:
    track = pins.SNAP_TRACKS.get(settings.kubernetes.track)
    return bool(track and track.dra_ga) or DRA_GATE in settings.kubernetes.feature_gates


def nested(values: dict[str, Any], dotted: str) -> Any:
    """`nested(v, "a.b.c")` -> v["a"]["b"]["c"] or None when any step is missing."""
    node: Any = values
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node

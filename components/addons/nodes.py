"""GPU node labels and tolerations the add-ons select on (pure; platforms apply the labels).

The DRA kubelet plugin runs only on nodes carrying `DRA_NODE_LABEL`: the GPU Operator's driver
manager removes that label to evict the plugin before a driver upgrade (NVIDIA's documented
"Pattern A"), so the label is the contract between the operator and the DRA driver.
"""

from __future__ import annotations

from typing import Any

from components.settings.model import Settings

DRA_NODE_LABEL = "nvidia.com/dra-kubelet-plugin"
# fake-gpu-operator assigns simulated GPUs by this label's value (its topology pool name).
SIMULATED_POOL_LABEL = "run.ai/simulated-gpu-node-pool"


def gpu_node_labels(settings: Settings, pool: str) -> dict[str, str]:
    """Labels a platform must put on every node of GPU pool `pool` (through the API, after join).

    Canonical Kubernetes: never through `--node-labels` (it overrides k8sd's role labels).
    """
    labels: dict[str, str] = {}
    if settings.platform in ("kind", "local"):
        labels[SIMULATED_POOL_LABEL] = pool
    elif settings.gpu_stack.allocation == "dra":
        labels[DRA_NODE_LABEL] = "true"
    return labels


def gpu_tolerations(settings: Settings) -> list[dict[str, Any]]:
    """Tolerations for every taint of every GPU pool, so node agents land on all GPU nodes."""
    seen: set[tuple[str, str]] = set()
    out: list[dict[str, Any]] = []
    for pool in settings.node_pools:
        for taint in pool.taints:
            if (taint.key, taint.effect) in seen:
                continue
            seen.add((taint.key, taint.effect))
            out.append({"key": taint.key, "operator": "Exists", "effect": taint.effect})
    return out

"""GPU node labels and tolerations from the settings (pure): the platforms apply the labels, the
add-ons select on them and tolerate every GPU pool's taints. The keys: components/tables/labels.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..settings.model import NodePoolSettings, Settings
from ..tables.labels import DRA_NODE_LABEL, EFA_NODE_LABEL, MIG_CONFIG_LABEL, POOL_TAG, SIMULATED_POOL_LABEL
from .efa import efa_enabled
from .mig import config_name


def gpu_node_labels(settings: Settings, pool: str) -> dict[str, str]:
    """Labels a platform must put on every node of GPU pool `pool` (through the API, after join).

    Canonical Kubernetes: never through `--node-labels` (it overrides k8sd's role labels).
    """
    labels: dict[str, str] = {}
    if settings.traits.simulated_gpus:
        labels[SIMULATED_POOL_LABEL] = pool
    elif settings.gpu_stack.allocation == "dra":
        labels[DRA_NODE_LABEL] = "true"
    return labels


def pool_node_labels(settings: Settings, pool: NodePoolSettings) -> dict[str, str]:
    """Every label of a pool's nodes: the stack's, the pool name (the pool tag's key), EFA's, and the
    labels the GPU add-ons select on (those win). The node's join (components/aws/userdata.py) and
    the autoscaler's NodePool template (components/facts/autoscaling.py) both put exactly these."""
    efa = {EFA_NODE_LABEL: "true"} if efa_enabled(pool) else {}
    mig = {MIG_CONFIG_LABEL: config_name(pool)} if pool.mig is not None else {}
    return {**pool.labels, POOL_TAG: pool.name, **efa, **mig, **gpu_node_labels(settings, pool.name)}


def pool_label(settings: Settings) -> str:
    """The node label whose value names a GPU node's pool: the simulated driver's on kind and local
    (gpu_node_labels), the pool tag's key on AWS (pool_node_labels)."""
    return SIMULATED_POOL_LABEL if settings.traits.simulated_gpus else POOL_TAG


def gpu_tolerations(settings: Settings) -> list[dict[str, Any]]:
    """Tolerations for every taint of every GPU pool, so node agents land on all GPU nodes."""
    return pool_tolerations(settings.node_pools)


def pool_tolerations(pools: Iterable[NodePoolSettings]) -> list[dict[str, Any]]:
    """One `Exists` toleration per (key, effect) of these pools' taints, in the pools' order."""
    seen: set[tuple[str, str]] = set()
    out: list[dict[str, Any]] = []
    for pool in pools:
        for taint in pool.taints:
            if (taint.key, taint.effect) in seen:
                continue
            seen.add((taint.key, taint.effect))
            out.append({"key": taint.key, "operator": "Exists", "effect": taint.effect})
    return out

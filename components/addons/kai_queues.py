"""The settings' queue tree as KAI `scheduling.run.ai/v2` Queue objects, and the KAI Topology
workloads name to be placed close together (chart `charts/kai-queues`).

Queue spec fields verified against KAI v0.17.0 crds/scheduling.run.ai_queues.yaml (cluster-scoped;
resources.{cpu,gpu,memory}.{quota,limit,overQuotaWeight}; memory in MB; -1 = unlimited). Topology:
kai.scheduler/v1alpha1 (pkg/apis/kai/v1alpha1/topology_types.go; its rules in topology_problems).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

from ..settings.facts import gpu_pools, topology_levels
from ..settings.model import QueueResource, QueueSettings, Settings
from ..tables.instance_types import network_layer, network_topology_layers
from .base import Addon, AddonContext
from .kai_scheduler import FALLBACK_QUEUE, NAMESPACE


def _resource(r: QueueResource) -> dict[str, float]:
    return {"quota": r.quota, "limit": r.limit, "overQuotaWeight": r.over_quota_weight}


def queue_values(q: QueueSettings) -> dict[str, Any]:
    out: dict[str, Any] = {"name": q.name}
    if q.parent is not None:
        out["parent"] = q.parent
    if q.display_name is not None:
        out["displayName"] = q.display_name
    if q.priority is not None:
        out["priority"] = q.priority
    out["resources"] = {"gpu": _resource(q.gpu), "cpu": _resource(q.cpu), "memory": _resource(q.memory)}
    return out


def _order(queues: tuple[QueueSettings, ...]) -> list[QueueSettings]:
    """Parents before children (settings reject cycles and dangling parents), ties by name."""
    done: set[str] = set()
    out: list[QueueSettings] = []
    pending = sorted(queues, key=lambda q: q.name)
    while pending:
        ready = [q for q in pending if q.parent is None or q.parent in done]
        if not ready:  # only reachable with settings that skipped validation
            raise ValueError(f"queue parents do not form a tree: {[q.name for q in pending]}")
        for q in ready:
            out.append(q)
            done.add(q.name)
        pending = [q for q in pending if q.name not in done]
    return out


def with_fallback(queues: tuple[QueueSettings, ...]) -> tuple[QueueSettings, ...]:
    """The tree plus KAI's fallback leaf (FALLBACK_QUEUE) when the settings name none: under the
    first top-level queue, with no quota, so unlabelled work runs on what no queue's quota holds
    and is the first to be reclaimed. Settings that define it keep theirs (rules: it must be a leaf)."""
    if any(q.name == FALLBACK_QUEUE for q in queues):
        return queues
    roots = sorted(q.name for q in queues if q.parent is None)
    zero = QueueResource(quota=0, limit=-1, over_quota_weight=1)
    fallback = QueueSettings(name=FALLBACK_QUEUE, parent=roots[0] if roots else None,
                             display_name="Workloads without a queue label (KAI's fallback)",
                             gpu=zero, cpu=zero, memory=zero)
    return (*queues, fallback)


def effective_queues(settings: Settings) -> tuple[QueueSettings, ...]:
    return with_fallback(settings.queues)


HOSTNAME = "kubernetes.io/hostname"


def topology_enabled(settings: Settings, installed: Collection[str]) -> bool:
    """gpuStack.topology.enabled, or on aws (whose cloud controller manager writes the levels'
    labels) wherever KAI schedules. `installed`: the add-ons this stack installs (the add-on
    context's `enabled`, or components/addons/selected.py `installed` above the catalog)."""
    t = settings.gpu_stack.topology
    if t.enabled is not None:
        return t.enabled
    return settings.platform == "aws" and "kai-scheduler" in installed


def topology_values(settings: Settings, installed: Collection[str]) -> list[dict[str, Any]]:
    t = settings.gpu_stack.topology
    if not topology_enabled(settings, installed):
        return []
    levels = [{"nodeLabel": lv.node_label, **({"alias": lv.alias} if lv.alias else {})}
              for lv in topology_levels(settings)]
    return [{"name": t.name, "levels": levels}]


def topology_problems(settings: Settings) -> Iterator[tuple[str, str]]:
    """What KAI v0.17.0 refuses in a Topology: the CRD's CEL rules (topology_types.go: nodeLabel
    unique; kubernetes.io/hostname only as the last level) and its validating webhook
    (pkg/admission/webhook/topologyhooks/topology_validator.go: aliases unique, no alias equal to a
    nodeLabel). Label syntax and lengths are the CRD's patterns (charts/kai-queues schema)."""
    path = "settings.gpuStack.topology.levels"
    levels = topology_levels(settings)
    labels = [lv.node_label for lv in levels]
    for i, lv in enumerate(levels):
        if labels.index(lv.node_label) != i:
            yield f"{path}[{i}].nodeLabel", f"'{lv.node_label}' is already level {labels.index(lv.node_label)}"
        if lv.node_label == HOSTNAME and i != len(levels) - 1:
            yield f"{path}[{i}].nodeLabel", f"{HOSTNAME} can only be the lowest (last) level"
    yield from _network_layer_problems(settings)
    seen: set[str] = set()
    for i, lv in enumerate(levels):
        if not lv.alias:
            continue
        if lv.alias in seen:
            yield f"{path}[{i}].alias", f"'{lv.alias}' is the alias of another level (aliases are unique)"
        seen.add(lv.alias)
        if lv.alias in labels:
            yield f"{path}[{i}].alias", f"'{lv.alias}' is a level's nodeLabel (an alias must not equal one)"


def _network_layer_problems(settings: Settings) -> Iterator[tuple[str, str]]:
    """On aws, a level topology.k8s.aws/network-node-layer-N that some GPU pool's nodes never get:
    the cloud controller manager writes layer N only for instance types whose EC2 instance topology
    has N network nodes (components/tables/instance_types.py), and KAI leaves a node missing any
    level's label out of the Topology, so that pool would silently fall out of every topology-aware
    gang. Judged for any N, on explicit levels (null levels are derived to fit: facts.topology_levels)."""
    levels = settings.gpu_stack.topology.levels
    if settings.platform != "aws" or levels is None:
        return
    layers = [(p, network_topology_layers(p.instance_type)) for p in gpu_pools(settings)]
    for i, lv in enumerate(levels):
        n = network_layer(lv.node_label)
        if n is None:
            continue
        short = [f"{p.name} ({p.instance_type}: {have})" for p, have in layers if have < n]
        if short:
            yield (f"settings.gpuStack.topology.levels[{i}].nodeLabel",
                   f"no node of GPU pool {', '.join(short)} gets {lv.node_label}: EC2 returns fewer network layers "
                   "for that instance type, and KAI leaves a node missing any level's label out of the Topology; "
                   "drop the level, or leave levels unset to derive them from the pools")


def values(ctx: AddonContext) -> dict[str, Any]:
    return {"queues": [queue_values(q) for q in _order(effective_queues(ctx.settings))],
            "topologies": topology_values(ctx.settings, ctx.enabled)}


ADDON = Addon(
    name="kai-queues",
    settings_key="kai_queues",
    description="the settings' queue tree as KAI Queue objects, and the KAI Topology of the nodes' network "
                "(this repository's chart)",
    namespace=NAMESPACE,  # Queues are cluster-scoped; the release lives next to KAI
    platform_defaults={"aws": "auto", "existing": "auto", "kind": "auto", "local": "auto"},
    pod_security="baseline",
    values=values,
    local_chart="kai-queues",
    needs=("kai-crds",),
    timeout_seconds=2 * 60,
)

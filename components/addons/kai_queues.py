"""The settings' queue tree as KAI `scheduling.run.ai/v2` Queue objects (chart `charts/kai-queues`).

Queue spec fields verified against KAI v0.17.0 crds/scheduling.run.ai_queues.yaml (cluster-scoped;
resources.{cpu,gpu,memory}.{quota,limit,overQuotaWeight}; memory in MB; -1 = unlimited).
"""

from __future__ import annotations

from typing import Any

from components.addons.base import Addon, AddonContext
from components.addons.kai_scheduler import FALLBACK_QUEUE, NAMESPACE
from components.settings.model import QueueResource, QueueSettings, Settings


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


def values(ctx: AddonContext) -> dict[str, Any]:
    return {"queues": [queue_values(q) for q in _order(effective_queues(ctx.settings))]}


ADDON = Addon(
    name="kai-queues",
    settings_key="kai_queues",
    description="the settings' queue tree as KAI Queue objects (this repository's chart)",
    namespace=NAMESPACE,  # Queues are cluster-scoped; the release lives next to KAI
    pod_security="baseline",
    values=values,
    local_chart="kai-queues",
    needs=("kai-crds",),
    timeout_seconds=2 * 60,
)

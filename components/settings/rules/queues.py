"""Settings rules: kAI queues: the tree, quotas and limits, and what the smoke test's jobs need of them."""

from __future__ import annotations

from collections.abc import Iterator

from ..model import QueueSettings, Settings
from ..problems import ROOT, Problem


def _queues(s: Settings) -> Iterator[Problem]:
    by_name: dict[str, QueueSettings] = {}
    for i, q in enumerate(s.queues):
        if q.name in by_name:
            yield f"{ROOT}.queues[{i}].name", f"duplicate queue name '{q.name}'"
        by_name[q.name] = q
    index = {q.name: i for i, q in enumerate(s.queues)}
    for i, q in enumerate(s.queues):
        if q.parent is not None and q.parent not in by_name:
            yield f"{ROOT}.queues[{i}].parent", f"parent queue '{q.parent}' does not exist"
        if q.gpu.quota != -1 and q.gpu.limit != -1 and q.gpu.limit < q.gpu.quota:
            yield f"{ROOT}.queues[{i}].gpu.limit", f"limit {q.gpu.limit} is below quota {q.gpu.quota}"
    # Cycles: walk up from each queue; revisiting a queue means a loop.
    reported: set[str] = set()
    for q in s.queues:
        seen = [q.name]
        cur = q
        while cur.parent is not None and cur.parent in by_name:
            if cur.parent in seen:
                loop = frozenset(seen[seen.index(cur.parent):])
                if not loop & reported:
                    reported |= loop
                    yield (f"{ROOT}.queues[{index[cur.parent]}].parent",
                           f"queue parents form a cycle: {' -> '.join([*seen[seen.index(cur.parent):], cur.parent])}")
                break
            seen.append(cur.parent)
            cur = by_name[cur.parent]
    for name, parent in by_name.items():
        if parent.gpu.quota == -1:
            continue
        children = [q for q in s.queues if q.parent == name]
        total = sum(c.gpu.quota for c in children if c.gpu.quota != -1)
        unlimited = [c.name for c in children if c.gpu.quota == -1]
        if total > parent.gpu.quota or unlimited:
            detail = f"unlimited children {unlimited}" if unlimited else f"children's quota sums to {total:g}"
            yield (f"{ROOT}.queues[{index[name]}].gpu.quota",
                   f"{detail}, above queue '{name}' GPU quota {parent.gpu.quota:g}")


def leaf_queues(s: Settings) -> set[str]:
    parents = {q.parent for q in s.queues if q.parent is not None}
    return {q.name for q in s.queues if q.name not in parents}


def smoke_quota_problems(s: Settings, needed: int, holder: str, fix: str) -> Iterator[Problem]:
    """The smoke Jobs are non-preemptible under KAI (charts/gpu-smoke-test, ADR 0027), and KAI
    schedules a non-preemptible job only within the quota of its queue and of every ancestor
    (v0.17.0 pkg/scheduler/plugins/proportion/capacity_policy/quota_check.go,
    resultsWithNonPreemptibleOverQuota): a smaller finite GPU quota keeps the case Pending.
    `holder` names what holds `needed` GPUs at once, `fix` the setting to lower instead."""
    by_name = {q.name: q for q in s.queues}
    seen: set[str] = set()
    name: str | None = s.smoke_test.queue
    while name is not None and name in by_name and name not in seen:
        seen.add(name)
        q = by_name[name]
        if q.gpu.quota != -1 and q.gpu.quota < needed:
            yield (f"{ROOT}.queues[{s.queues.index(q)}].gpu.quota",
                   f"queue '{q.name}' has a GPU quota of {q.gpu.quota:g}, but {holder} holds {needed} "
                   "non-preemptible GPU(s) at once, which KAI schedules only within the quota of the queue and "
                   f"each parent: raise the quota (-1 = unlimited) or lower {fix}")
        name = q.parent

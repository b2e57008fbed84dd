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
    """What a smoke job that holds `needed` GPUs at once needs of its queue (smokeTest.queue) and of
    every ancestor, in KAI v0.17.0's words (pkg/scheduler/plugins/proportion/capacity_policy):

    - quota: the smoke Jobs are non-preemptible (charts/gpu-smoke-test, ADR 0027), and KAI schedules
      a non-preemptible job only within the quota of its queue and of every ancestor (quota_check.go,
      resultsWithNonPreemptibleOverQuota): a smaller finite GPU quota keeps the case Pending;
    - limit: the most a queue may ever use, preemptible or not. KAI refuses a job whose pods would take
      the queue, or any queue above it, past its limit (max_allowed_check.go resultsOverLimit walks
      job.Queue, then each ParentQueue; isOverLimit: allocated + requested > limit, -1 unlimited): a job
      bigger than a finite GPU limit can never be scheduled, even on an empty cluster.

    Every smoke case holds its pods' GPUs at once (a gang's minMember; the other Jobs' pods wait at
    the probe's barrier for each other), so `needed` is judged whole. `holder` names what holds
    `needed` GPUs at once, `fix` the setting to lower instead."""
    by_name = {q.name: q for q in s.queues}
    seen: set[str] = set()
    queue = s.smoke_test.queue
    name: str | None = queue
    while name is not None and name in by_name and name not in seen:
        seen.add(name)
        q = by_name[name]
        i = s.queues.index(q)
        if q.gpu.quota != -1 and q.gpu.quota < needed:
            yield (f"{ROOT}.queues[{i}].gpu.quota",
                   f"queue '{q.name}' has a GPU quota of {q.gpu.quota:g}, but {holder} holds {needed} "
                   "non-preemptible GPU(s) at once, which KAI schedules only within the quota of the queue and "
                   f"each parent: raise the quota (-1 = unlimited) or lower {fix}")
        if q.gpu.limit != -1 and q.gpu.limit < needed:
            whose = "" if q.name == queue else f", a parent of queue '{queue}' (a child's jobs count against it)"
            yield (f"{ROOT}.queues[{i}].gpu.limit",
                   f"queue '{q.name}'{whose} has a GPU limit of {q.gpu.limit:g}, but {holder} holds {needed} "
                   "GPU(s) at once: KAI never schedules a job that would take a queue or any parent past its "
                   f"limit, so it would stay Pending on any cluster: raise the limit to at least {needed} "
                   f"(-1 = unlimited) or lower {fix}")
        name = q.parent

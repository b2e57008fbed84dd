"""schedulingOrchestration/gang_scheduling: all-or-nothing scheduling of a group of GPU pods (issue 44).

The checklist (cncf/k8s-ai-conformance docs/AIConformance-1.35.yaml, MUST) asks that a gang
scheduler be installable and shown to schedule "all-or-nothing". This project's is KAI
(components/addons/kai_scheduler.py), whose gang is a PodGroup (scheduling.run.ai/v2alpha2,
spec.minMember) its pods name by annotation. The procedure makes two gangs at once, in the run's
namespace, each of two pods asking KAI for GPUs through their own claims:

- `fits`: one GPU each. Both must be bound; one bound and the other not is a split gang;
- `never`: one pod asking for one GPU, the other for more GPUs than any node publishes. KAI must
  bind neither (KAI-Scheduler pkg/scheduler/actions/allocate/allocate.go discards the whole
  statement when a job's tasks cannot all be allocated), though the first would fit alone: a
  scheduler that places pods one by one binds it.

`never` is judged only once `fits` is bound (the scheduler is alive and taking gangs), after a
few more of its cycles. Pods run on any node KAI picks (on a simulated node they only look run).
"""

from __future__ import annotations

import time
from collections import Counter

from ..addons.kai_scheduler import SCHEDULER_NAME
from ..smoke.collect import PODGROUP_API
from ..smoke.expectations import POD_GROUP_ANNOTATION
from ..tables.labels import QUEUE_LABEL
from .common import RESOURCE_API, Context, Log, attr, create, get_json, items, unscheduled
from .evidence import Result

RID = "gang_scheduling"
QUEUE_API = "scheduling.run.ai/v2"  # KAI's Queue (cluster-scoped; pkg/apis/scheduling/v2/queue_types.go)
# KAI schedules once a second by default (its SchedulerConfiguration schedulePeriod); after `fits`
# is bound, this many seconds of further cycles must leave `never` unbound.
SETTLE_SECONDS = 10.0


def _queue(ctx: Context) -> str:
    """The stack's smoke queue (--stack), else a leaf Queue: one no other Queue names as parent."""
    if ctx.settings is not None:
        return ctx.settings.smoke_test.queue
    queues = items(ctx.gw, f"/apis/{QUEUE_API}/queues")
    parents = {(q.get("spec") or {}).get("parentQueue") for q in queues}
    leaves = sorted(q["metadata"]["name"] for q in queues if q["metadata"]["name"] not in parents)
    return leaves[0] if leaves else ""


def _pod(ctx: Context, group: str, name: str, queue: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ctx.namespace, "labels": {QUEUE_LABEL: queue},
                         "annotations": {POD_GROUP_ANNOTATION: group}},
            "spec": {"schedulerName": SCHEDULER_NAME, "restartPolicy": "Never", "tolerations": [{"operator": "Exists"}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
                     "containers": [{"name": "probe", "image": ctx.image, "command": ["sleep", "600"],
                                     "resources": {"claims": [{"name": "gpu"}]},
                                     "securityContext": {"allowPrivilegeEscalation": False,
                                                         "capabilities": {"drop": ["ALL"]}}}]}}


def _gang(ctx: Context, group: str, gpus: tuple[int, ...], queue: str) -> list[str]:
    """A PodGroup of len(gpus) pods, pod i with a claim of gpus[i] whole GPUs; the pods' names."""
    create(ctx, {"apiVersion": PODGROUP_API, "kind": "PodGroup",
                 "metadata": {"name": group, "namespace": ctx.namespace},
                 "spec": {"minMember": len(gpus), "queue": queue}})
    names = []
    for i, count in enumerate(gpus):
        name = f"{group}-{i}"
        # KAI refuses a pod whose named GPU claim lacks its queue's label (KAI-Scheduler
        # pkg/scheduler/plugins/dynamicresources validateSharedGpuClaimQueueLabel).
        create(ctx, {"apiVersion": RESOURCE_API, "kind": "ResourceClaim",
                     "metadata": {"name": name, "namespace": ctx.namespace, "labels": {QUEUE_LABEL: queue}},
                     "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                         "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": count}}]}}})
        create(ctx, _pod(ctx, group, name, queue))
        names.append(name)
    return names


def _bound(ctx: Context, names: list[str]) -> dict[str, str]:
    """pod -> node, for the pods the scheduler bound."""
    out = {}
    for n in names:
        pod = ctx.gw.get("v1", "Pod", n, ctx.namespace) or {}
        if (pod.get("spec") or {}).get("nodeName"):
            out[n] = pod["spec"]["nodeName"]
    return out


def _why(ctx: Context, name: str) -> str:
    pod = ctx.gw.get("v1", "Pod", name, ctx.namespace)
    events = [e for e in ctx.gw.list("v1", "Event", ctx.namespace)[0]
              if (e.get("involvedObject") or {}).get("name") == name and e.get("type") == "Warning"]
    said = events[-1].get("message", "") if events else ""
    return unscheduled(pod) or said or "no word from the scheduler"


def gang_scheduling(ctx: Context) -> Result:
    log = Log(ctx, RID)
    if get_json(ctx.gw, f"/apis/{PODGROUP_API}") is None:
        return Result(RID, "Not Implemented", "skipped",
                      f"no gang scheduler: KAI's PodGroup API ({PODGROUP_API}) is not served; set "
                      "gpuStack.addons.kaiScheduler", log.lines)
    queue = _queue(ctx)
    if not queue:
        return Result(RID, "Not Implemented", "failed",
                      f"KAI's PodGroup API is served but no leaf Queue ({QUEUE_API}) exists to schedule in: set "
                      "gpuStack.addons.kaiQueues", log.lines)
    whole = [(n, d) for n, d in ctx.devices() if attr(d, "type") == "gpu" and not d.get("taints")]
    per_node = Counter(n for n, _ in whole)
    if len(whole) < 2:
        return Result(RID, "Partially Implemented", "skipped",
                      f"KAI's PodGroup API is served; a gang needs two untainted whole GPUs and {len(whole)} are "
                      "published: not run", log.lines)
    most = max(per_node.values())
    log(f"queue {queue}; {len(whole)} whole GPU(s) on {len(per_node)} node(s), at most {most} on one")
    fits = _gang(ctx, "gang-fits", (1, 1), queue)
    never = _gang(ctx, "gang-never", (1, most + 1), queue)
    log(f"gang-fits: 2 pods of 1 GPU; gang-never: 1 GPU and {most + 1} GPUs (no node has {most + 1})")
    t0 = time.monotonic()
    until = t0 + ctx.timeout
    seen: dict[str, str] = {}
    while time.monotonic() < until:
        seen = _bound(ctx, fits)
        if len(seen) == len(fits):
            break
        time.sleep(0.5)
    bound_after = time.monotonic() - t0
    log(f"gang-fits after {bound_after:.1f} s: bound {seen or 'none'}")
    if len(seen) < len(fits):
        lacking = [n for n in fits if n not in seen]
        what = "split: " if seen else ""
        return Result(RID, "Not Implemented", "failed",
                      f"gang-fits (minMember 2) {what}{len(seen)} of 2 pods bound in {ctx.timeout:.0f} s; "
                      f"{lacking[0]}: {_why(ctx, lacking[0])}", log.lines)
    time.sleep(SETTLE_SECONDS)
    partial = _bound(ctx, never)
    log(f"gang-never {SETTLE_SECONDS:.0f} s later: bound {partial or 'none'}; {never[0]}: {_why(ctx, never[0])}")
    if partial:
        return Result(RID, "Not Implemented", "failed",
                      f"gang-never (minMember 2, one pod unplaceable) had {', '.join(sorted(partial))} bound: "
                      "the scheduler placed part of a gang", log.lines)
    return Result(RID, "Implemented", "passed",
                  f"KAI bound a PodGroup of two GPU pods together (in {bound_after:.1f} s) "
                  f"and bound no pod of a PodGroup one of whose pods cannot be placed (queue {queue})", log.lines)

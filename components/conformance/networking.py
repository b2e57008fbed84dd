"""networking/high_performance_networking (SHOULD from 1.36): high-performance network devices
discoverable and attachable to AI workloads (issue 44).

This project's are AWS's EFA interfaces on training pools (docs/distributed-training.md), advertised
by the EFA device plugin add-on as an extended resource (components/addons/efa_device_plugin.py).
The procedure: every node labelled as an EFA node advertises that resource (discoverable); a pod
asking for one EFA device on such a node is given one (`/dev/infiniband/uverbs*` inside: attachable).
On a node that runs no container (KWOK) only the advertisement is read. DRA for network devices
(DRANET) is not used: the statuses say Partially Implemented with that.
"""

from __future__ import annotations

from ..smoke.all_reduce import EFA_RESOURCE
from ..tables.labels import EFA_NODE_LABEL
from .common import Context, Log, create, probe_pod, wait_pod
from .evidence import Result

RID = "high_performance_networking"
SCRIPT = "ls /dev/infiniband/ 2>/dev/null | sed 's/^/INFINIBAND /'; echo done"


def high_performance_networking(ctx: Context) -> Result:
    log = Log(ctx, RID)
    nodes = ctx.gw.list("v1", "Node", label_selector=EFA_NODE_LABEL)[0]
    if not nodes:
        return Result(RID, "Not Implemented", "skipped",
                      f"no EFA node (label {EFA_NODE_LABEL}): give a training pool EFA (nodePools[].efa, "
                      "docs/distributed-training.md)", log.lines)
    lacking, offered = [], {}
    for n in nodes:
        count = str(((n.get("status") or {}).get("allocatable") or {}).get(EFA_RESOURCE, "0"))
        name = n["metadata"]["name"]
        log(f"{name}: {EFA_RESOURCE} allocatable {count}")
        if count.isdigit() and int(count) > 0:
            offered[name] = int(count)
        else:
            lacking.append(name)
    if lacking:
        return Result(RID, "Not Implemented", "failed",
                      f"EFA node(s) advertising no {EFA_RESOURCE}: {', '.join(lacking)} (is the EFA device plugin "
                      "running there?)", log.lines)
    runs = sorted(set(offered) - ctx.simulated_nodes())
    if not runs:
        return Result(RID, "Partially Implemented", "passed",
                      f"{len(offered)} EFA node(s) advertise {EFA_RESOURCE}; none runs containers, so no device was "
                      "attached; no DRA network driver (DRANET)", log.lines)
    node = runs[0]
    pod = probe_pod(ctx, "efa-attach", SCRIPT, None, node=node)
    pod["spec"]["containers"][0]["resources"] = {"limits": {EFA_RESOURCE: "1"}}
    create(ctx, pod)
    done = wait_pod(ctx, "efa-attach")
    phase = (done or {}).get("status", {}).get("phase")
    text = ctx.gw.logs(ctx.namespace, "efa-attach", "probe") if phase in ("Succeeded", "Failed") else ""
    devices = [line.split(" ", 1)[1] for line in text.splitlines() if line.startswith("INFINIBAND ")]
    log(f"a pod asking for 1 {EFA_RESOURCE} on {node}: {phase}; /dev/infiniband: {devices or 'nothing'}")
    if phase != "Succeeded" or not any(d.startswith("uverbs") for d in devices):
        return Result(RID, "Not Implemented", "failed",
                      f"a pod given 1 {EFA_RESOURCE} on {node} ended {phase} and saw "
                      f"{', '.join(devices) or 'no /dev/infiniband device'}", log.lines)
    return Result(RID, "Partially Implemented", "passed",
                  f"{len(offered)} EFA node(s) advertise {EFA_RESOURCE}; a pod given one on {node} saw "
                  f"{', '.join(devices)}; no DRA network driver (DRANET)", log.lines)

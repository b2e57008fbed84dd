"""cluster_autoscaling (checklist section schedulingOrchestration, MUST): the autoscaler must scale
node groups of an accelerator type up and down on pending pods that request it (issue 44,
docs/conformance.md).

This project's autoscaler is Karpenter (docs/autoscaling.md, ADR 0049): one NodePool per autoscaled
GPU pool (components/facts/autoscaling.py). The procedure proves it end to end on one of those
pools: a pod claiming one GPU of the pool's type, by DRA as a user's job does, goes pending; a
NodeClaim for the pool appears, its Node registers, and the pod runs there; once the pod is gone the
NodeClaim and its Node go after the pool's consolidateAfter. Every hop is logged with its time, and
a hop that does not come names itself and what Karpenter said (its events, the NodeClaim's
conditions, the scheduler's reason).

The API read is karpenter.sh/v1 at the pin (sigs.k8s.io/karpenter v1.15.0 pkg/apis/v1/nodepool.go,
nodeclaim.go, nodeclaim_status.go, labels.go).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ..facts.autoscaling import API_VERSION, INSTANCE_TYPE_KEY, NODEPOOL_LABEL
from ..smoke.gateway import Gateway, Obj
from ..tables.instance_types import gpu_facts
from ..tables.labels import POOL_TAG
from .common import DRIVER, RESOURCE_API, Context, Log, create, get_json, items, unscheduled
from .evidence import Result

RID = "cluster_autoscaling"
NAME = "cluster-autoscaling"  # the claim template's and the pod's
POLL = 1.0
HOSTNAME = "kubernetes.io/hostname"  # k8s.io/api core/v1 well_known_labels.go LabelHostname
# nodeclaim_status.go: the hops of a launch, in order.
HOPS = ("Launched", "Registered", "Initialized")
NO_AUTOSCALER = "no autoscaler: set nodePools[].autoscaling on aws (docs/autoscaling.md)"
_DURATION_PART = re.compile(r"([0-9]+)(h|m|s)")
_UNIT = {"h": 3600, "m": 60, "s": 1}


@dataclass(frozen=True)
class Pool:
    """A GPU NodePool as this project renders it, with what the procedure needs of it."""

    name: str
    instance_type: str
    product: str  # the DRA driver's productName for the type's GPUs
    gpus: int  # per node
    taints: tuple[Obj, ...]
    consolidate_after: str
    nodes: tuple[str, ...]  # the pool's nodes now
    hostnames: tuple[str, ...]  # their kubernetes.io/hostname labels
    limit: int | None  # spec.limits.nodes; None: no node limit

    @property
    def idle_seconds(self) -> float | None:
        """How long an empty node stays; None: forever (`Never`)."""
        return duration_seconds(self.consolidate_after)

    @property
    def full(self) -> bool:
        return self.limit is not None and len(self.nodes) >= self.limit


def duration_seconds(text: str) -> float | None:
    """A NillableDuration as the CRD admits it (nodepool.go ConsolidateAfter:
    `^(([0-9]+(s|m|h))+|Never)$`) in seconds; None for `Never`. Absent means the CRD's default, 0s."""
    if text == "Never":
        return None
    return float(sum(int(n) * _UNIT[u] for n, u in _DURATION_PART.findall(text or "0s")))


def _pool(np: Obj, nodes: list[Obj]) -> Pool | None:
    """The NodePool as a Pool when this project rendered it for a GPU pool: the pool tag among its
    template's labels and one instance type of components/tables/instance_types.py required."""
    spec = np.get("spec") or {}
    template = spec.get("template") or {}
    if POOL_TAG not in ((template.get("metadata") or {}).get("labels") or {}):
        return None
    if spec.get("replicas") is not None:  # a static NodePool (nodepool.go Replicas): it does not follow pods
        return None
    types = [v for r in (template.get("spec") or {}).get("requirements") or []
             if r.get("key") == INSTANCE_TYPE_KEY and r.get("operator") == "In" for v in r.get("values") or []]
    facts = gpu_facts(types[0]) if len(types) == 1 else None
    if facts is None:
        return None
    name = np["metadata"]["name"]
    mine = [n for n in nodes if (n["metadata"].get("labels") or {}).get(NODEPOOL_LABEL) == name]
    limit = str((spec.get("limits") or {}).get("nodes") or "")
    return Pool(name=name, instance_type=types[0], product=facts.product_name, gpus=facts.count,
                taints=tuple((template.get("spec") or {}).get("taints") or ()),
                consolidate_after=str((spec.get("disruption") or {}).get("consolidateAfter") or "0s"),
                nodes=tuple(sorted(n["metadata"]["name"] for n in mine)),
                hostnames=tuple(sorted((n["metadata"].get("labels") or {}).get(HOSTNAME, n["metadata"]["name"])
                                       for n in mine)),
                limit=int(limit) if limit.isdigit() else None)


def _node_claims(gw: Gateway, pool: str) -> dict[str, Obj]:
    return {c["metadata"]["name"]: c for c in items(gw, f"/apis/{API_VERSION}/nodeclaims")
            if (c["metadata"].get("labels") or {}).get(NODEPOOL_LABEL) == pool}


def _conditions(claim: Obj) -> str:
    """The launch hops of a NodeClaim, with Karpenter's reason where one is not done."""
    by_type = {c.get("type"): c for c in (claim.get("status") or {}).get("conditions") or []}
    out = []
    for hop in HOPS:
        c = by_type.get(hop)
        if c is None:
            out.append(f"{hop}=?")
        elif c.get("status") == "True":
            out.append(f"{hop}=True")
        else:
            why = c.get("message") or c.get("reason") or ""
            out.append(f"{hop}={c.get('status')}" + (f" ({why})" if why else ""))
    return ", ".join(out)


def _when(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


def _karpenter_said(ctx: Context, pool: str, claims: list[str], since: datetime | None) -> list[str]:
    """Karpenter's events since the probe pod was made about it, the NodePool and these NodeClaims,
    oldest first (scheduling/events.go: FailedScheduling and Nominated on pods,
    NoCompatibleInstanceTypes on NodePools). A condition becoming True is left out: every object's
    every condition emits one (github.com/awslabs/operatorpkg status/controller.go), and they say
    nothing a hop's log line does not."""
    found = list(ctx.gw.list("v1", "Event", ctx.namespace, field_selector=f"involvedObject.name={NAME}")[0])
    for kind, name in [("NodePool", pool)] + [("NodeClaim", c) for c in claims]:
        found.extend(ctx.gw.list("v1", "Event", None,
                                 field_selector=f"involvedObject.kind={kind},involvedObject.name={name}")[0])
    kept = []
    for e in found:
        source = str((e.get("source") or {}).get("component") or "") + str(e.get("reportingComponent") or "")
        message = str(e.get("message") or "")
        at = _when(e.get("lastTimestamp") or e.get("eventTime"))
        if "karpenter" not in source or (message.startswith("Status condition transitioned") and "-> True" in message):
            continue
        if since is not None and at is not None and at < since:
            continue  # an earlier run's, or another pod's word on the NodePool
        kept.append((at or datetime.min.replace(tzinfo=UTC), f"{e.get('reason')}: {message}"))
    out: list[str] = []
    for _, line in sorted(kept, key=lambda k: k[0]):
        if line not in out:
            out.append(line)
    return out


def _probe(ctx: Context, pool: Pool) -> list[Obj]:
    """One GPU of the pool's type, asked for as a user's job asks (docs/autoscaling.md "What a job
    requests"), on the pool only (its NodePool label), tolerating its taints."""
    template = {
        "apiVersion": RESOURCE_API, "kind": "ResourceClaimTemplate",
        "metadata": {"name": NAME, "namespace": ctx.namespace},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": DRIVER, "allocationMode": "ExactCount", "count": 1,
            "selectors": [{"cel": {"expression": f"device.attributes['{DRIVER}'].productName == '{pool.product}'"}}],
        }}]}}},
    }
    spec: Obj = {
        "restartPolicy": "Never",
        # sleep as PID 1 ignores SIGTERM: without this the scale-down would also time the grace period.
        "terminationGracePeriodSeconds": 1,
        "nodeSelector": {NODEPOOL_LABEL: pool.name},
        "tolerations": [{"key": t["key"], "operator": "Exists", "effect": t["effect"]} for t in pool.taints],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": NAME}],
        "containers": [{"name": "probe", "image": ctx.image, "command": ["sleep", "3600"],
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "claims": [{"name": "gpu"}]},
                        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}],
    }
    if pool.hostnames:
        # A node the pool already has could take the pod, and nothing would scale: only a new node may.
        # Karpenter judges the same requirement: each existing node by its hostname label, each node it
        # would launch by a placeholder hostname (pkg/controllers/provisioning/scheduling/existingnode.go,
        # nodeclaim.go), so the pod still calls for a launch.
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": HOSTNAME, "operator": "NotIn", "values": list(pool.hostnames)}]}]}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": NAME, "namespace": ctx.namespace}, "spec": spec}
    return [template, pod]


@dataclass
class _Up:
    """What the scale-up reached: each hop's time since the pod was created (None: not seen)."""

    pending: float | None = None
    claim: str = ""
    claimed: float | None = None
    node: str = ""
    registered: float | None = None
    scheduled: float | None = None
    running: float | None = None
    elsewhere: str = ""  # a node the pool had before that took the pod
    since: datetime | None = None  # the pod's creation, by the API server's clock


def _claim_of(node: Obj, claims: dict[str, Obj]) -> str:
    """The NodeClaim that brought `node`: the same provider ID (Karpenter sets the claim's at launch,
    the node's own at boot), or the claim's status.nodeName (set at registration)."""
    pid, name = (node.get("spec") or {}).get("providerID"), node["metadata"]["name"]
    for n, c in sorted(claims.items()):
        st = c.get("status") or {}
        if (pid and st.get("providerID") == pid) or st.get("nodeName") == name:
            return n
    return ""


def _scale_up(ctx: Context, log: Log, pool: Pool, before: set[str], t0: float,
              since: datetime | None) -> tuple[_Up, Obj | None, dict[str, Obj]]:
    """Watch the pod's way to a new node of the pool, until it runs there or ctx.timeout passes."""
    up = _Up(since=since)
    seen: set[tuple[str, str]] = set()
    while True:
        now = time.monotonic() - t0
        # The pod first, then what may have come for it: a node the pod is on is in the later lists.
        pod = ctx.gw.get("v1", "Pod", NAME, ctx.namespace)
        status = (pod or {}).get("status") or {}
        if up.pending is None and unscheduled(pod):
            up.pending = now
            log(f"+{now:.1f}s pod Pending, unschedulable: {unscheduled(pod)}")
        claims = {n: c for n, c in _node_claims(ctx.gw, pool.name).items() if n not in before}
        for name, c in sorted(claims.items()):
            if (name, "") not in seen:
                seen.add((name, ""))
                log(f"+{now:.1f}s NodeClaim {name} created for NodePool {pool.name}")
                if up.claimed is None:
                    up.claim, up.claimed = name, now
            for cond in (c.get("status") or {}).get("conditions") or []:
                if cond.get("type") in HOPS and cond.get("status") == "True" and (name, cond["type"]) not in seen:
                    seen.add((name, cond["type"]))
                    # Karpenter labels the claim with what it launched at launch (labels.go well-known keys).
                    itype = (c["metadata"].get("labels") or {}).get(INSTANCE_TYPE_KEY)
                    log(f"+{now:.1f}s NodeClaim {name} {cond['type']}"
                        + (f" ({itype})" if itype and cond["type"] == "Launched" else ""))
        mine = ctx.gw.list("v1", "Node", label_selector=f"{NODEPOOL_LABEL}={pool.name}")[0]
        new = {n["metadata"]["name"]: n for n in mine if n["metadata"]["name"] not in pool.nodes}
        for name, node in sorted(new.items()):
            if (name, "Node") not in seen:
                seen.add((name, "Node"))
                claim = _claim_of(node, claims)
                log(f"+{now:.1f}s Node {name} registered" + (f" (NodeClaim {claim})" if claim else ""))
                if up.registered is None:
                    up.node, up.registered = name, now
                    up.claim = claim or up.claim
        on = ((pod or {}).get("spec") or {}).get("nodeName")
        if on and up.scheduled is None:
            up.scheduled = now
            log(f"+{now:.1f}s pod scheduled on {on}")
            if on not in new:
                up.elsewhere = on
                return up, pod, claims
            up.node, up.claim = on, _claim_of(new[on], claims) or up.claim
        if up.scheduled is not None and status.get("phase") == "Running":
            up.running = now
            log(f"+{now:.1f}s pod Running")
            return up, pod, claims
        if pod is None or status.get("phase") in ("Succeeded", "Failed") or now >= ctx.timeout:
            return up, pod, claims
        time.sleep(POLL)


def _up_failure(ctx: Context, pool: Pool, up: _Up, pod: Obj | None, claims: dict[str, Obj]) -> str:
    """Which hop did not come, and what Karpenter and the scheduler said about it."""
    want = f"the pod claiming one {pool.product} GPU"
    waited = f"within {ctx.timeout:.0f}s"
    on = ((pod or {}).get("spec") or {}).get("nodeName")
    phase = ((pod or {}).get("status") or {}).get("phase")
    if pod is None:
        step = f"{want} is gone"
    elif up.elsewhere:
        step = f"{want} was placed on {up.elsewhere}, a node that was there before: nothing scaled"
    elif up.pending is None and not on:
        step = f"{want} was never marked unschedulable {waited} (is the kube-scheduler running?)"
    elif not claims:
        step = f"no NodeClaim for NodePool {pool.name} {waited} of {want} pending"
    elif up.registered is None:
        step = f"NodeClaim(s) of NodePool {pool.name} brought no Node {waited}: " + "; ".join(
            f"{n}: {_conditions(c)}" for n, c in sorted(claims.items()))
    elif up.scheduled is None:
        step = f"Node {up.node} registered but {want} was not scheduled there {waited}"
    else:
        statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or []
        waiting = [str((s.get("state") or {}).get("waiting", {}).get("reason") or "") for s in statuses]
        step = f"{want} was scheduled on {on} but is {phase}" + (f" ({', '.join(w for w in waiting if w)})"
                                                                  if any(waiting) else "")
    why = unscheduled(pod) if not on else ""
    said = _karpenter_said(ctx, pool.name, sorted(claims), up.since)
    parts = [step]
    if why:
        parts.append(f"scheduler: {why}")
    parts.append(f"Karpenter: {' | '.join(said[-3:])}" if said
                 else "Karpenter said nothing about the pod or the NodePool (is its controller running?)")
    return "; ".join(parts)


def _left(ctx: Context, claim: str, node: str) -> list[str]:
    """What of the scaled-up node is still there: its NodeClaim (with its hops) and its Node."""
    got = get_json(ctx.gw, f"/apis/{API_VERSION}/nodeclaims/{claim}") if claim else None
    out = [f"NodeClaim {claim} ({_conditions(got)})"] if got is not None else []
    return out + ([f"Node {node}"] if ctx.gw.get("v1", "Node", node) is not None else [])


def _scale_down(ctx: Context, log: Log, pool: Pool, claim: str, node: str, bound: float) -> float | None:
    """Seconds from the pod's deletion until the NodeClaim and its Node are gone; None: not in `bound`."""
    t1 = time.monotonic()
    ctx.gw.delete("v1", "Pod", NAME, ctx.namespace)
    ctx.gw.delete(RESOURCE_API, "ResourceClaimTemplate", NAME, ctx.namespace)
    log(f"pod and its claim template deleted; Node {node} should go once empty for {pool.consolidate_after}")
    deleting = False
    while True:
        now = time.monotonic() - t1
        got = get_json(ctx.gw, f"/apis/{API_VERSION}/nodeclaims/{claim}") if claim else None
        if got is not None and (got.get("metadata") or {}).get("deletionTimestamp") and not deleting:
            deleting = True
            # nodeclaim_status.go ConditionTypeDisruptionReason: why the disruption controller took it.
            reason = next((str(c.get("reason") or c.get("message") or "") for c in
                           (got.get("status") or {}).get("conditions") or [] if c.get("type") == "DisruptionReason"),
                          "")
            log(f"+{now:.1f}s NodeClaim {claim} being deleted" + (f" ({reason})" if reason else ""))
        if got is None and ctx.gw.get("v1", "Node", node) is None:
            log(f"+{now:.1f}s " + (f"NodeClaim {claim} and " if claim else "") + f"Node {node} gone")
            return now
        if now >= bound:
            return None
        time.sleep(POLL)


def cluster_autoscaling(ctx: Context) -> Result:
    log = Log(ctx, RID)
    if get_json(ctx.gw, f"/apis/{API_VERSION}") is None:
        return Result(RID, "Not Implemented", "skipped", NO_AUTOSCALER, log.lines)
    nodepools = items(ctx.gw, f"/apis/{API_VERSION}/nodepools")
    if not nodepools:
        return Result(RID, "Not Implemented", "skipped", NO_AUTOSCALER, log.lines)
    nodes = ctx.gw.list("v1", "Node", label_selector=NODEPOOL_LABEL)[0]
    pools = [p for p in (_pool(np, nodes) for np in nodepools) if p is not None]
    names = ", ".join(np["metadata"]["name"] for np in nodepools)
    if not pools:
        return Result(RID, "Not Implemented", "skipped",
                      f"Karpenter NodePools {names}, but none launches a GPU instance type this project renders "
                      f"pools for: {NO_AUTOSCALER}", log.lines)
    for p in pools:
        log(f"NodePool {p.name}: {p.instance_type} ({p.gpus}x {p.product}), {len(p.nodes)} node(s), "
            f"limit {p.limit if p.limit is not None else 'none'}, consolidateAfter {p.consolidate_after}")
    # The cheapest proof: a pool with room, no node now (the scale from zero users see), the fewest GPUs a node.
    pool = min(pools, key=lambda p: (p.full, len(p.nodes), p.gpus, p.name))
    if pool.full:
        log(f"every GPU NodePool is at its node limit; trying {pool.name} for Karpenter's word on it")
    before = set(_node_claims(ctx.gw, pool.name))
    n = len(pool.nodes)
    made = [create(ctx, obj) for obj in _probe(ctx, pool)][-1]
    t0 = time.monotonic()
    # Karpenter stamps its events by its own clock: a little slack for its skew from the API server's.
    created = _when((made.get("metadata") or {}).get("creationTimestamp"))
    since = created - timedelta(seconds=5) if created else None
    log(f"pod {NAME} created, claiming one {pool.product} GPU on NodePool {pool.name} ({n} node(s) now)")
    up, pod, claims = _scale_up(ctx, log, pool, before, t0, since)
    if up.running is None:
        return Result(RID, "Not Implemented", "failed",
                      f"scale-up of NodePool {pool.name}: {_up_failure(ctx, pool, up, pod, claims)}", log.lines)
    said = _karpenter_said(ctx, pool.name, [up.claim] if up.claim else [], up.since)
    if said:
        log(f"Karpenter said: {' | '.join(said)}")
    grew = f"a pending pod claiming one {pool.product} GPU scaled NodePool {pool.name} from {n} to {n + 1} nodes in " \
           f"{up.running:.0f} s"
    idle = pool.idle_seconds
    if idle is None or idle > ctx.timeout:
        # The node's idle time starts now, not at the command's cleanup.
        ctx.gw.delete("v1", "Pod", NAME, ctx.namespace)
        ctx.gw.delete(RESOURCE_API, "ResourceClaimTemplate", NAME, ctx.namespace)
        log(f"scale-down not waited for: consolidateAfter {pool.consolidate_after} is beyond --timeout "
            f"{ctx.timeout:.0f}s")
        after = "never removes it (Never)" if idle is None else f"removes it once empty for {pool.consolidate_after}"
        return Result(RID, "Partially Implemented", "passed",
                      f"{grew}; scale-down is left to the pool's consolidateAfter {pool.consolidate_after} and was not "
                      f"observed (Karpenter {after}; node {up.node} is now empty)", log.lines)
    bound = idle + ctx.timeout
    down = _scale_down(ctx, log, pool, up.claim, up.node, bound)
    if down is None:
        disruption = (get_json(ctx.gw, f"/apis/{API_VERSION}/nodepools/{pool.name}") or {}).get("spec", {}).get(
            "disruption") or {}
        budgets = ", ".join(f"nodes={b.get('nodes')}" for b in disruption.get("budgets") or [])
        said = _karpenter_said(ctx, pool.name, [up.claim] if up.claim else [], up.since)
        return Result(RID, "Not Implemented", "failed",
                      f"{grew}, but scale-down did not happen: {' and '.join(_left(ctx, up.claim, up.node))} still "
                      f"there {bound:.0f}s after the pod left (consolidateAfter {pool.consolidate_after}, "
                      f"consolidationPolicy {disruption.get('consolidationPolicy', '?')}"
                      + (f", budgets {budgets}" if budgets else "") + ")"
                      + (f"; Karpenter: {' | '.join(said[-3:])}" if said else ""), log.lines)
    return Result(RID, "Implemented", "passed", f"{grew}, and back in {down:.0f} s", log.lines)

"""One check per hop of the DRA allocation path, over plain objects (pure).

DeviceClass -> ResourceSlices -> ResourceClaims -> scheduler -> node placement -> kubelet/CDI
(what the container saw) -> distinct GPUs -> Job outcome -> optional cases -> DCGM exporter.
Every check passes, fails or skips with a reason; a check that found nothing to look at fails
instead of passing vacuously.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from components.labels import POOL_LABELS
from components.smoke import all_reduce, probe
from components.smoke import device_class as dclass
from components.smoke.expectations import (
    CASE_LABEL,
    GFD_COUNT_LABEL,
    GPU_CONFIG_API,
    INSTANCE_TYPE_LABEL,
    NO_KUBELET,
    POD_GROUP_ANNOTATION,
    QUEUE_LABEL,
    RUN_LABEL,
    CaseExpectation,
    Expectations,
)
from components.smoke.snapshot import (
    FINISHED_PHASES,
    Obj,
    SliceDevice,
    allocation_nodes,
    allocation_results,
    annotations_of,
    attribute,
    claim_of,
    condition,
    container_state,
    containers_started,
    event_message,
    labels,
    name,
    reporter,
    slice_devices,
    start_failure,
)
from components.smoke.snapshot import (
    Snapshot as Snapshot,  # re-exported: callers build snapshots next to verify()
)

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"
SCHEDULING_REASONS = ("FailedScheduling", "Unschedulable", "FailedBinding", "BindingError")


@dataclass
class CheckResult:
    name: str
    hop: str
    status: str
    message: str
    duration_ms: float = 0.0
    details: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _outcome(check: str, hop: str, problems: list[str], ok: str) -> CheckResult:
    if not problems:
        return CheckResult(check, hop, PASSED, ok)
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    return CheckResult(check, hop, FAILED, problems[0] + more, details=problems)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


class _View:
    """Indexes over a snapshot, computed once for all checks."""

    def __init__(self, exp: Expectations, snap: Snapshot) -> None:
        self.exp, self.snap = exp, snap
        self.slices = slice_devices(snap.slices, exp.driver)
        self.claims = {name(c): c for c in snap.claims}
        self.nodes = {name(n): n for n in snap.nodes}
        # Events per (kind, name), oldest first: one pass, so per-pod lookups stay linear in the
        # snapshot (1,000 nodes x 8 GPUs and 8,000 pods: docs/benchmarks.md, verifier).
        self.events: dict[tuple[str, str], list[Obj]] = {}
        for e in snap.events:
            about = e.get("involvedObject") or e.get("regarding") or {}
            self.events.setdefault((str(about.get("kind", "")), str(about.get("name", ""))), []).append(e)
        for found in self.events.values():
            found.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
        self._parsed: dict[str, probe.ProbeOutput] = {}  # log text -> parsed once (parsed_log)
        # Claim versions that held an allocation, per claim (history, then the recorded last one).
        self.versions: dict[str, list[Obj]] = {}
        for entry in snap.claim_history:
            obj = entry.get("object") or {}
            if entry.get("type") != "DELETED" and allocation_results(obj):
                self.versions.setdefault(name(obj), []).append(obj)
        for c in snap.claims:
            self.versions.setdefault(name(c), []).append(c)
        wanted = {c.case for c in exp.cases}
        self.by_case: dict[str, list[Obj]] = {c.case: [] for c in exp.cases}
        for pod in sorted(snap.pods, key=name):
            lb = labels(pod)
            if lb.get(RUN_LABEL) == exp.run_id and lb.get(CASE_LABEL) in wanted:
                self.by_case[lb[CASE_LABEL]].append(pod)

    def pods(self) -> list[tuple[CaseExpectation, Obj]]:
        return [(c, p) for c in self.exp.cases for p in self.by_case[c.case]]

    def claim(self, pod: Obj) -> tuple[str | None, Obj | None]:
        cname = claim_of(self.snap, pod)
        return cname, self.claims.get(cname) if cname else None

    def allocated(self, pod: Obj) -> list[tuple[Obj, SliceDevice | None]]:
        _, claim = self.claim(pod)
        results = allocation_results(claim) if claim else []
        # Only our driver's devices resolve: another driver's pool/device names are not ours.
        return [(r, self.slices.get((r.get("pool", ""), r.get("device", "")))
                 if r.get("driver") == self.exp.driver else None) for r in results]

    def pod_events(self, pod: Obj) -> list[Obj]:
        return self.events.get(("Pod", name(pod)), [])

    def parsed_log(self, text: str) -> probe.ProbeOutput:
        """A container log parsed once, however many checks read it."""
        out = self._parsed.get(text)
        if out is None:
            out = self._parsed[text] = probe.parse(text)
        return out

    def reserved_for(self, claim_name: str, pod: str) -> bool:
        """Some allocated version of the claim was reserved for the pod (the scheduler reserves it
        when it binds; the claim controller clears reservedFor once the pod is done)."""
        return any(r.get("name") == pod and r.get("resource", "pods") == "pods"
                   for c in self.versions.get(claim_name, [])
                   for r in (c.get("status", {}).get("reservedFor") or []))

    def why_pending(self, pod: Obj) -> str:
        msg = event_message(self.pod_events(pod), *SCHEDULING_REASONS)
        if not msg:
            cond = condition(pod, "PodScheduled") or {}
            msg = str(cond.get("message") or "")
        return msg or "no scheduling event recorded"

    def attr(self, sd: SliceDevice | None, key: str) -> Any:
        return attribute(sd.device, key, self.exp.driver) if sd else None


# --- hops -------------------------------------------------------------------------------------


def check_device_class(v: _View) -> CheckResult:
    """Exists, and selects our driver's devices of the case's type: by its CEL selectors, not its name.
    Only the classes the cases ask for: a MIG-only run (wholeGpu off) needs no whole-GPU class."""
    present = {name(dc): dc for dc in v.snap.device_classes}
    wanted: dict[str, str] = {}
    for c in v.exp.cases:
        wanted[c.device_class] = "mig" if c.case == "mig" else wanted.get(c.device_class, "gpu")
    if not wanted:
        return CheckResult("device-class", "DeviceClass", FAILED, "no case to run: no DeviceClass to look up")
    problems = []
    for w, want_type in wanted.items():
        if w not in present:
            problems.append(f"DeviceClass {w} does not exist (is the DRA driver installed with GPU resources "
                            "enabled?)")
        else:
            problems += dclass.problems(present[w], v.exp.driver, want_type)
    return _outcome("device-class", "DeviceClass", problems,
                    f"DeviceClass {', '.join(wanted)} exists and selects {v.exp.driver} devices")


BLOCKING_TAINTS = ("NoSchedule", "NoExecute")  # resource.k8s.io/v1 DeviceTaintEffect that stop allocation


def _taints(sd: SliceDevice | None) -> list[Obj]:
    taints = (sd.device.get("taints") or []) if sd else []
    return [t for t in taints if isinstance(t, dict) and t.get("effect") in BLOCKING_TAINTS]


def _taint_text(t: Obj) -> str:
    return f"{t.get('key', '')}{'=' + str(t['value']) if t.get('value') else ''}:{t.get('effect')}"


def _tolerates(tolerations: list[Obj], taint: Obj) -> bool:
    """k8s.io/api resource/v1 DeviceToleration: like a pod toleration (empty key + Exists matches
    every taint; Equal compares the value; an empty effect matches every effect)."""
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator", "Equal") == "Exists":
            if not tol.get("key") or tol.get("key") == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _request_tolerations(claim: Obj, request: str) -> list[Obj]:
    """A request's tolerations: v1/v1beta2 `exactly.tolerations` or a `firstAvailable` subrequest
    (`<request>/<subrequest>` in the result), v1beta1 `tolerations` on the request itself."""
    top, _, sub = request.partition("/")
    for r in (claim.get("spec", {}).get("devices") or {}).get("requests") or []:
        if r.get("name") != top:
            continue
        if sub:
            chosen: Obj = next((x for x in r.get("firstAvailable") or [] if x.get("name") == sub), {})
            return list(chosen.get("tolerations") or [])
        return list((r.get("exactly") or {}).get("tolerations") or r.get("tolerations") or [])
    return []


def _physical_gpus(devices: Iterable[SliceDevice], domain: str) -> set[str]:
    """Whole GPUs behind a node's devices: a MIG device counts as its parent GPU."""
    gpus: set[str] = set()
    for sd in devices:
        kind = attribute(sd.device, "type", domain)
        if kind == "gpu":
            gpus.add(str(attribute(sd.device, "uuid", domain) or sd.name))
        elif kind == "mig":
            gpus.add(str(attribute(sd.device, "parentUUID", domain) or sd.name))
    return gpus


def check_slices(v: _View) -> CheckResult:
    exp, hop = v.exp, "ResourceSlice"
    per_node: dict[str, list[SliceDevice]] = {}
    for sd in v.slices.values():
        per_node.setdefault(sd.node, []).append(sd)
    per_node.pop("", None)  # network-attached pools have no node: not GPU nodes
    if not per_node:
        return CheckResult("resource-slices", hop, FAILED,
                           f"no node publishes a {exp.driver} ResourceSlice (is the DRA kubelet plugin running "
                           "on the GPU nodes?)")
    problems = _incomplete_pools(v)
    for node, devs in sorted(per_node.items()):
        tainted = [f"{sd.name} ({', '.join(_taint_text(t) for t in _taints(sd))})" for sd in devs if _taints(sd)]
        if tainted:
            problems.append(f"node {node} publishes tainted GPUs that no claim without a toleration gets: "
                            f"{', '.join(tainted)}")
    counts = {n: len(_physical_gpus(devs, exp.driver)) for n, devs in sorted(per_node.items())}
    if exp.pools is not None:
        by_type: dict[str, set[int]] = {}
        for p in exp.pools:
            by_type.setdefault(p.instance_type, set()).add(p.gpus_per_node)
        uniform = {p.gpus_per_node for p in exp.pools}
        named = {p.name: p for p in exp.pools}
        for node, count in counts.items():
            lb = labels(v.nodes.get(node, {}))
            itype = lb.get(INSTANCE_TYPE_LABEL, "")
            # The pool label names the pool; else the instance type; else all pools agree.
            pool = next((named[lb[k]] for k in POOL_LABELS if lb.get(k) in named), None)
            options = {pool.gpus_per_node} if pool else (by_type.get(itype) or uniform)
            if len(options) != 1:
                problems.append(f"node {node}: cannot tell its pool (instance type '{itype or 'unlabelled'}' "
                                f"matches none of {sorted(by_type)})")
                continue
            expected = next(iter(options))
            if count != expected:
                pool = pool or next((p for p in exp.pools if p.gpus_per_node == expected
                                     and (p.instance_type == itype or len(uniform) == 1)), None)
                where = f" (pool {pool.name}, {pool.instance_type})" if pool else ""
                problems.append(f"node {node} advertises {count} GPU(s), expected {expected}{where}")
        wanted_nodes = sum(p.nodes for p in exp.pools)
        if len(counts) < wanted_nodes:
            pools = ", ".join(f"{p.name}: {p.nodes} x {p.instance_type}" for p in exp.pools)
            problems.append(f"{len(counts)} node(s) publish {exp.driver} slices, expected {wanted_nodes} "
                            f"({pools}); publishing: {', '.join(counts) or 'none'}")
    else:
        for node, count in counts.items():
            gfd = labels(v.nodes.get(node, {})).get(GFD_COUNT_LABEL)
            if gfd is not None and gfd.isdigit() and int(gfd) != count:
                problems.append(f"node {node} advertises {count} GPU(s) but GPU feature discovery counts {gfd} "
                                f"(label {GFD_COUNT_LABEL})")
            elif count < 1:
                problems.append(f"node {node} publishes {exp.driver} slices without any GPU")
    ok = "; ".join(f"{n}: {c} GPU(s)" for n, c in counts.items())
    return _outcome("resource-slices", hop, problems, ok)


def _incomplete_pools(v: _View) -> list[str]:
    seen: dict[str, tuple[int, int]] = {}  # pool -> (slices seen, slices announced), newest generation
    newest: dict[str, int] = {}
    for s in v.snap.slices:
        spec = s.get("spec", {})
        if spec.get("driver") == v.exp.driver:
            pool = spec.get("pool", {})
            newest[pool.get("name", "")] = max(newest.get(pool.get("name", ""), 0), int(pool.get("generation", 0)))
    for s in v.snap.slices:
        spec = s.get("spec", {})
        pool = spec.get("pool", {})
        pname = pool.get("name", "")
        if spec.get("driver") == v.exp.driver and int(pool.get("generation", 0)) == newest.get(pname):
            n, total = seen.get(pname, (0, int(pool.get("resourceSliceCount", 1))))
            seen[pname] = (n + 1, total)
    return [f"pool {p} is incomplete: {n} of {total} ResourceSlices published"
            for p, (n, total) in sorted(seen.items()) if n < total]


def check_claims(v: _View) -> CheckResult:
    exp, problems, done = v.exp, [], []
    pods = v.pods()
    if not pods:
        return CheckResult("claims-allocated", "ResourceClaim", FAILED,
                           f"no smoke-test pod of run {exp.run_id} exists (did the Jobs start?)")
    for _case, pod in pods:
        p = name(pod)
        cname, claim = v.claim(pod)
        if cname is None:
            problems.append(f"pod {p} has no ResourceClaim (resourceClaimStatuses is empty): {v.why_pending(pod)}")
            continue
        results = allocation_results(claim) if claim else []
        if not results:
            problems.append(f"claim {cname} of pod {p} was never allocated: {v.why_pending(pod)}")
            continue
        for r in results:
            where = f"{r.get('pool')}/{r.get('device')}"
            if r.get("driver") != exp.driver:
                problems.append(f"claim {cname} of pod {p} was allocated by driver '{r.get('driver')}', "
                                f"expected '{exp.driver}'")
            elif (sd := v.slices.get((r.get("pool", ""), r.get("device", "")))) is None:
                problems.append(f"claim {cname} of pod {p} got {where}, which no {exp.driver} ResourceSlice advertises")
            elif untolerated := [t for t in _taints(sd)
                                 if not _tolerates(_request_tolerations(claim or {}, str(r.get("request", ""))), t)]:
                problems.append(f"claim {cname} of pod {p} got {where}, tainted "
                                f"{', '.join(_taint_text(t) for t in untolerated)} without a toleration")
            else:
                done.append(f"{p} -> {where}")
        if pod.get("spec", {}).get("nodeName") and not v.reserved_for(cname, p):
            problems.append(f"claim {cname} was allocated but never reserved for pod {p} (status.reservedFor "
                            "does not name it): the kubelet refuses to prepare an unreserved claim")
    return _outcome("claims-allocated", "ResourceClaim", problems, "allocated: " + ", ".join(done))


def check_scheduler(v: _View) -> CheckResult:
    exp, problems = v.exp, []
    pods = v.pods()
    for _case, pod in pods:
        p = name(pod)
        asked = pod.get("spec", {}).get("schedulerName") or "default-scheduler"
        bound = [e for e in v.pod_events(pod) if e.get("reason") == "Scheduled"]
        by = reporter(bound[-1]) if bound else ""
        if asked != exp.scheduler or (by and by != exp.scheduler):
            problems.append(f"pod {p} was scheduled by '{by or asked}', expected '{exp.scheduler}'")
        if exp.queue and labels(pod).get(QUEUE_LABEL) != exp.queue:
            problems.append(f"pod {p} has queue label '{labels(pod).get(QUEUE_LABEL, '')}', expected '{exp.queue}' "
                            f"({QUEUE_LABEL})")
        if not pod.get("spec", {}).get("nodeName"):
            problems.append(f"pod {p} was never scheduled: {v.why_pending(pod)}")
    if not pods:
        problems.append(f"no smoke-test pod of run {exp.run_id} exists")
    queue = f" (queue {exp.queue})" if exp.queue else ""
    return _outcome("scheduler", "scheduler", problems, f"{len(pods)} pod(s) bound by {exp.scheduler}{queue}")


def check_claim_node(v: _View) -> CheckResult:
    problems, compared = [], 0
    for _case, pod in v.pods():
        node = pod.get("spec", {}).get("nodeName")
        cname, claim = v.claim(pod)
        if not node or claim is None:
            continue
        for r, sd in v.allocated(pod):
            compared += 1
            device_node = sd.node if sd else r.get("pool", "")
            if device_node and device_node != node:
                problems.append(f"pod {name(pod)} ran on node {node} but its claim {cname} holds "
                                f"{r.get('pool')}/{r.get('device')} on node {device_node}")
        pinned = allocation_nodes(claim)
        if pinned and node not in pinned:
            problems.append(f"pod {name(pod)} ran on node {node} but claim {cname} is pinned to {sorted(pinned)}")
    if not compared and not problems:
        return CheckResult("claim-node", "node placement", FAILED,
                           "no scheduled pod with an allocated claim to compare")
    return _outcome("claim-node", "node placement", problems,
                    f"{compared} allocation(s) on the node their pod ran on")


def check_pods_started(v: _View) -> CheckResult:
    """Each scheduled pod's containers started: its claim was prepared by the DRA kubelet plugin,
    its sandbox made, its image there, the runtime took its CDI devices. Names the first hop that
    failed, in the kubelet's words."""
    check, hop = "pods-started", "kubelet"
    if not v.exp.in_container:
        return CheckResult(check, hop, SKIPPED, NO_KUBELET)
    problems, started = [], 0
    for _case, pod in v.pods():
        node = pod.get("spec", {}).get("nodeName")
        if not node:
            continue  # not scheduled: claim-node and jobs-complete say why
        why = start_failure(pod, v.pod_events(pod))
        if why:
            problems.append(f"pod {name(pod)} on {node}: {why}")
        elif containers_started(pod):
            started += 1
        else:
            problems.append(f"pod {name(pod)} on {node}: containers not started "
                            f"({pod.get('status', {}).get('phase', 'Unknown')}), no failure reported yet")
    if not started and not problems:
        problems.append("no scheduled pod to look at")
    return _outcome(check, hop, problems, f"{started} pod(s) started: claims prepared, images present, "
                                          "containers created with their CDI devices")


def _observed(out: probe.ProbeOutput, mode: str) -> set[str]:
    if mode == "env":
        return {d.lower() for d in out.env_devices}
    return set(out.uuids)


def _wanted(v: _View, allocated: list[tuple[Obj, SliceDevice | None]], mode: str) -> tuple[set[str], set[str]]:
    """(identities the container must see, identities it may also see: a MIG device's parent GPU)."""
    must: set[str] = set()
    may: set[str] = set()
    for r, sd in allocated:
        if mode == "env":
            must.add(str(r.get("device", "")).lower())
            if (uuid := v.attr(sd, "uuid")) is not None:
                may.add(str(uuid).lower())
            continue
        uuid = v.attr(sd, "uuid")
        must.add(str(uuid) if uuid is not None else f"<no uuid attribute on {r.get('pool')}/{r.get('device')}>")
        if v.attr(sd, "type") == "mig" and (parent := v.attr(sd, "parentUUID")) is not None:
            may.add(str(parent))
    return must, may


def _describe(allocated: list[tuple[Obj, SliceDevice | None]], v: _View) -> str:
    parts = []
    for r, sd in allocated:
        uuid = v.attr(sd, "uuid")
        parts.append(f"{r.get('pool')}/{r.get('device')}" + (f" (uuid {uuid})" if uuid else ""))
    return ", ".join(parts) or "nothing"


def check_container_device(v: _View) -> CheckResult:
    hop = "kubelet/CDI"
    if not v.exp.in_container:
        return CheckResult("container-device", hop, SKIPPED, NO_KUBELET)
    mode, problems, seen = v.exp.probe_expect, [], 0
    for case, pod in v.pods():
        p = name(pod)
        allocated = v.allocated(pod)
        for c in case.containers:
            key = f"{p}/{c}"
            text = v.snap.logs.get(key)
            if text is None:
                why = v.snap.log_errors.get(key) or container_state(pod, c)
                problems.append(f"no log from {key}: {why}")
                continue
            out = v.parsed_log(text)
            if not out.began:
                tail = " | ".join(text.strip().splitlines()[-3:]) or "empty log"
                problems.append(f"{key} printed no probe output ({container_state(pod, c)}): {tail}")
                continue
            if mode == "nvidia-smi" and out.nvidia_smi_rc != 0:
                detail = " | ".join(out.other_lines[-2:]) or "no output"
                rc = "missing" if out.nvidia_smi_rc is None else f"rc={out.nvidia_smi_rc}"
                problems.append(f"{key}: nvidia-smi -L failed ({rc}): {detail}")
                continue
            if not allocated:
                problems.append(f"{key}: cannot compare, its claim was never allocated")
                continue
            must, may = _wanted(v, allocated, mode)
            got = _observed(out, mode)
            seen += 1
            if not must <= got or not got <= must | may:
                shown = ", ".join(sorted(got)) or "no device"
                problems.append(f"{key} saw {shown}, but its claim was allocated {_describe(allocated, v)}")
    if not seen and not problems:
        problems.append("no container output to compare")
    return _outcome("container-device", hop, problems,
                    f"{seen} container(s) saw exactly their allocated device")


def _overlaps(v: _View, claims: dict[str, str]) -> list[str]:
    """Replays the claim history: a device allocated to a claim while another claim still held it.
    `claims` maps the claims to judge to their pods."""
    holder: dict[tuple[str, str, str], str] = {}
    live: dict[str, set[tuple[str, str, str]]] = {}
    problems = []
    for entry in v.snap.claim_history:
        obj = entry.get("object") or {}
        c = name(obj)
        if c not in claims:
            continue
        now = set() if entry.get("type") == "DELETED" else {
            (r.get("driver", ""), r.get("pool", ""), r.get("device", "")) for r in allocation_results(obj)}
        before = live.get(c, set())
        for d in before - now:
            if holder.get(d) == c:
                del holder[d]
        for d in now - before:
            if d in holder and holder[d] != c:
                problems.append(f"pods {claims[holder[d]]} and {claims[c]} held {d[1]}/{d[2]} at the same time")
            holder[d] = c
        live[c] = now
    return problems


def check_distinct(v: _View) -> CheckResult:
    """Pods of a case hold their GPUs at the same time (the barrier), so they must hold different
    ones. Without a kubelet there is no barrier: the claim history shows what overlapped."""
    check, hop = "distinct-gpus", "allocation"
    problems, compared = [], 0
    cases = [c for c in v.exp.cases if c.distinct]
    if not cases:
        return CheckResult(check, hop, SKIPPED, "no case holds several GPUs at once (wholeGpu and gang are off)")
    for case in cases:
        holders: dict[tuple[str, str, str], str] = {}
        saw: dict[str, str] = {}
        claims = {cn: name(p) for p in v.by_case[case.case] if (cn := claim_of(v.snap, p))}
        if v.exp.in_container:
            for pod in v.by_case[case.case]:
                p = name(pod)
                for r, _sd in v.allocated(pod):
                    compared += 1
                    key = (r.get("driver", ""), r.get("pool", ""), r.get("device", ""))
                    if key in holders:
                        problems.append(f"pods {holders[key]} and {p} were both allocated {key[1]}/{key[2]}")
                    holders.setdefault(key, p)
                text = v.snap.logs.get(f"{p}/{case.containers[0]}")
                if text is not None:
                    for ident in _observed(v.parsed_log(text), v.exp.probe_expect):
                        if ident in saw and saw[ident] != p:
                            problems.append(f"pods {saw[ident]} and {p} both saw {ident}")
                        saw.setdefault(ident, p)
        elif v.snap.claim_history:
            compared += sum(1 for pod in v.by_case[case.case] if v.allocated(pod))
        problems += _overlaps(v, claims)
    if not v.exp.in_container and not v.snap.claim_history:
        return CheckResult(check, hop, SKIPPED, f"{NO_KUBELET}: no barrier and no claim history to compare")
    problems = _unique(problems)
    if compared < 2 and not problems:
        if sum(c.pods for c in cases) < 2:
            return CheckResult(check, hop, SKIPPED, "one GPU pod per case: nothing to compare")
        return CheckResult(check, hop, FAILED, f"only {compared} allocated claim(s): cannot show the pods held "
                                               "distinct GPUs")
    how = "held at the same time" if v.exp.in_container else "per the claim history"
    return _outcome(check, hop, problems, f"{compared} allocations, no device shared ({how})")


def _pod_trouble(v: _View, pod: Obj, containers: tuple[str, ...]) -> str:
    phase = pod.get("status", {}).get("phase", "Unknown")
    if not pod.get("spec", {}).get("nodeName"):
        return f"pod {name(pod)} {phase}: {v.why_pending(pod)}"
    states = ", ".join(f"{c} {container_state(pod, c)}" for c in containers)
    prepare = event_message(v.pod_events(pod), "FailedPrepareDynamicResources", "FailedCreatePodSandBox")
    return f"pod {name(pod)} {phase} on {pod['spec']['nodeName']}: {states}" + (f"; {prepare}" if prepare else "")


def check_jobs(v: _View) -> CheckResult:
    problems, done = [], []
    jobs = {name(j): j for j in v.snap.jobs}
    for case in v.exp.cases:
        job = jobs.get(case.job)
        if job is None:
            problems.append(f"Job {case.job} does not exist")
            continue
        status = job.get("status", {})
        # FailureTarget comes first (1.31+): the Job is failing, pods are still being torn down.
        failed = condition(job, "Failed") or condition(job, "FailureTarget")
        complete = condition(job, "Complete")
        bad = [_pod_trouble(v, p, case.containers) for p in v.by_case[case.case]
               if p.get("status", {}).get("phase") != "Succeeded"]
        tail = ("; " + "; ".join(bad)) if bad else ""
        if failed and failed.get("status") == "True":
            problems.append(f"Job {case.job} failed ({failed.get('reason', '')}: {failed.get('message', '')}){tail}")
        elif job.get("spec", {}).get("suspend"):
            problems.append(f"Job {case.job} is still suspended (the runner never resumed it)")
        elif not (complete and complete.get("status") == "True") or int(status.get("succeeded", 0)) < case.pods:
            problems.append(f"Job {case.job} did not complete: {status.get('succeeded', 0)}/{case.pods} succeeded, "
                            f"{status.get('active', 0)} active, {status.get('failed', 0)} failed{tail}")
        else:
            done.append(f"{case.job} {case.pods}/{case.pods}")
    return _outcome("jobs-complete", "Job", problems, "completed: " + ", ".join(done))


# --- optional cases ---------------------------------------------------------------------------


def check_shared(v: _View) -> CheckResult:
    case = v.exp.case("shared")
    if case is None:
        return CheckResult("case-shared-claim", "shared claim", SKIPPED, "smokeTest.sharedClaim is off")
    pods = v.by_case["shared"]
    if not pods:
        return CheckResult("case-shared-claim", "shared claim", FAILED, f"no pod of Job {case.job} exists")
    problems = []
    pod = pods[0]
    p = name(pod)
    for c in pod.get("spec", {}).get("containers") or []:
        refs = [r.get("name") for r in (c.get("resources") or {}).get("claims") or []]
        if refs != ["gpu"]:
            problems.append(f"container {p}/{c.get('name')} references claims {refs}, expected the shared 'gpu'")
    allocated = v.allocated(pod)
    if len(allocated) != 1:
        problems.append(f"pod {p}'s shared claim holds {len(allocated)} device(s), expected 1")
    if v.exp.in_container and not problems:
        seen = {c: _observed(v.parsed_log(v.snap.logs.get(f"{p}/{c}", "")), v.exp.probe_expect)
                for c in case.containers}
        if len({frozenset(s) for s in seen.values()}) != 1 or not next(iter(seen.values())):
            shown = "; ".join(f"{c}: {', '.join(sorted(s)) or 'nothing'}" for c, s in seen.items())
            problems.append(f"containers of pod {p} did not see the same device ({shown})")
    where = _describe(allocated, v)
    inside = "both containers saw it" if v.exp.in_container else f"containers not checked: {NO_KUBELET}"
    return _outcome("case-shared-claim", "shared claim", problems, f"one claim on {where}; {inside}")


def _reserved_sets(v: _View, claim_name: str) -> list[set[str]]:
    """The pods each allocated version of a claim was reserved for."""
    return [{str(r.get("name")) for r in (c.get("status", {}).get("reservedFor") or []) if r.get("resource", "pods")
             == "pods"} for c in v.versions.get(claim_name, [])]


def _allocations(v: _View, claim_name: str) -> list[frozenset[tuple[str, str, str]]]:
    """Each time the claim was allocated, in order: per the watched history (an allocation dropped and
    made again counts twice), else the distinct allocations of its recorded versions."""
    def devices(obj: Obj) -> frozenset[tuple[str, str, str]]:
        return frozenset((str(r.get("driver", "")), str(r.get("pool", "")), str(r.get("device", "")))
                         for r in allocation_results(obj))

    out: list[frozenset[tuple[str, str, str]]] = []
    history = [e for e in v.snap.claim_history if name(e.get("object") or {}) == claim_name]
    if history:
        current: frozenset[tuple[str, str, str]] = frozenset()
        for entry in history:
            now = frozenset() if entry.get("type") == "DELETED" else devices(entry.get("object") or {})
            if now and now != current:
                out.append(now)
            current = now
        return out
    return list(dict.fromkeys(d for c in v.versions.get(claim_name, []) if (d := devices(c))))


def check_shared_named(v: _View) -> CheckResult:
    """NVIDIA's gpu-test3: two pods name one ResourceClaim object. It is allocated once, reserved for
    both pods at the same time, both run on its node and (with a kubelet) both see the same GPU."""
    check, hop = "case-named-claim", "named claim"
    case = v.exp.case("shared-named")
    if case is None:
        return CheckResult(check, hop, SKIPPED, "smokeTest.sharedNamedClaim is off")
    pods = v.by_case[case.case]
    if not pods:
        return CheckResult(check, hop, FAILED, f"no pod of Job {case.job} exists")
    problems = []
    if len(pods) < case.pods:
        problems.append(f"only {len(pods)} of {case.pods} pods of Job {case.job} exist")
    for pod in pods:
        refs = [r for r in pod.get("spec", {}).get("resourceClaims") or [] if r.get("name") == "gpu"]
        named = refs[0].get("resourceClaimName") if refs else None
        if named != case.claim:
            how = f"claim '{named}'" if named else "a claim template or nothing"
            problems.append(f"pod {name(pod)} names {how}, expected the ResourceClaim {case.claim}")
    claim = v.claims.get(case.claim)
    if claim is None or not allocation_results(claim):
        problems.append(f"ResourceClaim {case.claim} was never seen (was it created?)" if claim is None
                        else f"claim {case.claim} was never allocated: {v.why_pending(pods[0])}")
        return _outcome(check, hop, problems, "")
    results = allocation_results(claim)
    where = _describe(v.allocated(pods[0]), v)
    if len(results) != 1:
        problems.append(f"claim {case.claim} holds {len(results)} devices ({where}), expected 1")
    together = {name(p) for p in pods}
    if v.exp.in_container:
        # The barrier keeps both pods running, so one allocation must have served both.
        allocations = _allocations(v, case.claim)
        if len(allocations) > 1:
            shown = "; ".join(", ".join(f"{d[1]}/{d[2]}" for d in sorted(a)) for a in allocations)
            problems.append(f"claim {case.claim} was allocated {len(allocations)} times ({shown}): its pods did not "
                            "share one allocation")
        if not any(together <= r for r in _reserved_sets(v, case.claim)):
            held = "; ".join(", ".join(sorted(r)) or "nobody" for r in _reserved_sets(v, case.claim)) or "no version"
            problems.append(f"claim {case.claim} was never reserved for both pods at once (reservedFor: {held})")
    nodes = allocation_nodes(claim) or {sd.node for _r, sd in v.allocated(pods[0]) if sd and sd.node}
    for pod in pods:
        node = pod.get("spec", {}).get("nodeName")
        if not node:
            problems.append(f"pod {name(pod)} was never scheduled: {v.why_pending(pod)}")
        elif nodes and node not in nodes:
            problems.append(f"pod {name(pod)} ran on node {node}, but claim {case.claim} is on "
                            f"{', '.join(sorted(nodes))}")
    if v.exp.in_container and not problems:
        seen = {name(p): _observed(v.parsed_log(v.snap.logs.get(f"{name(p)}/{case.containers[0]}", "")),
                                   v.exp.probe_expect) for p in pods}
        if len({frozenset(s) for s in seen.values()}) != 1 or not next(iter(seen.values())):
            shown = "; ".join(f"{p}: {', '.join(sorted(s)) or 'nothing'}" for p, s in seen.items())
            problems.append(f"the pods naming claim {case.claim} did not see the same device ({shown})")
    inside = "both pods saw it" if v.exp.in_container else f"pods' view not checked: {NO_KUBELET}"
    once = "allocated once, reserved for both pods at once" if v.exp.in_container else "reserved for each pod"
    return _outcome(check, hop, problems, f"claim {case.claim} on {where}: {once}, both on its node; {inside}")


def check_gang(v: _View) -> CheckResult:
    case = v.exp.case("gang")
    if case is None:
        return CheckResult("case-gang", "gang", SKIPPED, "smokeTest.gang is off")
    problems = []
    group = next((g for g in v.snap.pod_groups if name(g) == case.pod_group), None)
    if group is None:
        problems.append(f"PodGroup {case.pod_group} does not exist")
    elif int(group.get("spec", {}).get("minMember", 0)) != case.pods:
        problems.append(f"PodGroup {case.pod_group} has minMember {group['spec'].get('minMember')}, "
                        f"expected {case.pods}")
    pods = v.by_case["gang"]
    for pod in pods:
        if annotations_of(pod).get(POD_GROUP_ANNOTATION) != case.pod_group:
            problems.append(f"pod {name(pod)} is in PodGroup '{annotations_of(pod).get(POD_GROUP_ANNOTATION, '')}', "
                            f"expected {case.pod_group}")
    scheduled = [p for p in pods if p.get("spec", {}).get("nodeName")]
    if len(pods) < case.pods:
        problems.append(f"only {len(pods)} of {case.pods} gang pods exist")
    elif 0 < len(scheduled) < case.pods:
        problems.append(f"gang split: {len(scheduled)} of {case.pods} pods were scheduled")
    elif not scheduled:
        problems.append(f"no gang pod was scheduled: {v.why_pending(pods[0]) if pods else 'no pods'}")
    return _outcome("case-gang", "gang", problems,
                    f"PodGroup {case.pod_group} (minMember {case.pods}) bound all {case.pods} pods")


def check_mig(v: _View) -> CheckResult:
    case = v.exp.case("mig")
    if case is None:
        return CheckResult("case-mig", "MIG", SKIPPED, "smokeTest.mig is off")
    problems, done = [], []
    pods = v.by_case["mig"]
    if not pods:
        problems.append(f"no pod of Job {case.job} exists")
    for pod in pods:
        allocated = v.allocated(pod)
        if not allocated:
            problems.append(f"pod {name(pod)}'s MIG claim was never allocated: {v.why_pending(pod)}")
        for r, sd in allocated:
            kind, profile = v.attr(sd, "type"), v.attr(sd, "profile")
            if kind != "mig":
                problems.append(f"pod {name(pod)} got {r.get('pool')}/{r.get('device')} of type '{kind}', "
                                "expected a MIG device")
            elif case.profile and profile != case.profile:
                problems.append(f"pod {name(pod)} got {r.get('pool')}/{r.get('device')} of profile '{profile}', "
                                f"smokeTest.migProfile asks for '{case.profile}'")
            else:
                done.append(f"{r.get('pool')}/{r.get('device')} ({profile})")
    return _outcome("case-mig", "MIG", problems, "MIG device " + ", ".join(done))


def _gpu_configs(claim: Obj, driver: str) -> list[Obj]:
    """The GpuConfig parameters the allocation carries for `driver`'s request `gpu` (the API server
    copies the claim's spec.devices.config there: k8s.io/api resource/v1 DeviceAllocationResult.Config)."""
    out = []
    alloc = claim.get("status", {}).get("allocation") or {}
    for cfg in (alloc.get("devices") or {}).get("config") or []:
        opaque = cfg.get("opaque") or {}
        params = opaque.get("parameters") or {}
        requests = cfg.get("requests") or []
        if (opaque.get("driver") == driver and params.get("apiVersion") == GPU_CONFIG_API
                and params.get("kind") == "GpuConfig" and (not requests or "gpu" in requests)):
            out.append(params)
    return out


def check_sharing(v: _View) -> CheckResult:
    """smokeTest.sharing: the shared cases' allocations carry the GpuConfig with the strategy; with MPS
    the containers got the MPS daemon's pipe directory, which only the driver's MPS setup injects."""
    check, hop = "gpu-sharing", "GPU sharing"
    cases = [c for c in v.exp.cases if c.sharing]
    if not cases:
        return CheckResult(check, hop, SKIPPED, "smokeTest.sharing is none")
    problems, judged, strategies = [], 0, sorted({c.sharing for c in cases})
    for case in cases:
        claims: dict[str, Obj | None] = {}
        for pod in v.by_case[case.case]:
            cname, claim = v.claim(pod)
            if cname:
                claims.setdefault(cname, claim)
        if not claims:
            problems.append(f"no claim of case {case.case} to inspect (Job {case.job})")
        for cname, claim in sorted(claims.items()):
            if claim is None or not allocation_results(claim):
                problems.append(f"claim {cname} was never allocated: no configuration to inspect")
                continue
            judged += 1
            found = [(p.get("sharing") or {}).get("strategy") for p in _gpu_configs(claim, v.exp.driver)]
            if case.sharing not in found:
                got = ", ".join(str(f) for f in found) or "none"
                problems.append(f"claim {cname}'s allocation carries no {GPU_CONFIG_API} GpuConfig with sharing "
                                f"strategy {case.sharing} for driver {v.exp.driver} (strategies found: {got})")
        if case.sharing == "MPS" and v.exp.in_container:
            for pod in v.by_case[case.case]:
                for c in case.containers:
                    key = f"{name(pod)}/{c}"
                    if (text := v.snap.logs.get(key)) is None:
                        continue  # container-device reports the missing log
                    out = v.parsed_log(text)
                    if out.mps_pipe is None:
                        problems.append(f"{key} got no MPS pipe directory (CUDA_MPS_PIPE_DIRECTORY unset): the "
                                        "driver did not set up MPS for its claim")
                    elif not out.mps_mounted:
                        problems.append(f"{key}: MPS pipe directory {out.mps_pipe} is not mounted")
    inside = "" if v.exp.in_container or "MPS" not in strategies else f"; MPS in containers not checked: {NO_KUBELET}"
    return _outcome(check, hop, _unique(problems),
                    f"{judged} claim(s) carry the GpuConfig ({', '.join(strategies)}){inside}")


def check_dcgm(v: _View) -> CheckResult:
    hop = "DCGM exporter"
    if v.exp.dcgm is False:
        return CheckResult("dcgm-metrics", hop, SKIPPED, "DCGM check is off for this run")
    if v.snap.metrics is None:
        note = v.snap.metrics_note or "no nvidia-dcgm-exporter Service found"
        if v.exp.dcgm:
            return CheckResult("dcgm-metrics", hop, FAILED, f"DCGM exporter required but unavailable: {note}")
        return CheckResult("dcgm-metrics", hop, SKIPPED, note)
    problems, found = [], 0
    for _case, pod in v.pods():
        for _r, sd in v.allocated(pod):
            gpu = v.attr(sd, "parentUUID") if v.attr(sd, "type") == "mig" else v.attr(sd, "uuid")
            node = sd.node if sd else ""  # where the GPU is, whatever the pod placement says
            if gpu is None or not node:
                continue
            text = v.snap.metrics.get(node)
            if text is None:
                problems.append(f"no DCGM exporter endpoint on node {node}")
            elif f'UUID="{gpu}"' not in text:
                problems.append(f"DCGM exporter on {node} does not report {gpu} (allocated to pod {name(pod)})")
            else:
                found += 1
    if not found and not problems:
        problems.append("no allocated GPU to look up in the DCGM metrics")
    return _outcome("dcgm-metrics", hop, _unique(problems), f"DCGM exporter reports all {found} allocated GPU(s)")


def leftover_claims(claims: list[Obj], pods: list[Obj]) -> list[str]:
    """Claims that still hold a device although no pod of theirs runs: reserved for nobody, or
    only for pods that finished or are gone. (Claims of a pod still running are not left over.)"""
    running = {name(p) for p in pods if p.get("status", {}).get("phase") not in FINISHED_PHASES}
    out = []
    for c in claims:
        if not allocation_results(c):
            continue
        holders = [r.get("name") for r in c.get("status", {}).get("reservedFor") or [] if r.get("resource") == "pods"]
        if not set(holders) & running:
            out.append(f"claim {name(c)} still holds " + ", ".join(f"{r.get('pool')}/{r.get('device')}"
                                                                   for r in allocation_results(c))
                       + (f" (reserved for finished pod(s) {', '.join(sorted(set(holders)))})" if holders else
                          " (reserved for nobody)"))
    return out


def check_released(v: _View) -> CheckResult:
    """After the run, no claim of it holds a GPU: generated claims deleted with their pods, named
    claims deallocated (by the claim controller where the scheduler set the delete-protection
    finalizer, else by the runner: Runner.release_named_claim)."""
    check, hop = "claims-released", "cleanup"
    if v.snap.claims_after is None:
        return CheckResult(check, hop, SKIPPED, "the claims were not listed after the run")
    left = leftover_claims(v.snap.claims_after, v.snap.pods)
    return _outcome(check, hop, left, f"no claim of the run holds a GPU ({len(v.snap.claims_after)} claim(s) left, "
                                      "none allocated)")


def check_all_reduce(v: _View) -> CheckResult:
    """smokeTest.allReduce: what all_reduce_perf reported, judged by components/smoke/all_reduce.py.
    A failure is named by its first failing hop (ranks, nccl network, results, bus bandwidth)."""
    check = "case-all-reduce"
    case = v.exp.case(all_reduce.CASE)
    if case is None:
        return CheckResult(check, all_reduce.HOP, SKIPPED, "smokeTest.allReduce is off")
    if not v.exp.in_container:
        return CheckResult(check, all_reduce.HOP, SKIPPED, NO_KUBELET)
    text = all_reduce.report_log(v.snap.logs, [name(p) for p in v.by_case[case.case]])
    out = all_reduce.verdict(text, nodes=case.pods, gpus=case.gpus_per_pod, floor_gbps=case.min_bus_bandwidth,
                             source=case.floor_source)
    if not out.problems:
        return CheckResult(check, all_reduce.HOP, PASSED, out.summary)
    return _outcome(check, out.problems[0][0], [f"[{hop}] {p}" for hop, p in out.problems], "")


CHECKS: tuple[Callable[[_View], CheckResult], ...] = (
    check_device_class,
    check_slices,
    check_claims,
    check_scheduler,
    check_claim_node,
    check_pods_started,
    check_container_device,
    check_distinct,
    check_jobs,
    check_released,
    check_shared,
    check_shared_named,
    check_gang,
    check_mig,
    check_sharing,
    check_all_reduce,
    check_dcgm,
)


CHECK_NAMES = ("device-class", "resource-slices", "claims-allocated", "scheduler", "claim-node", "pods-started",
               "container-device", "distinct-gpus", "jobs-complete", "claims-released", "case-shared-claim",
               "case-named-claim", "case-gang", "case-mig", "gpu-sharing", "case-all-reduce", "dcgm-metrics")
HOPS = ("DeviceClass", "ResourceSlice", "ResourceClaim", "scheduler", "node placement", "kubelet", "kubelet/CDI",
        "allocation",
        "Job", "cleanup", "shared claim", "named claim", "gang", "MIG", "GPU sharing", all_reduce.HOP,
        "DCGM exporter")


def _malformed(exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return "malformed object in the cluster snapshot (" + (text if len(text) <= 200 else text[:200] + "...") + ")"


def verify(exp: Expectations, snap: Snapshot) -> list[CheckResult]:
    """Every check, in hop order. An object of an unexpected shape fails the check that read it
    (named, with what was wrong) instead of crashing the run: the report still shows every hop."""
    try:
        view = _View(exp, snap)
    except Exception as exc:  # any shape error in the snapshot is a finding, not a crash
        return [CheckResult(n, h, FAILED, _malformed(exc)) for n, h in zip(CHECK_NAMES, HOPS, strict=True)]
    results = []
    for check, check_name, hop in zip(CHECKS, CHECK_NAMES, HOPS, strict=True):
        t0 = time.perf_counter()
        try:
            result = check(view)
        except Exception as exc:  # same: report it on this hop, run the others
            result = CheckResult(check_name, hop, FAILED, _malformed(exc))
        result.duration_ms = round((time.perf_counter() - t0) * 1000, 3)
        results.append(result)
    return results

"""The hops of the DRA allocation path every run checks, whatever its cases (pure).

DeviceClass -> ResourceSlices -> ResourceClaims -> scheduler -> node placement -> kubelet/CDI (what
the container saw) -> distinct GPUs -> Job outcome -> cleanup; the DCGM exporter last. The cases'
own checks (components/smoke/cases) run between cleanup and DCGM.
"""

from __future__ import annotations

from datetime import datetime

from ...tables.labels import INSTANCE_TYPE_LABEL, POOL_LABELS, QUEUE_LABEL
from .. import device_class as dclass
from ..expectations import GFD_COUNT_LABEL, NO_KUBELET
from ..snapshot import (
    FINISHED_PHASES,
    Obj,
    SliceDevice,
    allocation_nodes,
    allocation_results,
    claim_of,
    condition,
    container_state,
    containers_started,
    event_message,
    labels,
    name,
    reporter,
    start_failure,
    when,
)
from ..view import (
    FAILED,
    SKIPPED,
    CheckResult,
    View,
    describe,
    must_see,
    observed,
    outcome,
    physical_gpus,
    request_tolerations,
    taint_text,
    tolerates,
    unique,
)
from .base import Check


def check_device_class(v: View) -> CheckResult:
    """Exists, and selects our driver's devices of the case's type: by its CEL selectors, not its name.
    Only the classes the cases ask for: a MIG-only run (wholeGpu off) needs no whole-GPU class."""
    present = {name(dc): dc for dc in v.snap.device_classes}
    wanted: dict[str, str] = {}
    for c in v.exp.cases:
        wanted[c.device_class] = "mig" if c.device_type == "mig" else wanted.get(c.device_class, "gpu")
    if not wanted:
        return CheckResult("device-class", "DeviceClass", FAILED, "no case to run: no DeviceClass to look up")
    problems = []
    for w, want_type in wanted.items():
        if w not in present:
            problems.append(f"DeviceClass {w} does not exist (is the DRA driver installed with GPU resources "
                            "enabled?)")
        else:
            problems += dclass.problems(present[w], v.exp.driver, want_type)
    return outcome("device-class", "DeviceClass", problems,
                    f"DeviceClass {', '.join(wanted)} exists and selects {v.exp.driver} devices")


def check_slices(v: View) -> CheckResult:
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
    started = v.run_started()
    for node, devs in sorted(per_node.items()):
        tainted = [f"{sd.name} ({', '.join(taint_text(t) for t in pre)})" for sd in devs
                   if (pre := [t for t in v.taints.get((sd.pool, sd.name), []) if _before(t, started)])]
        if tainted and not exp.gpu_health:  # with the gpuHealth case on, case-gpu-health judges them
            problems.append(f"node {node} publishes tainted GPUs that no claim without a toleration gets: "
                            f"{', '.join(tainted)}")
    counts = {n: len(physical_gpus(devs, exp.driver)) for n, devs in sorted(per_node.items())}
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
    return outcome("resource-slices", hop, problems, ok)


def _incomplete_pools(v: View) -> list[str]:
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


def _before(taint: Obj, moment: datetime | None) -> bool:
    """The taint was there before `moment` (strictly: timeAdded is whole seconds), or either time is
    unknown: a taint added later is judged by when it came (cases/gpu_health.py), never as if the
    device had carried it all along."""
    added = when(taint.get("timeAdded"))
    return added is None or moment is None or added < moment


def check_claims(v: View) -> CheckResult:
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
            elif v.slices.get((r.get("pool", ""), r.get("device", ""))) is None:
                problems.append(f"claim {cname} of pod {p} got {where}, which no {exp.driver} ResourceSlice advertises")
            elif untolerated := [t for t in v.taints.get((str(r.get("pool", "")), str(r.get("device", ""))), [])
                                 if not tolerates(request_tolerations(claim or {}, str(r.get("request", ""))), t)
                                 and _before(t, v.allocated_at(cname))]:
                problems.append(f"claim {cname} of pod {p} got {where}, tainted "
                                f"{', '.join(taint_text(t) for t in untolerated)} without a toleration")
            else:
                done.append(f"{p} -> {where}")
        if pod.get("spec", {}).get("nodeName") and not v.reserved_for(cname, p):
            problems.append(f"claim {cname} was allocated but never reserved for pod {p} (status.reservedFor "
                            "does not name it): the kubelet refuses to prepare an unreserved claim")
    return outcome("claims-allocated", "ResourceClaim", problems, "allocated: " + ", ".join(done))


def check_scheduler(v: View) -> CheckResult:
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
    return outcome("scheduler", "scheduler", problems, f"{len(pods)} pod(s) bound by {exp.scheduler}{queue}")


def check_claim_node(v: View) -> CheckResult:
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
    return outcome("claim-node", "node placement", problems,
                    f"{compared} allocation(s) on the node their pod ran on")


def check_pods_started(v: View) -> CheckResult:
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
    return outcome(check, hop, problems, f"{started} pod(s) started: claims prepared, images present, "
                                          "containers created with their CDI devices")


def check_container_device(v: View) -> CheckResult:
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
            must, may = must_see(v, allocated, mode)
            got = observed(out, mode)
            seen += 1
            if not must <= got or not got <= must | may:
                shown = ", ".join(sorted(got)) or "no device"
                problems.append(f"{key} saw {shown}, but its claim was allocated {describe(allocated, v)}")
    if not seen and not problems:
        problems.append("no container output to compare")
    return outcome("container-device", hop, problems,
                    f"{seen} container(s) saw exactly their allocated device")


def _overlaps(v: View, claims: dict[str, str]) -> list[str]:
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


def check_distinct(v: View) -> CheckResult:
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
                    for ident in observed(v.parsed_log(text), v.exp.probe_expect):
                        if ident in saw and saw[ident] != p:
                            problems.append(f"pods {saw[ident]} and {p} both saw {ident}")
                        saw.setdefault(ident, p)
        elif v.snap.claim_history:
            compared += sum(1 for pod in v.by_case[case.case] if v.allocated(pod))
        problems += _overlaps(v, claims)
    if not v.exp.in_container and not v.snap.claim_history:
        return CheckResult(check, hop, SKIPPED, f"{NO_KUBELET}: no barrier and no claim history to compare")
    problems = unique(problems)
    if compared < 2 and not problems:
        if sum(c.pods for c in cases) < 2:
            return CheckResult(check, hop, SKIPPED, "one GPU pod per case: nothing to compare")
        return CheckResult(check, hop, FAILED, f"only {compared} allocated claim(s): cannot show the pods held "
                                               "distinct GPUs")
    how = "held at the same time" if v.exp.in_container else "per the claim history"
    return outcome(check, hop, problems, f"{compared} allocations, no device shared ({how})")


def _pod_trouble(v: View, pod: Obj, containers: tuple[str, ...]) -> str:
    phase = pod.get("status", {}).get("phase", "Unknown")
    if not pod.get("spec", {}).get("nodeName"):
        return f"pod {name(pod)} {phase}: {v.why_pending(pod)}"
    states = ", ".join(f"{c} {container_state(pod, c)}" for c in containers)
    prepare = event_message(v.pod_events(pod), "FailedPrepareDynamicResources", "FailedCreatePodSandBox")
    return f"pod {name(pod)} {phase} on {pod['spec']['nodeName']}: {states}" + (f"; {prepare}" if prepare else "")


def check_jobs(v: View) -> CheckResult:
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
    return outcome("jobs-complete", "Job", problems, "completed: " + ", ".join(done))


# --- optional cases ---------------------------------------------------------------------------
def check_dcgm(v: View) -> CheckResult:
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
    return outcome("dcgm-metrics", hop, unique(problems), f"DCGM exporter reports all {found} allocated GPU(s)")


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


def check_released(v: View) -> CheckResult:
    """After the run, no claim of it holds a GPU: generated claims deleted with their pods, named
    claims deallocated (by the claim controller where the scheduler set the delete-protection
    finalizer, else by the runner: Runner.release_named_claim)."""
    check, hop = "claims-released", "cleanup"
    if v.snap.claims_after is None:
        return CheckResult(check, hop, SKIPPED, "the claims were not listed after the run")
    left = leftover_claims(v.snap.claims_after, v.snap.pods)
    return outcome(check, hop, left, f"no claim of the run holds a GPU ({len(v.snap.claims_after)} claim(s) left, "
                                      "none allocated)")


BEFORE_CASES: tuple[Check, ...] = (
    Check("device-class", "DeviceClass", check_device_class),
    Check("resource-slices", "ResourceSlice", check_slices),
    Check("claims-allocated", "ResourceClaim", check_claims),
    Check("scheduler", "scheduler", check_scheduler),
    Check("claim-node", "node placement", check_claim_node),
    Check("pods-started", "kubelet", check_pods_started),
    Check("container-device", "kubelet/CDI", check_container_device),
    Check("distinct-gpus", "allocation", check_distinct),
    Check("jobs-complete", "Job", check_jobs),
    Check("claims-released", "cleanup", check_released),
)
AFTER_CASES: tuple[Check, ...] = (Check("dcgm-metrics", "DCGM exporter", check_dcgm),)

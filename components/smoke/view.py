"""What every smoke check reads: the results' shape and indexes over one snapshot (pure).

A check is a function View -> CheckResult (components/smoke/checks, components/smoke/cases). Every
check passes, fails or skips with a reason; a check that found nothing to look at fails instead of
passing vacuously.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import probe
from .expectations import CASE_LABEL, RUN_LABEL, CaseExpectation, Expectations
from .snapshot import (
    Obj,
    SliceDevice,
    Snapshot,
    allocation_results,
    attribute,
    claim_of,
    condition,
    event_message,
    labels,
    name,
    slice_devices,
    status_written,
    when,
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


def outcome(check: str, hop: str, problems: list[str], ok: str) -> CheckResult:
    if not problems:
        return CheckResult(check, hop, PASSED, ok)
    more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
    return CheckResult(check, hop, FAILED, problems[0] + more, details=problems)


def unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


class View:
    """Indexes over a snapshot, computed once for all checks."""

    def __init__(self, exp: Expectations, snap: Snapshot) -> None:
        self.exp, self.snap = exp, snap
        self.slices = slice_devices(snap.slices, exp.driver)
        # Every blocking taint of each device over the run: the final slices' and those the runner's
        # watch saw in earlier slice versions (snap.taints_seen), each once.
        self.taints: dict[tuple[str, str], list[Obj]] = {}
        seen: set[tuple[str, ...]] = set()
        observed = [(k, t) for k, sd in self.slices.items() for t in blocking_taints(sd)]
        observed += [((str(e.get("pool", "")), str(e.get("device", ""))), e.get("taint") or {})
                     for e in snap.taints_seen if isinstance(e, dict)]
        for key, t in observed:
            if isinstance(t, dict) and t.get("effect") in BLOCKING_TAINTS:
                ident = (*key, *(str(t.get(f, "")) for f in ("key", "value", "effect", "timeAdded")))
                if ident not in seen:
                    seen.add(ident)
                    self.taints.setdefault(key, []).append(t)
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

    def allocated_at(self, cname: str) -> datetime | None:
        """When claim `cname` got its devices: the earliest status write among its allocated versions."""
        times = [t for c in self.versions.get(cname, []) if (t := status_written(c)) is not None]
        return min(times) if times else None

    def run_started(self) -> datetime | None:
        """When the run's first pod was created: a taint added later is no property of the slices the
        run started from (the checks that read taints judge it by when it came: gpu_health.judge)."""
        times = [t for p in self.snap.pods if labels(p).get(RUN_LABEL) == self.exp.run_id
                 and (t := when(p.get("metadata", {}).get("creationTimestamp"))) is not None]
        return min(times) if times else None

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


BLOCKING_TAINTS = ("NoSchedule", "NoExecute")  # resource.k8s.io/v1 DeviceTaintEffect that stop allocation


def blocking_taints(sd: SliceDevice | None) -> list[Obj]:
    taints = (sd.device.get("taints") or []) if sd else []
    return [t for t in taints if isinstance(t, dict) and t.get("effect") in BLOCKING_TAINTS]


def taint_text(t: Obj) -> str:
    return f"{t.get('key', '')}{'=' + str(t['value']) if t.get('value') else ''}:{t.get('effect')}"


def tolerates(tolerations: list[Obj], taint: Obj) -> bool:
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


def request_tolerations(claim: Obj, request: str) -> list[Obj]:
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


def physical_gpus(devices: Iterable[SliceDevice], domain: str) -> set[str]:
    """Whole GPUs behind a node's devices: a MIG device counts as its parent GPU."""
    gpus: set[str] = set()
    for sd in devices:
        kind = attribute(sd.device, "type", domain)
        if kind == "gpu":
            gpus.add(str(attribute(sd.device, "uuid", domain) or sd.name))
        elif kind == "mig":
            gpus.add(str(attribute(sd.device, "parentUUID", domain) or sd.name))
    return gpus


def observed(out: probe.ProbeOutput, mode: str) -> set[str]:
    if mode == "env":
        return {d.lower() for d in out.env_devices}
    return set(out.uuids)


def must_see(v: View, allocated: list[tuple[Obj, SliceDevice | None]], mode: str) -> tuple[set[str], set[str]]:
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


def describe(allocated: list[tuple[Obj, SliceDevice | None]], v: View) -> str:
    parts = []
    for r, sd in allocated:
        uuid = v.attr(sd, "uuid")
        parts.append(f"{r.get('pool')}/{r.get('device')}" + (f" (uuid {uuid})" if uuid else ""))
    return ", ".join(parts) or "nothing"



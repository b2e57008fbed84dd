"""Case `gpu-health` (smokeTest.gpuHealth): the DRA driver's health taints reach the API, and no device
tainted NoSchedule/NoExecute goes to a claim that does not tolerate it, nor turns unhealthy while a
claim of the run holds it. No Job of its own: every case's pods are the probes (the whole-GPU pods
first). The Kubernetes allocator tries a node's devices in slice order (k8s.io/dynamic-resource-allocation
v0.34.4 structured/internal/stable/allocator_stable.go: `for _, slice := range pool.Slices { for
deviceIndex := range slice.Spec.Devices`), skipping one whose taints are not all tolerated
(allocateDevice -> allTaintsTolerated), so a tainted gpu-0 is the first candidate a blind allocator takes.

Taints: NVIDIA's NVMLDeviceHealthCheck (dra-driver-nvidia-gpu 0.5.0-dev cmd/gpu-kubelet-plugin/
device_health.go healthEventToTaint: gpu.nvidia.com/xid=<xid> or gpu-lost, NoSchedule; unmonitored None).
The API server stamps `timeAdded` (k8s v1.34.4 pkg/apis/resource/v1/defaults.go SetDefaults_DeviceTaint,
truncated to the second).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...facts.feature_gates import smoke_gpu_health_on
from ...settings.model import Settings
from ..checks.base import Check
from ..snapshot import Obj, allocation_results, name, status_written, when
from ..view import (
    FAILED,
    SKIPPED,
    CheckResult,
    View,
    outcome,
    request_tolerations,
    taint_text,
    tolerates,
    unique,
)
from .base import CaseFamily

CHECK, HOP = "case-gpu-health", "device health"


def values(s: Settings) -> dict[str, Any]:
    # The chart renders nothing for it; the value is here so turning the case on makes a new run id.
    return {"gpuHealth": {"enabled": bool(s.smoke_test.enabled) and smoke_gpu_health_on(s)}}


@dataclass(frozen=True)
class Holding:
    """One device a claim held, from `since` to `until` (None: not recorded / still held)."""

    claim: str
    pod: str
    pool: str
    device: str
    request: str
    spec: Obj  # the claim version holding it: its requests' tolerations
    since: datetime | None
    until: datetime | None


def _pod_finished(pod: Obj) -> datetime | None:
    states = [(cs.get("state") or {}).get("terminated") for cs in pod.get("status", {}).get("containerStatuses") or []]
    if not states or not all(states):
        return None
    times = [t for s in states if s and (t := when(s.get("finishedAt"))) is not None]
    return max(times) if times else None


def holdings(v: View, cname: str, pod: Obj) -> list[Holding]:
    """Every device `cname` held, with when, replaying the watched claim history (an allocation dropped
    and made again counts twice); else the recorded last version."""
    p = name(pod)
    out: list[Holding] = []
    current: dict[tuple[str, str, str], tuple[Obj, datetime | None]] = {}  # (pool, device, request) -> opened

    def close(keys: set[tuple[str, str, str]], at: datetime | None) -> None:
        for k in keys:
            obj, since = current.pop(k)
            out.append(Holding(cname, p, k[0], k[1], k[2], obj, since, at))

    def devices(obj: Obj) -> set[tuple[str, str, str]]:
        return {(str(r.get("pool", "")), str(r.get("device", "")), str(r.get("request", "")))
                for r in allocation_results(obj) if r.get("driver") == v.exp.driver}

    history = [e for e in v.snap.claim_history if name(e.get("object") or {}) == cname]
    entries = history or [{"type": "MODIFIED", "object": c} for c in v.versions.get(cname, [])[-1:]]
    for e in entries:
        obj = e.get("object") or {}
        deleted = e.get("type") == "DELETED"
        now = set() if deleted else devices(obj)
        ended = (when(obj.get("metadata", {}).get("deletionTimestamp")) or _pod_finished(pod)) if deleted \
            else status_written(obj)
        close(set(current) - now, ended)
        for k in now - set(current):
            current[k] = (obj, status_written(obj))
    if current:
        last = (entries[-1].get("object") or {}) if entries else {}
        close(set(current), when(last.get("metadata", {}).get("deletionTimestamp")) or _pod_finished(pod))
    return out


def judge(h: Holding, taint: Obj) -> str:
    """Why holding `h` of a device carrying the untolerated `taint` fails the run; "" when the taint came
    after the claim gave the device back. Times are whole seconds (timeAdded is truncated)."""
    dev, who = f"{h.pool}/{h.device}", f"claim {h.claim} of pod {h.pod}"
    added = when(taint.get("timeAdded"))
    text = taint_text(taint)
    if added is None:
        return f"{who} held {dev}, which the final slices taint {text} (no timeAdded: cannot tell when)"
    if h.until is not None and added > h.until:
        return ""
    if h.since is not None and added < h.since:
        return (f"the scheduler handed {dev}, tainted {text} since {taint['timeAdded']}, to {who} at "
                f"{h.since.isoformat()} without a toleration")
    if h.since is not None:
        return f"{dev} turned unhealthy while {who} held it: tainted {text} at {taint['timeAdded']}"
    return f"{who} held {dev}, tainted {text} at {taint['timeAdded']} (when the claim got it is not recorded)"


def check_gpu_health(v: View) -> CheckResult:
    """Lists the tainted devices of the run's nodes; fails for a tainted device a claim of the run held
    without tolerating the taint (handed out tainted, or tainted while held), naming claim, pod, device, taint."""
    if not v.exp.gpu_health:
        return CheckResult(CHECK, HOP, SKIPPED, "smokeTest.gpuHealth is off (or gpu health is)")
    tainted = sorted(f"{sd.node or sd.pool}/{sd.name} ({', '.join(taint_text(t) for t in sd.device['taints'])})"
                     for sd in v.slices.values() if sd.device.get("taints"))
    problems: list[str] = []
    judged = 0
    for _case, pod in v.pods():
        cname, _claim = v.claim(pod)
        if not cname:
            continue
        for h in holdings(v, cname, pod):
            judged += 1
            tolerations = request_tolerations(h.spec, h.request)
            # every taint the device carried during the run, not only in the final slices
            for taint in v.taints.get((h.pool, h.device), []):
                if not tolerates(tolerations, taint) and (why := judge(h, taint)):
                    problems.append(why)
    if not judged and not problems:
        return CheckResult(CHECK, HOP, FAILED, "no claim of the run held a device: nothing shows the scheduler "
                                               "kept tainted devices away (claims-allocated says why)")
    listed = "; ".join(tainted) if tainted else "none"
    return outcome(CHECK, HOP, unique(problems),
                   f"{judged} allocation(s), none of a device tainted while held or before; tainted devices: {listed}")


# No refusals of its own: smokeTest.gpuHealth true with gpu health off, and gpuStack.gpuHealth where the track
# lacks DRADeviceTaints, are components/facts/feature_gate_rules.py's.
FAMILY = CaseFamily("gpuHealth", checks=(Check(CHECK, HOP, check_gpu_health),), values=values)

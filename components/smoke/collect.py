"""Reads what the verifier needs from a cluster, through a Gateway.

ResourceClaims generated from templates are deleted as soon as their pod finishes (the resource
claim controller does that; on KWOK nodes it happens within a second), so a ClaimRecorder
watches the namespace for the whole run and keeps each claim's last allocated version.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .expectations import NO_KUBELET, RUN_LABEL, Expectations
from .gateway import Gateway, KubeError, KubeUnreachable, Obj
from .snapshot import (
    Snapshot,
    allocation_results,
    claim_of,
    name,
    pod_claim_name,
    pod_containers,
)

DCGM_SERVICE = "nvidia-dcgm-exporter"  # the GPU operator's and fake-gpu-operator's Service name
DCGM_PORT = "gpu-metrics"
DCGM_DEFAULT_PORT = 9400
PODGROUP_API = "scheduling.run.ai/v2alpha2"
COMPUTE_DOMAIN_API = "resource.nvidia.com/v1beta1"  # NVIDIA's ComputeDomain CRD (case compute-domain)
WATCH_SECONDS = 30
CLAIM_WAIT_SECONDS = 5.0


class ClaimRecorder:
    """Keeps the newest version of every ResourceClaim in a namespace, preferring allocated ones."""

    def __init__(self, gateway: Gateway, namespace: str, api_version: str) -> None:
        self.gw, self.namespace, self.api = gateway, namespace, api_version
        self._claims: dict[str, Obj] = {}
        self._history: list[Obj] = []
        self._versions: dict[str, Any] = {}
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error = ""

    def record(self, claim: Obj, kind: str = "MODIFIED") -> None:
        with self._lock:
            old = self._claims.get(name(claim))
            version = claim.get("metadata", {}).get("resourceVersion")
            # History: every new version once (a list repeats what the watch already delivered).
            if kind == "DELETED" or self._versions.get(name(claim)) != version:
                self._history.append({"type": kind, "object": claim})
                self._versions[name(claim)] = version
            # A later version without allocation (released, being deleted) must not hide the allocation.
            if old is None or allocation_results(claim) or not allocation_results(old):
                self._claims[name(claim)] = claim
            self._lock.notify_all()

    def wait_for(self, names: set[str], timeout: float) -> bool:
        """Block until each named claim was seen allocated (the watch may lag the Job's completion)."""

        def seen() -> bool:
            return all(n in self._claims and allocation_results(self._claims[n]) for n in names)

        with self._lock:
            return self._lock.wait_for(seen, timeout)

    def sync(self) -> str:
        """List now and record; returns the list's resourceVersion."""
        items, rv = self.gw.list(self.api, "ResourceClaim", self.namespace)
        for c in items:
            self.record(c)
        return rv

    def _loop(self) -> None:
        rv = ""
        while not self._stop.is_set():
            try:
                if not rv:
                    rv = self.sync()
                for kind, obj in self.gw.watch(self.api, "ResourceClaim", self.namespace, resource_version=rv,
                                               timeout_seconds=WATCH_SECONDS):
                    if self._stop.is_set():
                        return
                    rv = str(obj.get("metadata", {}).get("resourceVersion") or rv)
                    if kind in ("ADDED", "MODIFIED", "DELETED"):
                        self.record(obj, kind)
            except KubeError as exc:
                rv = ""  # 410 Gone and friends: list again
                self.error = str(exc)
                self._stop.wait(1)
            except Exception as exc:  # never let the recorder die: the runner's syncs still work
                self.error = f"{type(exc).__name__}: {exc}"
                self._stop.wait(2)

    def start(self) -> None:
        self.sync()
        self._thread = threading.Thread(target=self._loop, name="claim-recorder", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()  # the watch returns within WATCH_SECONDS; the thread is a daemon

    def claims(self) -> list[Obj]:
        with self._lock:
            return list(self._claims.values())

    def history(self) -> list[Obj]:
        with self._lock:
            return list(self._history)


class TaintRecorder:
    """Every device taint of `driver`'s ResourceSlices seen during the run, over every slice version
    the watch delivers: a taint that came and went while a claim held its device is a finding the
    final slices no longer show (the gpuHealth case judges them by time: cases/gpu_health.py)."""

    def __init__(self, gateway: Gateway, api_version: str, driver: str) -> None:
        self.gw, self.api, self.driver = gateway, api_version, driver
        self._seen: dict[tuple[str, str, str, str, str, str], Obj] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.error = ""

    def record(self, obj: Obj) -> None:
        spec = obj.get("spec") if isinstance(obj, dict) else None
        if not isinstance(spec, dict) or spec.get("driver") != self.driver:
            return  # another driver's slice, or not a slice at all
        pool = str((spec.get("pool") or {}).get("name", "")) if isinstance(spec.get("pool"), dict) else ""
        for device in spec.get("devices") or []:
            for taint in (device.get("taints") or []) if isinstance(device, dict) else []:
                if isinstance(taint, dict):
                    key = (pool, str(device.get("name", "")), str(taint.get("key", "")), str(taint.get("value", "")),
                           str(taint.get("effect", "")), str(taint.get("timeAdded", "")))
                    with self._lock:
                        self._seen.setdefault(key, {"pool": pool, "device": key[1], "taint": dict(taint)})

    def sync(self) -> str:
        items, rv = self.gw.list(self.api, "ResourceSlice")
        for s in items:
            self.record(s)
        return rv

    def _loop(self) -> None:
        rv = ""
        while not self._stop.is_set():
            try:
                if not rv:
                    rv = self.sync()
                for kind, obj in self.gw.watch(self.api, "ResourceSlice", None, resource_version=rv,
                                               timeout_seconds=WATCH_SECONDS):
                    if self._stop.is_set():
                        return
                    rv = str(obj.get("metadata", {}).get("resourceVersion") or rv)
                    if kind in ("ADDED", "MODIFIED"):
                        self.record(obj)
            except KubeError as exc:
                rv = ""
                self.error = str(exc)
                self._stop.wait(1)
            except Exception as exc:  # never let the recorder die: the final list still counts
                self.error = f"{type(exc).__name__}: {exc}"
                self._stop.wait(2)

    def start(self) -> None:
        self.sync()
        threading.Thread(target=self._loop, name="taint-recorder", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def seen(self) -> list[Obj]:
        with self._lock:
            return list(self._seen.values())


def record_pod_claims(recorded: dict[str, str], pods: list[Obj]) -> None:
    """Note each pod's claim the first time it is seen naming one. The runner lists its pods while
    they start and while the barrier holds them, so that is the claim the pod ran with; after it
    finishes the claim controller may replace the claim and re-point the status (Snapshot.pod_claims)."""
    for pod in pods:
        if name(pod) not in recorded and (cname := pod_claim_name(pod)):
            recorded[name(pod)] = cname


def _safe_list(gw: Gateway, api: str, kind: str, namespace: str | None = None, **kw: str) -> list[Obj]:
    try:
        return gw.list(api, kind, namespace, **kw)[0]
    except KubeError as exc:
        if exc.status == 404:  # the API (e.g. KAI's PodGroup CRD) is not installed
            return []
        raise


def _about(event: Obj) -> str:
    return str((event.get("involvedObject") or event.get("regarding") or {}).get("name", ""))


def dcgm_metrics(gw: Gateway, nodes: set[str]) -> tuple[dict[str, str] | None, str]:
    """DCGM exporter text per node, read through the API server's pod proxy (one exporter per node)."""
    services = _safe_list(gw, "v1", "Service", None, field_selector=f"metadata.name={DCGM_SERVICE}")
    if not services:
        return None, f"no {DCGM_SERVICE} Service found"
    svc = services[0]
    ns = svc["metadata"]["namespace"]
    port = next((p.get("targetPort") or p.get("port") for p in svc.get("spec", {}).get("ports") or []
                 if p.get("name") == DCGM_PORT), DCGM_DEFAULT_PORT)
    slices = _safe_list(gw, "discovery.k8s.io/v1", "EndpointSlice", ns,
                        label_selector=f"kubernetes.io/service-name={DCGM_SERVICE}")
    out: dict[str, str] = {}
    notes = []
    for es in slices:
        for ep in es.get("endpoints") or []:
            node, ref = ep.get("nodeName"), ep.get("targetRef") or {}
            if node not in nodes or node in out or ref.get("kind") != "Pod":
                continue
            try:
                out[node] = gw.get_text(f"/api/v1/namespaces/{ns}/pods/{ref['name']}:{port}/proxy/metrics")
            except (KubeError, KubeUnreachable) as exc:
                notes.append(f"{node}: {exc}")
    return out, f"{DCGM_SERVICE} in {ns}" + (f"; unreadable: {'; '.join(notes)}" if notes else "")


def collect(gw: Gateway, exp: Expectations, recorder: ClaimRecorder | None = None,
            on_step: Callable[[str], None] = lambda _s: None, pod_claims: dict[str, str] | None = None,
            compute_domains: dict[str, Obj] | None = None, taints: TaintRecorder | None = None) -> Snapshot:
    """`compute_domains`: the run's ComputeDomains as the runner recorded them while their pods held
    their claims (Runner.record_domain); those win over what is listed now."""
    ns, api, run = exp.namespace, exp.resource_api, f"{RUN_LABEL}={exp.run_id}"
    snap = Snapshot()
    on_step("device classes, slices, nodes")
    snap.device_classes = gw.list(api, "DeviceClass")[0]
    snap.slices = gw.list(api, "ResourceSlice")[0]
    if taints is not None:
        for sl in snap.slices:
            taints.record(sl)
        snap.taints_seen = taints.seen()
    snap.nodes = gw.list("v1", "Node")[0]
    on_step("pods, jobs, claims, events")
    snap.pods = gw.list("v1", "Pod", ns, label_selector=run)[0]
    snap.jobs = gw.list("batch/v1", "Job", ns, label_selector=run)[0]
    snap.pod_claims = dict(pod_claims or {})
    record_pod_claims(snap.pod_claims, snap.pods)  # pods the runner never listed: their status now
    if any(c.pod_group for c in exp.cases):
        snap.pod_groups = _safe_list(gw, PODGROUP_API, "PodGroup", ns, label_selector=run)
    if any(c.param("computeDomain") for c in exp.cases):
        listed = {name(d): d for d in _safe_list(gw, COMPUTE_DOMAIN_API, "ComputeDomain", ns, label_selector=run)}
        snap.compute_domains = list((listed | dict(compute_domains or {})).values())
    snap.claims_after = gw.list(api, "ResourceClaim", ns)[0]
    if recorder is not None:
        recorder.sync()
        snap.claims, snap.claim_history = recorder.claims(), recorder.history()
        # Claims of scheduled pods were allocated: wait until the watch delivered them. Pending
        # pods' claims never were (waiting for those would only stall a failing run).
        wanted = {c for p in snap.pods if p.get("spec", {}).get("nodeName") and (c := claim_of(snap, p))}
        recorder.wait_for(wanted, CLAIM_WAIT_SECONDS)
        snap.claims, snap.claim_history = recorder.claims(), recorder.history()
    else:
        snap.claims = gw.list(api, "ResourceClaim", ns)[0]
    # Every object of the run carries the run id in its name, also pods already deleted.
    snap.events = [e for e in gw.list("v1", "Event", ns)[0] if exp.run_id in _about(e)]
    on_step("container logs")
    for pod in snap.pods:
        for c in pod_containers(pod):
            key = f"{name(pod)}/{c}"
            if not exp.in_container:
                snap.log_errors[key] = NO_KUBELET
                continue
            try:
                snap.logs[key] = gw.logs(ns, name(pod), c)
            except (KubeError, KubeUnreachable) as exc:
                snap.log_errors[key] = str(exc)
    if exp.dcgm is not False:
        on_step("DCGM exporter metrics")
        nodes = {str(p.get("spec", {}).get("nodeName")) for p in snap.pods if p.get("spec", {}).get("nodeName")}
        try:
            snap.metrics, snap.metrics_note = dcgm_metrics(gw, nodes)
        except (KubeError, KubeUnreachable) as exc:
            snap.metrics, snap.metrics_note = None, f"DCGM exporter lookup failed: {exc}"
    return snap

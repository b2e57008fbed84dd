"""One smoke run against a cluster: wait for slices, resume each case's Job, hold the barrier until
every pod holds its GPU, release, wait, collect, verify. Used by the Pulumi dynamic resource
(after helm installed the chart) and by `ck8s-gpu smoke` (which installs and cleans up itself).

All waiting goes through a Clock so tests drive it without sleeping.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..addons.inference_gateway import ROUTES_LABEL
from ..settings.model import SmokeTestSettings
from . import report
from .cases.inference import HOPS
from .collect import COMPUTE_DOMAIN_API, ClaimRecorder, TaintRecorder, collect, record_pod_claims
from .expectations import (
    CASE_LABEL,
    RELEASE_ANNOTATION,
    RELEASE_VALUE,
    RUN_LABEL,
    CaseExpectation,
    Expectations,
)
from .gateway import Gateway, KubeError, Obj, poll_pauses
from .inference_run import InferencePhase, Timing
from .snapshot import FINISHED_PHASES, condition, events_for, name, slice_devices, start_failure
from .verifier import leftover_claims, verify

JOB_API = "batch/v1"
STARTED = ("Running", "Succeeded", "Failed")
# Labels the Job controller adds to a Job's pod template; a re-created Job must not carry them.
JOB_CONTROLLER_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid", "job-name",
                         "batch.kubernetes.io/job-name")
RESET_WAIT_SECONDS = 120
RELEASE_WAIT_SECONDS = 15
DOMAIN_WAIT_SECONDS = 30  # a ComputeDomain's status catching up with IMEX daemons that joined
# k8s.io/api resource/v1 Finalizer: set by kube-scheduler's DRA plugin when it allocates; the claim
# controller deallocates only claims that carry it (ADR 0027).
DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"
# For specs recorded before stuckSeconds existed: the setting's own default.
DEFAULT_STUCK_SECONDS: int = SmokeTestSettings.model_fields["stuck_seconds"].default


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...

    def wall_ms(self) -> int: ...


class RealClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def wall_ms(self) -> int:
        return int(time.time() * 1000)


@dataclass(frozen=True)
class Progress:
    elapsed: float
    hop: str
    message: str


ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True)
class RunSpec:
    release: str
    namespace: str
    run_id: str
    timeout_seconds: int
    slice_wait_seconds: int
    expectations: Expectations
    stuck_seconds: int = DEFAULT_STUCK_SECONDS

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSpec:
        return cls(release=d["release"], namespace=d["namespace"], run_id=d["runId"],
                   timeout_seconds=int(d["timeoutSeconds"]), slice_wait_seconds=int(d["sliceWaitSeconds"]),
                   expectations=Expectations.from_dict(d["expectations"]),
                   stuck_seconds=int(d.get("stuckSeconds", DEFAULT_STUCK_SECONDS)))


@dataclass
class Outcome:
    report: dict[str, Any]
    passed: bool
    phases: list[dict[str, Any]] = field(default_factory=list)


class SmokeTimeout(Exception):
    pass


# --- pure helpers -----------------------------------------------------------------------------


def is_pristine(job: Obj) -> bool:
    """A Job as the chart created it: suspended, never started (a `Suspended` condition is fine)."""
    st = job.get("status") or {}
    finished = [c for c in st.get("conditions") or [] if c.get("type") != "Suspended"]
    return bool(job.get("spec", {}).get("suspend")) and not finished and not any(
        st.get(k) for k in ("startTime", "active", "succeeded", "failed"))


def fresh_job(job: Obj) -> Obj:
    """The Job to re-create for a re-run with the same run id: same spec, suspended, no server fields."""
    meta = job.get("metadata", {})
    spec = copy.deepcopy(job.get("spec", {}))
    spec.pop("selector", None)
    spec.pop("manualSelector", None)
    spec["suspend"] = True
    tpl_labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
    for label in JOB_CONTROLLER_LABELS:
        tpl_labels.pop(label, None)
    keep = {k: copy.deepcopy(meta[k]) for k in ("name", "namespace", "labels", "annotations") if k in meta}
    return {"apiVersion": job.get("apiVersion", JOB_API), "kind": "Job", "metadata": keep, "spec": spec}


def job_state(job: Obj | None) -> str:
    if job is None:
        return "missing"
    for kind in ("Complete", "Failed"):
        c = condition(job, kind)
        if c and c.get("status") == "True":
            return kind
    return "running"


def gpu_nodes(slices: list[Obj], driver: str) -> set[str]:
    return {d.node for d in slice_devices(slices, driver).values() if d.node}


# --- the run ----------------------------------------------------------------------------------


class Runner:
    def __init__(self, gw: Gateway, spec: RunSpec, *, progress: ProgressFn | None = None,
                 clock: Clock | None = None, poll_seconds: float = 2.0,
                 recorder: ClaimRecorder | None = None, timeout_seconds: float | None = None) -> None:
        self.gw, self.spec, self.exp = gw, spec, spec.expectations
        self.clock = clock or RealClock()
        self.progress = progress or (lambda _p: None)
        self.poll = poll_seconds
        self.recorder = recorder or ClaimRecorder(gw, spec.namespace, spec.expectations.resource_api)
        self.taints = TaintRecorder(gw, spec.expectations.resource_api, spec.expectations.driver)
        self.t0 = self.clock.monotonic()
        # The run's budget: the spec's (settings, at least 60 s) unless a caller (a test) passes its own.
        self.timeout_seconds = spec.timeout_seconds if timeout_seconds is None else timeout_seconds
        self.deadline = self.t0 + self.timeout_seconds
        self.phases: list[dict[str, Any]] = []
        # Pod -> the claim it named while it ran (collect.record_pod_claims): the verdict reads this,
        # never the status a controller may rewrite after the pod finished.
        self.pod_claims: dict[str, str] = {}
        # ComputeDomain name -> its version while its case's pods held their claims (record_domain).
        self.compute_domains: dict[str, Obj] = {}

    def say(self, hop: str, message: str) -> None:
        self.progress(Progress(round(self.clock.monotonic() - self.t0, 1), hop, message))

    def _wait(self, what: str, until: float, probe: Callable[[], bool]) -> bool:
        pauses = poll_pauses(self.poll)
        while True:
            if probe():
                return True
            if self.clock.monotonic() >= until:
                self.say("timeout", f"gave up waiting for {what}")
                return False
            self.clock.sleep(next(pauses))

    def wait_for_slices(self) -> None:
        if self.exp.pools is None:
            return
        wanted = sum(p.nodes for p in self.exp.pools)
        until = min(self.deadline, self.t0 + self.spec.slice_wait_seconds)
        seen: set[str] = set()

        def enough() -> bool:
            nonlocal seen
            now = gpu_nodes(self.gw.list(self.exp.resource_api, "ResourceSlice")[0], self.exp.driver)
            if now != seen:
                seen = now
                self.say("slices", f"{len(now)}/{wanted} GPU node(s) publish {self.exp.driver} slices")
            return len(now) >= wanted

        self._wait(f"{wanted} GPU nodes to publish slices", until, enough)

    def pods_of(self, case: CaseExpectation) -> list[Obj]:
        selector = f"{RUN_LABEL}={self.exp.run_id},{CASE_LABEL}={case.case}"
        pods = self.gw.list("v1", "Pod", self.spec.namespace, label_selector=selector)[0]
        record_pod_claims(self.pod_claims, pods)
        return pods

    def reset(self, job: Obj) -> Obj:
        """A re-run with the same run id (a failed `pulumi up` retried): start from a fresh Job."""
        self.say(self._case_of(job), f"re-creating Job {name(job)} (it ran before)")
        self.gw.delete(JOB_API, "Job", name(job), self.spec.namespace, propagation="Foreground")
        until = min(self.deadline, self.clock.monotonic() + RESET_WAIT_SECONDS)
        if not self._wait(f"Job {name(job)} to be deleted", until,
                          lambda: self.gw.get(JOB_API, "Job", name(job), self.spec.namespace) is None):
            raise SmokeTimeout(f"Job {name(job)} was not deleted in time")
        return self.gw.create(fresh_job(job))

    @staticmethod
    def _case_of(job: Obj) -> str:
        return str(job.get("metadata", {}).get("labels", {}).get(CASE_LABEL, "job"))

    def run_case(self, case: CaseExpectation) -> str:
        ns, t = self.spec.namespace, self.clock.monotonic()
        job = self.gw.get(JOB_API, "Job", case.job, ns)
        if job is None:
            self.say(case.case, f"Job {case.job} does not exist")
            return "missing"
        if not is_pristine(job):
            job = self.reset(job)
        self.gw.patch(JOB_API, "Job", case.job, ns, {"spec": {"suspend": False}})
        self.say(case.case, f"resumed Job {case.job}: {case.pods} pod(s)")
        last = ""

        def all_holding() -> bool:
            nonlocal last
            pods = self.pods_of(case)
            started = [p for p in pods if p.get("status", {}).get("phase") in STARTED]
            nodes = sorted({str(p.get("spec", {}).get("nodeName")) for p in started})
            line = f"{len(started)}/{case.pods} pod(s) started" + (f" on {', '.join(nodes)}" if nodes else "")
            if line != last:
                last = line
                self.say(case.case, line)
            done = job_state(self.gw.get(JOB_API, "Job", case.job, ns)) in ("Complete", "Failed")
            return done or len(started) >= case.pods

        first_seen: dict[str, float] = {}  # pod -> when its current start failure was first seen
        stuck: list[str] = []

        def gave_up() -> bool:
            """A pod held at one failing hop for stuckSeconds: waiting longer only delays the verdict."""
            pending = [p for p in self.pods_of(case)
                       if p.get("spec", {}).get("nodeName") and p.get("status", {}).get("phase") not in STARTED]
            if not pending:
                return False
            events = self.gw.list("v1", "Event", ns)[0]
            now = self.clock.monotonic()
            for pod in pending:
                why = start_failure(pod, events_for(events, "Pod", name(pod)))
                if not why:
                    first_seen.pop(name(pod), None)
                    continue
                since = first_seen.setdefault(name(pod), now)
                if now - since >= self.spec.stuck_seconds:
                    stuck.append(f"pod {name(pod)}: {why}")
            return bool(stuck)

        held = self._wait(f"{case.job} pods to start", self.deadline, lambda: all_holding() or gave_up())
        if stuck:
            self.say(case.case, f"gave up after {self.spec.stuck_seconds}s at a failing hop: " + "; ".join(stuck))
            self.recorder.sync()
            self.phases.append({"case": case.case, "job": case.job, "state": "stuck",
                                "seconds": round(self.clock.monotonic() - t, 1)})
            return "stuck"
        # Every pod holds its claim now: record the allocations before anything is released.
        self.recorder.sync()
        if case.param("computeDomain"):
            self.record_domain(case)
        for pod in self.pods_of(case):
            try:
                self.gw.patch("v1", "Pod", name(pod), ns, {"metadata": {"annotations": {RELEASE_ANNOTATION:
                                                                                        RELEASE_VALUE}}})
            except KubeError as exc:
                if exc.status != 404:
                    raise
        if held:
            self.say(case.case, "barrier released")
        state = "timeout"
        if self._wait(f"Job {case.job} to finish", self.deadline,
                      lambda: job_state(self.gw.get(JOB_API, "Job", case.job, ns)) in ("Complete", "Failed")):
            state = job_state(self.gw.get(JOB_API, "Job", case.job, ns))
        self.say(case.case, f"Job {case.job}: {state}")
        if case.claim:
            self.release_named_claim(case)
        self.phases.append({"case": case.case, "job": case.job, "state": state,
                            "seconds": round(self.clock.monotonic() - t, 1)})
        return state

    def record_domain(self, case: CaseExpectation) -> None:
        """Keep the case's ComputeDomain as it is while the barrier holds its pods: each node leaves
        the domain when its channel claim is unprepared (the compute-domain kubelet plugin drops its
        node label and clique entry), so after the Job it lists none. The controller syncs
        status.nodes every 2 s (dra-driver-nvidia-gpu cmd/compute-domain-controller/cdstatus.go
        cdStatusSyncInterval): wait a little for it to report Ready, keep what was seen last."""
        cd_name = case.param("computeDomain")
        until = min(self.deadline, self.clock.monotonic() + DOMAIN_WAIT_SECONDS)

        def ready() -> bool:
            try:
                cd = self.gw.get(COMPUTE_DOMAIN_API, "ComputeDomain", cd_name, self.spec.namespace)
            except KubeError as exc:
                if exc.status != 404:  # 404: no such CRD; the verdict names the missing domain
                    raise
                cd = None
            if cd is not None:
                self.compute_domains[cd_name] = cd
            return cd is not None and (cd.get("status") or {}).get("status") == "Ready"

        if not self._wait(f"ComputeDomain {cd_name} to be Ready", until, ready):
            self.say(case.case, f"ComputeDomain {cd_name} not Ready while its pods hold their claims")

    def release_named_claim(self, case: CaseExpectation) -> None:
        """Free a named claim once every pod of its case finished: one with the delete-protection
        finalizer is the claim controller's to free (the runner waits for it), one without is freed here.

        kube-scheduler adds the resource.kubernetes.io/delete-protection finalizer when it
        allocates, and the claim controller then deallocates the claim with its last reservation;
        KAI's binder allocates without it (pkg/binder/plugins/k8s-plugins/dynamicresources/dra.go
        at v0.17.0), so the claim keeps its device for as long as it exists, and the controller
        re-reserves it for the finished pods and drops them again, two writes a cycle, without end
        (pkg/controller/resourceclaim/controller.go at v1.34.4: syncPod never looks at the phase;
        kubernetes#141274). Clearing the allocation (what the claim controller itself writes, the
        same status update) ends both; the object stays, so a retried run allocates it again."""
        ns = self.spec.namespace
        if any(p.get("status", {}).get("phase") not in FINISHED_PHASES for p in self.pods_of(case)):
            self.say(case.case, f"claim {case.claim} left allocated: a pod of the case still runs")
            return
        until = min(self.deadline, self.clock.monotonic() + RELEASE_WAIT_SECONDS)
        while True:
            claim = self.gw.get(self.exp.resource_api, "ResourceClaim", case.claim, ns)
            if claim is None or not (claim.get("status") or {}).get("allocation"):
                self.say(case.case, f"claim {case.claim} released")
                return
            self.recorder.record(claim)  # the allocation the verdict judges, before it is cleared
            if DELETE_PROTECTION in (claim.get("metadata", {}).get("finalizers") or []):
                # kube-scheduler's claim: the claim controller deallocates it itself, in a moment.
                if self.clock.monotonic() >= until:
                    self.say(case.case, f"claim {case.claim} still allocated: its claim controller did not free it")
                    return
                self.clock.sleep(min(self.poll, 0.2))
                continue
            try:
                # Unconditional: the claim controller rewrites reservedFor many times a second, and
                # every pod of the case is done, so there is no reservation left to keep.
                self.gw.patch(self.exp.resource_api, "ResourceClaim", case.claim, ns,
                              {"status": {"allocation": None, "reservedFor": None, "devices": None}},
                              subresource="status")
            except KubeError as exc:
                if exc.status not in (404, 409, 422):  # gone, or raced with a controller write: read again
                    raise
            if self.clock.monotonic() >= until:
                self.say(case.case, f"gave up releasing claim {case.claim}")
                return
            self.clock.sleep(min(self.poll, 0.2))

    def wait_released(self) -> None:
        """Give the claim controller its moment: generated claims go once their pod finished."""
        ns, api = self.spec.namespace, self.exp.resource_api
        until = min(self.deadline, self.clock.monotonic() + RELEASE_WAIT_SECONDS)

        def released() -> bool:
            pods = self.gw.list("v1", "Pod", ns, label_selector=f"{RUN_LABEL}={self.exp.run_id}")[0]
            return not leftover_claims(self.gw.list(api, "ResourceClaim", ns)[0], pods)

        if not self._wait("claims to be released", until, released):
            self.say("cleanup", "claims still allocated after the run: see claims-released")

    def settle(self) -> None:
        """Suspend Jobs still running after a timeout: their pods give the GPUs back."""
        for case in self.exp.cases:
            job = self.gw.get(JOB_API, "Job", case.job, self.spec.namespace)
            if job is not None and not job.get("spec", {}).get("suspend") and job_state(job) == "running":
                self.gw.patch(JOB_API, "Job", case.job, self.spec.namespace, {"spec": {"suspend": True}})
                self.say("cleanup", f"suspended unfinished Job {case.job}")

    def run_inference(self) -> dict[str, Any] | None:
        """Case `inference` after the Job cases: its replicas are Deployments' (inference_run.py)."""
        if self.exp.inference is None:
            return None
        t = self.clock.monotonic()
        if t >= self.deadline:
            self.say("inference", f"not started: the {self.timeout_seconds}s budget is spent")
            return {"stopped": {"hop": HOPS[0][1], "why": "not started: the run's budget was spent"}}
        timing = Timing(self.clock.monotonic, self.clock.sleep, self.deadline, self.poll, self.spec.stuck_seconds)
        obs = InferencePhase(self.gw, self.spec.namespace, self.exp.run_id, self.exp.inference, timing,
                             lambda m: self.say("inference", m), self.recorder).run()
        self.phases.append({"case": "inference", "job": "", "state": "stopped" if obs.get("stopped") else "done",
                            "seconds": round(self.clock.monotonic() - t, 1)})
        return obs

    def run(self) -> Outcome:
        start_ms = self.clock.wall_ms()
        self.recorder.start()
        self.taints.start()
        try:
            self.wait_for_slices()
            for case in self.exp.cases:
                if self.clock.monotonic() >= self.deadline:
                    self.say(case.case, f"not started: the {self.timeout_seconds}s budget is spent")
                    self.phases.append({"case": case.case, "job": case.job, "state": "not started", "seconds": 0})
                    continue
                if self.run_case(case) in ("timeout", "stuck"):
                    break
            inference = self.run_inference()
            self.wait_released()
            snap = collect(self.gw, self.exp, self.recorder, on_step=lambda s: self.say("collect", s),
                           pod_claims=self.pod_claims, compute_domains=self.compute_domains, taints=self.taints)
            snap.inference = inference
        finally:
            self.recorder.stop()
            self.taints.stop()
        self.settle()
        results = verify(self.exp, snap)
        for r in results:
            self.say("verify", f"{r.name}: {r.status}" + (f": {r.message}" if r.status != "passed" else ""))
        ok = not any(r.status == "failed" for r in results)
        doc = report.build(results, self.exp, start_ms=start_ms, stop_ms=self.clock.wall_ms(), phases=self.phases,
                           diagnostics=None if ok else report.diagnostics(snap, self.exp))
        return Outcome(doc, report.passed(doc), self.phases)


def run_smoke(gw: Gateway, spec: RunSpec, **kw: Any) -> Outcome:
    return Runner(gw, spec, **kw).run()


# --- install / clean up (the CLI; under Pulumi, helm owns the objects) -------------------------

INSTALL_ORDER = ("Namespace", "NetworkPolicy", "Service", "ConfigMap", "ResourceClaimTemplate", "ResourceClaim",
                 "PodGroup", "ComputeDomain", "Deployment", "HTTPRoute", "PodMonitor", "ScaledObject", "Job")
# The pods meet the restricted standard: enforce it where the smoke test makes its own namespace.
NAMESPACE_LABELS = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/audit": "restricted",
    "app.kubernetes.io/part-of": "ck8s-gpu",
}


def namespace_labels(exp: Expectations) -> dict[str, str]:
    """The smoke namespace's labels; with case `inference`, also the one by which the inference
    gateway's listener admits the namespace's routes (addons/inference_gateway.py ROUTES_LABEL)."""
    return {**NAMESPACE_LABELS, **(dict([ROUTES_LABEL]) if exp.inference is not None else {})}


@dataclass(frozen=True)
class Ref:
    api_version: str
    kind: str
    name: str
    namespace: str | None

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}" + (f" -n {self.namespace}" if self.namespace else "")


def install(gw: Gateway, objects: Sequence[Obj], namespace: str, created: list[Ref],
            say: Callable[[str], None] = lambda _m: None, *, clock: Clock | None = None,
            terminating_wait: float = 180.0, labels: dict[str, str] | None = None) -> None:
    """Create the rendered chart, in dependency order; every created object lands in `created`
    at once, so an interrupt mid-way still cleans up what exists."""
    clock = clock or RealClock()
    ns = gw.get("v1", "Namespace", namespace)
    if ns is not None and ns.get("status", {}).get("phase") == "Terminating":
        # An earlier run's namespace is still going away: nothing can be created in it.
        say(f"waiting for namespace {namespace} to finish terminating")
        until = clock.monotonic() + terminating_wait
        while ns is not None and clock.monotonic() < until:
            clock.sleep(1.0)
            ns = gw.get("v1", "Namespace", namespace)
        if ns is not None:
            raise KubeError(409, f"namespace {namespace} is still terminating after {terminating_wait:.0f}s")
    if ns is None:
        gw.create({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": namespace, "labels": labels or NAMESPACE_LABELS}})
        created.append(Ref("v1", "Namespace", namespace, None))
        say(f"created namespace {namespace}")
    for obj in sorted(objects, key=lambda o: INSTALL_ORDER.index(o["kind"])):
        gw.create(obj)
        created.append(Ref(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace")))
    say(f"created {len(objects)} object(s) in {namespace}")


def cleanup(gw: Gateway, created: list[Ref], say: Callable[[str], None] = lambda _m: None) -> list[str]:
    """Delete what `install` created, newest first; returns what could not be deleted."""
    left = []
    while created:
        ref = created[-1]  # popped only once handled: an interrupt leaves `created` = what is left
        try:
            gw.delete(ref.api_version, ref.kind, ref.name, ref.namespace,
                      propagation="Foreground" if ref.kind == "Job" else "Background")
        except Exception as exc:  # keep going: every object gets its try
            left.append(f"{ref}: {exc}")
        created.pop()
    say("cleaned up" if not left else f"could not delete {len(left)} object(s)")
    return left

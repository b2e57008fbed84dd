"""Drive case `inference` (components/smoke/cases/inference.py) through a cluster and record what it
saw, hop by hop, as plain JSON for Snapshot.inference. Stops at the first hop that cannot be
crossed (later hops are then reported as not reached) and always ends with no replica running.

Every request goes through the API server: the gateway by its Service's proxy
(`services/<svc>:<port>/proxy/...`), a model server by its pod's proxy; so the run needs nothing
but the API, from a laptop or CI alike. The API server's own refusals (no such Service, no
endpoints, dial failures) are told apart from answers of the gateway (gateway.Answer.proxy_error).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..addons.inference_gateway import CONTROLLER
from ..kube.gateway_api import gateway_problems, route_problems
from .cases import inference as case
from .collect import ClaimRecorder
from .expectations import CASE_LABEL, RUN_LABEL, InferenceExpectation
from .gateway import Gateway, KubeError, Obj, poll_pauses, proxy_path
from .snapshot import condition, events_for, name, pod_claim_name, start_failure

BACKEND_LABEL = "ck8s-gpu.io/smoke-backend"
GATEWAY_API = "gateway.networking.k8s.io/v1"
KEDA_API = "keda.sh/v1alpha1"
HPA_API = "autoscaling/v2"
APPS = "apps/v1"
ROUTE_WAIT_SECONDS = 60  # the gateway's controller writes route status within seconds
METRIC_WAIT_SECONDS = 90  # Prometheus' first scrapes (5 s) + KEDA's HPA + the HPA controller's sync (15 s)
# The HPA controller re-reads its metrics every 15 s (kube-controller-manager
# --horizontal-pod-autoscaler-sync-period default): a metric still unreadable over two syncs and a
# margin is not a scrape that has yet to happen.
METRIC_SETTLED_SECONDS = 35
SCALE_WAIT_SECONDS = 120  # HPA sync period 15 s, a new replica's claim, start and readiness
STOP_WAIT_SECONDS = 60
FAILURE_RUN = 20  # this many failed requests in a row: the route does not answer, stop sending
# A route is Programmed before its backends' endpoints reach the proxy (Traefik answers 503 "no
# available server" for a backend whose EndpointSlice it has yet to read): the split is measured
# once every backend answered, or after this long, whichever comes first.
CONVERGE_SECONDS = 60


@dataclass
class Timing:
    monotonic: Callable[[], float]
    sleep: Callable[[float], None]
    deadline: float
    poll: float
    stuck_seconds: float


class StopHop(Exception):
    def __init__(self, hop: tuple[str, str], why: str) -> None:
        super().__init__(why)
        self.hop, self.why = hop, why


class InferencePhase:
    def __init__(self, gw: Gateway, namespace: str, run_id: str, exp: InferenceExpectation, timing: Timing,
                 say: Callable[[str], None], recorder: ClaimRecorder | None = None) -> None:
        self.gw, self.ns, self.run_id, self.exp, self.t = gw, namespace, run_id, exp, timing
        self.say, self.recorder = say, recorder
        self.obs: dict[str, Any] = {"pods": {}, "split": [], "header": []}
        self.hop = case.REPLICAS  # the hop being crossed: an API failure stops the run there

    # --- the run ---------------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        started = self.t.monotonic()
        steps: tuple[tuple[tuple[str, str], Callable[[], None]], ...] = (
            (case.REPLICAS, self.start_replicas),
            (case.ROUTE, self.route),
            (case.SPLIT, self.split),
            (case.HEADER_HOP, lambda: self.traffic("header", self.exp.header_requests,
                                                   {self.exp.header: self.exp.models[1]})),
            (case.METRICS, self.metrics),
            (case.AUTOSCALE, self.autoscale),
        )
        try:
            for self.hop, step in steps:
                step()
        except StopHop as stop:
            self.obs["stopped"] = {"hop": stop.hop[1], "why": stop.why}
            self.say(f"stopped at {stop.hop[1]}: {stop.why}")
        except KubeError as exc:
            self.obs["stopped"] = {"hop": self.hop[1], "why": f"the API server refused a call: {exc}"}
            self.say(f"stopped at {self.hop[1]}: {exc}")
        finally:
            self.stop()
        self.obs["seconds"] = round(self.t.monotonic() - started, 1)
        return self.obs

    def _until(self, seconds: float) -> float:
        return min(self.t.deadline, self.t.monotonic() + seconds)

    def _wait(self, seconds: float, probe: Callable[[], bool]) -> bool:
        until, pauses = self._until(seconds), poll_pauses(self.t.poll)
        while True:
            if probe():
                return True
            if self.t.monotonic() >= until:
                return False
            self.t.sleep(next(pauses))

    # --- replicas --------------------------------------------------------------------------------

    def pods(self, backend: str | None = None) -> list[Obj]:
        selector = f"{RUN_LABEL}={self.run_id},{CASE_LABEL}=inference"
        if backend:
            selector += f",{BACKEND_LABEL}={backend}"
        return [p for p in self.gw.list("v1", "Pod", self.ns, label_selector=selector)[0]
                if not p.get("metadata", {}).get("deletionTimestamp")]

    def scale(self, deployment: str, replicas: int) -> None:
        self.gw.patch(APPS, "Deployment", deployment, self.ns, {"spec": {"replicas": replicas}})

    def record_pod(self, pod: Obj, why: str = "") -> dict[str, Any]:
        """What the verdict needs of a replica while it runs: backend, node, claim, the GPUs its
        server listed inside (its log's first lines), and why it is stuck if it is."""
        entry: dict[str, Any] = self.obs["pods"].setdefault(name(pod), {})
        entry.update({"backend": pod.get("metadata", {}).get("labels", {}).get(BACKEND_LABEL, ""),
                      "node": pod.get("spec", {}).get("nodeName") or entry.get("node", ""),
                      "claim": pod_claim_name(pod) or entry.get("claim", "")})
        if why:
            entry["why"] = why
        if not entry.get("gpus") and not entry.get("gpu_error") and pod.get("status", {}).get("phase") == "Running":
            try:
                log = self.gw.logs(self.ns, name(pod), case.CONTAINER)
            except KubeError:
                log = ""
            for line in log.splitlines():
                _, _, rest = line.partition("CK8S-MODEL ")
                kind, _, value = rest.partition(" ")
                if kind == "gpus":
                    entry["gpus"] = sorted(g for g in value.strip().split(",") if g)
                elif kind == "no-gpu":
                    entry["gpu_error"] = value.strip()
        return entry

    def ready_replicas(self, want: dict[str, int], hop: tuple[str, str], seconds: float) -> float:
        """Wait until each backend has `want` Ready replicas; a replica held at one failing start hop,
        or running but not Ready, for stuckSeconds stops the run at `hop` naming it. Returns seconds."""
        t0 = self.t.monotonic()
        first_bad: dict[str, float] = {}
        stuck: list[str] = []

        def ready(pod: Obj) -> bool:
            c = condition(pod, "Ready")
            return bool(c and c.get("status") == "True")

        def done() -> bool:
            now, ok = self.t.monotonic(), True
            events: list[Obj] | None = None
            for backend, count in want.items():
                pods = self.pods(backend)
                for pod in pods:
                    self.record_pod(pod)
                    if ready(pod):
                        first_bad.pop(name(pod), None)
                        continue
                    why = ""
                    if pod.get("spec", {}).get("nodeName"):
                        if events is None:
                            events = self.gw.list("v1", "Event", self.ns)[0]
                        why = start_failure(pod, events_for(events, "Pod", name(pod)))
                        if not why and pod.get("status", {}).get("phase") == "Running":
                            entry = self.record_pod(pod)
                            why = "running but not Ready" + (f": {entry['gpu_error']}" if entry.get("gpu_error")
                                                             else " (its readiness probe fails)")
                    if why:
                        since = first_bad.setdefault(name(pod), now)
                        if now - since >= self.t.stuck_seconds:
                            stuck.append(f"replica {name(pod)}: {why}")
                            self.record_pod(pod, why)
                if sum(1 for p in pods if ready(p)) < count:
                    ok = False
            return ok or bool(stuck)

        reached = self._wait(seconds, done)
        if stuck:
            raise StopHop(hop, "; ".join(stuck))
        if not reached:
            have = {b: sum(1 for p in self.pods(b) if (c := condition(p, "Ready")) and c.get("status") == "True")
                    for b in want}
            raise StopHop(hop, "replicas not Ready in time: " + ", ".join(
                f"{b} {have[b]}/{n}" for b, n in want.items()))
        if self.recorder is not None:
            self.recorder.sync()
        return round(self.t.monotonic() - t0, 1)

    def start_replicas(self) -> None:
        for deployment in (self.exp.stable, self.exp.canary):
            if self.gw.get(APPS, "Deployment", deployment, self.ns) is None:
                raise StopHop(case.REPLICAS, f"Deployment {deployment} does not exist")
            self.scale(deployment, 1)
        self.say("started one replica of each backend")
        secs = self.ready_replicas({case.STABLE: 1, case.CANARY: 1}, case.REPLICAS, SCALE_WAIT_SECONDS)
        self.say(f"both backends Ready in {secs} s")

    # --- the route -------------------------------------------------------------------------------

    def route(self) -> None:
        e = self.exp
        problems: list[str] = []
        since: float | None = None  # when the controller first answered with a refusal

        def settled() -> bool:
            """Accepted, or refused by the controller for stuckSeconds (a status it wrote for the
            current generation, not one it has yet to write)."""
            nonlocal problems, since
            gateway = self.gw.get(GATEWAY_API, "Gateway", e.gateway, e.gateway_namespace)
            route = self.gw.get(GATEWAY_API, "HTTPRoute", e.route, self.ns)
            self.obs["gateway"], self.obs["route"] = gateway, route
            problems = gateway_problems(gateway, e.gateway_namespace, e.gateway) + route_problems(
                route, "HTTPRoute", (e.gateway_namespace, e.gateway), CONTROLLER, e.listener)
            if not problems:
                return True
            answered = not any("yet" in p or "does not exist" in p for p in problems)
            since = (since if since is not None else self.t.monotonic()) if answered else None
            return since is not None and self.t.monotonic() - since >= self.t.stuck_seconds

        self._wait(ROUTE_WAIT_SECONDS, settled)
        if problems:
            raise StopHop(case.ROUTE, "; ".join(problems))
        self.say(f"HTTPRoute {e.route} accepted and programmed")

    # --- requests through the gateway ------------------------------------------------------------

    def ask(self, headers: dict[str, str]) -> dict[str, Any]:
        e = self.exp
        # the run's own prefix (the chart's route matches /smoke/<runId>/): the stand-in serves
        # the OpenAI paths under any prefix
        path = proxy_path("Service", e.gateway_namespace, e.service, e.service_port,
                          f"/smoke/{self.run_id}/v1/chat/completions")
        body = {"model": headers.get(e.header, e.models[0]), "max_tokens": 1,
                "messages": [{"role": "user", "content": "which GPU answers?"}]}
        answer = self.gw.request("POST", path, body=body, headers=headers)
        out: dict[str, Any] = {"status": answer.status}
        if answer.proxy_error:
            out["error"] = f"the API server's proxy to Service {e.gateway_namespace}/{e.service}: {answer.proxy_error}"
            return out
        try:
            doc = json.loads(answer.body)
        except ValueError:
            doc = None
        ck8s = doc.get("ck8s") if isinstance(doc, dict) else None
        if isinstance(ck8s, dict):
            out.update({"backend": ck8s.get("backend", ""), "pod": ck8s.get("pod", "")})
        if answer.status != 200:
            out["error"] = " ".join(answer.body.split())[:200] or "no body"
        return out

    def split(self) -> None:
        self.converge()
        self.traffic("split", self.exp.requests, {})

    def converge(self) -> None:
        """Ask until both backends have answered (the data plane has both), up to CONVERGE_SECONDS;
        these answers are not counted in the split, only reported."""
        t0, asked, answered = self.t.monotonic(), 0, Counter[str]()
        until = self._until(CONVERGE_SECONDS)
        while not {case.STABLE, case.CANARY} <= set(answered) and self.t.monotonic() < until:
            a = self.ask({})
            asked += 1
            if a["status"] == 200 and a.get("backend"):
                answered[a["backend"]] += 1
            elif a["status"] != 200 and asked % 10 == 0:
                self.t.sleep(self.t.poll)
        self.obs["converge"] = {"requests": asked, "seconds": round(self.t.monotonic() - t0, 1),
                                "answered": dict(answered)}
        if len(answered) < 2:
            # Which side lags: the cluster's endpoints of each backend, or the proxy reading them.
            self.obs["converge"]["endpoints"] = {b: self.ready_endpoints(svc) for b, svc in
                                                 ((case.STABLE, self.exp.stable), (case.CANARY, self.exp.canary))}
        secs = self.obs["converge"]["seconds"]
        self.say(f"both backends answering after {asked} request(s) in {secs} s" if len(answered) == 2
                 else f"after {asked} request(s) only {dict(answered)} answered; measuring anyway")

    def ready_endpoints(self, service: str) -> str:
        """`<ready> ready of <all>` addresses in the Service's EndpointSlices (discovery.k8s.io/v1:
        conditions.ready), as the EndpointSlice controller wrote them."""
        slices = self.gw.list("discovery.k8s.io/v1", "EndpointSlice", self.ns,
                              label_selector=f"kubernetes.io/service-name={service}")[0]
        eps = [e for sl in slices for e in sl.get("endpoints") or []]
        ready = [e for e in eps if (e.get("conditions") or {}).get("ready") is not False]
        return f"{len(ready)} ready of {len(eps)}"

    def traffic(self, key: str, count: int, headers: dict[str, str]) -> None:
        hop = case.SPLIT if key == "split" else case.HEADER_HOP
        answers: list[dict[str, Any]] = self.obs[key]
        failed_in_a_row = 0
        for _ in range(count):
            a = self.ask(headers)
            answers.append(a)
            failed_in_a_row = failed_in_a_row + 1 if a["status"] != 200 else 0
            if failed_in_a_row >= FAILURE_RUN:
                raise StopHop(hop, f"{FAILURE_RUN} requests in a row failed, the last: HTTP {a['status']}: "
                                   f"{a.get('error', '')}")
        by = Counter(a.get("backend") or f"HTTP {a['status']}" for a in answers)
        self.say(f"{key}: {count} requests, " + ", ".join(f"{b} {n}" for b, n in sorted(by.items())))

    # --- the autoscaler --------------------------------------------------------------------------

    def hpa(self) -> Obj | None:
        return self.gw.get(HPA_API, "HorizontalPodAutoscaler", case.HPA_PREFIX + self.exp.scaled_object, self.ns)

    def metrics(self) -> None:
        e = self.exp
        scaled = self.gw.get(KEDA_API, "ScaledObject", e.scaled_object, self.ns)
        if scaled is None:
            raise StopHop(case.METRICS, f"ScaledObject {e.scaled_object} does not exist (is KEDA installed?)")
        self.gw.patch(KEDA_API, "ScaledObject", e.scaled_object, self.ns,
                      {"metadata": {"annotations": {case.PAUSED_ANNOTATION: None}}})
        self.say(f"ScaledObject {e.scaled_object} unpaused")
        failing_since: float | None = None

        def read() -> bool:
            """A value read; or None when the HPA has said it cannot read one for long enough."""
            nonlocal failing_since
            hpa = self.hpa()
            self.obs["hpa"] = hpa
            active = case.hpa_conditions(hpa).get("ScalingActive") or {}
            if active.get("status") == "True" and case.current_value(hpa):
                return True
            if active.get("status") != "False":
                failing_since = None
                return False
            failing_since = failing_since if failing_since is not None else self.t.monotonic()
            return self.t.monotonic() - failing_since >= max(METRIC_SETTLED_SECONDS, self.t.stuck_seconds)

        self._wait(METRIC_WAIT_SECONDS, read)
        hpa = self.obs.get("hpa")
        active = case.hpa_conditions(hpa).get("ScalingActive") or {}
        if not (active.get("status") == "True" and case.current_value(hpa)):
            scaled = self.gw.get(KEDA_API, "ScaledObject", e.scaled_object, self.ns) or {}
            conditions = ", ".join(f"{c.get('type')} {c.get('status')} {c.get('reason', '')}: {c.get('message', '')}"
                                   for c in (scaled.get("status") or {}).get("conditions") or [])
            self.obs["scaler_why"] = f"ScaledObject conditions: {conditions or 'none'}"
            raise StopHop(case.METRICS, "")  # check_metrics words it from the HPA and the ScaledObject
        self.say(f"the autoscaler reads the queue: {case.current_value(hpa)}")

    def drive(self, waiting: int) -> None:
        for pod in self.pods(case.STABLE):
            path = proxy_path("Pod", self.ns, name(pod), str(self.exp.port), f"/admin/queue?waiting={waiting}")
            answer = self.gw.request("POST", path)
            if answer.status != 200:
                raise StopHop(case.AUTOSCALE, f"could not set the queue of {name(pod)}: HTTP {answer.status}: "
                                              f"{answer.proxy_error or answer.body[:200]}")

    def autoscale(self) -> None:
        e = self.exp
        waiting = e.threshold * e.max_replicas
        self.drive(waiting)
        self.say(f"queue driven to {waiting} waiting requests")
        out: dict[str, Any] = {}
        self.obs["scale_out"] = out
        try:
            out["seconds"] = self.ready_replicas({case.STABLE: e.max_replicas}, case.AUTOSCALE, SCALE_WAIT_SECONDS)
        except StopHop as stop:
            out["why"] = stop.why
        out["ready"] = sum(1 for p in self.pods(case.STABLE)
                           if (c := condition(p, "Ready")) and c.get("status") == "True")
        out["hpa"] = self.hpa()
        if out.get("why"):
            raise StopHop(case.AUTOSCALE, "")
        self.say(f"scaled out to {out['ready']} replicas in {out['seconds']} s")
        self.drive(0)
        back: dict[str, Any] = {}
        self.obs["scale_in"] = back
        t0 = self.t.monotonic()

        def one() -> bool:
            dep = self.gw.get(APPS, "Deployment", e.stable, self.ns) or {}
            replicas = int((dep.get("spec") or {}).get("replicas", -1))
            back["replicas"] = replicas
            return replicas == 1

        if not self._wait(SCALE_WAIT_SECONDS, one):
            back["why"] = f"HPA desired {((self.hpa() or {}).get('status') or {}).get('desiredReplicas')}"
        back["seconds"] = round(self.t.monotonic() - t0, 1)
        self.say(f"back to {back['replicas']} replica(s) in {back['seconds']} s")

    # --- always: no replica left -----------------------------------------------------------------

    def stop(self) -> None:
        e = self.exp
        for call in (lambda: self.gw.patch(KEDA_API, "ScaledObject", e.scaled_object, self.ns,
                                           {"metadata": {"annotations": {case.PAUSED_ANNOTATION: "true"}}}),
                     lambda: self.scale(e.stable, 0), lambda: self.scale(e.canary, 0)):
            try:
                call()
            except KubeError as exc:
                if exc.status != 404:
                    self.say(f"cleanup: {exc}")
        if not self._wait(STOP_WAIT_SECONDS, lambda: not self.pods()):
            self.say("model-server replicas still terminating: see claims-released")
        else:
            self.say("no model-server replica left")

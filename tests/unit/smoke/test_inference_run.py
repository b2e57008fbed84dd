"""The inference case's runner (components/smoke/inference_run.py) against a scripted world: what it
records on a good run, where it stops on each kind of failure and why, and that it always leaves
no replica running. The real controllers drive it in tests/integration/test_node_tier.py; here each
behaviour is shown in milliseconds, as `make check` runs it."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest

from components.addons import inference_gateway as gw
from components.smoke.cases import inference as case
from components.smoke.expectations import CASE_LABEL, RUN_LABEL, InferenceExpectation
from components.smoke.gateway import Answer, KubeError, Obj
from components.smoke.inference_run import BACKEND_LABEL, CONVERGE_SECONDS, InferencePhase, Timing
from tests.unit.smoke import settings_fixtures as sf

NS, RUN = "gpu-smoke-test", "r1"


def expectation() -> InferenceExpectation:
    e = sf.plan(sf.LOCAL_INFERENCE).expectations.inference
    assert e is not None
    return e


class World:
    """Deployments whose replicas turn Ready at once, a gateway that answers by weight, an HPA
    that follows the driven queue one step per read. Switches make each hop fail."""

    def __init__(self, e: InferenceExpectation) -> None:
        self.e = e
        self.now = 0.0
        self.replicas = {e.stable: 0, e.canary: 0}
        self.ready = True  # replicas turn Ready
        self.claims = True
        self.route_ok: bool | str = True  # False: no status yet; a reason: refused
        self.weights = {case.STABLE: 80, case.CANARY: 20}
        self.answer_status = 200
        self.metric = True
        self.waiting = 0
        self.paused = True
        self.refuse: str = ""  # an API call (kind) the server refuses
        self.asked = 0
        self.stable_warm_after = 0  # requests before the proxy knows the stable backend

    # --- the Gateway protocol ---
    def list(self, api: str, kind: str, ns: str | None = None, *, label_selector: str = "",
             field_selector: str = "") -> tuple[list[Obj], str]:
        if kind == "Event":
            return [], "1"
        if kind == "EndpointSlice":  # one ready endpoint per replica of the Service's backend
            svc = label_selector.split("=", 1)[1]
            return [{"endpoints": [{"conditions": {"ready": True}}] * self.replicas.get(svc, 0)}], "1"
        assert kind == "Pod", kind
        self.hpa_decides()
        pods = []
        for dep, n in self.replicas.items():
            backend = case.STABLE if dep == self.e.stable else case.CANARY
            if f"{BACKEND_LABEL}=" in label_selector and f"{BACKEND_LABEL}={backend}" not in label_selector:
                continue
            for i in range(n):
                pods.append(self.pod(f"{dep}-{i}", backend, i))
        return pods, "1"

    def pod(self, name: str, backend: str, i: int) -> Obj:
        return {"metadata": {"name": name, "labels": {RUN_LABEL: RUN, CASE_LABEL: "inference", BACKEND_LABEL: backend}},
                "spec": {"nodeName": "node-0"},
                "status": {"phase": "Running",
                           "conditions": [{"type": "Ready", "status": "True" if self.ready else "False"}],
                           "containerStatuses": [{"name": "server", "state": {"running": {}}}],
                           **({"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": f"{name}-gpu"}]}
                              if self.claims else {})}}

    def get(self, api: str, kind: str, name: str, ns: str | None = None) -> Obj | None:
        if kind == self.refuse:
            raise KubeError(403, f"{kind} is forbidden")
        if kind == "Deployment":
            self.hpa_decides()
            return {"spec": {"replicas": self.replicas[name]}} if name in self.replicas else None
        if kind == "Gateway":
            return {"metadata": {"name": name, "namespace": ns, "generation": 1}, "status": {
                "conditions": [{"type": t, "status": "True", "observedGeneration": 1}
                               for t in ("Accepted", "Programmed")],
                "listeners": [{"name": gw.LISTENER, "conditions": [
                    {"type": "Programmed", "status": "True", "observedGeneration": 1}]}]}}
        if kind == "HTTPRoute":
            parents = [] if self.route_ok is False else [{
                "controllerName": gw.CONTROLLER, "parentRef": {"namespace": gw.NAMESPACE, "name": gw.GATEWAY,
                                                               "sectionName": gw.LISTENER},
                "conditions": [{"type": "Accepted", "status": "True", "observedGeneration": 1},
                               {"type": "ResolvedRefs", "status": "True" if self.route_ok is True else "False",
                                "reason": "BackendNotFound" if self.route_ok is not True else "ResolvedRefs",
                                "message": str(self.route_ok), "observedGeneration": 1}]}]
            return {"metadata": {"name": name, "namespace": ns, "generation": 1}, "status": {"parents": parents}}
        if kind == "ScaledObject":
            return {"metadata": {"name": name}, "status": {"conditions": [
                {"type": "Ready", "status": "True" if self.metric else "False",
                 "reason": "" if self.metric else "TriggerError"}]}}
        if kind == "HorizontalPodAutoscaler":
            if self.paused:
                return None
            desired = self.hpa_decides()
            active = {"type": "ScalingActive", "status": "True" if self.metric else "False",
                      "reason": "ValidMetricFound" if self.metric else "FailedGetExternalMetric",
                      "message": "" if self.metric else "unable to get external metric"}
            return {"status": {"desiredReplicas": desired, "conditions": [active],
                               "currentMetrics": [{"type": "External", "external": {"current": {
                                   "averageValue": str(self.waiting)}}}] if self.metric else []}}
        raise AssertionError(kind)

    def hpa_decides(self) -> int:
        """The HPA's decision whenever the world is looked at: ceil(waiting / threshold), 1..max."""
        desired = max(1, min(self.e.max_replicas, -(-self.waiting // self.e.threshold)))
        if not self.paused and self.metric:
            self.replicas[self.e.stable] = desired
        return desired

    def patch(self, api: str, kind: str, name: str, ns: str | None, patch: Obj, *, subresource: str = "") -> Obj:
        if kind == self.refuse:
            raise KubeError(403, f"{kind} is forbidden")
        if kind == "Deployment":
            self.replicas[name] = patch["spec"]["replicas"]
        elif kind == "ScaledObject":
            self.paused = patch["metadata"]["annotations"][case.PAUSED_ANNOTATION] is not None
        return {}

    def logs(self, ns: str, pod: str, container: str) -> str:
        n = int(pod.rsplit("-", 1)[1]) + (10 if "canary" in pod else 0)
        return f"CK8S-MODEL gpus GPU-{n}\n" if self.claims else "CK8S-MODEL no-gpu nvidia-smi: not found\n"

    def request(self, method: str, path: str, *, body: Obj | None = None, headers: dict[str, str] | None = None,
                timeout: float = 10.0) -> Answer:
        if "/admin/queue" in path:
            self.waiting = int(path.rsplit("=", 1)[1])
            return Answer(200, "{}")
        self.asked += 1
        assert f"/proxy/smoke/{RUN}/v1/chat/completions" in path, path  # the run's own prefix
        if self.answer_status != 200:
            return Answer(self.answer_status, "no available server")
        if headers and headers.get(self.e.header) == self.e.models[1]:
            backend = case.CANARY
        else:
            # smooth weighted round robin over 100 slots
            backend = case.CANARY if (self.asked * self.weights[case.CANARY]) % 100 < self.weights[case.CANARY] \
                else case.STABLE
            if backend == case.STABLE and self.asked <= self.stable_warm_after:
                return Answer(503, "no available server")
        return Answer(200, json.dumps({"ck8s": {"backend": backend, "pod": f"{backend}-0"}}))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def world() -> Iterator[World]:
    yield World(expectation())


def run(w: World, stuck: float = 15) -> dict[str, Any]:
    clock = Clock()
    said: list[str] = []
    timing = Timing(clock.monotonic, clock.sleep, deadline=10_000, poll=1.0, stuck_seconds=stuck)
    obs = InferencePhase(w, NS, RUN, w.e, timing, said.append).run()  # type: ignore[arg-type]
    obs["said"] = said
    return obs


def stopped(obs: dict[str, Any]) -> tuple[str, str]:
    s = obs.get("stopped") or {}
    return s.get("hop", ""), s.get("why", "")


def test_a_good_run_records_every_hop_and_ends_with_nothing_running(world: World) -> None:
    obs = run(world)
    assert "stopped" not in obs, obs.get("stopped")
    assert set(obs["pods"]) >= {f"{world.e.stable}-0", f"{world.e.canary}-0", f"{world.e.stable}-1"}
    assert obs["pods"][f"{world.e.canary}-0"] | {} == {"backend": "canary", "node": "node-0",
                                                       "claim": f"{world.e.canary}-0-gpu", "gpus": ["GPU-10"]}
    backends = [a["backend"] for a in obs["split"]]
    assert len(backends) == world.e.requests and backends.count("canary") == world.e.requests // 5
    assert {a["backend"] for a in obs["header"]} == {"canary"}
    assert obs["scale_out"]["ready"] == world.e.max_replicas and obs["scale_in"]["replicas"] == 1
    assert world.replicas == {world.e.stable: 0, world.e.canary: 0} and world.paused  # nothing left running


def test_replicas_that_never_turn_ready_stop_the_run_at_the_replicas_after_stuck_seconds(world: World) -> None:
    world.ready = False
    world.claims = False
    obs = run(world)
    hop, why = stopped(obs)
    assert hop == case.REPLICAS[1] and "running but not Ready: nvidia-smi: not found" in why, why
    assert world.replicas == {world.e.stable: 0, world.e.canary: 0}


def test_a_route_the_controller_refuses_stops_after_stuck_seconds_not_the_whole_wait(world: World) -> None:
    world.route_ok = "service no-such-model not found"
    obs = run(world, stuck=10)
    hop, why = stopped(obs)
    assert hop == case.ROUTE[1] and "BackendNotFound" in why, why
    assert obs["seconds"] < 30  # 10 s of refusal, not the 60 s route wait
    assert obs["split"] == []


def test_a_route_with_no_status_waits_the_route_wait_and_says_so(world: World) -> None:
    world.route_ok = False
    hop, why = stopped(run(world))
    assert hop == case.ROUTE[1] and "has written no status for this parent yet" in why, why


def test_the_split_waits_for_every_backend_then_measures(world: World) -> None:
    world.stable_warm_after = 7
    obs = run(world)
    assert obs["converge"]["answered"].keys() == {"stable", "canary"}
    assert all(a["status"] == 200 for a in obs["split"]), "the warm-up's 503s are not counted"


def test_a_gateway_that_never_answers_stops_the_split(world: World) -> None:
    world.answer_status = 503
    obs = run(world)
    hop, why = stopped(obs)
    assert hop == case.SPLIT[1] and "20 requests in a row failed, the last: HTTP 503" in why, why
    assert obs["converge"]["seconds"] >= CONVERGE_SECONDS - 1
    # the cluster had the endpoints: the proxy is the side that lags, and the record says so
    assert obs["converge"]["endpoints"] == {"stable": "1 ready of 1", "canary": "1 ready of 1"}


def test_a_metric_that_does_not_exist_stops_at_the_metrics_once_settled(world: World) -> None:
    world.metric = False
    obs = run(world)
    hop, _ = stopped(obs)
    assert hop == case.METRICS[1]
    assert "TriggerError" in obs["scaler_why"]
    assert "scale_out" not in obs and world.paused and world.waiting == 0


def test_an_api_refusal_mid_run_stops_at_the_hop_being_crossed(world: World) -> None:
    world.refuse = "ScaledObject"
    obs = run(world)
    hop, why = stopped(obs)
    assert hop == case.METRICS[1] and "the API server refused a call: 403" in why, why
    assert world.replicas == {world.e.stable: 0, world.e.canary: 0}  # the Deployments still went to 0


def test_a_missing_deployment_stops_before_anything_is_asked(world: World) -> None:
    del world.replicas[world.e.canary]
    hop, why = stopped(run(world))
    assert hop == case.REPLICAS[1] and f"Deployment {world.e.canary} does not exist" in why
    assert world.asked == 0


def test_the_observations_judge_as_the_checks_expect(world: World) -> None:
    """The recorded shapes are the ones the checks read (tests/unit/smoke/test_inference.py)."""
    obs = run(world)
    counts, failures = case._answers(obs, "split")
    assert not failures and counts == {"stable": 160, "canary": 40}
    assert case.current_value(obs["hpa"]) == "0"
    assert copy.deepcopy(obs) == obs  # plain JSON-able data
    json.dumps({k: v for k, v in obs.items() if k != "said"})

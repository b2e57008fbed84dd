"""Smoke case `inference` (components/smoke/cases/inference.py): its settings refusals, the chart
objects the runner drives (names the expectation carries), and each hop's check on a passing world
and on the break that crosses it, named. The runner drives real controllers in
tests/integration/test_inference_smoke.py."""

from __future__ import annotations

import copy
import dataclasses
import random
from typing import Any

import pytest

from components.addons import inference_gateway as gw
from components.kube.charts import render
from components.settings import SettingsError, parse_settings
from components.smoke.cases import inference as inf
from components.smoke.expectations import Expectations
from components.smoke.run import namespace_labels
from components.smoke.verifier import FAILED, PASSED, SKIPPED, verify
from components.smoke.view import CheckResult, View
from components.tables.labels import INFERENCE_ROUTES_LABEL
from tests.unit.helpers import raised_problems
from tests.unit.smoke import fixtures as fx
from tests.unit.smoke import settings_fixtures as sf

NODE = fx.NODES[0]


def plan() -> Any:
    return sf.plan(sf.LOCAL_INFERENCE)


# --- settings --------------------------------------------------------------------------------------


def settings_problems(raw: dict[str, Any]) -> str:
    return "\n".join(f"{path}: {why}" for path, why in raised_problems(sf.settings, raw))


def aws(**addons: Any) -> dict[str, Any]:
    raw = copy.deepcopy(sf.AWS)
    raw["smokeTest"] = {"image": sf.PROBE_IMAGE, "inference": {"enabled": True}}
    raw["gpuStack"] = {**raw.get("gpuStack", {}), "addons": addons}
    return raw


def test_off_by_default_and_nothing_rendered() -> None:
    p = sf.plan(sf.LOCAL)
    assert p.expectations.inference is None and p.values["inference"] == {"enabled": False}
    assert not [o for o in render("gpu-smoke-test", p.values, release=p.release, namespace=p.namespace)
                if o["kind"] in ("Deployment", "HTTPRoute", "ScaledObject", "PodMonitor")]


def test_the_case_needs_the_probe_image_that_carries_the_model_server() -> None:
    raw = copy.deepcopy(sf.LOCAL_INFERENCE)
    del raw["smokeTest"]["image"]
    assert "settings.smokeTest.image: required with smokeTest.inference" in settings_problems(raw)


def test_where_the_program_installs_add_ons_it_names_each_one_the_case_drives() -> None:
    text = settings_problems(aws(inferenceGateway={"enabled": False}, keda={"enabled": False},
                                 kubePrometheusStack={"enabled": False}))
    for key in ("inferenceGateway", "keda", "kubePrometheusStack"):
        assert f"settings.gpuStack.addons.{key}.enabled: smokeTest.inference needs it" in text, text


def test_under_kai_the_scaled_out_replicas_must_fit_the_smoke_queues_quota() -> None:
    raw = aws()
    raw["queues"] = [{"name": "smoke-test", "gpu": {"quota": 2, "limit": -1}}]
    text = settings_problems(raw)
    assert ("settings.queues[0].gpu.quota: queue 'smoke-test' has a GPU quota of 2, but smokeTest.inference "
            "(maxReplicas stable replicas and one canary, scaled out) holds 3 non-preemptible GPU(s)") in text, text


@pytest.mark.parametrize("bad", [{"canaryPercent": 0}, {"canaryPercent": 96}, {"requests": 10},
                                 {"maxReplicas": 1}, {"prometheusUrl": "prometheus:9090"},
                                 {"prometheusUrl": "http://a b"}, {"weights": [80, 20]}])
def test_bad_case_settings_are_named(bad: dict[str, Any]) -> None:
    raw = copy.deepcopy(sf.LOCAL_INFERENCE)
    raw["smokeTest"]["inference"] |= bad
    with pytest.raises((SettingsError, ValueError)) as e:
        parse_settings(raw)
    assert f"smokeTest.inference.{next(iter(bad))}" in str(e.value), str(e.value)


# --- the chart objects -----------------------------------------------------------------------------


def objects() -> tuple[Any, dict[tuple[str, str], dict[str, Any]]]:
    p = plan()
    objs = render("gpu-smoke-test", p.values, release=p.release, namespace=p.namespace)
    return p, {(o["kind"], o["metadata"]["name"]): o for o in objs}


def test_the_chart_renders_what_the_runner_drives_by_the_expectations_names() -> None:
    p, objs = objects()
    e = p.expectations.inference
    assert e is not None
    stable, canary = objs[("Deployment", e.stable)], objs[("Deployment", e.canary)]
    for dep, backend, model in ((stable, "stable", e.models[0]), (canary, "canary", e.models[1])):
        assert dep["spec"]["replicas"] == 0  # no GPU held outside a run
        pod = dep["spec"]["template"]["spec"]
        assert pod["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": next(
            n for k, n in objs if k == "ResourceClaimTemplate" and "model-gpu" in n)}]
        (c,) = pod["containers"]
        assert c["name"] == inf.CONTAINER and c["command"] == ["/usr/bin/ck8s-model-server"]
        assert c["args"][:4] == ["--backend", backend, "--model", model]
        assert c["resources"]["claims"] == [{"name": "gpu"}]
        assert c["readinessProbe"]["httpGet"]["path"] == "/healthz"
        assert objs[("Service", dep["metadata"]["name"])]["spec"]["ports"][0]["port"] == e.port
    route = objs[("HTTPRoute", e.route)]
    (parent,) = route["spec"]["parentRefs"]
    assert (parent["namespace"], parent["name"], parent["sectionName"]) == (gw.NAMESPACE, gw.GATEWAY, gw.LISTENER)
    header_rule, split_rule = route["spec"]["rules"]
    assert header_rule["matches"][0]["headers"] == [{"type": "Exact", "name": e.header, "value": e.models[1]}]
    # a path of the run's own: on the shared Gateway a plain /v1/ would tie with users' routes
    for rule in (header_rule, split_rule):
        assert rule["matches"][0]["path"] == {"type": "PathPrefix", "value": f"/smoke/{p.run_id}/"}
    assert [b["name"] for b in header_rule["backendRefs"]] == [e.canary]
    assert [(b["name"], b["weight"]) for b in split_rule["backendRefs"]] == [(e.stable, 80), (e.canary, 20)]
    scaler = objs[("ScaledObject", e.scaled_object)]
    assert scaler["metadata"]["annotations"] == {inf.PAUSED_ANNOTATION: "true"}  # the runner unpauses it
    assert scaler["spec"]["scaleTargetRef"] == {"name": e.stable}
    assert (scaler["spec"]["minReplicaCount"], scaler["spec"]["maxReplicaCount"]) == (1, e.max_replicas)
    (trigger,) = scaler["spec"]["triggers"]
    assert trigger["metadata"]["query"] == (f'sum(vllm:num_requests_waiting{{namespace="{p.namespace}",'
                                            f'pod=~"{e.stable}-.+"}})')
    assert trigger["metadata"]["ignoreNullValues"] == "false" and trigger["metadata"]["threshold"] == str(e.threshold)
    assert trigger["metadata"]["serverAddress"] == "http://10.1.2.3:9090"
    monitor = next(o for (k, _), o in objs.items() if k == "PodMonitor")
    assert monitor["spec"]["selector"]["matchLabels"]["ck8s-gpu.io/smoke-case"] == "inference"
    assert monitor["spec"]["podMetricsEndpoints"] == [{"port": "http", "path": "/metrics", "interval": "5s"}]
    ingress = next(o for (k, n), o in objs.items() if k == "NetworkPolicy" and "model-ingress" in n)
    assert ingress["spec"]["ingress"] == [{"ports": [{"port": e.port, "protocol": "TCP"}]}]


def test_the_default_prometheus_is_the_monitoring_add_ons_service() -> None:
    raw = copy.deepcopy(sf.LOCAL_INFERENCE)
    del raw["smokeTest"]["inference"]["prometheusUrl"]
    values = sf.plan(raw).values["inference"]
    assert values["autoscaling"]["prometheusUrl"] == "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"


def test_the_namespace_admits_routes_only_with_the_case_on() -> None:
    assert namespace_labels(plan().expectations)[INFERENCE_ROUTES_LABEL] == "allowed"
    assert INFERENCE_ROUTES_LABEL not in namespace_labels(sf.plan(sf.LOCAL).expectations)


def test_the_expectation_survives_the_engines_json() -> None:
    exp = plan().expectations
    through = {**exp.to_dict()}
    through["inference"] = {k: float(v) if isinstance(v, int) else v for k, v in through["inference"].items()}
    assert Expectations.from_dict(through) == exp


# --- the checks ------------------------------------------------------------------------------------


def world() -> fx.World:
    """One node of 4 GPUs; replicas stable-0 (gpu-0), canary-0 (gpu-1) and, scaled out, stable-1
    (gpu-2), each seeing its own GPU; 160/40 answered, 20 header requests by the canary; the HPA read
    the queue, went to 2 and back to 1."""
    w = fx.real_world(gpus_per_node=4, nodes=(NODE,), cases=())
    e = plan().expectations.inference
    assert e is not None
    w.exp = dataclasses.replace(w.exp, inference=e)
    pods: dict[str, Any] = {}
    for i, (pod, backend) in enumerate((("stable-0", "stable"), ("canary-0", "canary"), ("stable-1", "stable"))):
        c = fx.claim(pod, NODE, f"gpu-{i}")
        w.snap.claims.append(c)
        pods[pod] = {"backend": backend, "node": NODE, "claim": c["metadata"]["name"], "gpus": [fx.gpu_uuid(NODE, i)]}
    route = {"metadata": {"name": e.route, "namespace": fx.NS, "generation": 1},
             "status": {"parents": [{"controllerName": gw.CONTROLLER, "parentRef": {
                 "group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": gw.NAMESPACE,
                 "name": gw.GATEWAY, "sectionName": gw.LISTENER},
                 "conditions": [{"type": t, "status": "True", "reason": t, "observedGeneration": 1}
                                for t in ("Accepted", "ResolvedRefs")]}]}}
    gateway = {"metadata": {"name": gw.GATEWAY, "namespace": gw.NAMESPACE, "generation": 1},
               "status": {"conditions": [{"type": t, "status": "True", "observedGeneration": 1}
                                         for t in ("Accepted", "Programmed")],
                          "listeners": [{"name": gw.LISTENER, "conditions": [
                              {"type": "Programmed", "status": "True", "observedGeneration": 1}]}]}}
    hpa = {"status": {"currentReplicas": 1, "desiredReplicas": 1,
                      "currentMetrics": [{"type": "External", "external": {"current": {"averageValue": "0"}}}],
                      "conditions": [{"type": "ScalingActive", "status": "True", "reason": "ValidMetricFound"}]}}
    answer = [{"status": 200, "backend": "stable", "pod": "stable-0"}] * 160 + \
             [{"status": 200, "backend": "canary", "pod": "canary-0"}] * 40
    w.snap.inference = {
        "pods": pods, "gateway": gateway, "route": route, "split": answer,
        "header": [{"status": 200, "backend": "canary", "pod": "canary-0"}] * e.header_requests, "hpa": hpa,
        "scale_out": {"ready": 2, "seconds": 21.0, "hpa": hpa}, "scale_in": {"replicas": 1, "seconds": 16.0},
    }
    return w


def results(w: fx.World) -> dict[str, CheckResult]:
    v = View(w.exp, w.snap)
    return {c.name: c.run(v) for c in inf.CHECKS}


def failed(w: fx.World, check: tuple[str, str]) -> str:
    r = results(w)[check[0]]
    assert r.status == FAILED and r.hop == check[1], r
    return "\n".join((r.message, *r.details))


def test_a_served_autoscaled_model_passes_every_hop() -> None:
    out = results(world())
    assert {n: r.status for n, r in out.items()} == {c[0]: PASSED for c in inf.HOPS}
    assert "stable 160, canary 40 (weights 80/20, tolerance 11.3%: 4 sigma of 200 draws)" in out[inf.SPLIT[0]].message


def test_the_case_off_skips_every_hop() -> None:
    w = world()
    w.exp = dataclasses.replace(w.exp, inference=None)
    assert {r.status for r in results(w).values()} == {SKIPPED}


def test_a_route_to_a_missing_backend_fails_the_route_naming_the_reason() -> None:
    w = world()
    conditions = w.snap.inference["route"]["status"]["parents"][0]["conditions"]
    conditions[1] |= {"status": "False", "reason": "BackendNotFound", "message": "backend not found"}
    assert "ResolvedRefs" in failed(w, inf.ROUTE) and "BackendNotFound" in failed(w, inf.ROUTE)


def test_a_gateway_nobody_programs_fails_the_route() -> None:
    w = world()
    w.snap.inference["gateway"] = None
    assert "Gateway inference-gateway/inference does not exist" in failed(w, inf.ROUTE)


def test_a_replica_without_a_claim_fails_the_replicas_hop() -> None:
    w = world()
    w.snap.inference["pods"]["canary-0"]["claim"] = ""
    assert "replica canary-0 (canary, node" in failed(w, inf.REPLICAS)
    assert "holds no ResourceClaim" in failed(w, inf.REPLICAS)


def test_a_replica_seeing_another_gpu_than_its_claims_fails() -> None:
    w = world()
    w.snap.inference["pods"]["stable-1"]["gpus"] = [fx.gpu_uuid(NODE, 3)]
    text = failed(w, inf.REPLICAS)
    assert f"lists ['{fx.gpu_uuid(NODE, 3)}']" in text and fx.gpu_uuid(NODE, 2) in text


def test_two_replicas_on_one_device_fail() -> None:
    w = world()
    w.snap.claims[2] = fx.claim("stable-1", NODE, "gpu-0")
    w.snap.inference["pods"]["stable-1"] |= {"claim": w.snap.claims[2]["metadata"]["name"],
                                             "gpus": [fx.gpu_uuid(NODE, 0)]}
    assert f"device {NODE}/gpu-0 went to 2 replicas at once: stable-0, stable-1" in failed(w, inf.REPLICAS)


def test_a_wrong_weight_fails_the_split() -> None:
    w = world()
    w.snap.inference["split"] = ([{"status": 200, "backend": "stable"}] * 100
                                 + [{"status": 200, "backend": "canary"}] * 100)
    text = failed(w, inf.SPLIT)
    assert "stable answered 50.0% of 200 requests, its weight asks 80.0%" in text


def test_failed_requests_are_counted_with_their_reason() -> None:
    w = world()
    w.snap.inference["split"][:30] = [{"status": 503, "error": "no available server"}] * 30
    assert "30 of 200 request(s) failed: 30 x HTTP 503: no available server" in failed(w, inf.SPLIT)


def test_a_backend_the_proxy_never_had_is_said_beside_the_split() -> None:
    w = world()
    w.snap.inference["split"] = [{"status": 503, "error": "no available server"}] * 160 + \
        [{"status": 200, "backend": "canary"}] * 40
    w.snap.inference["converge"] = {"requests": 300, "seconds": 30.0, "answered": {"canary": 60},
                                    "endpoints": {"stable": "1 ready of 1", "canary": "1 ready of 1"}}
    text = failed(w, inf.SPLIT)
    assert "160 of 200 request(s) failed: 160 x HTTP 503: no available server" in text
    assert ("300 request(s) over 30.0 s reached only ['canary']: the proxy never had every backend's endpoints "
            "(canary's EndpointSlices: 1 ready of 1 endpoint(s); stable's EndpointSlices: 1 ready of 1 endpoint(s))"
            ) in text


def test_a_header_rule_that_does_not_match_fails_the_header_hop() -> None:
    w = world()
    w.snap.inference["header"] = ([{"status": 200, "backend": "stable"}] * 16
                                  + [{"status": 200, "backend": "canary"}] * 4)
    assert "16 of 20 requests with `X-Gateway-Model-Name: smoke-" in failed(w, inf.HEADER_HOP)
    assert "the header rule did not match" in failed(w, inf.HEADER_HOP)


def test_an_hpa_on_a_metric_that_does_not_exist_fails_the_metrics_hop() -> None:
    w = world()
    w.snap.inference["hpa"] = {"status": {"conditions": [
        {"type": "ScalingActive", "status": "False", "reason": "FailedGetExternalMetric",
         "message": "the HPA was unable to compute the replica count: unable to get external metric"}]}}
    w.snap.inference["stopped"] = {"hop": inf.METRICS[1], "why": ""}
    text = failed(w, inf.METRICS)
    assert "ScalingActive False FailedGetExternalMetric: the HPA was unable" in text
    assert results(w)[inf.AUTOSCALE[0]].status == SKIPPED
    assert results(w)[inf.AUTOSCALE[0]].message == "not reached: the run stopped at `workload metrics`"


def test_keda_that_never_made_the_hpa_says_why() -> None:
    w = world()
    w.snap.inference |= {"hpa": None, "scaler_why": "ScaledObject conditions: Ready False ScaledObjectCheckFailed"}
    assert "KEDA never created HPA keda-hpa-" in failed(w, inf.METRICS)
    assert "ScaledObjectCheckFailed" in failed(w, inf.METRICS)


def test_no_scale_out_fails_the_autoscaling_hop_and_so_does_no_scale_in() -> None:
    w = world()
    w.snap.inference["scale_out"] = {"ready": 1, "why": "replicas not Ready in time: stable 1/2",
                                     "hpa": {"status": {"desiredReplicas": 1}}}
    assert "reached 1 ready replica(s) of 2 (HPA desired 1): replicas not Ready" in failed(w, inf.AUTOSCALE)
    w = world()
    w.snap.inference["scale_in"] = {"replicas": 2, "why": "HPA desired 2"}
    assert "stayed at 2 replica(s), not 1: HPA desired 2" in failed(w, inf.AUTOSCALE)


def test_a_stop_fails_its_hop_and_skips_every_later_one() -> None:
    w = world()
    w.snap.inference["stopped"] = {"hop": inf.REPLICAS[1], "why": "replica canary-0: running but not Ready"}
    out = results(w)
    assert out[inf.REPLICAS[0]].status == FAILED and "running but not Ready" in out[inf.REPLICAS[0]].message
    for hop in (inf.ROUTE, inf.SPLIT, inf.HEADER_HOP, inf.METRICS, inf.AUTOSCALE):
        assert out[hop[0]].status == SKIPPED and "not reached" in out[hop[0]].message


def test_the_tolerance_is_four_sigma_of_the_stated_draws() -> None:
    assert inf.tolerance(200, 20) == pytest.approx(4 * (0.2 * 0.8 / 200) ** 0.5)
    assert inf.tolerance(5000, 20) < inf.tolerance(200, 20)


@pytest.mark.parametrize("seed", range(40))
def test_observations_of_any_shape_end_in_results_never_a_crash(seed: int) -> None:
    rng = random.Random(seed)
    w = world()
    junk: list[Any] = [None, "", 0, -1, [], {}, "x", {"status": "True"}, [None], 3.5]
    obs = w.snap.inference
    for _ in range(rng.randint(1, 5)):
        key = rng.choice(sorted(obs))
        value = obs[key]
        if isinstance(value, dict) and value and rng.random() < 0.6:
            value[rng.choice(sorted(value))] = rng.choice(junk)
        elif isinstance(value, list) and value and rng.random() < 0.6:
            value[rng.randrange(len(value))] = rng.choice(junk)
        else:
            obs[key] = rng.choice(junk)
    names = {c[0] for c in inf.HOPS}
    out = [r for r in verify(w.exp, w.snap) if r.name in names]
    assert len(out) == len(names)
    assert all(r.status in (PASSED, FAILED, SKIPPED) and isinstance(r.message, str) for r in out)

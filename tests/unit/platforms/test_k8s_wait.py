"""WaitFor: JSONPath subset, discovery verdicts, polling a scripted API server, eager validation."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from components import k8s_ready
from components import k8s_wait as w
from components.k8s_ready import HttpResult
from components.plan.mockengine import run_program
from tests.unit.platforms.fake_api import FakeApi

POLICY = w.Target("nvidia.com/v1", "ClusterPolicy", "cluster-policy", None, "{.status.state}", "ready")
DEPLOY = w.Target("apps/v1", "Deployment", "kai-scheduler", "kai-scheduler",
                  '{.status.conditions[?(@.type=="Available")].status}', "True")

DEPLOYMENT: dict[str, Any] = {
    "metadata": {"name": "d", "labels": {"app.kubernetes.io/name": "kai", "tier": "ctl"}},
    "spec": {"replicas": 2, "paused": False},
    "status": {
        "conditions": [
            {"type": "Progressing", "status": "True"},
            {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"},
        ],
        "readyReplicas": 1,
    },
}


def fast_delays(*_: object, **__: object) -> Iterator[float]:
    return itertools.repeat(0.01)


# ---------------------------------------------------------------------------- JSONPath


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("{.status.readyReplicas}", "1"),
        (".status.readyReplicas", "1"),
        ("$.spec.paused", "false"),
        ("status.readyReplicas", "1"),
        ('{.status.conditions[?(@.type=="Available")].status}', "False"),
        ("{.status.conditions[?(@.type=='Available')].reason}", "MinimumReplicasUnavailable"),
        ('{.status.conditions[?(@.type!="Available")].type}', "Progressing"),
        ("{.status.conditions[*].status}", "True False"),
        ("{.status.conditions[-1].type}", "Available"),
        ("{.status.conditions[0]}", '{"status":"True","type":"Progressing"}'),
        (r"{.metadata.labels.app\.kubernetes\.io/name}", "kai"),
        ("{.metadata.labels['app.kubernetes.io/name']}", "kai"),
        ('{.metadata.labels["tier"]}', "ctl"),
    ],
)
def test_jsonpath_selects_like_kubectl(expr: str, expected: str) -> None:
    assert w.observed(w.parse_jsonpath(expr), DEPLOYMENT) == expected


@pytest.mark.parametrize(
    "expr", ["{.status.missing}", "{.status.conditions[5].type}", '{.status.conditions[?(@.type=="Nope")].status}',
             "{.spec.replicas.deeper}"],
)
def test_jsonpath_selecting_nothing_is_none(expr: str) -> None:
    assert w.observed(w.parse_jsonpath(expr), DEPLOYMENT) is None


@pytest.mark.parametrize(
    ("expr", "reason"),
    [("", "empty"), ("{}", "empty"), ("{..status}", "recursive descent"), ("{.status[}", "unclosed"),
     ("{.a[?(@.x > 1)]}", "unsupported selector"), ("{.a[1:3]}", "unsupported selector"), ("{.a.}", "field name"),
     ("{.a b}", "unexpected")],
)
def test_jsonpath_rejects_what_it_does_not_support(expr: str, reason: str) -> None:
    with pytest.raises(w.JsonPathError, match=reason):
        w.parse_jsonpath(expr)


# ---------------------------------------------------------------------------- verdicts


def test_discovery_paths_and_resource_lookup() -> None:
    assert w.discovery_path("v1") == "/api/v1"
    assert w.discovery_path("nvidia.com/v1") == "/apis/nvidia.com/v1"
    listing = {"resources": [
        {"name": "clusterpolicies/status", "kind": "ClusterPolicy", "namespaced": False},
        {"name": "clusterpolicies", "kind": "ClusterPolicy", "namespaced": False},
    ]}
    assert w.find_resource(listing, "ClusterPolicy") == ("clusterpolicies", False)
    assert w.find_resource(listing, "NVIDIADriver") is None
    assert w.object_path("nvidia.com/v1", "clusterpolicies", None, "cluster-policy") == (
        "/apis/nvidia.com/v1/clusterpolicies/cluster-policy")
    assert w.object_path("v1", "pods", "ns", "p") == "/api/v1/namespaces/ns/pods/p"


def test_discovery_verdicts() -> None:
    listing = '{"resources":[{"name":"clusterpolicies","kind":"ClusterPolicy","namespaced":false}]}'
    obs, found = w.discovery_observation(POLICY, HttpResult(404, "not found"))
    assert found is None and "CRD not installed" in obs.detail and not obs.fatal
    obs, found = w.discovery_observation(POLICY, HttpResult(200, '{"resources": []}'))
    assert found is None and "kind ClusterPolicy is not served by nvidia.com/v1" in obs.detail
    obs, found = w.discovery_observation(POLICY, HttpResult(200, listing))
    assert found == ("clusterpolicies", False)
    scoped = w.Target("nvidia.com/v1", "ClusterPolicy", "cluster-policy", "gpu-operator", "{.a}", "x")
    obs, found = w.discovery_observation(scoped, HttpResult(200, listing))
    assert found is None and obs.fatal and "cluster-scoped" in obs.detail
    namespaced = '{"resources":[{"name":"deployments","kind":"Deployment","namespaced":true}]}'
    unscoped = w.Target("apps/v1", "Deployment", "d", None, "{.a}", "x")
    obs, found = w.discovery_observation(unscoped, HttpResult(200, namespaced))
    assert obs.fatal and "namespace is required" in obs.detail


def test_object_verdicts() -> None:
    steps = w.parse_jsonpath(POLICY.jsonpath)
    assert w.object_observation(POLICY, steps, HttpResult(404, "")).detail == "object not found (yet)"
    assert w.object_observation(POLICY, steps, HttpResult(200, "{}")).detail == "{.status.state} is not set (yet)"
    obs = w.object_observation(POLICY, steps, HttpResult(200, '{"status":{"state":"notReady"}}'))
    assert not obs.done and obs.value == "notReady"
    assert w.object_observation(POLICY, steps, HttpResult(200, '{"status":{"state":"ready"}}')).done
    assert w.object_observation(POLICY, steps, HttpResult(403, "no")).permanent


def test_timeout_message_names_object_endpoint_and_last_value() -> None:
    last = k8s_ready.Observation(False, "{.status.state} is 'notReady'", value="notReady")
    msg = w.wait_timeout_message(POLICY, "https://api:6443", 900.2, 61, last)
    assert msg == ("waiting for ClusterPolicy cluster-policy (nvidia.com/v1) on https://api:6443: timed out after "
                   "900s and 61 attempts for {.status.state} == 'ready'; last observed: {.status.state} is "
                   "'notReady'")


# ---------------------------------------------------------------------------- against an API


def _policy_routes(*states: str) -> dict[str, list[tuple[int, Any]]]:
    return {
        "/apis/nvidia.com/v1": [
            (404, {"kind": "Status"}),  # the CRD arrives a moment later
            (200, {"resources": [{"name": "clusterpolicies", "kind": "ClusterPolicy", "namespaced": False}]}),
        ],
        "/apis/nvidia.com/v1/clusterpolicies/cluster-policy": [
            (404, {"kind": "Status"}),
            *[(200, {"status": {"state": s}}) for s in states],
        ],
    }


def test_wait_for_follows_crd_object_and_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(k8s_ready, "backoff_delays", fast_delays)
    with FakeApi(_policy_routes("notReady", "notReady", "ready")) as api:
        assert w.wait_for(api.kubeconfig(), POLICY, timeout_seconds=30) == "ready"
    # Discovery is asked until the kind is served, then only the object.
    assert api.paths().count("/apis/nvidia.com/v1") == 2
    assert api.paths()[-1] == "/apis/nvidia.com/v1/clusterpolicies/cluster-policy"


def test_wait_for_timeout_reports_last_observed_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(k8s_ready, "backoff_delays", fast_delays)
    with FakeApi(_policy_routes("notReady")) as api, pytest.raises(k8s_ready.WaitTimeout) as exc:
        w.wait_for(api.kubeconfig(), POLICY, timeout_seconds=0.3)
    assert f"ClusterPolicy cluster-policy (nvidia.com/v1) on {api.url}: timed out" in str(exc.value)
    assert str(exc.value).endswith("last observed: {.status.state} is 'notReady'")


def test_wait_for_stops_at_once_on_wrong_scope(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(k8s_ready, "backoff_delays", fast_delays)
    routes = {"/apis/apps/v1": [(200, {"resources": [{"name": "deployments", "kind": "Deployment",
                                                      "namespaced": True}]})]}
    expected = r"gave up after .* 1 attempts.*namespace is required"
    with FakeApi(routes) as api, pytest.raises(k8s_ready.WaitTimeout, match=expected):
        w.wait_for(api.kubeconfig(), w.Target("apps/v1", "Deployment", "d", None, "{.a}", "x"), 600)


def test_wait_for_namespaced_condition(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(k8s_ready, "backoff_delays", fast_delays)
    routes = {
        "/apis/apps/v1": [(200, {"resources": [{"name": "deployments", "kind": "Deployment", "namespaced": True}]})],
        "/apis/apps/v1/namespaces/kai-scheduler/deployments/kai-scheduler": [
            (200, DEPLOYMENT), (200, {"status": {"conditions": [{"type": "Available", "status": "True"}]}}),
        ],
    }
    with FakeApi(routes) as api:
        assert w.wait_for(api.kubeconfig(), DEPLOY, timeout_seconds=30) == "True"


def test_provider_outputs_and_diff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(k8s_ready, "backoff_delays", fast_delays)
    with FakeApi(_policy_routes("ready")) as api:
        props = {"kubeconfig": api.kubeconfig(), "apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
                 "objectName": "cluster-policy", "namespace": None, "jsonpath": "{.status.state}",
                 "equals": "ready", "timeoutSeconds": 30, "trigger": None}
        result = w._WaitForProvider().create(props)
    assert result.outs["observed"] == "ready" and "kubeconfig" not in result.outs
    p = w._WaitForProvider()
    assert p.diff("id", result.outs, props).changes is False
    assert p.diff("id", result.outs, {**props, "timeoutSeconds": 99}).changes is False
    assert p.diff("id", result.outs, {**props, "trigger": "v26.7.1"}).changes is True
    assert p.diff("id", result.outs, {**props, "equals": "notReady"}).changes is True


# ---------------------------------------------------------------------------- the resource


def _declare(**overrides: Any) -> None:
    args: dict[str, Any] = {"api_version": "nvidia.com/v1", "kind": "ClusterPolicy", "object_name": "cluster-policy",
                            "namespace": None, "jsonpath": "{.status.state}", "equals": "ready",
                            "timeout_seconds": 1200}
    args.update(overrides)
    w.WaitFor("gpu-operator-ready", "kubeconfig-text", **args)


def test_wait_for_registers_with_secret_kubeconfig() -> None:
    run = run_program(_declare, {}, stack="test")
    (res,) = run.resources
    assert res.type == "pulumi-python:dynamic/ck8s-gpu:WaitFor"
    assert "kubeconfig" in res.secret_paths
    assert {k: res.inputs[k] for k in ("apiVersion", "kind", "objectName", "jsonpath", "equals")} == {
        "apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "objectName": "cluster-policy",
        "jsonpath": "{.status.state}", "equals": "ready"}


def test_wait_for_rejects_bad_arguments_before_registering() -> None:
    with pytest.raises(ValueError) as exc:
        run_program(lambda: _declare(jsonpath="{..state}", api_version="nvidia.com", timeout_seconds=0), {},
                    stack="test")
    msg = str(exc.value)
    assert "recursive descent" in msg and "timeout_seconds must be positive" in msg and "api_version" in msg

"""WaitFor: field paths, discovery verdicts, polling a scripted API server, eager validation."""

from __future__ import annotations

from typing import Any

import pytest

from components import k8s_wait as w
from components.kube import wait
from components.kube.errors import answered
from components.plan.mockengine import run_program
from tests.unit.platforms.fake_api import FakeApi

POLICY = w.Target("nvidia.com/v1", "ClusterPolicy", "cluster-policy", None, "{.status.state}", "ready")
DEPLOY = w.Target("apps/v1", "Deployment", "kai-scheduler", "kai-scheduler", "{.status.readyReplicas}", "2")

DEPLOYMENT: dict[str, Any] = {
    "metadata": {"name": "d", "labels": {"app.kubernetes.io/name": "kai", "tier": "ctl"}},
    "spec": {"replicas": 2, "paused": False, "selector": None},
    "status": {"conditions": [{"type": "Available", "status": "False"}], "readyReplicas": 1},
}


pytestmark = pytest.mark.usefixtures("quick_backoff")  # tests/unit/conftest.py: 0.01 s between attempts


# ---------------------------------------------------------------------------- field paths


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("{.status.readyReplicas}", "1"),
        ("{.spec.paused}", "false"),
        ("{.spec.selector}", "null"),
        ("{.metadata.labels.tier}", "ctl"),
        ("{.status.conditions}", '[{"status":"False","type":"Available"}]'),
        ("{.metadata}", '{"labels":{"app.kubernetes.io/name":"kai","tier":"ctl"},"name":"d"}'),
    ],
)
def test_field_path_prints_values_like_kubectl(expr: str, expected: str) -> None:
    assert w.observed(w.parse_field_path(expr), DEPLOYMENT) == expected


@pytest.mark.parametrize("expr", ["{.status.missing}", "{.spec.replicas.deeper}", "{.status.conditions.type}"])
def test_field_path_selecting_nothing_is_none(expr: str) -> None:
    assert w.observed(w.parse_field_path(expr), DEPLOYMENT) is None


def test_field_path_keys() -> None:
    assert w.parse_field_path("{.status.state}") == ("status", "state")
    assert w.parse_field_path("{.a_b.c-d.E9}") == ("a_b", "c-d", "E9")


@pytest.mark.parametrize(
    "expr",
    ["", "{}", "{.}", ".status.state", "status.state", "$.status.state", "{$.status.state}", "{ .status.state }",
     "{.status.state", "{..status}", "{.a.}", "{.a b}", "{.a[0]}", "{.a[*].b}", '{.a[?(@.type=="x")].status}',
     "{.metadata.labels['app.kubernetes.io/name']}", r"{.metadata.labels.app\.kubernetes\.io/name}", "{.a}{.b}"],
)
def test_field_path_refuses_anything_but_dotted_keys(expr: str) -> None:
    with pytest.raises(w.FieldPathError) as exc:
        w.parse_field_path(expr)
    assert str(exc.value).startswith(f"jsonpath {expr!r} is not supported: only a dotted field path like ")


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
    obs, found = w.discovery_observation(POLICY, answered(404, "not found"))
    assert found is None and "CRD not installed" in obs.detail and not obs.fatal
    obs, found = w.discovery_observation(POLICY, '{"resources": []}')
    assert found is None and "kind ClusterPolicy is not served by nvidia.com/v1" in obs.detail
    obs, found = w.discovery_observation(POLICY, listing)
    assert found == ("clusterpolicies", False)
    scoped = w.Target("nvidia.com/v1", "ClusterPolicy", "cluster-policy", "gpu-operator", "{.a}", "x")
    obs, found = w.discovery_observation(scoped, listing)
    assert found is None and obs.fatal and "cluster-scoped" in obs.detail
    namespaced = '{"resources":[{"name":"deployments","kind":"Deployment","namespaced":true}]}'
    unscoped = w.Target("apps/v1", "Deployment", "d", None, "{.a}", "x")
    obs, found = w.discovery_observation(unscoped, namespaced)
    assert obs.fatal and "namespace is required" in obs.detail


def test_object_verdicts() -> None:
    keys = w.parse_field_path(POLICY.jsonpath)
    assert w.object_observation(POLICY, keys, answered(404, "")).detail == "object not found (yet)"
    assert w.object_observation(POLICY, keys, "{}").detail == "{.status.state} is not set (yet)"
    obs = w.object_observation(POLICY, keys, '{"status":{"state":"notReady"}}')
    assert not obs.done and obs.value == "notReady" and obs.detail == "{.status.state} is 'notReady'"
    assert w.object_observation(POLICY, keys, '{"status":{"state":"ready"}}').done
    denied = w.object_observation(POLICY, keys, answered(403, "no"))
    assert denied.permanent and denied.detail.startswith("HTTP 403 Forbidden")
    assert w.object_observation(POLICY, keys, "<html>").detail == "answer is not JSON: '<html>'"


def test_timeout_message_names_object_endpoint_and_last_value() -> None:
    last = wait.Observation(False, "{.status.state} is 'notReady'", value="notReady")
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


def test_wait_for_follows_crd_object_and_state() -> None:
    with FakeApi(_policy_routes("notReady", "notReady", "ready")) as api:
        assert w.wait_for(api.kubeconfig(), POLICY, timeout_seconds=30) == "ready"
    # Discovery is asked until the kind is served, then only the object.
    assert api.paths().count("/apis/nvidia.com/v1") == 2
    assert api.paths()[-1] == "/apis/nvidia.com/v1/clusterpolicies/cluster-policy"


def test_wait_for_timeout_reports_last_observed_value() -> None:
    with FakeApi(_policy_routes("notReady")) as api, pytest.raises(wait.WaitTimeout) as exc:
        w.wait_for(api.kubeconfig(), POLICY, timeout_seconds=0.3)
    assert f"ClusterPolicy cluster-policy (nvidia.com/v1) on {api.url}: timed out" in str(exc.value)
    assert str(exc.value).endswith("last observed: {.status.state} is 'notReady'")


def test_wait_for_stops_at_once_on_wrong_scope() -> None:
    routes = {"/apis/apps/v1": [(200, {"resources": [{"name": "deployments", "kind": "Deployment",
                                                      "namespaced": True}]})]}
    expected = r"gave up after .* 1 attempts.*namespace is required"
    with FakeApi(routes) as api, pytest.raises(wait.WaitTimeout, match=expected):
        w.wait_for(api.kubeconfig(), w.Target("apps/v1", "Deployment", "d", None, "{.a}", "x"), 600)


def test_wait_for_a_namespaced_object() -> None:
    routes = {
        "/apis/apps/v1": [(200, {"resources": [{"name": "deployments", "kind": "Deployment", "namespaced": True}]})],
        "/apis/apps/v1/namespaces/kai-scheduler/deployments/kai-scheduler": [
            (200, DEPLOYMENT), (200, {**DEPLOYMENT, "status": {"readyReplicas": 2}}),
        ],
    }
    with FakeApi(routes) as api:
        assert w.wait_for(api.kubeconfig(), DEPLOY, timeout_seconds=30) == "2"
    assert api.paths()[-1] == "/apis/apps/v1/namespaces/kai-scheduler/deployments/kai-scheduler"


def test_provider_outputs_and_diff() -> None:
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
        run_program(lambda: _declare(jsonpath='{.status.conditions[?(@.type=="Ready")].status}',
                                     api_version="nvidia.com", timeout_seconds=0), {}, stack="test")
    msg = str(exc.value)
    assert "only a dotted field path" in msg and "timeout_seconds must be positive" in msg and "api_version" in msg

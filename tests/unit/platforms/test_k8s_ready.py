"""ApiReady: the verdicts, the provider against a scripted API server, the graph.

The poll loop: tests/unit/kube/test_wait.py; the provider as old states hold it: tests/unit/kube/test_provider_state.py.
"""

from __future__ import annotations

import pulumi
import pytest

from components import k8s_ready as r
from components.kube.errors import KubeUnreachable, answered
from components.plan.mockengine import run_program
from tests.unit.platforms.fake_api import TOKEN, FakeApi, node, node_list

pytestmark = pytest.mark.usefixtures("quick_backoff")  # tests/unit/conftest.py: 0.01 s between attempts


# ---------------------------------------------------------------------------- pure decisions


def test_readyz_verdicts() -> None:
    assert r.readyz_observation("ok").done
    failing = r.readyz_observation(answered(500, "[+]ping ok\n[-]etcd failed: reason withheld\n[+]log ok"))
    assert not failing.done and not failing.permanent
    assert failing.detail == "/readyz HTTP 500: failing checks [-]etcd failed: reason withheld"
    refused = r.readyz_observation(KubeUnreachable("MaxRetryError: Connection refused"))
    assert not refused.done and not refused.permanent
    assert refused.detail == "/readyz no response: MaxRetryError: Connection refused"
    tls = r.readyz_observation(KubeUnreachable("SSLError: CERTIFICATE_VERIFY_FAILED"))
    assert tls.permanent and "wrong CA" in tls.detail
    unauthorized = r.readyz_observation(answered(401, '{"message":"Unauthorized"}'))
    assert unauthorized.permanent and "credentials were rejected" in unauthorized.detail


def test_nodes_verdict_counts_ready_nodes_and_names_the_others() -> None:
    body = r.json.dumps(node_list(node("cp", True), node("gpu-1", False), node("gpu-2", True)))
    enough = r.nodes_observation(body, 2)
    assert enough.done and enough.value == "2"
    short = r.nodes_observation(body, 3)
    assert not short.done and short.detail == "2/3 nodes Ready (not Ready: gpu-1); need 3"
    assert r.nodes_observation(r.json.dumps(node_list()), 0).done
    assert not r.nodes_observation("<html>", 0).done
    denied = r.nodes_observation(answered(403, "forbidden"), 1)
    assert denied.permanent and denied.detail.startswith("list nodes: HTTP 403 Forbidden")


def test_kubeconfig_endpoint_follows_the_current_context() -> None:
    kc = """
clusters:
- {name: a, cluster: {server: "https://a:6443"}}
- {name: b, cluster: {server: "https://b:6443"}}
contexts:
- {name: ca, context: {cluster: a, user: u}}
- {name: cb, context: {cluster: b, user: u}}
current-context: cb
"""
    assert r.kubeconfig_endpoint(kc) == "https://b:6443"
    assert r.kubeconfig_endpoint("not: [valid") == "<unknown endpoint>"
    assert r.kubeconfig_endpoint("") == "<unknown endpoint>"


# ---------------------------------------------------------------------------- against an API


def test_check_api_ready_waits_for_readyz_then_nodes() -> None:
    routes = {
        "/readyz": [(500, "[-]etcd failed"), (500, "[-]etcd failed"), (200, "ok")],
        "/api/v1/nodes": [(200, node_list(node("cp", False))), (200, node_list(node("cp", True)))],
    }
    with FakeApi(routes) as api:
        outs = r.check_api_ready(api.kubeconfig(), timeout_seconds=30, min_ready_nodes=1)
    assert outs == {"endpoint": api.url, "readyNodes": 1}
    assert api.paths() == ["/readyz"] * 3 + ["/api/v1/nodes", "/readyz", "/api/v1/nodes"]
    assert all(auth == f"Bearer {TOKEN}" for _, auth in api.requests)


def test_check_api_ready_timeout_names_endpoint_and_last_error() -> None:
    routes = {"/readyz": [(200, "ok")], "/api/v1/nodes": [(200, node_list(node("cp", False)))]}
    with FakeApi(routes) as api, pytest.raises(r.WaitTimeout) as exc:
        r.check_api_ready(api.kubeconfig(), timeout_seconds=0.3, min_ready_nodes=1)
    msg = str(exc.value)
    assert msg.startswith(f"Kubernetes API at {api.url} not ready: timed out after 0s")
    assert msg.endswith("last error: 0/1 nodes Ready (not Ready: cp); need 1")


def test_check_api_ready_unreachable_endpoint() -> None:
    with FakeApi({}) as api:
        kubeconfig = api.kubeconfig()
    # The server is closed now: nothing listens on that port.
    with pytest.raises(r.WaitTimeout, match=r"last error: /readyz no response: .*(refused|Connection)"):
        r.check_api_ready(kubeconfig, timeout_seconds=0.3, min_ready_nodes=1)


def test_check_api_ready_gives_up_early_on_rejected_credentials() -> None:
    expected = r"gave up after .* 3 attempts; last error: /readyz HTTP 401"
    denied = {"/readyz": [(401, '{"message":"Unauthorized"}')]}
    with FakeApi(denied) as api, pytest.raises(r.WaitTimeout, match=expected):
        r.check_api_ready(api.kubeconfig(), timeout_seconds=600, min_ready_nodes=1)


def test_check_api_ready_rejects_a_malformed_kubeconfig() -> None:
    with pytest.raises(r.WaitTimeout, match="unusable kubeconfig"):
        r.check_api_ready("apiVersion: v1\nkind: Config\n", timeout_seconds=5, min_ready_nodes=1)


def test_provider_outputs_hold_no_kubeconfig_and_diff_on_its_hash() -> None:
    with FakeApi({"/readyz": [(200, "ok")], "/api/v1/nodes": [(200, node_list(node("cp", True)))]}) as api:
        props = {"kubeconfig": api.kubeconfig(), "timeoutSeconds": 30, "minReadyNodes": 1, "trigger": None}
        result = r._ApiReadyProvider().create(props)
    assert result.id.startswith("apiready-")
    assert "kubeconfig" not in result.outs
    assert TOKEN not in str(result.outs)
    assert result.outs["kubeconfigSha256"] == r.sha256(props["kubeconfig"])
    p = r._ApiReadyProvider()
    assert p.diff("id", result.outs, props).changes is False
    assert p.diff("id", result.outs, {**props, "timeoutSeconds": 5}).changes is False
    assert p.diff("id", result.outs, {**props, "kubeconfig": props["kubeconfig"] + "\n"}).changes is True
    assert p.diff("id", result.outs, {**props, "trigger": "again"}).changes is True


# ---------------------------------------------------------------------------- the resource


def test_api_ready_registers_with_a_secret_kubeconfig_and_its_dependencies() -> None:
    def program() -> None:
        first = pulumi.CustomResource("test:index:Cluster", "cluster", {})
        r.ApiReady("ready", "apiVersion: v1\nkind: Config\n",
                   opts=pulumi.ResourceOptions(depends_on=[first]), timeout_seconds=120)

    run = run_program(program, {}, stack="test")
    ready = next(x for x in run.resources if x.name == "ready")
    cluster = next(x for x in run.resources if x.name == "cluster")
    assert ready.type == "pulumi-python:dynamic/ck8s-gpu:ApiReady"
    assert "kubeconfig" in ready.secret_paths
    assert ready.inputs["kubeconfig"] == "[secret]"
    assert ready.inputs["timeoutSeconds"] == 120 and ready.inputs["minReadyNodes"] == 1
    assert cluster.urn in ready.dependencies


def test_api_ready_rejects_nonsense_before_registering() -> None:
    with pytest.raises(ValueError, match="timeout_seconds must be positive"):
        r.ApiReady("x", "kc", timeout_seconds=0)

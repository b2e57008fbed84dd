"""ApiReady: the poll loop, the verdicts, the provider against a scripted API server, the graph."""

from __future__ import annotations

import base64
import itertools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pulumi
import pytest

from components import k8s_ready as r
from components.plan.mockengine import run_program
from tests.unit.platforms.fake_api import TOKEN, FakeApi, node, node_list

REPO = Path(__file__).resolve().parents[3]


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds


def scripted(*observations: r.Observation) -> tuple[list[int], object]:
    calls = [0]
    seq = list(observations)

    def probe() -> r.Observation:
        calls[0] += 1
        return seq.pop(0) if len(seq) > 1 else seq[0]

    return calls, probe


def describe(elapsed: float, attempts: int, last: r.Observation) -> str:
    return f"after {elapsed:.0f}s/{attempts}: {last.detail}"


def fast_delays(*_: object, **__: object) -> Iterator[float]:
    return itertools.repeat(0.01)


# ---------------------------------------------------------------------------- pure decisions


def test_backoff_grows_then_caps() -> None:
    assert list(itertools.islice(r.backoff_delays(), 7)) == [1, 2, 4, 8, 15, 15, 15]
    assert list(itertools.islice(r.backoff_delays(first=0.5, factor=3, cap=5), 4)) == [0.5, 1.5, 4.5, 5]


def test_poll_returns_first_done_observation() -> None:
    fc = FakeClock()
    calls, probe = scripted(r.Observation(False, "a"), r.Observation(False, "b"), r.Observation(True, "ok"))
    obs, attempts = r.poll(probe, timeout_seconds=60, describe_timeout=describe, clock=fc.clock, sleep=fc.sleep)
    assert (obs.detail, attempts, calls[0]) == ("ok", 3, 3)
    assert fc.sleeps == [1, 2]


def test_poll_times_out_at_the_deadline_with_the_last_observation() -> None:
    fc = FakeClock()
    calls, probe = scripted(r.Observation(False, "first"), r.Observation(False, "connection refused"))
    with pytest.raises(r.WaitTimeout) as exc:
        r.poll(probe, timeout_seconds=20, describe_timeout=describe, clock=fc.clock, sleep=fc.sleep)
    # 1+2+4+8 = 15s, then the last sleep is cut to the 5s left: never past the deadline.
    assert fc.sleeps == [1, 2, 4, 8, 5]
    assert fc.now == 120.0
    assert str(exc.value) == "after 20s/6: connection refused"
    assert calls[0] == 6  # one last attempt exactly at the deadline


def test_poll_gives_up_after_repeated_permanent_errors_but_not_interleaved_ones() -> None:
    fc = FakeClock()
    denied = r.Observation(False, "401", permanent=True)
    calls, probe = scripted(denied, denied, denied, r.Observation(True, "never reached"))
    with pytest.raises(r.WaitTimeout, match="401"):
        r.poll(probe, timeout_seconds=900, describe_timeout=describe, clock=fc.clock, sleep=fc.sleep)
    assert calls[0] == r.PERMANENT_AFTER

    fc = FakeClock()
    flaky = r.Observation(False, "refused")
    calls, probe = scripted(denied, denied, flaky, denied, denied, r.Observation(True, "ok"))
    obs, _ = r.poll(probe, timeout_seconds=900, describe_timeout=describe, clock=fc.clock, sleep=fc.sleep)
    assert obs.detail == "ok" and calls[0] == 6


def test_poll_stops_at_once_on_a_fatal_observation() -> None:
    fc = FakeClock()
    calls, probe = scripted(r.Observation(False, "wrong scope", fatal=True))
    with pytest.raises(r.WaitTimeout, match="wrong scope"):
        r.poll(probe, timeout_seconds=900, describe_timeout=describe, clock=fc.clock, sleep=fc.sleep)
    assert calls[0] == 1 and fc.sleeps == []


def test_readyz_verdicts() -> None:
    assert r.readyz_observation(r.HttpResult(200, "ok")).done
    failing = r.readyz_observation(r.HttpResult(500, "[+]ping ok\n[-]etcd failed: reason withheld\n[+]log ok"))
    assert not failing.done and "[-]etcd failed" in failing.detail and not failing.permanent
    refused = r.readyz_observation(r.HttpResult(None, error="MaxRetryError: Connection refused"))
    assert not refused.done and not refused.permanent and "Connection refused" in refused.detail
    tls = r.readyz_observation(r.HttpResult(None, error="SSLError: CERTIFICATE_VERIFY_FAILED"))
    assert tls.permanent and "wrong CA" in tls.detail
    unauthorized = r.readyz_observation(r.HttpResult(401, '{"message":"Unauthorized"}'))
    assert unauthorized.permanent and "credentials were rejected" in unauthorized.detail


def test_nodes_verdict_counts_ready_nodes_and_names_the_others() -> None:
    body = r.json.dumps(node_list(node("cp", True), node("gpu-1", False), node("gpu-2", True)))
    assert r.nodes_observation(r.HttpResult(200, body), 2).done
    short = r.nodes_observation(r.HttpResult(200, body), 3)
    assert not short.done and short.detail == "2/3 nodes Ready (not Ready: gpu-1); need 3"
    assert r.nodes_observation(r.HttpResult(200, r.json.dumps(node_list())), 0).done
    assert not r.nodes_observation(r.HttpResult(200, "<html>"), 0).done
    assert r.nodes_observation(r.HttpResult(403, "forbidden"), 1).permanent


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


def test_check_api_ready_waits_for_readyz_then_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(r, "backoff_delays", fast_delays)
    routes = {
        "/readyz": [(500, "[-]etcd failed"), (500, "[-]etcd failed"), (200, "ok")],
        "/api/v1/nodes": [(200, node_list(node("cp", False))), (200, node_list(node("cp", True)))],
    }
    with FakeApi(routes) as api:
        outs = r.check_api_ready(api.kubeconfig(), timeout_seconds=30, min_ready_nodes=1)
    assert outs == {"endpoint": api.url, "readyNodes": 1}
    assert api.paths() == ["/readyz"] * 3 + ["/api/v1/nodes", "/readyz", "/api/v1/nodes"]
    assert all(auth == f"Bearer {TOKEN}" for _, auth in api.requests)


def test_check_api_ready_timeout_names_endpoint_and_last_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(r, "backoff_delays", fast_delays)
    routes = {"/readyz": [(200, "ok")], "/api/v1/nodes": [(200, node_list(node("cp", False)))]}
    with FakeApi(routes) as api, pytest.raises(r.WaitTimeout) as exc:
        r.check_api_ready(api.kubeconfig(), timeout_seconds=0.3, min_ready_nodes=1)
    msg = str(exc.value)
    assert msg.startswith(f"Kubernetes API at {api.url} not ready: timed out after 0s")
    assert msg.endswith("last error: 0/1 nodes Ready (not Ready: cp); need 1")


def test_check_api_ready_unreachable_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(r, "backoff_delays", fast_delays)
    with FakeApi({}) as api:
        kubeconfig = api.kubeconfig()
    # The server is closed now: nothing listens on that port.
    with pytest.raises(r.WaitTimeout, match=r"last error: /readyz no response: .*(refused|Connection)"):
        r.check_api_ready(kubeconfig, timeout_seconds=0.3, min_ready_nodes=1)


def test_check_api_ready_gives_up_early_on_rejected_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(r, "backoff_delays", fast_delays)
    expected = r"gave up after .* 3 attempts; last error: /readyz HTTP 401"
    denied = {"/readyz": [(401, '{"message":"Unauthorized"}')]}
    with FakeApi(denied) as api, pytest.raises(r.WaitTimeout, match=expected):
        r.check_api_ready(api.kubeconfig(), timeout_seconds=600, min_ready_nodes=1)


def test_check_api_ready_rejects_a_malformed_kubeconfig() -> None:
    with pytest.raises(r.WaitTimeout, match="unusable kubeconfig"):
        r.check_api_ready("apiVersion: v1\nkind: Config\n", timeout_seconds=5, min_ready_nodes=1)


def test_provider_outputs_hold_no_kubeconfig_and_diff_on_its_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(r, "backoff_delays", fast_delays)
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


def test_provider_pickles_by_reference_and_loads_in_a_fresh_process() -> None:
    """The engine's dynamic-provider process unpickles it from the project directory."""
    from pulumi.dynamic.dynamic import serialize_provider

    blob = serialize_provider(r._ApiReadyProvider())
    assert len(base64.b64decode(blob)) < 500, "pickled by value: the state would carry the module's code"
    code = ("import base64, dill, sys; p = dill.loads(base64.b64decode(sys.stdin.read())); "
            "print(type(p).__module__, type(p).__name__)")
    out = subprocess.run([sys.executable, "-c", code], input=blob, cwd=REPO, capture_output=True, text=True,
                         check=True, env={"PATH": "/usr/bin:/bin"})
    assert out.stdout.split() == ["components.k8s_ready", "_ApiReadyProvider"]


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

"""KubeGateway through the real kubernetes client against a loopback HTTP stand-in for the API
server (no cluster): paths, verbs, content types, bearer auth, error mapping, watch streaming."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from components.kube.client import api_client
from components.smoke.gateway import KubeError, KubeGateway, KubeUnreachable, path


class Api(BaseHTTPRequestHandler):
    routes: dict[tuple[str, str], tuple[int, Any]] = {}
    seen: list[dict[str, Any]] = []

    def log_message(self, *_args: Any) -> None:  # keep pytest output clean
        pass

    def _answer(self) -> None:
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        self.seen.append({"method": self.command, "path": url.path, "query": parse_qs(url.query),
                          "auth": self.headers.get("Authorization"), "type": self.headers.get("Content-Type"),
                          "body": json.loads(body) if body else None})
        status, payload = self.routes.get((self.command, url.path), (404, {
            "kind": "Status", "code": 404, "message": f"{url.path} not found"}))
        text = payload if isinstance(payload, str) else json.dumps(payload)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text.encode())

    do_GET = do_POST = do_PATCH = do_DELETE = _answer


@pytest.fixture
def gw() -> Iterator[KubeGateway]:
    Api.routes, Api.seen = {}, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kubeconfig = f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{server.server_port}"}}}}]
users: [{{name: u, user: {{token: s3cret}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
"""
    yield KubeGateway(api_client(kubeconfig), request_timeout=5)
    server.shutdown()


def test_paths_for_core_grouped_cluster_and_namespaced_kinds() -> None:
    assert path("v1", "Pod", "ns") == "/api/v1/namespaces/ns/pods"
    assert path("v1", "Node", "ignored", "n1") == "/api/v1/nodes/n1"
    assert path("resource.k8s.io/v1", "ResourceSlice") == "/apis/resource.k8s.io/v1/resourceslices"
    assert path("resource.k8s.io/v1beta2", "ResourceClaim", "ns", "c") == \
        "/apis/resource.k8s.io/v1beta2/namespaces/ns/resourceclaims/c"
    assert path("scheduling.run.ai/v2alpha2", "PodGroup", "ns") == \
        "/apis/scheduling.run.ai/v2alpha2/namespaces/ns/podgroups"
    assert path("v1", "Service") == "/api/v1/services"  # all namespaces


def test_list_get_and_selectors(gw: KubeGateway) -> None:
    Api.routes[("GET", "/api/v1/namespaces/ns/pods")] = (200, {"metadata": {"resourceVersion": "42"},
                                                               "items": [{"metadata": {"name": "p"}}]})
    items, rv = gw.list("v1", "Pod", "ns", label_selector="a=b,c=d", field_selector="metadata.name=p")
    assert items == [{"metadata": {"name": "p"}}] and rv == "42"
    q = Api.seen[-1]["query"]
    assert q == {"labelSelector": ["a=b,c=d"], "fieldSelector": ["metadata.name=p"]}
    assert Api.seen[-1]["auth"] == "Bearer s3cret"
    assert gw.get("v1", "Pod", "missing", "ns") is None  # 404 -> None


def test_create_patch_delete(gw: KubeGateway) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"}}
    Api.routes[("POST", "/apis/batch/v1/namespaces/ns/jobs")] = (201, job)
    Api.routes[("PATCH", "/apis/batch/v1/namespaces/ns/jobs/j")] = (200, job)
    Api.routes[("DELETE", "/apis/batch/v1/namespaces/ns/jobs/j")] = (200, {"kind": "Status"})
    assert gw.create(job) == job and Api.seen[-1]["body"] == job
    gw.patch("batch/v1", "Job", "j", "ns", {"spec": {"suspend": False}})
    assert Api.seen[-1]["type"] == "application/merge-patch+json"
    assert Api.seen[-1]["body"] == {"spec": {"suspend": False}}
    assert gw.delete("batch/v1", "Job", "j", "ns", propagation="Foreground") is True
    assert Api.seen[-1]["body"]["propagationPolicy"] == "Foreground"
    assert gw.delete("batch/v1", "Job", "gone", "ns") is False


def test_errors_carry_the_api_servers_message(gw: KubeGateway) -> None:
    Api.routes[("POST", "/api/v1/namespaces/ns/configmaps")] = (403, {
        "kind": "Status", "code": 403, "message": 'configmaps is forbidden: User "u" cannot create'})
    with pytest.raises(KubeError) as err:
        gw.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}})
    assert err.value.status == 403 and 'User "u" cannot create' in str(err.value)


def test_watch_streams_events_and_maps_expired_to_an_error(gw: KubeGateway) -> None:
    claim = {"metadata": {"name": "c", "resourceVersion": "7"}}
    lines = [{"type": "ADDED", "object": claim}, {"type": "DELETED", "object": claim},
             {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version"}}]
    Api.routes[("GET", "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims")] = (
        200, "\n".join(json.dumps(x) for x in lines) + "\n")
    events = []
    with pytest.raises(KubeError) as err:
        for kind, obj in gw.watch("resource.k8s.io/v1", "ResourceClaim", "ns", resource_version="5",
                                  timeout_seconds=3):
            events.append((kind, obj["metadata"]["name"]))
    assert events == [("ADDED", "c"), ("DELETED", "c")] and err.value.status == 410
    q = Api.seen[-1]["query"]
    assert q["watch"] == ["true"] and q["resourceVersion"] == ["5"] and q["timeoutSeconds"] == ["3"]


def test_logs_and_text(gw: KubeGateway) -> None:
    Api.routes[("GET", "/api/v1/namespaces/ns/pods/p/log")] = (200, "CK8S-SMOKE begin pod=p\n")
    assert gw.logs("ns", "p", "probe") == "CK8S-SMOKE begin pod=p\n"
    assert Api.seen[-1]["query"] == {"container": ["probe"]}
    Api.routes[("GET", "/version")] = (200, {"gitVersion": "v1.34.4"})
    assert gw.server_version() == "v1.34.4"


def test_unreachable_server() -> None:
    kubeconfig = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""
    gw = KubeGateway(api_client(kubeconfig), request_timeout=2)
    gw.client.configuration.retries = 0
    with pytest.raises(KubeUnreachable):
        gw.server_version()

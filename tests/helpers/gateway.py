"""Traefik's real proxy and Gateway API controller on the local control plane, and model-server
stand-ins behind it (tests/integration/test_inference_gateway_local.py, ADR 0052).

The binary is github.com/traefik/traefik/v3 v3.7.13's cmd/traefik, built by tools/build.sh
(tools/mod/traefik); the Gateway API standard-channel CRDs at v1.6.1, the version Traefik's go.mod
pins, are copied from sigs.k8s.io/gateway-api's config/crd/standard/ beside it. What the process is
given, and why (files at Traefik v3.7.13):

- the flags the pinned chart renders from components/addons/inference_gateway.py's values
  (traefik-helm-chart v41.3.0 templates/_podtemplate.tpl): the Gateway provider on, the Ingress and
  CRD providers off, entry points `web` (:8000), `traefik` (:8080, /ping) and `metrics` (:9100,
  Prometheus). The addresses differ (free loopback ports), and the Gateway's status address is a
  fixed IP where the chart copies its Service's load-balancer status (no Service network here);
- `KUBECONFIG`: the provider then builds a cluster-external client from that file
  (pkg/provider/kubernetes/gateway/kubernetes.go newK8sClient);
- a listener binds to an entry point by port: the Gateway's listener port must be the port of
  `web`'s address (kubernetes.go entryPointName), so the Gateway here names the free port;
- backends are the addresses of the Service's EndpointSlices, matched to the Service port by name
  (kubernetes.go getBackendAddresses): the stand-ins listen on this machine's own address (an
  EndpointSlice may not hold a loopback address), each Service's slice is written by the test as
  the EndpointSlice controller writes a pod's.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from components.addons import inference_gateway
from components.addons.crds_first import _Provider
from components.settings import parse_settings
from tests.helpers import chart_repo
from tests.helpers.controller_env import Process
from tests.helpers.tools import load_tool
from tests.integration.conftest import inline_kubeconfig

BINARY = "traefik"
# sigs.k8s.io/gateway-api v1.6.1 config/crd/standard/ (tools/build.sh module_crds)
CRDS = ("gateway.networking.k8s.io_gatewayclasses.yaml", "gateway.networking.k8s.io_gateways.yaml",
        "gateway.networking.k8s.io_httproutes.yaml", "gateway.networking.k8s.io_grpcroutes.yaml",
        "gateway.networking.k8s.io_referencegrants.yaml", "gateway.networking.k8s.io_backendtlspolicies.yaml",
        "gateway.networking.k8s.io_tlsroutes.yaml", "gateway.networking.k8s.io_tcproutes.yaml",
        "gateway.networking.k8s.io_udproutes.yaml", "gateway.networking.k8s.io_listenersets.yaml")
# The bundle's ValidatingAdmissionPolicy and binding: no CRD older than v1.5.0 over these.
SAFE_UPGRADES = "gateway.networking.k8s.io_vap_safeupgrades.yaml"


def crd_dir(bin_dir: Path) -> Path:
    return bin_dir.parent / "crds" / "traefik"


def missing(bin_dir: Path) -> list[str]:
    out = [str(bin_dir / BINARY)] if not (bin_dir / BINARY).is_file() else []
    return out + [str(crd_dir(bin_dir) / f) for f in (*CRDS, SAFE_UPGRADES) if not (crd_dir(bin_dir) / f).is_file()]


def host_address() -> str:
    """This machine's own IPv4 address (the one its default route leaves by): no packet is sent."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # TEST-NET-1: connect() on UDP only picks the route
        address: str = s.getsockname()[0]
    return address


@dataclass
class Traefik:
    workdir: Path
    bin_dir: Path
    kubeconfig: Path
    # Where the `web` entry point listens: loopback for requests from this process; this machine's
    # address (host_address) where the API server's service proxy must reach it (it refuses loopback
    # endpoints: k8s.io/apimachinery pkg/util/proxy IsProxyableIP).
    listen: str = "127.0.0.1"
    web_port: int = field(default=0, init=False)
    admin_port: int = field(default=0, init=False)
    metrics_port: int = field(default=0, init=False)
    process: Process = field(init=False)

    def start(self) -> Traefik:
        lc = load_tool("localcluster")
        self.web_port, self.admin_port, self.metrics_port = lc.free_port(), lc.free_port(), lc.free_port()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.process = Process(BINARY, self.workdir)
        self.process.run([
            str(self.bin_dir / BINARY),
            "--global.checkNewVersion=false", "--global.sendAnonymousUsage=false",
            f"--entryPoints.web.address={self.listen}:{self.web_port}/tcp",
            f"--entryPoints.traefik.address=127.0.0.1:{self.admin_port}/tcp",
            f"--entryPoints.metrics.address=127.0.0.1:{self.metrics_port}/tcp",
            "--ping=true",
            "--metrics.prometheus=true", "--metrics.prometheus.entrypoint=metrics",
            "--metrics.prometheus.addRoutersLabels=true",
            "--providers.kubernetesgateway",
            f"--providers.kubernetesgateway.statusaddress.ip={self.listen}",
            "--log.level=INFO",
        ], {"KUBECONFIG": str(self.kubeconfig)})
        return self

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.process.check_alive()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.admin_port}/ping", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"traefik did not answer /ping in {timeout} s:\n{self.process.tail()}")

    def request(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, str]:
        """POST through the gateway's `web` listener: (status, body)."""
        req = urllib.request.Request(f"http://{self.listen}:{self.web_port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def metrics(self) -> str:
        """Its Prometheus exposition, from the `metrics` entry point."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
            text: str = r.read().decode()
        return text

    def stop(self) -> None:
        self.process.stop()


class ModelServer:
    """An OpenAI-compatible endpoint that answers with who served it (`served_by`, the GPU it was
    given), the shape of /v1/chat/completions' response (choices[].message), on this machine's address."""

    def __init__(self, served_by: str, gpu: str, model: str) -> None:
        self.served_by, self.gpu, self.model, self.requests = served_by, gpu, model, 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                asked = json.loads(self.rfile.read(length) or b"{}")
                owner.requests += 1
                body = json.dumps({
                    "object": "chat.completion", "model": asked.get("model", owner.model),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": f"served by {owner.served_by}"}}],
                    "ck8s_gpu": {"served_by": owner.served_by, "gpu": owner.gpu},
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.address = host_address()
        self.server = ThreadingHTTPServer((self.address, 0), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> ModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def install_crds(cluster: Any, bin_dir: Path, work: Path) -> list[str]:
    """The add-on's CrdsFirst step (`manifest`), run by its provider against this API server: the
    standard channel's files joined as the release's standard-install.yaml joins them, served over
    HTTP where the add-on fetches the release asset."""
    release = work / "release"
    release.mkdir()
    (release / "standard-install.yaml").write_text("\n---\n".join(
        (crd_dir(bin_dir) / f).read_text() for f in (*CRDS, SAFE_UPGRADES)))
    m = inference_gateway.crd_manifest(parse_settings({"platform": "local"}))
    with chart_repo.serve(release) as url:
        props = {"kubeconfig": inline_kubeconfig(cluster.kubeconfig), "manifest": f"{url}/standard-install.yaml",
                 "version": m.version, "expectAnnotation": list(m.annotation), "repository": None, "chart": None}
        created: list[str] = _Provider().create(props).outs["crds"]
    return created

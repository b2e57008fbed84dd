"""KEDA's real operator and metrics adapter, and a real Prometheus, on the local control plane
(tests/integration/test_keda_local.py).

The binaries are github.com/kedacore/keda/v2 v2.21.1's cmd/operator and cmd/adapter and
github.com/prometheus/prometheus v0.316.0's cmd/prometheus (Prometheus 3.16.0), built by
tools/build.sh (tools/mod/keda, tools/mod/prometheus); KEDA's CRDs are copied beside them. What
each process is given, and why (files at KEDA v2.21.1 unless named):

- operator and adapter: `WATCH_NAMESPACE=""` (all namespaces; pkg/util/watch.go exits when unset),
  `KEDA_CLUSTER_OBJECT_NAMESPACE` and `POD_NAMESPACE` = keda (pkg/util/env_resolver.go: otherwise the
  operator reads the in-cluster namespace file and exits), `--kubeconfig` (controller-runtime's flag,
  merged into pflag by both mains).
- the gRPC link between them (the operator serves each ScaledObject's metrics on
  --metrics-service-bind-address, the adapter asks it for every external-metrics request) is
  always mutual TLS from `ca.crt`, `tls.crt`, `tls.key` in a directory (pkg/metricsservice/utils/
  tls.go): the operator's `--cert-dir`, the adapter's generic-apiserver `--cert-dir`. The chart
  lets the operator mint them (`--enable-cert-rotation`) into Secret kedaorg-certs and mounts it;
  here the test writes one pair, as that Secret holds it: one certificate for the operator's and
  the adapter's service names with both server and client use (pkg/certificates/
  certificate_manager.go), plus 127.0.0.1 so the adapter can dial the loopback address.
- adapter: an aggregated API server for external.metrics.k8s.io. Its delegated authentication
  and authorization use --authentication-kubeconfig/--authorization-kubeconfig (k8s.io/apiserver
  v0.36.4 pkg/server/options/authentication.go: in-cluster otherwise) and --lister-kubeconfig
  (cmd/adapter/main.go printWelcomeMsg); it serves the certificate the APIService's caBundle
  names, for `keda-operator-metrics-apiserver.keda.svc` (the ServerName the aggregator dials).
- the APIService reaches it through an ExternalName Service `localhost`: the aggregator resolves
  one to `<externalName>:<APIService port>` (k8s.io/apiserver v0.34.4 pkg/util/proxy/proxy.go
  ResolveCluster); the chart's ClusterIP Service needs a Service network this control plane does
  not have.
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.helpers import certs
from tests.helpers.controller_env import Process
from tests.helpers.tools import load_tool

OPERATOR, ADAPTER, PROMETHEUS = "keda", "keda-adapter", "prometheus"
NAMESPACE = "keda"
# The chart's names (templates/manager/service.yaml, metrics-server/service.yaml at 2.20.2):
# the operator's `--metrics-server-service-name` is `<operator.name>-metrics-apiserver`.
OPERATOR_SERVICE = "keda-operator"
ADAPTER_SERVICE = "keda-operator-metrics-apiserver"
# Every file of config/crd/bases, as the chart installs them: the operator's manager waits for a
# cache of each kind it watches, CloudEventSources included, and exits when one never syncs.
CRDS = ("keda.sh_scaledobjects.yaml", "keda.sh_scaledjobs.yaml", "keda.sh_triggerauthentications.yaml",
        "keda.sh_clustertriggerauthentications.yaml", "eventing.keda.sh_cloudeventsources.yaml",
        "eventing.keda.sh_clustercloudeventsources.yaml")


def crd_dir(bin_dir: Path) -> Path:
    return bin_dir.parent / "crds" / "keda"


def missing(bin_dir: Path) -> list[str]:
    out = [str(bin_dir / b) for b in (OPERATOR, ADAPTER, PROMETHEUS) if not (bin_dir / b).is_file()]
    out += [str(crd_dir(bin_dir) / f) for f in CRDS if not (crd_dir(bin_dir) / f).is_file()]
    return out


def certificates(cert_dir: Path) -> bytes:
    """A CA and one certificate signed by it for the operator's and the adapter's service names and
    127.0.0.1, server and client use, written as ca.crt / tls.crt / tls.key (the Secret kedaorg-certs'
    keys); returns the CA's PEM."""
    dns = ["localhost"]
    for svc in (OPERATOR_SERVICE, ADAPTER_SERVICE):  # certificate_manager.go: <svc>, <svc>.<ns>, .svc, .svc.<domain>
        dns += [svc, f"{svc}.{NAMESPACE}", f"{svc}.{NAMESPACE}.svc", f"{svc}.{NAMESPACE}.svc.cluster.local"]
    return certs.issue(cert_dir, OPERATOR_SERVICE, dns=dns, ips=["127.0.0.1"], client_auth=True, write_ca=True)


def aggregation_objects(ca_pem: bytes, port: int) -> list[dict[str, Any]]:
    """The chart's APIService v1beta1.external.metrics.k8s.io (templates/metrics-server/apiservice.yaml:
    group external.metrics.k8s.io, version v1beta1, groupPriorityMinimum 100, versionPriority 100),
    its Service an ExternalName to this machine (see the module docstring)."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": ADAPTER_SERVICE, "namespace": NAMESPACE},
         "spec": {"type": "ExternalName", "externalName": "localhost"}},
        {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
         "metadata": {"name": "v1beta1.external.metrics.k8s.io"},
         "spec": {"group": "external.metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                  "versionPriority": 100, "caBundle": base64.b64encode(ca_pem).decode(),
                  "service": {"name": ADAPTER_SERVICE, "namespace": NAMESPACE, "port": port}}},
    ]


@dataclass
class Keda:
    """KEDA's operator and adapter against `kubeconfig`, flags as the chart renders them where they
    apply outside a pod (templates/manager/deployment.yaml, metrics-server/deployment.yaml)."""

    workdir: Path
    kubeconfig: Path
    bin_dir: Path
    operator: Process = field(init=False)
    adapter: Process = field(init=False)
    ca_pem: bytes = field(default=b"", init=False)
    adapter_port: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.operator, self.adapter = Process("keda-operator", self.workdir), Process("keda-adapter", self.workdir)

    def start(self) -> Keda:
        lc = load_tool("localcluster")
        cert_dir = self.workdir / "certs"
        self.ca_pem = certificates(cert_dir)
        grpc = lc.free_port()
        self.adapter_port = lc.free_port()
        env = {"WATCH_NAMESPACE": "", "KEDA_CLUSTER_OBJECT_NAMESPACE": NAMESPACE, "POD_NAMESPACE": NAMESPACE,
               "KUBECONFIG": str(self.kubeconfig)}
        kube = f"--kubeconfig={self.kubeconfig}"
        self.operator.run([
            str(self.bin_dir / OPERATOR), kube, "--leader-elect=false", f"--cert-dir={cert_dir}",
            "--enable-cert-rotation=false", "--enable-webhook-patching=false", "--enable-apiservice-patching=false",
            f"--metrics-bind-address=127.0.0.1:{lc.free_port()}",
            f"--health-probe-bind-address=127.0.0.1:{lc.free_port()}",
            f"--metrics-service-bind-address=127.0.0.1:{grpc}",
            f"--operator-service-name={OPERATOR_SERVICE}", f"--metrics-server-service-name={ADAPTER_SERVICE}",
            "--zap-log-level=info", "--zap-encoder=console",
        ], env)
        self.adapter.run([
            str(self.bin_dir / ADAPTER), kube, f"--lister-kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={self.adapter_port}",
            f"--tls-cert-file={cert_dir / 'tls.crt'}", f"--tls-private-key-file={cert_dir / 'tls.key'}",
            f"--cert-dir={cert_dir}", f"--metrics-service-address=127.0.0.1:{grpc}",
            f"--port={lc.free_port()}", "--v=2",
        ], env)
        return self

    def check_alive(self) -> None:
        self.operator.check_alive()
        self.adapter.check_alive()

    def tail(self) -> str:
        return (f"--- keda-operator log ---\n{self.operator.tail()}\n"
                f"--- keda-adapter log ---\n{self.adapter.tail()}")

    def stop(self) -> None:
        self.adapter.stop()
        self.operator.stop()


# --- the model server's metrics and the Prometheus that scrapes them ----------------------------

# vLLM's gauge of requests waiting in its scheduler queue (vllm/v1/metrics/loggers.py
# PrometheusStatLogger: `vllm:num_requests_waiting`, labels model_name and engine): what a queue-
# depth autoscaler of an inference server reads (docs/inference.md).
QUEUE_METRIC = "vllm:num_requests_waiting"


class ModelServerMetrics:
    """A model server's /metrics in the Prometheus text format: its queue depth, which the test drives."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.waiting = 0.0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path != "/metrics":
                    self.send_error(404)
                    return
                body = (f"# HELP {QUEUE_METRIC} Number of requests waiting to be processed.\n"
                        f"# TYPE {QUEUE_METRIC} gauge\n"
                        f'{QUEUE_METRIC}{{engine="0",model_name="{owner.model}"}} {owner.waiting}\n').encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> ModelServerMetrics:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Prometheus:
    """A Prometheus scraping `targets` every second, each series labelled `labels` (no disk beyond
    its own TSDB dir)."""

    workdir: Path
    bin_dir: Path
    targets: list[str]
    labels: dict[str, str] = field(default_factory=dict)
    # A whole configuration instead (what the Prometheus Operator generated), loaded as it is.
    config_text: str = ""
    process: Process = field(init=False)
    port: int = field(default=0, init=False)

    def start(self) -> Prometheus:
        lc = load_tool("localcluster")
        self.port = lc.free_port()
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "prometheus.yml"
        config.write_text(self.config_text or json.dumps({  # JSON is YAML
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [{"job_name": "model-server",
                                "static_configs": [{"targets": self.targets, "labels": self.labels}]}],
        }))
        self.process = Process("prometheus", self.workdir)
        self.process.run([str(self.bin_dir / PROMETHEUS), f"--config.file={config}",
                          f"--storage.tsdb.path={self.workdir / 'tsdb'}",
                          f"--web.listen-address=127.0.0.1:{self.port}",
                          # POST /-/reload: what the config-reloader beside the operator's Prometheus calls
                          "--web.enable-lifecycle"], {})
        return self

    def reload(self, config_text: str) -> None:
        """Load a new configuration as the operator's config-reloader sidecar does: write it, then
        POST /-/reload (web/web.go, served with --web.enable-lifecycle)."""
        (self.workdir / "prometheus.yml").write_text(config_text)
        req = urllib.request.Request(f"{self.url}/-/reload", data=b"", method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status == 200, r.status

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def active_targets(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.url}/api/v1/targets?state=active", timeout=5) as r:
            doc: dict[str, Any] = json.load(r)
        found: list[dict[str, Any]] = doc["data"]["activeTargets"]
        return found

    def query(self, promql: str) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"{self.url}/api/v1/query?query={urllib.parse.quote(promql)}",
                                    timeout=5) as r:
            doc: dict[str, Any] = json.load(r)
        result: list[dict[str, Any]] = doc["data"]["result"]
        return result

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.process.check_alive()
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as r:
                if r.status == 200:
                    return
            time.sleep(0.5)
        raise AssertionError(f"Prometheus not ready on {self.url}:\n{self.process.tail()}")

    def stop(self) -> None:
        self.process.stop()


# --- the Prometheus Operator: a workload's PodMonitor becomes a scrape job ---------------------

PROMETHEUS_OPERATOR = "prometheus-operator"
MONITORING = "monitoring"


def operator_crds(bin_dir: Path) -> str:
    """The monitoring.coreos.com CRDs of the operator at the pin, as it prints them itself
    (`operator crds`: cmd/operator/main.go, the files of example/prometheus-operator-crd/)."""
    return subprocess.run([str(bin_dir / PROMETHEUS_OPERATOR), "crds"], check=True, capture_output=True,
                          text=True, timeout=60).stdout


def start_prometheus_operator(workdir: Path, kubeconfig: Path, bin_dir: Path) -> Process:
    """The operator out of cluster: its only kubeconfig input is KUBECONFIG (pkg/k8s/k8s.go); its web
    server moved off :8080 (cmd/operator/main.go --web.listen-address)."""
    lc = load_tool("localcluster")
    proc = Process("prometheus-operator", workdir)
    proc.run([str(bin_dir / PROMETHEUS_OPERATOR), f"--web.listen-address=127.0.0.1:{lc.free_port()}",
              "--log-level=info"], {"KUBECONFIG": str(kubeconfig)})
    return proc


def prometheus_for_every_monitor(api_server: str, token_file: Path) -> list[dict[str, Any]]:
    """A Prometheus custom resource as kube-prometheus-stack's values make it (every PodMonitor in
    every namespace: the *SelectorNilUsesHelmValues switches off, docs/monitoring.md), its service
    discovery pointed at this API server with a token of a ServiceAccount bound to `view`
    (`apiserverConfig`: pkg/prometheus/promcfg.go emits api_server, authorization and tls_config
    only from it). The token as a file this Prometheus reads (`credentialsFile`): a Secret reference
    (`credentials`) is looked up in each monitor's namespace and dropped from the job when absent
    there (addSafeAuthorizationToYaml: `invalid credentials reference ... secret serve/api-token not
    found`, even with the Secret created there: only referenced Secrets are loaded)."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MONITORING}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "prometheus", "namespace": MONITORING}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "ck8s-gpu-test-prometheus-view"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
         "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": MONITORING}]},
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus",
         "metadata": {"name": "k8s", "namespace": MONITORING},
         "spec": {"serviceAccountName": "prometheus", "replicas": 1,
                  "podMonitorSelector": {}, "podMonitorNamespaceSelector": {},
                  "serviceMonitorSelector": {}, "serviceMonitorNamespaceSelector": {},
                  "apiserverConfig": {"host": api_server, "tlsConfig": {"insecureSkipVerify": True},
                                      "authorization": {"credentialsFile": str(token_file)}}}},
    ]

"""What the smoke `inference` case drives, brought to the node tier's control plane as a cluster that
has them (platform `local`: the add-ons' charts are not installed here), each the real program at the
pin built by tools/build.sh:

- the inference gateway: the Gateway API v1.6.1 CRDs by the add-on's own CrdsFirst step, the add-on's
  GatewayClass and Gateway (components/addons/inference_gateway.py, its listener on Traefik's port),
  Traefik v3.7.13 with the chart's provider flags (tests/helpers/gateway.py), and the chart's
  Service `inference-gateway/traefik` (port `web`), so the smoke runner reaches the gateway as on a
  real cluster: through the API server's service proxy. That proxy only dials an Endpoints address
  whose targetRef is a Pod holding that IP ("We only proxy to addresses that are actually pods":
  k8s.io/kubernetes v1.34.4 pkg/registry/core/service/storage/storage.go ResourceLocation,
  isValidAddress) and never a loopback one (k8s.io/apimachinery pkg/util/proxy IsProxyableIP). So
  the Service selects a hostNetwork pod (the pause image) on a kubelet node, whose pod IP is that
  node's address, and Traefik, a process of this host, listens on that address: what a hostNetwork
  Traefik pod on that node would be, minus the kubelet supervising it (the Traefik binary is
  184 MB; an image of it would cost every CI run its import). Traefik proxies to the model servers'
  pod addresses from their EndpointSlices: the pods' bridges are this host's.
- KEDA v2.21.1's operator and metrics adapter (the external metrics API, aggregated: tests/helpers/keda.py).
- the Prometheus Operator v0.93.1 with a Prometheus resource selecting every PodMonitor (as
  kube-prometheus-stack's values make it, docs/monitoring.md), and Prometheus 3.16.0 loading the
  configuration the operator writes, reloaded whenever it changes, as the operator's
  config-reloader sidecar does (pkg/operator/config_reloader.go: expand $(SHARD) and $(POD_NAME),
  POST /-/reload): a PodMonitor the smoke chart creates becomes a scrape job of its pods without a
  change here.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import threading
from pathlib import Path
from typing import Any

from components.addons import inference_gateway as addon
from tests.helpers import gateway, keda
from tests.helpers.controller_env import Process

CONFIG_SECRET = "prometheus-k8s"  # the operator's Secret for Prometheus `k8s` (pkg/prometheus/server/operator.go)
EXPANSIONS = {"$(SHARD)": "0", "$(POD_NAME)": "prometheus-k8s-0"}


def missing(bin_dir: Path) -> list[str]:
    return gateway.missing(bin_dir) + keda.missing(bin_dir) + (
        [str(bin_dir / keda.PROMETHEUS_OPERATOR)] if not (bin_dir / keda.PROMETHEUS_OPERATOR).is_file() else [])


ANCHOR = {"app.kubernetes.io/name": "traefik", "ck8s-gpu.io/test": "gateway-host"}


def gateway_service(node: str, image: str, port: int) -> list[dict[str, Any]]:
    """The chart's Service for the `web` entry point, selecting the hostNetwork pod on `node` whose
    address Traefik listens on."""
    return [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "traefik-host", "namespace": addon.NAMESPACE,
                                                         "labels": ANCHOR},
         "spec": {"nodeName": node, "hostNetwork": True, "tolerations": [{"operator": "Exists"}],
                  "containers": [{"name": "host", "image": image, "imagePullPolicy": "Never"}]}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": addon.SERVICE, "namespace": addon.NAMESPACE},
         "spec": {"selector": ANCHOR,
                  "ports": [{"name": addon.SERVICE_PORT, "port": 80, "targetPort": port, "protocol": "TCP"}]}},
    ]


class InferenceControllers:
    def __init__(self, cluster: Any, bin_dir: Path, work: Path, *, node: str, image: str) -> None:
        """`node`: a kubelet node for the gateway's host pod; `image`: one its containerd holds."""
        self.cluster, self.bin_dir, self.work, self.node, self.image = cluster, bin_dir, work, node, image
        addresses = cluster.get_json("node", node)["status"]["addresses"]
        address = next(a["address"] for a in addresses if a["type"] == "InternalIP")
        self.traefik = gateway.Traefik(work / "traefik", bin_dir, Path(cluster.kubeconfig), listen=address)
        self.keda = keda.Keda(work / "keda", Path(cluster.kubeconfig), bin_dir)
        self.prometheus = keda.Prometheus(work / "prometheus", bin_dir, [])
        self.operator: Process | None = None
        self._config = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._reload_loop, daemon=True)
        self.reload_error = ""

    @property
    def prometheus_url(self) -> str:
        return self.prometheus.url

    def start(self) -> InferenceControllers:
        c = self.cluster
        (self.work / "keda").mkdir(parents=True, exist_ok=True)
        gateway.install_crds(c, self.bin_dir, self.work)
        c.kubectl("apply", "--server-side", "--field-manager=ck8s-gpu-test", "-f", str(keda.crd_dir(self.bin_dir)))
        c.kubectl("apply", "--server-side", "--field-manager=ck8s-gpu-test", "-f", "-",
                  input=keda.operator_crds(self.bin_dir))
        for crd in ("httproutes.gateway.networking.k8s.io", "gateways.gateway.networking.k8s.io",
                    "scaledobjects.keda.sh", "podmonitors.monitoring.coreos.com", "prometheuses.monitoring.coreos.com"):
            c.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{crd}")
        self.traefik.start()
        # privileged: the gateway's host pod uses the host network (the chart's own pods are restricted)
        c.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {
                    "name": addon.NAMESPACE, "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}},
                 addon.gateway_class_object(), addon.gateway_object(self.traefik.web_port),
                 *gateway_service(self.node, self.image, self.traefik.web_port)])
        self.traefik.wait_ready()
        c.wait_for("the gateway Service's endpoint (its host pod Ready)", self._endpoint, timeout=60)
        self.keda.start()
        c.apply(keda.aggregation_objects(self.keda.ca_pem, self.keda.adapter_port))
        c.wait_for("the external metrics API available through the API server", self._metrics_api, timeout=90)
        server = c.kubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}").strip()
        token = self.work / "prometheus-token"
        objects = keda.prometheus_for_every_monitor(server, token)
        c.apply(objects[:3])
        token.write_text(c.kubectl("create", "token", "prometheus", "-n", keda.MONITORING, "--duration=2h").strip())
        c.apply(objects[3:])
        self.operator = keda.start_prometheus_operator(self.work, Path(c.kubeconfig), self.bin_dir)
        self.prometheus.start()
        self.prometheus.wait_ready()
        self._thread.start()
        return self

    def _endpoint(self) -> bool:
        eps = self.cluster.get_json("endpoints", addon.SERVICE, "-n", addon.NAMESPACE)
        return any(a.get("ip") == self.traefik.listen for ss in eps.get("subsets") or []
                   for a in ss.get("addresses") or [])

    def _metrics_api(self) -> bool:
        self.keda.check_alive()
        got = self.cluster.get_json("apiservice", "v1beta1.external.metrics.k8s.io")
        return any(c["type"] == "Available" and c["status"] == "True"
                   for c in got.get("status", {}).get("conditions", []))

    def _generated(self) -> str:
        out = self.cluster.kubectl("get", "secret", CONFIG_SECRET, "-n", keda.MONITORING, "-o",
                                   "jsonpath={.data.prometheus\\.yaml\\.gz}", "--ignore-not-found", check=False)
        if not out.strip():
            return ""
        text = gzip.decompress(base64.b64decode(out.strip())).decode()
        for k, v in EXPANSIONS.items():
            text = text.replace(k, v)
        return text

    def _reload_loop(self) -> None:
        while not self._stop.wait(1.0):
            try:
                text = self._generated()
                if text and text != self._config:
                    self.prometheus.reload(text)
                    self._config = text
                    self.reload_error = ""
            except Exception as exc:  # shown by tail(); the loop keeps going
                self.reload_error = f"{type(exc).__name__}: {exc}"

    def check_alive(self) -> None:
        self.traefik.process.check_alive()
        self.keda.check_alive()
        self.prometheus.process.check_alive()
        if self.operator is not None:
            self.operator.check_alive()

    def tail(self) -> str:
        return (f"--- traefik ---\n{self.traefik.process.tail()}\n{self.keda.tail()}\n"
                f"--- prometheus ---\n{self.prometheus.process.tail()}\n"
                f"--- prometheus-operator ---\n{self.operator.tail() if self.operator else ''}\n"
                f"--- config reload error: {self.reload_error or 'none'}")

    def stop(self) -> None:
        self._stop.set()
        for stop in (self.traefik.stop, self.keda.stop, self.prometheus.stop,
                     self.operator.stop if self.operator else (lambda: None)):
            with contextlib.suppress(Exception):  # every process gets its stop
                stop()

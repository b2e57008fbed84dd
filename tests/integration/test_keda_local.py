"""GPU pods that scale on an inference metric, for real: KEDA v2.21.1's operator and metrics adapter,
Prometheus 3.16.0 and the Kubernetes HPA controller on the local control plane (issue 42, ADR 0051).

The loopback control plane of tools/localcluster.py (real kube-apiserver with its aggregation layer,
kube-controller-manager with its HPA, ReplicaSet and resource-claim controllers, v1.34.4), two KWOK
nodes of four simulated L4s each (tools/dra_publisher.py), KEDA built from its module at the pin
(tools/mod/keda) and registered as the external-metrics API, a real Prometheus (tools/mod/prometheus)
scraping a model server's /metrics (vLLM's queue gauge, driven by the test), and tests/fakes/kai as
KAI. examples/inference-autoscaling.yaml is applied as a user applies it, its Prometheus address
pointed at this one. Proven, hop by hop:

- KEDA's adapter serves external.metrics.k8s.io through the API server (APIService Available) and
  answers the ScaledObject's metric with what Prometheus sums;
- the ScaledObject becomes an HPA on that external metric, and the HPA controller scales the GPU
  Deployment out as the queue grows (20 waiting at a target average of 5: 4 replicas) and back in
  as it drains;
- each replica gets its own claim and a GPU no other replica holds; scaled in, the GPUs are freed;
- a ScaledObject on a metric Prometheus does not have stays inactive at its minimum and says why
  (KEDA's `ignoreNullValues: false`), never scaling on a guess;
- the example's PodMonitor, applied in the workload's namespace only, becomes a scrape job of the
  real Prometheus Operator v0.93.1 (tools/mod/prometheus-operator), and the real Prometheus loading
  that configuration discovers every replica with the labels the autoscaling query selects on.

Not proven here: the pods' own metrics endpoint (KWOK pods serve nothing: the scraped metrics come
from one process with the labels the PodMonitor's job gives a replica), and the chart's in-cluster wiring
(Service, certificates Secret, APIService caBundle patching); `ck8s-gpu` renders and the policy pack
judges those (tests/unit/addons/test_keda.py).

Needs `bash tools/build.sh`; skips naming what is missing, fails in CI (tests/helpers/tools.py).
"""

from __future__ import annotations

import base64
import gzip
import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.addons import inference_gateway
from components.kube.client import api_client
from components.kube.gateway_api import route_problems
from components.smoke.gateway import KubeGateway
from tests.fakes.kai.binder import QUEUE_LABEL, SCHEDULER, KaiStandIn
from tests.helpers import gateway, keda
from tests.helpers.controller_env import ClusterEnv, wait_established
from tests.helpers.tools import cluster_bin_dir, load_tool, skip_or_fail

# The real-controller scenarios balance the lanes (scripts/all_tiers.sh).
pytestmark = pytest.mark.integration

lc = load_tool("localcluster")
dra = load_tool("dra_publisher")
ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "inference-autoscaling.yaml"
NS = "serve"
MODEL = "Qwen/Qwen3-0.6B"


class Env(ClusterEnv):
    def __init__(self, cluster: Any, controllers: keda.Keda, prometheus: keda.Prometheus,
                 metrics: keda.ModelServerMetrics, kai: KaiStandIn) -> None:
        super().__init__(cluster)
        self.keda, self.prometheus, self.metrics, self.kai = controllers, prometheus, metrics, kai

    def debug(self) -> str:
        return (f"--- scaledobjects ---\n{self.kubectl('get', 'scaledobjects', '-n', NS, '-o', 'yaml', check=False)}\n"
                f"--- hpa ---\n{self.kubectl('describe', 'hpa', '-n', NS, check=False)}\n"
                f"--- pods ---\n{self.kubectl('get', 'pods', '-n', NS, '-o', 'wide', check=False)}\n"
                f"--- KAI stand-in error: {self.kai.error or 'none'}\n{self.keda.tail()}")

    def replicas(self, name: str = "llm") -> int:
        spec: dict[str, Any] = self.cluster.get_json("deployment", name, "-n", NS)["spec"]
        return int(spec.get("replicas", 1))

    def llm_pods(self) -> list[dict[str, Any]]:
        return [p for p in self.items("pods", "-n", NS, "-l", "app=llm")
                if not p["metadata"].get("deletionTimestamp")]


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    bin_dir = cluster_bin_dir()
    if gone := keda.missing(bin_dir):
        skip_or_fail(f"KEDA or Prometheus not built: missing {', '.join(gone)}; build them with `bash tools/build.sh`")
    work = tmp_path_factory.mktemp("keda")
    cluster = lc.LocalCluster(work / "cluster", nodes=2, instance_type="g6.12xlarge", bin_dir=bin_dir)
    with cluster:
        dra.publish(str(cluster.kubeconfig), dict.fromkeys(cluster.node_names, 4),
                    kubectl=str(cluster.bin_dir / "kubectl"))
        cluster.kubectl("apply", "--server-side", "--field-manager=ck8s-gpu-test", "-f", str(keda.crd_dir(bin_dir)))
        wait_established(cluster, "scaledobjects.keda.sh")
        cluster.kubectl("create", "namespace", NS)
        metrics = keda.ModelServerMetrics(MODEL).start()
        # The labels Prometheus gives a pod a PodMonitor selects (prometheus-operator v0.93.1
        # pkg/prometheus/promcfg.go: namespace, container, pod, job <ns>/<podmonitor>).
        prometheus = keda.Prometheus(work, bin_dir, [f"127.0.0.1:{metrics.port}"],
                                     {"namespace": NS, "container": "vllm", "pod": "llm-0"})
        controllers = keda.Keda(work, cluster.kubeconfig, bin_dir)
        kai = KaiStandIn(KubeGateway(api_client(cluster.kubeconfig.read_text())), NS,
                         queues=frozenset({"default"}))
        try:
            prometheus.start()
            controllers.start()
            cluster.apply(keda.aggregation_objects(controllers.ca_pem, controllers.adapter_port))
            kai.start()
            prometheus.wait_ready()
            e = Env(cluster, controllers, prometheus, metrics, kai)
            e.wait("the external metrics API available through the API server", lambda: _available(e), timeout=90)
            yield e
        finally:
            kai.stop()
            controllers.stop()
            prometheus.stop()
            metrics.stop()


def _available(env: Env) -> bool:
    env.keda.check_alive()
    got: dict[str, Any] = env.cluster.get_json("apiservice", "v1beta1.external.metrics.k8s.io")
    return any(c["type"] == "Available" and c["status"] == "True" for c in got.get("status", {}).get("conditions", []))


def example(server: str) -> list[dict[str, Any]]:
    """The example as a user applies it, its trigger pointed at `server` and scale-in not held back
    (the example waits 120 s of a lower recommendation; the algorithm is the same at 0)."""
    docs = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
    for d in docs:
        if d["kind"] == "ScaledObject":
            d["spec"]["triggers"][0]["metadata"]["serverAddress"] = server
            d["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"] = {
                "stabilizationWindowSeconds": 0}
    return [d for d in docs if d["kind"] != "PodMonitor"]  # no Prometheus Operator here: see above


def external_metric(env: Env, metric: str, scaled_object: str) -> list[dict[str, Any]]:
    """What the HPA controller reads: the aggregated API, through the API server."""
    raw = env.kubectl("get", "--raw", f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NS}/{metric}"
                      f"?labelSelector=scaledobject.keda.sh%2Fname%3D{scaled_object}")
    items: list[dict[str, Any]] = json.loads(raw)["items"]
    return items


def test_the_example_scales_out_on_the_queue_with_a_gpu_per_replica_and_back_in(env: Env) -> None:
    env.metrics.waiting = 0
    env.cluster.apply([{**d, "metadata": {**d["metadata"], "namespace": NS}} for d in example(env.prometheus.url)])

    def hpa() -> dict[str, Any] | None:
        found = env.items("hpa", "-n", NS)
        return found[0] if found else None

    made = env.wait("KEDA's HPA for the ScaledObject", hpa)
    assert made["metadata"]["name"] == "keda-hpa-llm", made["metadata"]["name"]  # controllers/keda/hpa.go
    (spec_metric,) = made["spec"]["metrics"]
    assert spec_metric["type"] == "External", spec_metric
    assert spec_metric["external"]["metric"]["name"] == "s0-prometheus", spec_metric  # pkg/scalers/scaler.go
    assert spec_metric["external"]["target"] == {"type": "AverageValue", "averageValue": "5"}, spec_metric
    assert (made["spec"]["minReplicas"], made["spec"]["maxReplicas"]) == (1, 4), made["spec"]

    def one_replica_on_a_gpu() -> bool:
        pods = env.llm_pods()
        return len(pods) == 1 and all(len(d) == 1 for d in env.devices_of(pods, NS).values())

    env.wait("one replica holding a GPU", one_replica_on_a_gpu)

    # The queue grows: Prometheus scrapes it, KEDA's adapter answers the HPA with its sum.
    env.metrics.waiting = 20
    env.wait("the adapter serving the queue Prometheus sums",
             lambda: [i["value"] for i in external_metric(env, "s0-prometheus", "llm")] == ["20"], timeout=60)
    env.wait("4 replicas for 20 waiting at an average target of 5", lambda: env.replicas() == 4, timeout=120)

    def four_placed() -> dict[str, list[tuple[str, str]]] | None:
        got = env.devices_of(env.llm_pods(), NS)
        return got if len(got) == 4 and all(len(d) == 1 for d in got.values()) else None

    got = env.wait("four replicas, each with a GPU", four_placed, timeout=90)
    assert len({d[0] for d in got.values()}) == 4, f"replicas share a GPU: {got}"
    for pod in env.llm_pods():  # from the example's template: KAI schedules them, in their queue
        assert pod["spec"]["schedulerName"] == SCHEDULER, pod["metadata"]["name"]
        assert pod["metadata"]["labels"].get(QUEUE_LABEL) == "default", pod["metadata"]["name"]

    # Drained: the HPA scales in to the minimum; the GPUs of the removed replicas are freed.
    env.metrics.waiting = 0
    env.wait("back to 1 replica once nothing waits", lambda: env.replicas() == 1, timeout=120)

    def one_gpu_held() -> bool:
        held = [c for c in env.items("resourceclaims", "-n", NS) if c.get("status", {}).get("allocation")]
        return len(env.llm_pods()) == 1 and len(held) == 1

    env.wait("one GPU held by the one replica left", one_gpu_held, timeout=90)
    scaled = env.cluster.get_json("scaledobject", "llm", "-n", NS)
    conditions = {c["type"]: c["status"] for c in scaled["status"]["conditions"]}
    assert conditions.get("Ready") == "True", scaled["status"]


def test_a_metric_prometheus_does_not_have_keeps_the_minimum_and_says_so(env: Env) -> None:
    """A query over a metric no target exports: with `ignoreNullValues: "false"` KEDA reports the
    empty result as an error (pkg/scalers/prometheus_scaler.go) instead of scaling on 0."""
    docs = example(env.prometheus.url)
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    deployment = {**deployment, "metadata": {"name": "ghost", "namespace": NS, "labels": {"app": "ghost"}},
                  "spec": {**deployment["spec"], "selector": {"matchLabels": {"app": "ghost"}},
                           "template": {**deployment["spec"]["template"],
                                        "metadata": {"labels": {"app": "ghost", QUEUE_LABEL: "default"}}}}}
    template = next(d for d in docs if d["kind"] == "ResourceClaimTemplate")
    scaled = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "ghost", "namespace": NS},
              "spec": {"scaleTargetRef": {"name": "ghost"}, "minReplicaCount": 1, "maxReplicaCount": 4,
                       "pollingInterval": 2,
                       "triggers": [{"type": "prometheus", "metadata": {
                           "serverAddress": env.prometheus.url, "query": "sum(vllm:no_such_metric)",
                           "threshold": "5", "ignoreNullValues": "false"}}]}}
    env.cluster.apply([{**template, "metadata": {**template["metadata"], "namespace": NS}}, deployment, scaled])

    def says_why() -> dict[str, Any] | None:
        status = env.cluster.get_json("scaledobject", "ghost", "-n", NS).get("status", {})
        ready = {c["type"]: c for c in status.get("conditions") or []}.get("Ready")
        return ready if ready and ready["status"] == "False" else None

    ready = env.wait("the ScaledObject not Ready: its trigger fails", says_why, timeout=60)
    assert ready["reason"] == "TriggerError", ready  # pkg/scaling/executor/scale_scaledobjects.go
    # and why, in the operator's log: pkg/scalers/prometheus_scaler.go's error for an empty result
    env.wait("the operator naming the empty result",
             lambda: "target may be lost, the result is empty" in env.keda.operator.log.read_text(errors="replace"),
             timeout=30)
    assert env.replicas("ghost") == 1


def test_a_podmonitor_beside_the_workload_is_discovered_without_touching_monitoring(
        env: Env, tmp_path: Path) -> None:
    """The real Prometheus Operator v0.93.1 turns the example's PodMonitor, applied in the
    workload's namespace and nowhere else, into a scrape job; the real Prometheus loads the
    configuration the operator wrote and discovers each replica with the labels the autoscaling
    query selects on. (KWOK pods serve no /metrics: discovery is the hop proven here, the scrape
    itself in the test above.)"""
    bin_dir = env.cluster.bin_dir
    if not (bin_dir / keda.PROMETHEUS_OPERATOR).is_file():
        skip_or_fail(f"the Prometheus Operator not built: missing {bin_dir / keda.PROMETHEUS_OPERATOR}; build it "
                     "with `bash tools/build.sh`")
    docs = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
    if not env.llm_pods():
        env.cluster.apply([{**d, "metadata": {**d["metadata"], "namespace": NS}} for d in example(env.prometheus.url)])
    env.kubectl("apply", "--server-side", "--field-manager=ck8s-gpu-test", "-f", "-",
                input=keda.operator_crds(bin_dir))
    wait_established(env.cluster, "prometheuses.monitoring.coreos.com", "podmonitors.monitoring.coreos.com",
                     "servicemonitors.monitoring.coreos.com", "probes.monitoring.coreos.com",
                     "prometheusrules.monitoring.coreos.com")
    server = env.kubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}").strip()
    token = tmp_path / "token"
    objects = keda.prometheus_for_every_monitor(server, token)
    env.cluster.apply(objects[:3])  # namespace, ServiceAccount, its `view` binding
    token.write_text(env.kubectl("create", "token", "prometheus", "-n", keda.MONITORING, "--duration=1h").strip())
    env.cluster.apply(objects[3:])
    operator = keda.start_prometheus_operator(tmp_path, env.cluster.kubeconfig, bin_dir)
    prometheus: keda.Prometheus | None = None
    try:
        # what a user adds: the PodMonitor, in the workload's namespace
        monitor = next(d for d in docs if d["kind"] == "PodMonitor")
        env.cluster.apply({**monitor, "metadata": {**monitor["metadata"], "namespace": NS}})

        def generated() -> str | None:
            operator.check_alive()
            found = env.items("secrets", "-n", keda.MONITORING, "--field-selector", "metadata.name=prometheus-k8s")
            if not found or "prometheus.yaml.gz" not in (found[0].get("data") or {}):
                return None
            text = gzip.decompress(base64.b64decode(found[0]["data"]["prometheus.yaml.gz"])).decode()
            return text if "podMonitor/serve/llm/0" in text else None

        text = env.wait("the operator's configuration with the PodMonitor's job", generated, timeout=90)
        config = yaml.safe_load(text)
        job = next(j for j in config["scrape_configs"] if j["job_name"] == "podMonitor/serve/llm/0")
        (sd,) = job["kubernetes_sd_configs"]
        assert (sd["role"], sd["namespaces"]["names"], sd["api_server"]) == ("pod", [NS], server), sd

        # What the config-reloader beside Prometheus does before Prometheus reads it: expand `$(SHARD)`
        # and `$(POD_NAME)` from its environment (pkg/operator/config_reloader.go ShardEnvVar,
        # PodNameEnvVar): shard 0 of one, pod prometheus-k8s-0.
        expanded = text.replace("$(SHARD)", "0").replace("$(POD_NAME)", "prometheus-k8s-0")
        prometheus = keda.Prometheus(tmp_path / "prometheus", bin_dir, [], config_text=expanded).start()
        prometheus.wait_ready()
        pods = {p["metadata"]["name"] for p in env.llm_pods()}
        assert pods, "no replica of the example to discover"

        def discovered() -> list[dict[str, Any]] | None:
            got = [t["labels"] for t in prometheus.active_targets() if t["labels"].get("job") == f"{NS}/llm"]
            return got if {t.get("pod") for t in got} == pods else None

        try:
            targets = env.wait("every replica discovered as a target", discovered, timeout=60)
        except AssertionError as e:
            raise AssertionError(f"{e}\n--- active targets ---\n{prometheus.active_targets()}\n"
                                 f"--- prometheus log ---\n{prometheus.process.tail()}\n"
                                 f"--- its configuration ---\n{text}") from None
        for labels in targets:  # what the ScaledObject's query selects on
            assert (labels["namespace"], labels["container"], labels["endpoint"]) == (NS, "vllm", "http"), labels
    finally:
        if prometheus is not None:
            prometheus.stop()
        operator.stop()


FROM_ZERO = ROOT / "examples" / "inference-from-zero.yaml"


def test_from_zero_on_the_gateways_count_and_back_to_zero(env: Env, tmp_path: Path) -> None:
    """examples/inference-from-zero.yaml, as a user applies it, behind the real inference gateway
    (Traefik v3.7.13, tools/mod/traefik) with a real Prometheus scraping Traefik's /metrics as the
    stack's does through the add-on's ServiceMonitor (with its target labels). Nothing runs and no GPU is held
    while no request comes; requests through the gateway (answered 503: no replica yet) wake the
    Deployment through KEDA; once they stop, it goes back to zero and the GPU is freed. The query's
    window and KEDA's cooldown are shortened (2 m and 300 s in the example), the algorithm is the same."""
    bin_dir = env.cluster.bin_dir
    if gone := gateway.missing(bin_dir):
        skip_or_fail(f"Traefik or the Gateway API CRDs not built: missing {', '.join(gone)}; "
                     "build them with `bash tools/build.sh`")
    gateway.install_crds(env.cluster, bin_dir, tmp_path)
    traefik = gateway.Traefik(tmp_path / "traefik", bin_dir, env.cluster.kubeconfig).start()
    scraper: keda.Prometheus | None = None
    try:
        env.cluster.apply([
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": inference_gateway.NAMESPACE}},
            {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": NS, "labels": dict([inference_gateway.ROUTES_LABEL])}},
            inference_gateway.gateway_class_object(), inference_gateway.gateway_object(port=traefik.web_port)])
        traefik.wait_ready()
        # The labels the Prometheus Operator gives the ServiceMonitor's targets (prometheus-operator
        # v0.93.1 pkg/prometheus/promcfg.go): job from jobLabel (the release), service, namespace.
        scraper = keda.Prometheus(tmp_path / "prometheus", bin_dir, [f"127.0.0.1:{traefik.metrics_port}"],
                                  {"job": "traefik", "service": "traefik-metrics",
                                   "namespace": inference_gateway.NAMESPACE}).start()
        scraper.wait_ready()
        docs = [d for d in yaml.safe_load_all(FROM_ZERO.read_text()) if d and d["kind"] != "PodMonitor"]
        for d in docs:
            d["metadata"]["namespace"] = NS
            if d["kind"] == "ScaledObject":
                d["spec"] |= {"pollingInterval": 1, "cooldownPeriod": 5}
                for trigger in d["spec"]["triggers"]:
                    trigger["metadata"]["serverAddress"] = scraper.url
                    trigger["metadata"]["query"] = trigger["metadata"]["query"].replace("[2m]", "[10s]")
        env.cluster.apply(docs)
        env.wait("the route to llm0 accepted", lambda: not route_problems(
            env.cluster.get_json("httproute", "llm0", "-n", NS), "HTTPRoute",
            (inference_gateway.NAMESPACE, inference_gateway.GATEWAY), inference_gateway.CONTROLLER, "web"))

        def scaled_object() -> dict[str, str]:
            status = env.cluster.get_json("scaledobject", "llm0", "-n", NS).get("status") or {}
            return {c["type"]: c["status"] for c in status.get("conditions") or []}

        env.wait("the ScaledObject ready and inactive", lambda: scaled_object().get("Ready") == "True"
                 and scaled_object().get("Active") == "False", timeout=60)
        time.sleep(3)  # three polling intervals with nothing asked: still nothing runs
        assert env.replicas("llm0") == 0 and not pods_of(env, "llm0")

        # A caller arrives: the gateway answers 503 (no replica), and counts the request.
        answers: Counter[int] = Counter()

        def knock() -> bool:
            answers[send(traefik)] += 1
            return env.replicas("llm0") >= 1

        query = 'traefik_router_requests_total{router=~"httproute-serve-llm0-gw-.+@kubernetesgateway"}'

        def counted() -> list[dict[str, Any]] | None:
            answers[send(traefik)] += 1
            return scraper.query(query) or None if scraper is not None else None

        try:
            series = env.wait("the gateway's count of llm0's requests in Prometheus", counted, timeout=30)
        except AssertionError as e:
            counters = [m for m in traefik.metrics().splitlines() if "requests_total" in m]
            raise AssertionError(f"{e}\nanswers: {answers}\n--- traefik's counters ---\n{counters[:40]}") from None
        assert answers[503] >= 1 and {s["metric"]["code"] for s in series} >= {"503"}, (answers, series)
        env.wait("KEDA waking the Deployment on the gateway's count", knock, timeout=60)
        env.wait("one replica holding a GPU", lambda: len(pods_of(env, "llm0")) == 1 and all(
            len(d) == 1 for d in env.devices_of(pods_of(env, "llm0"), NS).values()), timeout=90)

        # Quiet: the rate falls to 0, KEDA's cooldown passes, the Deployment and its GPU are gone.
        env.wait("back to zero replicas once no request comes", lambda: env.replicas("llm0") == 0, timeout=90)
        env.wait("no GPU held by llm0", lambda: not pods_of(env, "llm0") and not [
            c for c in env.items("resourceclaims", "-n", NS)
            if c["metadata"]["name"].startswith("llm0-") and c.get("status", {}).get("allocation")], timeout=90)
    finally:
        if scraper is not None:
            scraper.stop()
        traefik.stop()


def pods_of(env: Env, app: str) -> list[dict[str, Any]]:
    return [p for p in env.items("pods", "-n", NS, "-l", f"app={app}") if not p["metadata"].get("deletionTimestamp")]


def send(traefik: gateway.Traefik) -> int:
    """One chat request through the gateway: its status, 0 when nothing answered in time (a KWOK
    pod's address leads nowhere once the replica is ready)."""
    try:
        return traefik.request("/v1/chat/completions", {"model": MODEL, "messages": []})[0]
    except OSError:
        return 0

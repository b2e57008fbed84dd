"""What the utilization report reads, and from where (issue 43, docs/utilization.md).

- Prometheus (kube-prometheus-stack's, or any that scrapes the GPU Operator's DCGM exporter):
  `DCGM_FI_PROF_GR_ENGINE_ACTIVE` and `DCGM_FI_DEV_GPU_UTIL` over the window, one series per
  device and per holding container (dcgm-exporter 4.6.0-4.8.3's DRA pod mapping, turned on by the
  gpu-operator add-on: components/addons/gpu_operator.py); kube-state-metrics' `kube_node_created`
  and `kube_node_labels` for nodes gone before the report runs, `kube_pod_labels` for the queue of
  pods gone. Reached through the API server's service proxy unless a URL is given.
- The API: the nodes there now (creation time, pool and instance-type labels), the pods there now
  (their `kai.scheduler/queue` label).

Series labels, as they arrive in Prometheus: the exporter's `hostname` (`Hostname` before
4.8.3, and from run-ai's fake-gpu-operator), `UUID`, `GPU_I_ID`, `GPU_I_PROFILE`; a held device's
`dra_claim_name` and its holder's `namespace`/`pod`, which a ServiceMonitor without honorLabels
(the GPU Operator's) renames `exported_namespace`/`exported_pod` because the target has its own.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from ..addons import kube_prometheus_stack as kps
from ..smoke.gateway import Gateway, KubeError, proxy_path
from ..tables.instance_types import gpu_facts
from ..tables.labels import INSTANCE_TYPE_LABEL, POOL_LABELS, QUEUE_LABEL
from .utilization import DevicePoint, DeviceTrack, Holder, NodeSpan

BUSY = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
UTIL = "DCGM_FI_DEV_GPU_UTIL"
Series = dict[str, Any]  # one result of a range query: {"metric": {...}, "values": [[t, "v"], ...]}


class PrometheusError(RuntimeError):
    pass


class Prometheus(Protocol):
    def query_range(self, query: str, start: float, end: float, step: float) -> list[Series]: ...


def _decode(text: str, what: str) -> list[Series]:
    try:
        doc = json.loads(text)
    except ValueError:
        raise PrometheusError(f"{what}: not a Prometheus answer: {text[:200]!r}") from None
    if not isinstance(doc, dict):
        raise PrometheusError(f"{what}: not a Prometheus answer: {text[:200]!r}")
    if doc.get("status") != "success":
        raise PrometheusError(f"{what}: {doc.get('errorType', 'error')}: {doc.get('error', text[:200])}")
    return list(doc.get("data", {}).get("result", []))


def _params(query: str, start: float, end: float, step: float) -> str:
    return urllib.parse.urlencode({"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"})


@dataclass
class HttpPrometheus:
    """A Prometheus this machine reaches: `--prometheus-url`."""

    url: str
    timeout: float = 60.0

    def query_range(self, query: str, start: float, end: float, step: float) -> list[Series]:
        target = f"{self.url.rstrip('/')}/api/v1/query_range?{_params(query, start, end, step)}"
        try:
            with urllib.request.urlopen(target, timeout=self.timeout) as resp:
                return _decode(resp.read().decode(), query)
        except urllib.error.HTTPError as exc:
            return _decode(exc.read().decode(errors="replace"), query)
        except (urllib.error.URLError, OSError) as exc:
            raise PrometheusError(f"cannot reach Prometheus at {self.url}: {exc}") from None


@dataclass
class ProxiedPrometheus:
    """A Prometheus Service in the cluster, through the API server's service proxy."""

    gateway: Gateway
    namespace: str = kps.NAMESPACE
    service: str = f"{kps.NAME}-prometheus"
    port: str = "9090"

    def query_range(self, query: str, start: float, end: float, step: float) -> list[Series]:
        path = proxy_path("Service", self.namespace, self.service, self.port,
                          f"/api/v1/query_range?{_params(query, start, end, step)}")
        try:
            answer = self.gateway.request("GET", path, timeout=60.0)
        except KubeError as exc:
            raise PrometheusError(f"the API server's proxy to {self.namespace}/{self.service}: {exc}") from None
        if answer.proxy_error:
            raise PrometheusError(f"Service {self.namespace}/{self.service}:{self.port} through the API server: "
                                  f"{answer.proxy_error} (no kube-prometheus-stack here? give --prometheus-url)")
        return _decode(answer.body, query)


# --- devices ---------------------------------------------------------------------------------------


def _node(labels: Mapping[str, str]) -> str:
    return labels.get("hostname") or labels.get("Hostname") or labels.get("node", "")


def holder(labels: Mapping[str, str]) -> Holder | None:
    """The container's pod holding the device of this series, or None for an unheld device: only a
    series the pod mapping made (dra_claim_name, or the device-plugin mapping's exported_pod) names
    one; a bare `pod` label is the scrape target's own unless the mapping is there."""
    mapped = "dra_claim_name" in labels or "exported_pod" in labels
    if not mapped:
        return None
    pod = labels.get("exported_pod") or labels.get("pod")
    namespace = labels.get("exported_namespace") or labels.get("namespace") or labels.get("dra_claim_namespace")
    return Holder(namespace or "", pod) if pod else None


def device_tracks(busy: Iterable[Series], util: Iterable[Series]) -> list[DeviceTrack]:
    """One track per device (node, GPU UUID, GPU instance): at each sample its activity (the
    profiling field, else GPU_UTIL / 100 for devices without one) and who held it."""
    samples: dict[tuple[str, str, str], dict[float, tuple[float, set[Holder]]]] = defaultdict(dict)
    profiles: dict[tuple[str, str, str], str] = {}
    with_busy: set[tuple[str, str, str]] = set()

    def add(series: Iterable[Series], scale: float, only_missing: bool) -> None:
        for s in series:
            labels = s.get("metric", {})
            key = (_node(labels), labels.get("UUID") or labels.get("uuid", ""), labels.get("GPU_I_ID", ""))
            if not key[1] or (only_missing and key in with_busy):
                continue
            if not only_missing:
                with_busy.add(key)
            profiles[key] = labels.get("GPU_I_PROFILE", "")
            h = holder(labels)
            for t, v in s.get("values", []):
                value = float(v) * scale
                if math.isnan(value):
                    continue
                prev_busy, prev_holders = samples[key].get(float(t), (0.0, set()))
                samples[key][float(t)] = (max(prev_busy, value), prev_holders | ({h} if h else set()))

    add(busy, 1.0, only_missing=False)
    add(util, 0.01, only_missing=True)
    return [DeviceTrack(node, uuid, gi, profiles[(node, uuid, gi)],
                        tuple(DevicePoint(t, b, tuple(sorted(hs, key=lambda x: (x.namespace, x.pod))))
                              for t, (b, hs) in sorted(pts.items())))
            for (node, uuid, gi), pts in sorted(samples.items())]


# --- nodes and queues -------------------------------------------------------------------------------


def _pool(labels: Mapping[str, str]) -> str | None:
    return next((labels[k] for k in POOL_LABELS if labels.get(k)), None)


def _ksm_label(key: str) -> str:
    """kube-state-metrics' label for a Kubernetes label key (internal/store/utils.go: [^a-zA-Z0-9_] -> _)."""
    return "label_" + "".join(c if c.isalnum() or c == "_" else "_" for c in key)


def _created(node: Mapping[str, Any]) -> float:
    stamp = node.get("metadata", {}).get("creationTimestamp", "")
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else 0.0


GpusOf = Callable[[str, str], int | None]  # (pool, instance type) -> GPUs per node


def default_gpus(pool_gpus: Mapping[str, int]) -> GpusOf:
    """GPUs of a node: its pool's (a stack's settings) first, else its instance type's."""
    def gpus(pool: str, instance_type: str) -> int | None:
        if pool in pool_gpus:
            return pool_gpus[pool]
        facts = gpu_facts(instance_type) if instance_type else None
        return facts.count if facts is not None else None
    return gpus


def node_spans(live: Iterable[Mapping[str, Any]], created: Iterable[Series], labels: Iterable[Series],
               gpus_of: GpusOf, devices: Iterable[DeviceTrack], step: float) -> tuple[list[NodeSpan], list[str]]:
    """GPU nodes' lives: the live ones from the API (from creation, still there), the gone ones from
    kube-state-metrics (from kube_node_created's value to its last sample). A node is a GPU node
    when it carries a pool label. GPUs per node from gpus_of, else the GPUs its exporter showed."""
    notes: list[str] = []
    seen_gpus: dict[str, set[str]] = defaultdict(set)
    for d in devices:
        seen_gpus[d.node].add(d.uuid)
    spans: dict[str, NodeSpan] = {}

    def span(name: str, pool: str | None, itype: str, start: float, end: float | None) -> None:
        if pool is None:
            return
        n = gpus_of(pool, itype)
        if n is None:
            n = len(seen_gpus.get(name, ()))
            notes.append(f"node {name}: GPUs per node unknown for pool '{pool}' ({itype or 'no instance type'}); "
                         f"counted the {n} its DCGM exporter showed")
        spans[name] = NodeSpan(name, pool, n, start, end)

    for node in live:
        meta = node.get("metadata", {})
        lab = meta.get("labels") or {}
        span(meta.get("name", ""), _pool(lab), lab.get(INSTANCE_TYPE_LABEL, ""), _created(node), None)
    pool_keys = [_ksm_label(k) for k in POOL_LABELS]
    past_labels: dict[str, Mapping[str, str]] = {}
    for s in labels:
        past_labels[s.get("metric", {}).get("node", "")] = s.get("metric", {})
    for s in created:
        name = s.get("metric", {}).get("node", "")
        values = s.get("values", [])
        if not name or name in spans or not values:
            continue
        lab = past_labels.get(name, {})
        pool = next((lab[k] for k in pool_keys if lab.get(k)), None)
        if pool is None:
            notes.append(f"node {name} is gone and kube-state-metrics has no pool label for it (allowlist "
                         "nodes=[ck8s-gpu/pool]): its GPU time is not counted as paid")
            continue
        span(name, pool, lab.get(_ksm_label(INSTANCE_TYPE_LABEL), ""), float(values[0][1]),
             float(values[-1][0]) + step)
    return sorted(spans.values(), key=lambda n: n.node), notes


def queues(live_pods: Iterable[Mapping[str, Any]], pod_labels: Iterable[Series]) -> dict[Holder, str]:
    """Each pod's KAI queue: the pod label (`kai.scheduler/queue`) of the pods there now, else the
    one kube-state-metrics kept (kube_pod_labels, its allowlist set by the kube-prometheus-stack add-on)."""
    out: dict[Holder, str] = {}
    key = _ksm_label(QUEUE_LABEL)
    for s in pod_labels:
        m = s.get("metric", {})
        if m.get(key):
            out[Holder(m.get("namespace", ""), m.get("pod", ""))] = m[key]
    for pod in live_pods:
        meta = pod.get("metadata", {})
        q = (meta.get("labels") or {}).get(QUEUE_LABEL)
        if q:
            out[Holder(meta.get("namespace", ""), meta.get("name", ""))] = q
    return out


QUERIES = {
    "busy": BUSY,
    "util": UTIL,
    "created": "kube_node_created",
    "node_labels": "kube_node_labels",
    "pod_labels": f'kube_pod_labels{{{_ksm_label(QUEUE_LABEL)}!=""}}',
}


MAX_POINTS = 11_000  # Prometheus refuses a range query of more points per series


def fit_step(start: float, end: float, step: float) -> float:
    """The step, widened where the window would exceed Prometheus' points per series."""
    return max(step, math.ceil((end - start) / (MAX_POINTS - 1)))


@dataclass
class Inputs:
    nodes: list[NodeSpan]
    devices: list[DeviceTrack]
    queue_of: dict[Holder, str]
    notes: list[str]
    step: float


def gather(prom: Prometheus, gateway: Gateway | None, start: float, end: float, step: float,
           pool_gpus: Mapping[str, int]) -> Inputs:
    """Everything the report counts, for [start, end) at `step`. Without a gateway (no cluster to
    ask), nodes and queues come from kube-state-metrics alone."""
    notes: list[str] = []
    if (wide := fit_step(start, end, step)) != step:
        notes.append(f"step widened from {step:g} s to {wide:g} s: Prometheus answers at most {MAX_POINTS} points "
                     "per series")
        step = wide
    got = {name: prom.query_range(q, start, end, step) for name, q in QUERIES.items()}
    devices = device_tracks(got["busy"], got["util"])
    if not devices:
        notes.append(f"no {BUSY} or {UTIL} series in the window: is the GPU Operator's DCGM exporter scraped?")
    live_nodes: list[Mapping[str, Any]] = []
    live_pods: list[Mapping[str, Any]] = []
    if gateway is not None:
        live_nodes = list(gateway.list("v1", "Node")[0])
        live_pods = list(gateway.list("v1", "Pod")[0])
    nodes, node_notes = node_spans(live_nodes, got["created"], got["node_labels"], default_gpus(pool_gpus),
                                   devices, step)
    return Inputs(nodes, devices, queues(live_pods, got["pod_labels"]), notes + node_notes, step)

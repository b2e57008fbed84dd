"""kube-prometheus-stack for clusters that have no Prometheus (Prometheus Operator, Grafana...).

Values keys verified against prometheus-community/helm-charts tag kube-prometheus-stack-88.5.3
(charts/kube-prometheus-stack/values.yaml) and kube-state-metrics-8.4.0 (metricLabelsAllowlist).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..settings.model import Settings
from ..tables.labels import INSTANCE_TYPE_LABEL, POOL_LABELS, QUEUE_LABEL
from .base import Addon, AddonContext, Capability
from .image_refs import Entry, ImageRef, always, never

NAMESPACE = "monitoring"
NAME = "kube-prometheus-stack"
# The Prometheus the chart runs, in the cluster: templates/prometheus/service.yaml names its Service
# `<kube-prometheus-stack.fullname>-prometheus` (the release name, which is the chart's: _helpers.tpl),
# port prometheus.service.port 9090 (values.yaml at 88.5.3). What in-cluster queriers (a KEDA
# trigger) use by default.
PROMETHEUS_URL = f"http://{NAME}-prometheus.{NAMESPACE}.svc:9090"


def values(_ctx: AddonContext) -> dict[str, Any]:
    select_all = {
        # Pick up the monitoring objects of every release and every workload (GPU Operator,
        # observability, a user's model server), not only those labelled with this release's name:
        # each `*NilUsesHelmValues: false` renders the Prometheus CR's selector as `{}` (all), and
        # the chart renders every namespace selector `{}` (all namespaces) already
        # (kube-prometheus-stack-88.5.3 templates/prometheus/prometheus.yaml). Probe and
        # ScrapeConfig default to `true` there too, so they are set as well.
        "serviceMonitorSelectorNilUsesHelmValues": False,
        "podMonitorSelectorNilUsesHelmValues": False,
        "probeSelectorNilUsesHelmValues": False,
        "scrapeConfigSelectorNilUsesHelmValues": False,
        "ruleSelectorNilUsesHelmValues": False,
    }
    return {
        "prometheus": {"prometheusSpec": select_all},
        # Pod label kai.scheduler/queue as a kube_pod_labels label: the dashboard's per-queue panels and
        # the utilization report's queue of pods gone; the node labels naming a GPU node's pool and
        # instance type as kube_node_labels labels: the utilization rules' pools and the report's
        # paid GPU time of nodes gone (charts/gpu-observability, components/report/sources.py). The
        # chart allowlists no label by default (kube-state-metrics-8.4.0 values.yaml metricLabelsAllowlist).
        "kube-state-metrics": {"metricLabelsAllowlist": [
            f"pods=[{QUEUE_LABEL}]", f"nodes=[{','.join((*POOL_LABELS, INSTANCE_TYPE_LABEL))}]"]},
        # Canonical Kubernetes runs these as snap services on the hosts, not as pods the chart's
        # Services can select: scraping them would only raise TargetDown alerts.
        "kubeControllerManager": {"enabled": False},
        "kubeScheduler": {"enabled": False},
        "kubeEtcd": {"enabled": False},
        "kubeProxy": {"enabled": False},
    }


def _provides(_settings: Settings) -> tuple[Capability, ...]:
    return ("monitoring-crds",)


# --- Images: kube-prometheus-stack 88.5.3 ------------------------------------------------------------
# prometheus-community/helm-charts tag kube-prometheus-stack-88.5.3: charts/kube-prometheus-stack/
# values.yaml; images are `<global.imageRegistry | registry>/<repository>:<tag | appVersion>`
# (templates/prometheus-operator/deployment.yaml, prometheus/prometheus.yaml,
# alertmanager/alertmanager.yaml, admission-webhooks/job-patch/*); appVersion v0.93.1 (Chart.yaml).
# Per-image `registry` rather than global.imageRegistry: each image keeps its own upstream host
# under the mirror.
_KPS = "prometheus-community/helm-charts kube-prometheus-stack-88.5.3 charts/kube-prometheus-stack/values.yaml"
_KPS_OPERATOR_TAG = "v0.93.1"


def _reg(chart: str, name: str, key: str, registry: str, repository: str, tag: str, source: str,
         runs: Callable[[Settings], bool] = always) -> Entry:
    return Entry(chart, name, ImageRef(registry, repository, tag, source),
                 keys=(f"{key}.registry", f"{key}.repository", f"{key}.tag"),
                 mirror=((f"{key}.registry", ""),), runs=runs)


_KSM = "prometheus-community/helm-charts kube-state-metrics-8.4.0 charts/kube-state-metrics/values.yaml"
_NODE_EXPORTER = ("prometheus-community/helm-charts prometheus-node-exporter-4.56.1 "
                  "charts/prometheus-node-exporter/values.yaml, templates/_helpers.tpl")
_GRAFANA = "grafana-community/helm-charts grafana-12.11.1 charts/grafana/values.yaml, templates/_pod.tpl"

IMAGES: tuple[Entry, ...] = (
    _reg("kube-prometheus-stack", "prometheus-operator", "prometheusOperator.image", "quay.io",
         "prometheus-operator/prometheus-operator", _KPS_OPERATOR_TAG, _KPS),
    # Passed to the operator as --prometheus-config-reloader; it runs beside Prometheus and Alertmanager.
    _reg("kube-prometheus-stack", "config-reloader", "prometheusOperator.prometheusConfigReloader.image",
         "quay.io", "prometheus-operator/prometheus-config-reloader", _KPS_OPERATOR_TAG, _KPS),
    # admissionWebhooks.patch.enabled: the certificate create/patch hook Jobs.
    _reg("kube-prometheus-stack", "admission-webhook-patch", "prometheusOperator.admissionWebhooks.patch.image",
         "ghcr.io", "jkroepke/kube-webhook-certgen", "1.8.7", _KPS),
    _reg("kube-prometheus-stack", "prometheus", "prometheus.prometheusSpec.image", "quay.io",
         "prometheus/prometheus", "v3.14.0-distroless", _KPS),
    _reg("kube-prometheus-stack", "alertmanager", "alertmanager.alertmanagerSpec.image", "quay.io",
         "prometheus/alertmanager", "v0.34.0", _KPS),
    # Only named in the operator's --thanos-default-base-image flag (no Thanos sidecar or ruler here).
    _reg("kube-prometheus-stack", "thanos", "prometheusOperator.thanosImage", "quay.io", "thanos/thanos",
         "v0.42.4", _KPS, runs=never),
    # Subchart kube-state-metrics 8.4.0: tag v<appVersion 2.20.0>.
    _reg("kube-prometheus-stack", "kube-state-metrics", "kube-state-metrics.image", "registry.k8s.io",
         "kube-state-metrics/kube-state-metrics", "v2.20.0", _KSM),
    # Subchart prometheus-node-exporter 4.56.1: tag v<appVersion 1.12.1> + `-distroless`, which
    # kube-prometheus-stack turns on (prometheus-node-exporter.image.distroless: true).
    _reg("kube-prometheus-stack", "node-exporter", "prometheus-node-exporter.image", "quay.io",
         "prometheus/node-exporter", "v1.12.1-distroless", _NODE_EXPORTER),
    # Subchart grafana 12.11.1: tag appVersion 13.2.0; the dashboards/datasources sidecars
    # (kube-prometheus-stack turns both on) share sidecar.image.
    _reg("kube-prometheus-stack", "grafana", "grafana.image", "docker.io", "grafana/grafana", "13.2.0", _GRAFANA),
    _reg("kube-prometheus-stack", "grafana-sidecar", "grafana.sidecar.image", "quay.io", "kiwigrid/k8s-sidecar",
         "2.10.1", _GRAFANA),
    # The chart's `helm test` pod (testFramework.enabled): rendered as a test hook, not installed.
    _reg("kube-prometheus-stack", "grafana-test", "grafana.testFramework.image", "docker.io", "bats/bats",
         "1.14.0", _GRAFANA, runs=never),
)


ADDON = Addon(
    name=NAME,
    settings_key="kube_prometheus_stack",
    description="Prometheus Operator, Prometheus, Alertmanager, Grafana (only where none exists)",
    namespace=NAMESPACE,
    # An existing cluster usually has its own Prometheus: declare monitoring-crds instead.
    platform_defaults={"aws": "on", "existing": "off", "kind": "on", "local": "off"},
    pod_security="privileged",  # node-exporter uses host network, PID and paths
    values=values,
    chart_pin="kube-prometheus-stack",
    images=IMAGES,
    provides=_provides,
    timeout_seconds=15 * 60,
    on_gpu_path=False,
)

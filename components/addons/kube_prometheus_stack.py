"""kube-prometheus-stack for clusters that have no Prometheus (Prometheus Operator, Grafana...).

Values keys verified against prometheus-community/helm-charts tag kube-prometheus-stack-88.5.3
(charts/kube-prometheus-stack/values.yaml) and kube-state-metrics-8.4.0 (metricLabelsAllowlist).
"""

from __future__ import annotations

from typing import Any

from ..settings.model import Settings
from .base import Addon, AddonContext, Capability
from .kai_scheduler import QUEUE_LABEL

NAMESPACE = "monitoring"


def values(_ctx: AddonContext) -> dict[str, Any]:
    select_all = {
        # Pick up ServiceMonitors/PrometheusRules of every release (GPU Operator, observability),
        # not only those labelled with this release's name.
        "serviceMonitorSelectorNilUsesHelmValues": False,
        "podMonitorSelectorNilUsesHelmValues": False,
        "ruleSelectorNilUsesHelmValues": False,
    }
    return {
        "prometheus": {"prometheusSpec": select_all},
        # Pod label kai.scheduler/queue as a kube_pod_labels label: the dashboard's per-queue panels.
        "kube-state-metrics": {"metricLabelsAllowlist": [f"pods=[{QUEUE_LABEL}]"]},
        # Canonical Kubernetes runs these as snap services on the hosts, not as pods the chart's
        # Services can select: scraping them would only raise TargetDown alerts.
        "kubeControllerManager": {"enabled": False},
        "kubeScheduler": {"enabled": False},
        "kubeEtcd": {"enabled": False},
        "kubeProxy": {"enabled": False},
    }


def _provides(_settings: Settings) -> tuple[Capability, ...]:
    return ("monitoring-crds",)


ADDON = Addon(
    name="kube-prometheus-stack",
    settings_key="kube_prometheus_stack",
    description="Prometheus Operator, Prometheus, Alertmanager, Grafana (only where none exists)",
    namespace=NAMESPACE,
    pod_security="privileged",  # node-exporter uses host network, PID and paths
    values=values,
    chart_pin="kube-prometheus-stack",
    provides=_provides,
    timeout_seconds=15 * 60,
    on_gpu_path=False,
)

"""GPU dashboards and alerts (chart `charts/gpu-observability`): DCGM metrics, per node/GPU/queue.

Needs the Prometheus Operator CRDs (PrometheusRule, ServiceMonitor): from the kube-prometheus-stack
add-on, or declared present in settings (`gpuStack.clusterProvides: [monitoring-crds]`).
"""

from __future__ import annotations

from typing import Any

from .base import Addon, AddonContext

NAMESPACE = "gpu-observability"
# Service name and port the GPU Operator's DCGM exporter and fake-gpu-operator's status exporter
# both use (operator: dcgmExporter; fake: templates/status-exporter/service.yaml).
DCGM_SERVICE = "nvidia-dcgm-exporter"
DCGM_PORT = "gpu-metrics"


def values(ctx: AddonContext) -> dict[str, Any]:
    operator = "gpu-operator" in ctx.enabled
    exporter_ns = "gpu-operator"  # both the real and the fake operator's namespace
    return {
        "dcgmExporter": {"namespace": exporter_ns, "service": DCGM_SERVICE},
        # The real operator makes its own ServiceMonitor (dcgmExporter.serviceMonitor); the fake
        # one exposes the same Service without one, so this chart supplies it there.
        "serviceMonitor": {"enabled": not operator, "port": DCGM_PORT},
        "dashboard": {"enabled": True},
        "rules": {"enabled": True},
    }


ADDON = Addon(
    name="observability",
    settings_key="observability",
    description="Grafana dashboard and PrometheusRules for GPUs (this repository's chart)",
    namespace=NAMESPACE,
    platform_defaults={"aws": "auto", "existing": "auto", "kind": "auto", "local": "auto"},
    pod_security="restricted",
    values=values,
    local_chart="gpu-observability",
    needs=("monitoring-crds",),
    timeout_seconds=2 * 60,
    on_gpu_path=False,
)

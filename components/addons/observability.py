"""GPU dashboards and alerts (chart `charts/gpu-observability`): DCGM metrics, per node/GPU/queue.

Needs the Prometheus Operator CRDs (PrometheusRule, ServiceMonitor): from the kube-prometheus-stack
add-on, or declared present in settings (`gpuStack.clusterProvides: [monitoring-crds]`).
"""

from __future__ import annotations

import re
from typing import Any

from ..settings.facts import pool_gpus
from ..settings.model import NodePoolSettings
from .base import Addon, AddonContext
from .gpu_operator import DCGM_SERVICE_ACCOUNT, dcgm_pod_mapping_on
from .gpu_operator import NAMESPACE as OPERATOR_NAMESPACE

NAMESPACE = "gpu-observability"
# Service name and port the GPU Operator's DCGM exporter and fake-gpu-operator's status exporter
# both use (operator: dcgmExporter; fake: templates/status-exporter/service.yaml).
DCGM_SERVICE = "nvidia-dcgm-exporter"
DCGM_PORT = "gpu-metrics"


# Utilization alerts (docs/utilization.md). An allocated GPU this idle for this long is reported;
# an autoscaled pool's node with no allocation outlives its scaleDownAfter by IDLE_NODE_MARGIN only
# when the autoscaler failed to remove it; a fixed pool's is by design, and named after a day.
IDLE_BELOW = 0.01
IDLE_GPU_FOR = "1h"
IDLE_NODE_MARGIN_SECONDS = 5 * 60
IDLE_FIXED_NODE_FOR = "24h"
_DURATION_PART = re.compile(r"([0-9]+)(s|m|h)")


def _seconds(duration: str) -> int:
    """A Karpenter duration (settings KARPENTER_DURATION: `1h30m`) in seconds."""
    return sum(int(n) * {"s": 1, "m": 60, "h": 3600}[u] for n, u in _DURATION_PART.findall(duration))


def idle_node_for(pool: NodePoolSettings) -> str:
    if pool.autoscaling is None:
        return IDLE_FIXED_NODE_FOR
    return f"{_seconds(pool.autoscaling.scale_down_after) + IDLE_NODE_MARGIN_SECONDS}s"


def values(ctx: AddonContext) -> dict[str, Any]:
    operator = "gpu-operator" in ctx.enabled
    exporter_ns = "gpu-operator"  # both the real and the fake operator's namespace
    s = ctx.settings
    return {
        "dcgmExporter": {
            "namespace": exporter_ns, "service": DCGM_SERVICE,
            # What the operator's exporter needs for its DRA pod mapping and the operator does not
            # grant (components/addons/gpu_operator.py dcgm_pod_mapping).
            "draRbac": {"enabled": operator and dcgm_pod_mapping_on(s),
                        "serviceAccount": DCGM_SERVICE_ACCOUNT, "namespace": OPERATOR_NAMESPACE},
        },
        # The real operator makes its own ServiceMonitor (dcgmExporter.serviceMonitor); the fake
        # one exposes the same Service without one, so this chart supplies it there.
        "serviceMonitor": {"enabled": not operator, "port": DCGM_PORT},
        "dashboard": {"enabled": True},
        "rules": {"enabled": True},
        "utilization": {
            "enabled": True, "idleBelow": IDLE_BELOW, "idleFor": IDLE_GPU_FOR,
            "pools": [{"name": p.name, "idleFor": idle_node_for(p)} for p in s.node_pools
                      if pool_gpus(p) is not None],
        },
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

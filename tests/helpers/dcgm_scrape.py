"""The GPU Operator's DCGM exporter scrape, brought to the node tier: the Service and ServiceMonitor
the operator creates (gpu-operator v26.7.0 assets/state-dcgm-exporter/0400_service.yaml,
0500_service_monitor.yaml: app=nvidia-dcgm-exporter, port gpu-metrics, path /metrics, jobLabel
app, no honorLabels), selecting one hostNetwork pod per kubelet node whose address the node's
simulated exporter listens on (tools/nodetier.py start_exporter), as the exporter's DaemonSet pods
would be. Two changes, both for a test's clock: the Service's targetPort is the tier's exporter
port (a free one, not 9400), and the ServiceMonitor scrapes every SCRAPE_SECONDS (the operator
leaves it to Prometheus' 30 s default)."""

from __future__ import annotations

from typing import Any

NAMESPACE = "gpu-operator"
APP = {"app": "nvidia-dcgm-exporter"}
SCRAPE_SECONDS = 5


def objects(nodes: list[str], image: str, port: int) -> list[dict[str, Any]]:
    anchors = [{"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"nvidia-dcgm-exporter-{node}", "namespace": NAMESPACE, "labels": APP},
                "spec": {"nodeName": node, "hostNetwork": True, "tolerations": [{"operator": "Exists"}],
                         "containers": [{"name": "host", "image": image, "imagePullPolicy": "Never"}]}}
               for node in nodes]
    return [
        # privileged: the anchors use the host network
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": NAMESPACE, "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}},
        *anchors,
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "nvidia-dcgm-exporter", "namespace": NAMESPACE, "labels": APP,
                      "annotations": {"prometheus.io/scrape": "true"}},
         "spec": {"selector": APP,
                  "ports": [{"name": "gpu-metrics", "port": 9400, "targetPort": port, "protocol": "TCP"}]}},
        {"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
         "metadata": {"name": "nvidia-dcgm-exporter", "namespace": NAMESPACE, "labels": APP},
         "spec": {"endpoints": [{"port": "gpu-metrics", "path": "/metrics", "interval": f"{SCRAPE_SECONDS}s"}],
                  "jobLabel": "app", "namespaceSelector": {"matchNames": [NAMESPACE]},
                  "selector": {"matchLabels": APP}}},
    ]


def ready_nodes(cluster: Any) -> set[str]:
    """Nodes with a ready endpoint of the exporter's Service (what a scrape, or the conformance
    procedure, reaches)."""
    slices = cluster.get_json("endpointslices", "-n", NAMESPACE, "-l",
                              "kubernetes.io/service-name=nvidia-dcgm-exporter")
    return {e.get("nodeName", "") for s in slices["items"] for e in s.get("endpoints") or []
            if (e.get("conditions") or {}).get("ready") is not False}


def start(cluster: Any, nodes: list[str], image: str, port: int, timeout: float = 90) -> None:
    """The scrape's objects, fresh: an earlier test's anchor pods gone first (`apply` of a pod still
    terminating under the same name changes nothing, and the pod then goes), then every node's
    endpoint ready."""
    cluster.kubectl("delete", "-n", NAMESPACE, "pod", "-l", "app=nvidia-dcgm-exporter", "--ignore-not-found",
                    "--wait=true", "--timeout=60s", check=False)
    cluster.apply(objects(nodes, image, port))
    cluster.wait_for("the exporter's endpoint on every node", lambda: set(nodes) <= ready_nodes(cluster),
                     timeout=timeout)

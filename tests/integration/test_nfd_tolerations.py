"""NFD's worker lands on GPU nodes whose pool has its own taint (issue 26, defect 3), decided by
the REAL DaemonSet controller and kube-scheduler (v1.34.4) of the loopback control plane.

The worker DaemonSet is shaped as the GPU Operator chart's NFD subchart renders it: its
tolerations are exactly `node-feature-discovery.worker.tolerations` of the values
(deployments/gpu-operator/charts/node-feature-discovery/templates/worker.yaml at v26.7.0, NFD
0.19.0, `tolerations: {{ toYaml .Values.worker.tolerations }}`). Two KWOK GPU nodes, one tainted
like a pool with `taints: [{key: dedicated, value: training, effect: NoSchedule}]`: with the
project's values the worker runs on both; with the chart's own tolerations (what the values held
before issue 26) it never reaches the tainted node, which NFD then never labels.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from components.addons.gpu_operator import NFD_CHART_WORKER_TOLERATIONS, values
from tests.helpers.tools import cluster_bin_dir, load_tool
from tests.unit.addons.helpers import context, settings

pytestmark = pytest.mark.integration

lc = load_tool("localcluster")
NFD_IMAGE = "registry.k8s.io/nfd/node-feature-discovery:v0.19.0"  # never pulled: KWOK nodes run nothing
TAINT = {"key": "dedicated", "value": "training", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    bin_dir = cluster_bin_dir()
    c = lc.LocalCluster(tmp_path_factory.mktemp("nfd-tolerations"), nodes=2, bin_dir=bin_dir)
    with c:
        c.kubectl("taint", "node", c.node_names[1], "dedicated=training:NoSchedule")
        c.kubectl("create", "namespace", "gpu-operator")
        yield c


def worker(name: str, tolerations: list[dict[str, Any]]) -> dict[str, Any]:
    labels = {"app.kubernetes.io/name": name, "role": "worker"}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": "gpu-operator"},
            "spec": {"selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"tolerations": tolerations, "priorityClassName": "system-node-critical",
                         "containers": [{"name": "worker", "image": NFD_IMAGE}]}}}}


def nodes_running(cluster: Any, name: str) -> set[str]:
    def placed() -> Any:
        ds = cluster.get_json("daemonset", name, "-n", "gpu-operator")
        pods = cluster.get_json("pods", "-n", "gpu-operator", "-l", f"app.kubernetes.io/name={name}")["items"]
        desired = ds.get("status", {}).get("desiredNumberScheduled")
        bound = {p["spec"].get("nodeName") for p in pods if p["spec"].get("nodeName")}
        return bound if desired is not None and len(bound) == desired else None

    return set(cluster.wait_for(f"DaemonSet {name} placed", placed, timeout=60))


def test_the_worker_runs_on_a_tainted_pool_node_with_our_values(cluster: Any) -> None:
    s = settings("aws", nodePools=[{"name": "gpu", "taints": [TAINT]}])
    ours = values(context(_operator(), s))["node-feature-discovery"]["worker"]["tolerations"]
    cluster.apply(worker("nfd-worker-ours", ours))
    assert nodes_running(cluster, "nfd-worker-ours") == set(cluster.node_names)


def test_with_the_chart_tolerations_alone_the_tainted_node_is_skipped(cluster: Any) -> None:
    cluster.apply(worker("nfd-worker-chart", [dict(t) for t in NFD_CHART_WORKER_TOLERATIONS]))
    assert nodes_running(cluster, "nfd-worker-chart") == {cluster.node_names[0]}


def _operator() -> Any:
    from components.addons.catalog import BY_NAME

    return BY_NAME["gpu-operator"]

"""NFD's worker lands on GPU nodes whose pool has its own taint (issue 26, defect 3), decided by
the REAL DaemonSet controller and kube-scheduler (v1.34.4) of the loopback control plane.

The worker DaemonSet is shaped as the GPU Operator chart's NFD subchart renders it: its
tolerations are exactly `node-feature-discovery.worker.tolerations` of the values
(deployments/gpu-operator/charts/node-feature-discovery/templates/worker.yaml at v26.7.0, NFD
0.19.0, `tolerations: {{ toYaml .Values.worker.tolerations }}`). Two KWOK GPU nodes, one tainted
like a pool with `taints: [{key: dedicated, value: training, effect: NoSchedule}]`: with the
project's values the worker runs on both; with the chart's own tolerations (what the values held
before issue 26) it never reaches the tainted node, which NFD then never labels.

On the same cluster, the DRA kubelet plugin's DaemonSet with the node selector the project renders
beside a ClusterPolicy: a MIG change's pause of nvidia.com/gpu.deploy.client takes its pod off the
node and the label's return brings it back (issue 40).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from components.addons.gpu_operator import NFD_CHART_WORKER_TOLERATIONS, values
from components.tables.labels import DRA_NODE_LABEL, GPU_CLIENT_LABEL
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


def test_a_mig_change_pauses_the_dra_kubelet_plugin_through_the_gpu_client_label(cluster: Any) -> None:
    """Beside a ClusterPolicy the DRA kubelet plugin selects on nvidia.com/gpu.deploy.client too
    (components/addons/dra_driver.py). The MIG manager sets that label to paused-for-mig-change and
    waits for every DaemonSet pod selecting on the key to go, then sets it back to true (mig-parted
    v0.15.0 pkg/mig/reconfigure/reconfigure.go shutdownKubernetesGPUClients, maybeSetPaused,
    waitForPodsWithNodeSelector); the REAL DaemonSet controller then removes the plugin's pod from
    that node and brings it back. The project's own label alone (what the values held before) is
    never touched by the MIG manager: that plugin keeps running through the change."""
    from components.addons.dra_driver import ADDON as DRA

    s = settings("aws")
    selector = DRA.values(context(DRA, s))["kubeletPlugin"]["nodeSelector"]
    node = cluster.node_names[0]
    cluster.kubectl("label", "node", *cluster.node_names, *(f"{k}={v}" for k, v in selector.items()), "--overwrite")
    for name, sel in (("dra-plugin-ours", selector), ("dra-plugin-before", {DRA_NODE_LABEL: "true"})):
        ds = worker(name, [{"operator": "Exists"}])
        ds["spec"]["template"]["spec"]["nodeSelector"] = sel
        cluster.apply(ds)
    everywhere, rest = set(cluster.node_names), set(cluster.node_names) - {node}
    until_running(cluster, "dra-plugin-ours", everywhere)
    until_running(cluster, "dra-plugin-before", everywhere)
    cluster.kubectl("label", "node", node, f"{GPU_CLIENT_LABEL}=paused-for-mig-change", "--overwrite")
    until_running(cluster, "dra-plugin-ours", rest)  # what waitForPodsWithNodeSelector waits for
    assert nodes_running(cluster, "dra-plugin-before") == everywhere  # never paused: still holds the GPUs
    cluster.kubectl("label", "node", node, f"{GPU_CLIENT_LABEL}=true", "--overwrite")
    until_running(cluster, "dra-plugin-ours", everywhere)


def until_running(cluster: Any, name: str, want: set[str]) -> None:
    """Until the DaemonSet's pods are bound to exactly `want` (a stale status is waited out)."""
    cluster.wait_for(f"DaemonSet {name} on {sorted(want)}", lambda: nodes_running(cluster, name) == want, timeout=60)

"""GpuClusterStandIn (gpucluster.py) run beside a REAL API server: the GPU Operator's GPUCluster
controller as far as ck8s-gpu's gate and smoke test see it, on the loopback control plane.

Each tick reads the GPUCluster, the nodes and the operator namespace's DaemonSets, runs one
Reconcile of the stand-in over them, and writes back what the operator writes: node labels
(nvidia.com/gpu.present, the DRA deploy label), the GPUCluster's status (status subresource), and
the state-dra-driver objects a GPUCluster's sync creates, owned by it (NVIDIA/gpu-operator v26.7.0
manifests/state-dra-driver/): the DeviceClasses gpu.nvidia.com and mig.nvidia.com of
0400_deviceclass-gpu.yaml and 0410_deviceclass-mig.yaml (their CEL selectors), and the kubelet
plugin's DaemonSet of 0500_daemonset.yaml (its name, its selector on
nvidia.com/gpu.deploy.dra-driver=true). Here the DaemonSet is real: the DaemonSet controller
schedules it, KWOK runs its pods, and the stand-in reads its true status, so the gate judges what
the cluster really did. The ResourceSlices are a test publisher's (no kubelet plugin runs on KWOK
nodes); NFD's PCI label is the test's (no NFD worker runs either).
"""

from __future__ import annotations

import copy
import json
import threading
from datetime import UTC, datetime
from typing import Any

from tests.fakes.gpu_operator.gpucluster import (
    DRA_DRIVER_LABEL,
    KUBELET_PLUGIN,
    NAME,
    NAMESPACE,
    GpuClusterStandIn,
    Store,
)

Obj = dict[str, Any]
DEVICE_CLASSES = {"gpu.nvidia.com": "gpu", "mig.nvidia.com": "mig"}  # name -> gpu.nvidia.com type
PLUGIN_IMAGE = "nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.0"  # never pulled: KWOK runs no container


class _Clock:
    def now(self) -> str:
        return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _owner(cluster: Obj) -> list[Obj]:
    return [{"apiVersion": "nvidia.com/v1alpha1", "kind": "GPUCluster", "name": NAME,
             "uid": cluster["metadata"]["uid"], "controller": True}]


def device_classes(cluster: Obj) -> list[Obj]:
    return [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
             "metadata": {"name": name, "ownerReferences": _owner(cluster)},
             "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                                           f"device.attributes['gpu.nvidia.com'].type == '{kind}'"}}]}}
            for name, kind in DEVICE_CLASSES.items()]


def kubelet_plugin(cluster: Obj, container: Obj | None = None) -> Obj:
    """`container`: what the pods run instead of the driver's image (on real kubelets, an image the
    node has: the simulated plugin itself runs on the host, tools/nodetier.py)."""
    labels = {"app": KUBELET_PLUGIN}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": KUBELET_PLUGIN, "namespace": NAMESPACE, "ownerReferences": _owner(cluster)},
            "spec": {"selector": {"matchLabels": labels},
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%"}},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"nodeSelector": {DRA_DRIVER_LABEL: "true"},
                                           "tolerations": [{"operator": "Exists"}],
                                           "containers": [container or {"name": "gpus", "image": PLUGIN_IMAGE}]}}}}


class _Live(GpuClusterStandIn):
    """The stand-in whose state-dra-driver objects are the API server's."""

    cluster_api: Any = None
    container: Obj | None = None

    def schedule_plugin(self) -> None:
        c = self.cluster_api
        assert self.store.cluster is not None
        if not c.kubectl("get", "namespace", NAMESPACE, "--ignore-not-found", "-o", "name").strip():
            self.store.daemonsets = {}  # the release has not made its namespace yet
            return
        c.apply([*device_classes(self.store.cluster), kubelet_plugin(self.store.cluster, self.container)])
        self.store.daemonsets = {KUBELET_PLUGIN: c.get_json("daemonset", KUBELET_PLUGIN, "-n", NAMESPACE)}


class LiveGpuCluster:
    """The controller loop in a thread (a context manager); `errors` keeps what a tick raised."""

    def __init__(self, cluster: Any, interval: float = 1.0, container: Obj | None = None) -> None:
        self.cluster, self.interval, self.container = cluster, interval, container
        self.errors: list[str] = []
        self.reconciles = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gpucluster-standin", daemon=True)

    def tick(self) -> None:
        c = self.cluster
        if not c.kubectl("get", "crd", "gpuclusters.nvidia.com", "--ignore-not-found", "-o", "name").strip():
            return  # the chart's crds/ are not installed yet
        live = c.get_json("gpuclusters.nvidia.com")["items"]
        if not live:
            return
        cluster = live[0]
        nodes = {n["metadata"]["name"]: n for n in c.get_json("nodes")["items"]}
        store = Store(cluster=copy.deepcopy(cluster), nodes=copy.deepcopy(nodes))
        op = _Live(store, _Clock(), seen_generation=0)
        op.cluster_api, op.container = c, self.container
        op.reconcile()
        self.reconciles += 1
        for name, node in store.nodes.items():
            before, after = nodes[name]["metadata"].get("labels") or {}, node["metadata"]["labels"]
            changes = [f"{k}={v}" for k, v in after.items() if before.get(k) != v]
            changes += [f"{k}-" for k in before if k not in after]
            if changes:
                c.kubectl("label", "node", name, "--overwrite", *changes)
        status = (store.cluster or {}).get("status")
        if status is not None and status != cluster.get("status"):
            c.kubectl("patch", "gpuclusters.nvidia.com", NAME, "--subresource=status", "--type=merge",
                      "-p", json.dumps({"status": status}))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.tick()
            except Exception as exc:  # a tick that failed is retried, and reported
                self.errors.append(f"{type(exc).__name__}: {exc}")

    def remove(self) -> None:
        """What the chart's pre-delete hook does (cmd/cleanup-gpuclusters): the GPUCluster goes, and
        with it (owner references) its operands."""
        self.cluster.kubectl("delete", "gpuclusters.nvidia.com", NAME, "--ignore-not-found", "--wait=false")
        self.cluster.kubectl("delete", "daemonset", KUBELET_PLUGIN, "-n", NAMESPACE, "--ignore-not-found")

    def __enter__(self) -> LiveGpuCluster:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

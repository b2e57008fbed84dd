"""The `local-kubelet` stack's cluster, for its integration test and its benchmark: the loopback
control plane with the stack's KWOK pool (slices from the test publisher), then the node tier's
real kubelet nodes for its kubelet pool (tools/nodetier.py). One recipe, so the benchmark measures
what the test proves."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import yaml

from components.instance_types import gpu_facts
from components.labels import SIMULATED_POOL_LABEL
from components.smoke.expectations import INSTANCE_TYPE_LABEL
from tests.helpers.cluster_gates import kubelet_gates, local_cluster_gates
from tests.helpers.tools import TOOLS_DIR, load_tool

STACK_FILE = TOOLS_DIR.parent / "stacks" / "Pulumi.local-kubelet.yaml"
SETTINGS_KEY = "ck8s-gpu:settings"
KWOK_POOL, KUBELET_POOL = "gpu", "kubelet"


def stack_settings() -> dict[str, Any]:
    return dict(yaml.safe_load(STACK_FILE.read_text())["config"][SETTINGS_KEY])


def pool(settings: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in settings["nodePools"] if p["name"] == name)


def gpu_count(instance_type: str) -> int:
    facts = gpu_facts(instance_type)
    assert facts is not None, instance_type
    return facts.count


def gpu_model(instance_type: str) -> Any:
    """What the simulated devices report, from components/instance_types.py."""
    facts = gpu_facts(instance_type)
    assert facts is not None, instance_type
    return load_tool("dra_publisher").GpuModel(product_name=facts.product_name, architecture=facts.architecture,
                                               memory=f"{facts.memory_mib}Mi")


def start_kwok_pool(work: Path, bin_dir: Path, settings: dict[str, Any]) -> tuple[Any, dict[str, int]]:
    """The control plane with the KWOK pool's nodes labelled and published (the DeviceClass too).
    Returns (LocalCluster, node -> GPUs); the cluster is down again if anything failed."""
    lc, dra = load_tool("localcluster"), load_tool("dra_publisher")
    kwok = pool(settings, KWOK_POOL)
    nodes = {f"gpu-node-{i}": gpu_count(kwok["instanceType"]) for i in range(kwok["desiredSize"])}
    cluster = lc.LocalCluster(work / "cluster", nodes=len(nodes), instance_type=kwok["instanceType"],
                              bin_dir=bin_dir, name=f"ck8s-{uuid.uuid4().hex[:6]}", **local_cluster_gates(settings))
    cluster.up()
    try:
        for node in nodes:
            cluster.kubectl("label", "node", node, f"{SIMULATED_POOL_LABEL}={KWOK_POOL}", "--overwrite")
        model = gpu_model(kwok["instanceType"])
        cluster.apply([dra.device_class_manifest()]
                      + [dra.resource_slice_manifest(n, g, model) for n, g in nodes.items()])
    except BaseException:
        cluster.down()
        raise
    return cluster, nodes


def kubelet_tier(work: Path, bin_dir: Path, cluster: Any, settings: dict[str, Any]) -> tuple[Any, dict[str, int]]:
    """The node tier for the kubelet pool, not started yet (NodeTier, node -> GPUs)."""
    nt, dra = load_tool("nodetier"), load_tool("dra_publisher")
    kubelet = pool(settings, KUBELET_POOL)
    itype = kubelet["instanceType"]
    nodes = {f"kubelet-node-{i}": gpu_count(itype) for i in range(kubelet["desiredSize"])}
    model = gpu_model(itype)
    specs = [nt.NodeSpec(n, dra.resource_slice_manifest(n, g, model)["spec"]["devices"],
                         labels={SIMULATED_POOL_LABEL: KUBELET_POOL, INSTANCE_TYPE_LABEL: itype},
                         feature_gates=kubelet_gates(settings))
             for n, g in nodes.items()]
    return nt.NodeTier(work / "nodes", Path(cluster.kubeconfig), specs, bin_dir=bin_dir), nodes

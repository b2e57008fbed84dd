"""The `local-kubelet` stack's cluster, for its integration test and its benchmark: the loopback
control plane with the stack's KWOK pool (slices from the test publisher), then the node tier's
real kubelet nodes for its kubelet pool (tools/nodetier.py). One recipe, so the benchmark measures
what the test proves."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import yaml

from components.addons import dra_driver_gates as dra_gates
from components.facts.feature_gates import smoke_gpu_health_on
from components.facts.mig import config_name, pool_mig_devices
from components.settings.facts import compute_domains_on
from components.settings.model import Settings
from components.tables.instance_types import gpu_facts, nvlink_domain
from components.tables.labels import INSTANCE_TYPE_LABEL, MIG_CONFIG_LABEL, SIMULATED_POOL_LABEL
from components.tables.mig_profiles import placements
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
    """What the simulated devices report, from components/tables/instance_types.py (productName as NVML
    spells it, the product's compute capability: tools/dra_publisher.py GpuModel.of)."""
    facts = gpu_facts(instance_type)
    assert facts is not None, instance_type
    return load_tool("dra_publisher").GpuModel.of(facts.product_name, facts.architecture, facts.memory_mib)


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
        # Both classes, as the DRA driver's chart creates them (deviceclass-gpu.yaml, deviceclass-mig.yaml).
        cluster.apply([dra.device_class_manifest(), dra.mig_device_class_manifest()]
                      + [dra.resource_slice_manifest(n, g, model) for n, g in nodes.items()])
    except BaseException:
        cluster.down()
        raise
    return cluster, nodes


def kubelet_pools(settings: dict[str, Any]) -> list[dict[str, Any]]:
    return [pool(settings, name) for name in settings["local"]["kubeletPools"]]


def node_specs(settings: dict[str, Any]) -> list[Any]:
    """One NodeSpec per node of every kubelet pool, shaped as the real nodes would be for these
    settings: the devices NVIDIA's driver publishes for the pool's instance type (Fabric Manager
    partition attributes on NVSwitch baseboards when gpuStack.nvlinkPartitions is on), the driver's
    gates as the dra-driver add-on sets them, the compute-domain plugin on multi-node NVLink pools
    when compute domains are on, and the kubelet gates of the table. With the gpuHealth case on,
    gpu-0 of every node of smokeTest.pool carries NVIDIA's health taint: the allocator tries devices
    in slice order, so a scheduler ignoring taints would hand it out first. A pool whose MIG layout
    cuts its GPUs publishes each GPU as that layout's MIG devices (placed by components/tables/
    mig_profiles.py placements) and its nodes carry the MIG manager's label, as they would have
    joined with it (components/facts/nodes.py pool_node_labels): the simulated driver plays the
    MIG manager having applied the layout."""
    nt, dra = load_tool("nodetier"), load_tool("dra_publisher")
    parsed = Settings.model_validate(settings)
    driver_gates = dra_gates.feature_gates(parsed)
    kubelet = kubelet_gates(settings)
    smoke_pool, health, domains = parsed.smoke_test.pool, smoke_gpu_health_on(parsed), compute_domains_on(parsed)
    specs = []
    for p in kubelet_pools(settings):
        itype, name = p["instanceType"], p["name"]
        gpus, domain = gpu_count(itype), nvlink_domain(itype)
        parsed_pool = next(pp for pp in parsed.node_pools if pp.name == name)
        slots = mig_slots(parsed_pool)
        fabric = (dra.hgx_8gpu_partitions() if parsed.gpu_stack.nvlink_partitions and domain.nvswitch
                  and domain.scope == "single-node" and gpus == 8 and not slots else None)
        tainted = [0] if health and name == smoke_pool and not slots else []
        labels = {SIMULATED_POOL_LABEL: name, INSTANCE_TYPE_LABEL: itype}
        if parsed_pool.mig is not None:
            labels[MIG_CONFIG_LABEL] = config_name(parsed_pool)
        for i in range(p["desiredSize"]):
            node = f"{name}-node-{i}"
            devices = dra.resource_slice_manifest(node, gpus, gpu_model(itype), partitions=fabric,
                                                  unhealthy=tainted, mig=slots)["spec"]["devices"]
            specs.append(nt.NodeSpec(
                node, devices, labels=labels,
                mig_parents=dra.mig_parents(node, gpus, gpu_model(itype)) if slots else [],
                compute_domains=domains and domain.scope == "multi-node",
                feature_gates=kubelet, gpu_plugin_gates=driver_gates, fabric_partitions=fabric,
                # as the aws stacks' GPU workers (gpuStack.toolkit host on a CDI track): the runtimes
                # behind every RuntimeClass the GPU Operator creates
                host_toolkit=True))
    return specs


def mig_slots(pool: Any) -> list[Any]:
    """The MIG instances on each GPU of a pool whose layout cuts them ([] otherwise), as the
    publisher takes them."""
    facts = gpu_facts(pool.instance_type)
    devices = pool_mig_devices(pool) if pool.cuts_gpus else None
    if not devices or facts is None:
        return []
    dra = load_tool("dra_publisher")
    return [dra.MigSlot(m.profile, m.profile_id, m.start, m.size, m.device_suffix)
            for m in placements(facts.product_name, devices)]


def kubelet_tier(work: Path, bin_dir: Path, cluster: Any, settings: dict[str, Any]) -> tuple[Any, dict[str, int]]:
    """The node tier for the kubelet pools, not started yet (NodeTier, node -> GPUs)."""
    nt = load_tool("nodetier")
    specs = node_specs(settings)
    nodes = {s.name: s.gpus for s in specs}
    return nt.NodeTier(work / "nodes", Path(cluster.kubeconfig), specs, bin_dir=bin_dir), nodes

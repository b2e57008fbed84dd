"""Facts derived from settings that several components need (pure functions)."""

from __future__ import annotations

from typing import Any

from ..tables.instance_types import GpuFacts, gpu_facts, network_layer, network_topology_layers, nvlink_domain
from .model import AWS_TOPOLOGY_LEVELS, NodePoolSettings, Settings, TopologyLevelSettings
from .problems import ROOT


def ami_fields(s: Settings) -> list[tuple[str, str | None]]:
    """Each image setting with its field path: the control planes', then every pool's."""
    return [(f"{ROOT}.controlPlane.ami", s.control_plane.ami)] + [
        (f"{ROOT}.nodePools[{i}].ami", p.ami) for i, p in enumerate(s.node_pools)]


def pool_gpus(pool: NodePoolSettings) -> GpuFacts | None:
    """The pool's GPU facts: declared ones win over the built-in table."""
    if pool.gpu is not None:
        return GpuFacts(
            count=pool.gpu.count,
            product_name=pool.gpu.product_name,
            memory_mib=pool.gpu.memory_gib * 1024,
            architecture="unknown",
            mig_capable=pool.gpu.mig_capable,
        )
    return gpu_facts(pool.instance_type)


def mirrored_pool(settings: Settings) -> NodePoolSettings:
    """The pool kind simulates (settings.kind.mirrorPool, else the first): kind runs that one only."""
    wanted = settings.kind.mirror_pool
    for pool in settings.node_pools:
        if wanted is None or pool.name == wanted:
            return pool
    raise ValueError(f"settings.kind.mirrorPool: no node pool named {wanted!r}")


def provided_pools(settings: Settings) -> tuple[NodePoolSettings, ...]:
    """The pools whose nodes exist on the platform: on kind only the mirrored one."""
    return (mirrored_pool(settings),) if settings.platform == "kind" else settings.node_pools


def smoke_pools(settings: Settings) -> tuple[NodePoolSettings, ...]:
    """The pools the smoke pods may run on: smokeTest.pool's alone, else every provided pool."""
    pools = provided_pools(settings)
    wanted = settings.smoke_test.pool
    return pools if wanted is None else tuple(p for p in pools if p.name == wanted)


def gpus_provided(settings: Settings, pools: tuple[NodePoolSettings, ...] | None = None) -> int:
    """Whole GPUs the stack provides at its desired size (what the smoke test can count on); an
    autoscaled pool at its maxSize: the smoke pods' own claims make the autoscaler launch its nodes
    (docs/autoscaling.md). The one count: the settings rules, the kind platform and the add-ons all
    ask this."""
    total = 0
    for pool in provided_pools(settings) if pools is None else pools:
        facts = pool_gpus(pool)
        if facts is not None and not pool.cuts_gpus:  # MIG instances are no whole GPUs
            total += facts.count * (pool.max_nodes if pool.autoscaling is not None else pool.start_size)
    return total


def nested(values: dict[str, Any], dotted: str) -> Any:
    """`nested(v, "a.b.c")` -> v["a"]["b"]["c"] or None when any step is missing."""
    node: Any = values
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def truthy(value: object) -> bool:
    """As Helm templates read a value: `true`, "true", 1 all switch a component on; "false", "0",
    "no", "off", "" and null do not. Every rule reading add-on values asks this one."""
    if isinstance(value, str):
        return value.strip().lower() not in ("", "false", "0", "no", "off", "null")
    return bool(value)


def compute_domains_on(settings: Settings) -> bool:
    """gpuStack.computeDomains, or (null) whether a pool the platform provides has multi-node NVLink
    (components/tables/instance_types.py nvlink_domain): ComputeDomains only mean something on an NVLink
    fabric that spans nodes (IMEX), so a stack of NVSwitch or PCIe pools keeps them off."""
    explicit = settings.gpu_stack.compute_domains
    if explicit is not None:
        return explicit
    return any(nvlink_domain(p.instance_type).scope == "multi-node" for p in provided_pools(settings))


def gpu_pools(settings: Settings) -> tuple[NodePoolSettings, ...]:
    """The provided pools whose nodes have GPUs (declared or from the instance-type table)."""
    return tuple(p for p in provided_pools(settings) if pool_gpus(p) is not None)


def topology_levels(settings: Settings) -> tuple[TopologyLevelSettings, ...]:
    """gpuStack.topology.levels, or (null) the AWS levels whose labels every GPU node gets: zone and
    hostname always, network layer N only where every GPU pool's instance type returns N network
    nodes (components/tables/instance_types.py NETWORK_TOPOLOGY_LAYERS). KAI counts a node in a
    Topology only when it has every level's label (v0.17.0 pkg/scheduler/plugins/topology/common.go
    isNodePartOfTopology)."""
    explicit = settings.gpu_stack.topology.levels
    if explicit is not None:
        return explicit
    pools = gpu_pools(settings)
    have = min((network_topology_layers(p.instance_type) for p in pools), default=0)
    return tuple(lv for lv in AWS_TOPOLOGY_LEVELS if (n := network_layer(lv.node_label)) is None or n <= have)

"""The settings rules of smoke case `allReduce` (pure). They read the instance table, the pools'
EFA and the KAI Topology, which sit above the settings' own rules: components/validate.py runs
them after those (`validate()` is the one gate)."""

from __future__ import annotations

from collections.abc import Iterator

from ..addons.kai_queues import topology_enabled
from ..addons.selected import installed
from ..facts.efa import efa_enabled
from ..settings.facts import topology_levels
from ..settings.model import Settings
from ..settings.problems import ROOT, Problem, cut
from ..settings.rules.queues import smoke_quota_problems
from ..settings.rules.smoke import SIMULATED_GPUS
from . import all_reduce


def all_reduce_problems(s: Settings) -> Iterator[Problem]:
    """smokeTest.allReduce (docs/smoke-test.md): real GPUs, NCCL and EFA on whole nodes of one pool,
    a KAI gang within one level of the Topology, and a bus-bandwidth floor to hold it to."""
    t, a = s.smoke_test, s.smoke_test.all_reduce
    path = f"{ROOT}.smokeTest.allReduce"
    if not (t.enabled and a.enabled):
        return
    if s.traits.simulated_gpus:
        where = SIMULATED_GPUS.get(s.platform, f"the {s.platform} platform's simulated driver")
        yield (f"{path}.enabled", f"the GPUs here are simulated ({where}): no NCCL, no EFA and no real GPU, so "
                                  "all_reduce_perf cannot run; turn it on for aws (or existing) clusters with EFA")
        return
    if t.scheduler != "kai":
        yield f"{path}.enabled", "needs smokeTest.scheduler kai: its pods are one topology-aware gang (a KAI PodGroup)"
    elif not topology_enabled(s, installed(s)):  # whether the program renders the Topology at all
        yield f"{path}.enabled", "needs the KAI Topology (settings.gpuStack.topology.enabled) its gang is placed in"
    if all_reduce.topology_label(s) is None:
        levels = ", ".join(lv.alias or lv.node_label for lv in topology_levels(s))
        yield (f"{path}.topologyLevel", f"'{cut(a.topology_level)}' is no level of Topology "
                                        f"'{s.gpu_stack.topology.name}' (gpuStack.topology.levels: {levels})")
    if all_reduce.size_bytes(a.min_bytes) > all_reduce.size_bytes(a.max_bytes):
        yield f"{path}.minBytes", f"{a.min_bytes} is above maxBytes {a.max_bytes}"
    if not s.traits.knows_node_pools:
        yield f"{path}.pool", f"the {s.platform} platform's pools are not known here: no node shape to test"
        return
    found = all_reduce.pool(s)
    if found is None:
        if a.pool is not None:
            names = ", ".join(p.name for p in s.node_pools)
            yield f"{path}.pool", f"'{a.pool}' is not a node pool ({names})"
        else:
            yield (f"{path}.pool", "no node pool's instance type has EFA (settings.nodePools[].efa): allReduce "
                                   "measures NCCL over EFA between nodes")
        return
    i, pool = found
    if not efa_enabled(pool):
        yield (f"{ROOT}.nodePools[{i}].efa", f"is off for pool '{pool.name}' ({pool.instance_type}), which "
                                             "smokeTest.allReduce runs on: it measures NCCL over EFA (its default "
                                             "is on only with maxSize > 1 and an availabilityZone)")
    if pool.max_nodes < a.nodes:
        yield (f"{path}.nodes", f"needs {a.nodes} nodes of pool '{pool.name}', which holds at most {pool.max_nodes} "
                                f"(settings.nodePools[{i}].maxSize)")
    shape = all_reduce.node_shape(pool)
    if shape is None:
        return  # unknown GPU facts: _pools reports them
    if all_reduce.floor(s, pool.instance_type) is None:
        known = ", ".join(sorted(all_reduce.FLOORS))
        yield (f"{path}.minBusBandwidthGBps", f"no published bus-bandwidth floor for {pool.instance_type} (known: "
                                              f"{known}): set the GB/s the run must reach")
    if t.scheduler == "kai":
        yield from smoke_quota_problems(s, a.nodes * shape.gpus, "smokeTest.allReduce (nodes x GPUs per node)",
                                        "smokeTest.allReduce.nodes")

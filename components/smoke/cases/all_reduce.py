"""Case `all-reduce` (smokeTest.allReduce): all_reduce_perf across whole nodes over EFA. The
verdict logic is components/smoke/all_reduce.py; the settings rules components/smoke/all_reduce_rules.py."""

from __future__ import annotations

from typing import Any

from ...facts.efa import HUGEPAGES_2MI
from ...facts.nodes import pool_label
from ...settings.model import Settings
from ...tables import pins
from .. import all_reduce
from ..all_reduce_rules import all_reduce_problems
from ..checks.base import Check
from ..expectations import NO_KUBELET, CaseExpectation, all_reduce_expectation
from ..images import image_values, pinned_image
from ..snapshot import name
from ..view import PASSED, SKIPPED, CheckResult, View, outcome
from .base import CaseFamily, NameFn

# allReduce pods: whole nodes, so generous; hugepages and extended resources need requests == limits
# (Kubernetes: hugepages-* requests need cpu or memory requests too). /dev/shm is memory-backed and
# counts against the memory limit: NCCL's intra-node SHM transport and its proxy buffers live there.
ALL_REDUCE_CPU_PER_GPU = 4
ALL_REDUCE_MEMORY = "96Gi"
ALL_REDUCE_SHM = "16Gi"
ALL_REDUCE_SSH_PORT = 2222  # sshd in every pod but index 0 (unprivileged: above 1024)
ALL_REDUCE_KEY_PORT = 2223  # index 0 serves its per-run public key here until every peer has it


def all_reduce_values(settings: Settings) -> dict[str, Any]:
    """charts/gpu-smoke-test `allReduce` (templates/job-all-reduce.yaml); {"enabled": false} when off."""
    t = settings.smoke_test
    a = t.all_reduce
    if not a.enabled:
        return {"enabled": False}
    found = all_reduce.pool(settings)
    shape = all_reduce.node_shape(found[1]) if found else None
    level = all_reduce.topology_label(settings)
    if found is None or shape is None or not shape.efa or level is None:
        # The settings rules refuse each of these first (components/smoke/all_reduce_rules.py):
        # a plain ValueError, so components/validate.py leaves their message alone.
        raise ValueError("smokeTest.allReduce needs a pool with EFA and known GPUs, and a topology level")
    hugepages = f"{HUGEPAGES_2MI * 2}Mi"
    exact = {"memory": ALL_REDUCE_MEMORY, "hugepages-2Mi": hugepages, all_reduce.EFA_RESOURCE: str(shape.efa)}
    return {
        "enabled": True,
        "image": image_values(pinned_image(a.image, pins.image("nccl-tests")), t.registry,
                              settings.images.mirror),
        "nodes": a.nodes,
        "gpusPerNode": shape.gpus,
        "nodeSelector": {pool_label(settings): found[1].name},
        "topology": {"name": settings.gpu_stack.topology.name, "level": level, "placement": a.placement},
        "minBytes": a.min_bytes,
        "maxBytes": a.max_bytes,
        "sshPort": ALL_REDUCE_SSH_PORT,
        "keyPort": ALL_REDUCE_KEY_PORT,
        "timeoutSeconds": t.timeout_seconds,
        "shmSizeLimit": ALL_REDUCE_SHM,
        "resources": {"requests": {"cpu": str(ALL_REDUCE_CPU_PER_GPU * shape.gpus), **exact}, "limits": exact},
    }


def expect(s: Settings, name: NameFn) -> tuple[CaseExpectation, ...]:
    if not s.smoke_test.all_reduce.enabled:
        return ()
    return (all_reduce_expectation(s, name(all_reduce.CASE)),)


def values(s: Settings) -> dict[str, Any]:
    return {"allReduce": all_reduce_values(s)}


def check_all_reduce(v: View) -> CheckResult:
    """smokeTest.allReduce: what all_reduce_perf reported, judged by components/smoke/all_reduce.py.
    A failure is named by its first failing hop (ranks, nccl network, results, bus bandwidth)."""
    check = "case-all-reduce"
    case = v.exp.case(all_reduce.CASE)
    if case is None:
        return CheckResult(check, all_reduce.HOP, SKIPPED, "smokeTest.allReduce is off")
    if not v.exp.in_container:
        return CheckResult(check, all_reduce.HOP, SKIPPED, NO_KUBELET)
    text = all_reduce.report_log(v.snap.logs, [name(p) for p in v.by_case[case.case]])
    out = all_reduce.verdict(text, nodes=case.pods, gpus=case.gpus_per_pod, floor_gbps=case.min_bus_bandwidth,
                             source=case.floor_source)
    if not out.problems:
        return CheckResult(check, all_reduce.HOP, PASSED, out.summary)
    return outcome(check, out.problems[0][0], [f"[{hop}] {p}" for hop, p in out.problems], "")




FAMILY = CaseFamily("allReduce", checks=(Check("case-all-reduce", all_reduce.HOP, check_all_reduce),),
                    expect=expect, values=values, problems=all_reduce_problems)

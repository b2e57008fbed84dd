"""Case `nvlink-group` (smokeTest.nvlinkGroup): one pod holding `gpus` GPUs of ONE NVLink (NVSwitch)
partition in one claim, as NVIDIA's demo demo/specs/fabric-manager-partitioning does.

With its FabricManagerPartitioning gate the driver publishes, per GPU, int attributes
`partition1|2|4|8` naming the Fabric Manager partition of that size the GPU belongs to
(dra-driver-nvidia-gpu 0.5.0-dev 95932046 cmd/gpu-kubelet-plugin/deviceinfo.go
addFabricManagerAttributes), and refuses at prepare a claim whose GPUs are not exactly one FM partition
(device_state.go activateFabricPartition -> resolveFabricPartition). The claim asks `count: N` with
`matchAttribute: gpu.nvidia.com/partition<N>` (pkg/featuregates/featuregates.go, FabricManagerPartitioning).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...facts.nodes import pool_label
from ...settings.facts import pool_gpus
from ...settings.model import NodePoolSettings, Settings
from ...settings.problems import ROOT, Problem
from ...settings.rules.queues import smoke_quota_problems
from ...settings.rules.smoke import SIMULATED_GPUS
from ...tables.instance_types import nvlink_domain
from ..checks.base import Check
from ..expectations import DRIVER, CaseExpectation
from ..snapshot import Obj, container_state, name, start_failure
from ..view import FAILED, SKIPPED, CheckResult, View, outcome
from .base import CaseFamily, NameFn

CASE = "nvlink-group"
CHECK, HOP = "case-nvlink-group", "NVLink group"
# The Fabric Manager partition sizes of an 8-GPU HGX baseboard (NVIDIA Fabric Manager User Guide,
# "Shared NVSwitch" partition table; the driver publishes one attribute per size).
PARTITION_SIZES = (1, 2, 4, 8)


def partition_attribute(gpus: int) -> str:
    """The unqualified attribute name the driver publishes (qualified: gpu.nvidia.com/<name>)."""
    return f"partition{gpus}"


def nvswitch_pool(p: NodePoolSettings) -> bool:
    """All-to-all NVLink inside the node only: Fabric Manager partitions exist on single-node NVSwitch
    systems (the driver's feature-gates.md: "in single-node NVL systems"); a node of one GPU has no fabric
    (device_state.go: "no NVSwitch/NVLink5 fabric detected on this node; skipping Fabric Manager")."""
    d = nvlink_domain(p.instance_type)
    return d.scope == "single-node" and d.nvswitch and d.gpus > 1


def pool(s: Settings) -> tuple[int, NodePoolSettings] | None:
    """(index, pool) the case runs on: nvlinkGroup.pool, else smokeTest.pool, else the first NVSwitch pool."""
    wanted = s.smoke_test.nvlink_group.pool or s.smoke_test.pool
    pools = list(enumerate(s.node_pools))
    if wanted is not None:
        return next(((i, p) for i, p in pools if p.name == wanted), None)
    return next(((i, p) for i, p in pools if nvswitch_pool(p)), None)


def expect(s: Settings, name: NameFn) -> tuple[CaseExpectation, ...]:
    t = s.smoke_test
    if not t.nvlink_group.enabled:
        return ()
    found = pool(s)
    n = t.nvlink_group.gpus
    return (CaseExpectation(CASE, name(CASE), 1, ("probe",), t.device_class, distinct=False,
                            params=(("gpus", str(n)), ("attribute", partition_attribute(n)),
                                    ("pool", found[1].name if found else ""))),)


def values(s: Settings) -> dict[str, Any]:
    g = s.smoke_test.nvlink_group
    if not (s.smoke_test.enabled and g.enabled):
        return {"nvlinkGroup": {"enabled": False}}
    found = pool(s)
    if found is None:
        raise ValueError("smokeTest.nvlinkGroup needs a pool with NVSwitch GPUs")  # problems() refuses it first
    return {"nvlinkGroup": {"enabled": True, "gpus": g.gpus, "deviceClassName": s.smoke_test.device_class,
                            "matchAttribute": f"{DRIVER}/{partition_attribute(g.gpus)}",
                            "nodeSelector": {pool_label(s): found[1].name}}}


def problems(s: Settings) -> Iterator[Problem]:
    """smokeTest.nvlinkGroup (docs/smoke-test.md "nvlinkGroup")."""
    t, g = s.smoke_test, s.smoke_test.nvlink_group
    path = f"{ROOT}.smokeTest.nvlinkGroup"
    if not (t.enabled and g.enabled):
        return
    if g.gpus not in PARTITION_SIZES:
        yield (f"{path}.gpus", f"{g.gpus} is no Fabric Manager partition size of an 8-GPU HGX baseboard "
                               f"({', '.join(map(str, PARTITION_SIZES))}): no gpu.nvidia.com/partition{g.gpus} exists")
    if not s.gpu_stack.nvlink_partitions:
        yield (f"{path}.enabled", "needs settings.gpuStack.nvlinkPartitions: the DRA driver publishes "
                                  "gpu.nvidia.com/partition<N> only with its FabricManagerPartitioning gate")
    if s.gpu_stack.allocation != "dra":
        yield f"{path}.enabled", "needs gpuStack.allocation dra: the partition is a DRA claim constraint"
    if not t.whole_gpu:
        yield (f"{path}.enabled", "allocates whole GPUs, and wholeGpu false says the cluster hands out none: turn it "
                                  "off or set wholeGpu true")
    if not s.traits.knows_node_pools:
        yield f"{path}.pool", f"the {s.platform} platform's pools are not known here: no NVSwitch node to pick"
        return
    field = f"{path}.pool" if g.pool is not None else (f"{ROOT}.smokeTest.pool" if t.pool is not None
                                                      else f"{path}.pool")
    found = pool(s)
    if found is None:
        wanted = g.pool or t.pool
        names = ", ".join(p.name for p in s.node_pools)
        yield field, (f"'{wanted}' is not a node pool ({names})" if wanted is not None else
                      "no node pool's instance type has NVSwitch GPUs (components/tables/instance_types.py "
                      "nvlink_domain scope single-node): set smokeTest.nvlinkGroup.pool")
        return
    if t.scheduler == "kai":
        yield from smoke_quota_problems(s, g.gpus, "smokeTest.nvlinkGroup", "smokeTest.nvlinkGroup.gpus")
    _i, p = found
    domain = nvlink_domain(p.instance_type)
    facts = pool_gpus(p)
    if not nvswitch_pool(p):
        how = {"multi-node": "its NVLink domain spans nodes (an UltraServer: ComputeDomains, not Fabric Manager "
                             "partitions)", "none": "its GPUs have no NVSwitch"}.get(domain.scope, "one GPU per node")
        yield field, (f"pool '{p.name}' ({p.instance_type}) has no single-node NVSwitch fabric: {how}; Fabric "
                      "Manager partitions exist only there")
    elif facts is not None and facts.count < g.gpus:
        yield (f"{path}.gpus", f"needs {g.gpus} GPUs of one node, but pool '{p.name}' ({p.instance_type}) has "
                               f"{facts.count} per node")
    if s.platform == "local" and p.name not in s.local.kubelet_pools:
        yield field, (f"pool '{p.name}' is a KWOK pool of {SIMULATED_GPUS['local']}, which publishes no partition "
                      "attributes and prepares nothing: pick a kubelet pool (settings.local.kubeletPools), whose "
                      "simulated kubelet plugin models Fabric Manager")
    elif s.platform == "kind":
        yield f"{path}.enabled", f"{SIMULATED_GPUS['kind']} publishes no partition attributes: no claim could allocate"


def check_nvlink_group(v: View) -> CheckResult:
    """The claim holds exactly N devices on the pod's node, all with the same partition<N> value in the
    slices; container-device compares them with what the container saw (its result is repeated when it
    had nothing to compare). A pod that never started names the hop that stopped it."""
    case = v.exp.case(CASE)
    if case is None:
        return CheckResult(CHECK, HOP, SKIPPED, "smokeTest.nvlinkGroup is off")
    n, attr = int(case.param("gpus", "0")), case.param("attribute")
    pods = v.by_case[CASE]
    if not pods:
        return CheckResult(CHECK, HOP, FAILED, f"no pod of Job {case.job} exists")
    out: list[str] = []
    done = ""
    for pod in pods:
        p, node = name(pod), pod.get("spec", {}).get("nodeName")
        cname, _claim = v.claim(pod)
        allocated = v.allocated(pod)
        if not allocated:
            out.append(f"pod {p}'s claim {cname or '(none)'} was never allocated {n} GPUs of one NVLink partition: "
                       f"{v.why_pending(pod)}")
            continue
        where = ", ".join(f"{r.get('pool')}/{r.get('device')}" for r, _sd in allocated)
        if len(allocated) != n:
            out.append(f"claim {cname} of pod {p} holds {len(allocated)} device(s) ({where}), expected {n}")
        # The API server does not refuse a device listed twice among a claim's results (kubernetes
        # v1.34.4 pkg/apis/resource/validation/validation.go validateDeviceAllocationResult: a slice,
        # not a set; with consumable capacity one device may legitimately appear under two shareIDs),
        # so N results are N GPUs only when they name N distinct devices.
        keys = [(r.get("driver"), r.get("pool"), r.get("device")) for r, _sd in allocated]
        twice = sorted({f"{k[1]}/{k[2]}" for k in keys if keys.count(k) > 1})
        if twice:
            out.append(f"claim {cname} of pod {p} holds {', '.join(twice)} more than once: an NVLink group of {n} "
                       f"needs {n} distinct GPUs, and only {len(set(keys))} are")
        values: dict[str, list[str]] = {}
        for r, sd in allocated:
            dev = f"{r.get('pool')}/{r.get('device')}"
            if sd is None:
                out.append(f"claim {cname} of pod {p} holds {dev}, which no {v.exp.driver} ResourceSlice advertises")
                continue
            if node and sd.node != node:
                out.append(f"claim {cname} of pod {p} holds {dev} on node {sd.node or '(none)'}, but the pod ran on "
                           f"{node}")
            value = v.attr(sd, attr)
            values.setdefault("missing" if value is None else str(value), []).append(dev)
        if len(values) > 1 or "missing" in values:
            shown = "; ".join(f"{attr}={k}: {', '.join(d)}" if k != "missing" else f"no {attr}: {', '.join(d)}"
                              for k, d in sorted(values.items()))
            out.append(f"the allocation splits NVLink partition {attr} (claim {cname} of pod {p}): {shown}")
        if v.exp.in_container:
            out += _container_view(v, case, pod)
        if values and not out:
            done = f"{where} on {node}, one {attr} ({next(iter(values))})"
    return outcome(CHECK, HOP, out, f"claim holds {n} GPU(s) of one NVLink partition: {done}"
                   + ("" if v.exp.in_container else "; the container's view not checked (no kubelet)"))


def _container_view(v: View, case: CaseExpectation, pod: Obj) -> list[str]:
    """Why the container's GPUs could not be compared (container-device does the comparison itself)."""
    p = name(pod)
    why = start_failure(pod, v.pod_events(pod))
    if why:
        return [f"pod {p} never started, so its NVLink partition was never set up: claim prepared? no: {why}"]
    key = f"{p}/{case.containers[0]}"
    text = v.snap.logs.get(key)
    if text is None:
        return [f"no log from {key} ({v.snap.log_errors.get(key) or container_state(pod, case.containers[0])}): "
                "nothing to compare with the partition's GPUs"]
    seen = v.parsed_log(text)
    if not seen.began or (v.exp.probe_expect == "nvidia-smi" and not seen.uuids):
        return [f"{key} listed no GPU: nothing to compare with the partition's GPUs (container-device says why)"]
    return []


FAMILY = CaseFamily("nvlinkGroup", checks=(Check(CHECK, HOP, check_nvlink_group),), expect=expect, values=values,
                    problems=problems)

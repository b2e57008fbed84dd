"""Case `compute-domain` (smokeTest.computeDomain): NVIDIA's IMEX channel injection demo across nodes
(dra-driver-nvidia-gpu demo/specs/imex/channel-injection.yaml, 95932046 = chart 0.5.0-dev): one
ComputeDomain with numNodes N, N pods spread one per node, each holding its GPU claim `gpu` and the
channel claim `channel` from the ResourceClaimTemplate the compute-domain controller makes for it.

Upstream facts judged here (dra-driver-nvidia-gpu 95932046):
- api/nvidia.com/resource/v1beta1/computedomain.go: spec.numNodes, spec.channel.resourceClaimTemplate.name,
  status.status Ready|NotReady, status.nodes[] {name, ipAddress, cliqueID, index, status}.
- cmd/compute-domain-controller/computedomain.go calculateGlobalStatus: Ready once status.nodes lists
  >= numNodes nodes and none is NotReady; cdstatus.go syncCD fills status.nodes from the
  ComputeDomainClique daemons (pkg/featuregates ComputeDomainCliques: beta, on by default since 0.3),
  so the CD's own status is the one aggregate to read in both modes.
- cmd/compute-domain-kubelet-plugin: driver compute-domain.nvidia.com, one pool per node, devices
  `channel-<id>` (deviceinfo.go CanonicalName) with int attribute `id`; nvlib.go
  getNVCapIMEXChannelDeviceInfo injects /dev/nvidia-caps-imex-channels/channel<id>.
- A node leaves the domain when its claim is unprepared, so the runner records the CD while the
  barrier holds the pods (components/smoke/run.py), not after the Job finished.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...facts.nodes import pool_label
from ...settings.facts import compute_domains_on, provided_pools
from ...settings.model import NodePoolSettings, Settings
from ...settings.problems import ROOT, Problem
from ...settings.rules.queues import smoke_quota_problems
from ...settings.rules.smoke import SIMULATED_GPUS
from ...tables.instance_types import nvlink_domain
from ..checks.base import Check
from ..expectations import NO_KUBELET, CaseExpectation
from ..snapshot import Obj, allocation_nodes, allocation_results, attribute, claim_of, name
from ..view import SKIPPED, CheckResult, View, outcome
from .base import CaseFamily, NameFn

CASE = "compute-domain"
HOP = "IMEX channel"
CHECK = "case-compute-domain"
CD_API = "resource.nvidia.com/v1beta1"
CD_KIND = "ComputeDomain"
CD_DRIVER = "compute-domain.nvidia.com"
CHANNEL_CLAIM = "channel"  # the pod's claim entry for the IMEX channel
CHANNEL_DIR = "/dev/nvidia-caps-imex-channels"
READY = "Ready"
# Chart object parts ("<release>-<part>-<runId>"): the CD is named like the Job (another kind).
CD_PART = CASE
CHANNEL_TEMPLATE_PART = "imex-channel"
GPU_TEMPLATE_PART = "compute-domain-gpu"


def channel_path(channel_id: int) -> str:
    return f"{CHANNEL_DIR}/channel{channel_id}"


def multi_node(pool: NodePoolSettings) -> bool:
    return nvlink_domain(pool.instance_type).scope == "multi-node"


def case_pool(s: Settings) -> NodePoolSettings | None:
    """computeDomain.pool, else smokeTest.pool, else the first provided pool with multi-node NVLink."""
    wanted = s.smoke_test.compute_domain.pool or s.smoke_test.pool
    pools = provided_pools(s)
    if wanted is not None:
        return next((p for p in pools if p.name == wanted), None)
    return next((p for p in pools if multi_node(p)), None)


def expect(s: Settings, name: NameFn) -> tuple[CaseExpectation, ...]:
    c = s.smoke_test.compute_domain
    pool = case_pool(s)
    if not c.enabled or pool is None:
        return ()
    params = (("computeDomain", name(CD_PART)), ("channelTemplate", name(CHANNEL_TEMPLATE_PART)),
              ("pool", pool.name))
    return (CaseExpectation(CASE, name(CASE), c.nodes, ("probe",), s.smoke_test.device_class, distinct=True,
                            params=params),)


def values(s: Settings) -> dict[str, Any]:
    """charts/gpu-smoke-test `computeDomain` (templates/computedomain.yaml, job-compute-domain.yaml)."""
    c = s.smoke_test.compute_domain
    pool = case_pool(s)
    if not c.enabled or pool is None:  # a missing pool is the rules' refusal
        return {"computeDomain": {"enabled": False}}
    return {"computeDomain": {"enabled": True, "nodes": c.nodes, "nodeSelector": {pool_label(s): pool.name}}}


# --- settings rules ------------------------------------------------------------------------------


def problems(s: Settings) -> Iterator[Problem]:
    """What the case needs: ComputeDomains on, a pool with multi-node NVLink (a kubelet pool on local)
    holding at least `nodes` nodes. allocation dra is smokeTest's own rule (settings.rules _smoke)."""
    c = s.smoke_test.compute_domain
    path = f"{ROOT}.smokeTest.computeDomain"
    if not c.enabled:
        return
    if not compute_domains_on(s):
        yield (f"{path}.enabled", "needs ComputeDomains (settings.gpuStack.computeDomains, on by default only where "
                                  "a pool has multi-node NVLink): nothing would create the IMEX channel template")
    if s.platform in SIMULATED_GPUS and not (s.platform == "local" and s.local.kubelet_pools):
        yield (f"{path}.enabled", f"{SIMULATED_GPUS[s.platform]} runs no compute-domain.nvidia.com kubelet plugin: "
                                  "no channel claim could be prepared (on local, run it on local.kubeletPools)")
        return
    wanted = c.pool or s.smoke_test.pool
    pool = case_pool(s)
    if pool is None:
        if wanted is not None:
            names = ", ".join(p.name for p in provided_pools(s))
            yield f"{path}.pool", f"'{wanted}' is not a node pool this platform provides ({names})"
        else:
            yield (f"{path}.pool", "no node pool's instance type has multi-node NVLink "
                                   "(components/tables/instance_types.py nvlink_domain, e.g. p6e-gb200.36xlarge): "
                                   "a ComputeDomain spans an NVLink fabric across nodes")
        return
    where = f"{path}.pool" if c.pool is not None else (f"{ROOT}.smokeTest.pool" if wanted else f"{path}.pool")
    if not multi_node(pool):
        scope = nvlink_domain(pool.instance_type).scope
        yield (where, f"pool '{pool.name}' ({pool.instance_type}) has NVLink scope '{scope}', not multi-node: "
                      "IMEX channels join GPUs across nodes of one NVLink domain")
    if s.platform == "local" and pool.name not in s.local.kubelet_pools:
        yield (where, f"pool '{pool.name}' is no kubelet pool (local.kubeletPools: "
                      f"{', '.join(s.local.kubelet_pools)}): KWOK nodes prepare no claim and run no container")
    if s.smoke_test.scheduler == "kai":  # one GPU on each of `nodes` nodes, held at once
        yield from smoke_quota_problems(s, c.nodes, "smokeTest.computeDomain (one GPU on each of its nodes)",
                                        "smokeTest.computeDomain.nodes")
    if pool.desired_size < c.nodes:
        i = s.node_pools.index(pool)
        yield (f"{path}.nodes", f"needs {c.nodes} nodes of pool '{pool.name}', which has {pool.desired_size} at its "
                                f"desired size (settings.nodePools[{i}].desiredSize): one pod per node")


# --- the check -----------------------------------------------------------------------------------


def _channel_id(v: View, result: Obj) -> int | None:
    """The allocated channel's `id` attribute, else the number in its name `channel-<id>`."""
    for s in v.snap.slices:
        spec = _dict(s.get("spec"))
        if spec.get("driver") != CD_DRIVER or _dict(spec.get("pool")).get("name") != result.get("pool"):
            continue
        for d in spec.get("devices") or []:
            if isinstance(d, dict) and d.get("name") == result.get("device"):
                found = attribute(d, "id", CD_DRIVER)
                if isinstance(found, int):
                    return found
    text = str(result.get("device", ""))
    head, _, tail = text.partition("-")
    return int(tail) if head == "channel" and tail.isdigit() else None


def _slice_node(v: View, driver: str, pool: str) -> str:
    specs = [_dict(s.get("spec")) for s in v.snap.slices]
    return next((str(sp.get("nodeName") or "") for sp in specs
                 if sp.get("driver") == driver and _dict(sp.get("pool")).get("name") == pool), "")


def _dict(value: object) -> Obj:
    return value if isinstance(value, dict) else {}


def _domain_problems(cd: Obj | None, cd_name: str, nodes: int) -> list[str]:
    if cd is None:
        return [f"ComputeDomain {cd_name} was never seen (is its CRD installed, was it created with the chart?)"]
    out = []
    spec, status = _dict(cd.get("spec")), _dict(cd.get("status"))
    if spec.get("numNodes", 0) != nodes:  # an int as the API server stores it; anything else is wrong
        out.append(f"ComputeDomain {cd_name} has numNodes {spec.get('numNodes', 0)}, expected {nodes}")
    raw = status.get("nodes")
    listed = [n for n in raw if isinstance(n, dict)] if isinstance(raw, list) else []
    ready = sorted({str(n.get("name")) for n in listed if n.get("status") == READY})
    if status.get("status") != READY or len(ready) < nodes:
        shown = ", ".join(f"{n.get('name')} ({n.get('status') or 'no status'})" for n in listed) or "no node"
        out.append(f"ComputeDomain {cd_name} is '{status.get('status') or 'without status'}' with {len(ready)} of "
                   f"{nodes} nodes Ready (status.nodes: {shown}): the controller never saw every IMEX daemon join")
    return out


def _ready_nodes(cd: Obj | None) -> set[str]:
    raw = _dict(_dict(cd).get("status")).get("nodes") if cd is not None else None
    return {str(n.get("name")) for n in raw if isinstance(n, dict) and n.get("status") == READY} \
        if isinstance(raw, list) else set()


def check_compute_domain(v: View) -> CheckResult:
    case = v.exp.case(CASE)
    if case is None:
        return CheckResult(CHECK, HOP, SKIPPED, "smokeTest.computeDomain is off")
    cd_name = case.param("computeDomain")
    cd = next((d for d in v.snap.compute_domains if name(d) == cd_name), None)
    problems = _domain_problems(cd, cd_name, case.pods)
    domain_ready = not problems  # Ready with enough nodes by its own status (else that is the message)
    pods = v.by_case[CASE]
    if len(pods) < case.pods:
        problems.append(f"only {len(pods)} of {case.pods} pods of Job {case.job} exist")
    placed: dict[str, list[str]] = {}
    channels: list[str] = []
    for pod in pods:
        p, node = name(pod), str(pod.get("spec", {}).get("nodeName") or "")
        if not node:
            problems.append(f"pod {p} was never scheduled: {v.why_pending(pod)}")
            continue
        placed.setdefault(node, []).append(p)
        cname = claim_of(v.snap, pod, CHANNEL_CLAIM)
        claim = v.claims.get(cname) if cname else None
        results = [r for r in allocation_results(claim) if r.get("driver") == CD_DRIVER] if claim else []
        if claim is None or not results:
            why = f"claim {cname} holds no {CD_DRIVER} device" if claim else "no channel claim was recorded"
            problems.append(f"pod {p}'s '{CHANNEL_CLAIM}' claim was never allocated by {CD_DRIVER} ({why})")
            continue
        on = allocation_nodes(claim) or {_slice_node(v, CD_DRIVER, str(r.get("pool", ""))) for r in results}
        if node not in on:
            problems.append(f"pod {p} ran on node {node}, but its channel claim {cname} is on "
                            f"{', '.join(sorted(n for n in on if n)) or 'no node'}")
        ids = [i for r in results if (i := _channel_id(v, r)) is not None]
        if not ids:
            problems.append(f"claim {cname} holds {', '.join(str(r.get('device')) for r in results)}: no IMEX channel")
            continue
        channels += [f"{node}:channel{i}" for i in ids]
        if not v.exp.in_container:
            continue
        for ctr in case.containers:
            seen = set(v.parsed_log(v.snap.logs.get(f"{p}/{ctr}", "")).imex_channels)
            if not seen:
                problems.append(f"container {p}/{ctr} saw no IMEX channel: the channel claim was prepared but not "
                                f"injected (expected {channel_path(ids[0])})")
            elif missing := [channel_path(i) for i in ids if channel_path(i) not in seen]:
                problems.append(f"container {p}/{ctr} saw {', '.join(sorted(seen))}, not its allocated "
                                f"{', '.join(missing)}")
    # Ready somewhere is not ready where the pods ran: each pod's node must be one of the domain's
    # Ready nodes (status.nodes[].name is the node its IMEX daemon runs on).
    ready = _ready_nodes(cd)
    if domain_ready:
        for node, ps in sorted(placed.items()):
            if node not in ready:
                problems.append(f"pod(s) {', '.join(ps)} ran on node {node}, which ComputeDomain {cd_name} does not "
                                f"list Ready (Ready: {', '.join(sorted(ready)) or 'none'}): no IMEX daemon of the "
                                "domain serves that node")
    shared = {n: ps for n, ps in placed.items() if len(ps) > 1}
    for node, ps in sorted(shared.items()):
        problems.append(f"pods {', '.join(ps)} share node {node}: the case needs {case.pods} distinct nodes")
    if pods and not shared and 0 < len(placed) < case.pods:
        problems.append(f"the pods ran on {len(placed)} node(s), expected {case.pods} distinct nodes")
    inside = "every container saw its channel" if v.exp.in_container else f"containers not checked: {NO_KUBELET}"
    return outcome(CHECK, HOP, problems, f"ComputeDomain {cd_name} Ready on {len(placed)} nodes; channels "
                                         f"{', '.join(channels)}; {inside}")


FAMILY = CaseFamily("computeDomain", checks=(Check(CHECK, HOP, check_compute_domain),), expect=expect,
                    values=values, problems=problems)

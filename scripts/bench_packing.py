#!/usr/bin/env python3
"""GPUs a mixed workload needs, and the GPU time paid, allocated and busy, with whole GPUs only,
with MIG layouts, and with time-slicing (issue 43, docs/sharing.md).

    .venv/bin/python scripts/bench_packing.py [--write docs/benchmarks.md]

The workload (WORKLOAD): many small inference pods, a few medium ones, whole-GPU jobs and one
4-GPU job, each with the memory it needs and the share of an H100's compute it keeps busy. For each
mode, `plan()` sizes the H100 nodes (p5.48xlarge, 8 GPUs) the mode needs, packing pods as the mode
allows: one device per pod (whole), a MIG instance sized by memory on nodes cut by one mixed
layout (MIG), or up to `memory`-many pods on one GPU through one shared claim (time-slicing or
MPS: the GPU's memory is shared, not split). Then the plan is proven, not assumed: a loopback
control plane with the real kube-scheduler (tools/localcluster.py), KWOK nodes of the plan with
the slices NVIDIA's driver would publish (tools/dra_publisher.py; the MIG nodes' instances where
components/tables/mig_profiles.py places them), every pod with its claim; the mode counts only if
every pod is allocated and scheduled. GPU-hours are for one hour of the workload: paid = GPUs on
the nodes, allocated = devices held (a MIG instance by its compute slices of 7), busy = the pods'
declared compute (the figure a DCGM exporter would show, if the workload did what it declares).

--write replaces only the text between the bench_packing markers of the file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from components.report.utilization import share_of  # noqa: E402
from components.tables.instance_types import gpu_facts  # noqa: E402
from components.tables.mig_profiles import MIG_PROFILES, placements  # noqa: E402
from tests.helpers.tools import load_tool  # noqa: E402

MARKS = ("<!-- bench_packing:start -->", "<!-- bench_packing:end -->")
INSTANCE = "p5.48xlarge"
GPU = "NVIDIA H100 80GB HBM3"
GPUS_PER_NODE = 8
GPU_MEMORY_GB = 80
NS = "packing"


@dataclass(frozen=True)
class Kind:
    name: str
    count: int  # pods
    gpus: int  # whole GPUs a pod needs (0: a slice of one is enough)
    memory_gb: int  # GPU memory a pod needs
    busy: float  # share of one H100's compute it keeps busy, per GPU it holds or uses
    profile: str = ""  # the MIG profile its memory fits (small work only)


# Shaped after an inference-heavy cluster: small models (7-8B at 8 bits, ~10 GB with KV cache) at low
# traffic, a few mid-size models, fine-tuning jobs on whole GPUs, one 4-GPU training job.
WORKLOAD = (
    Kind("small-inference", 28, 0, 10, 0.10, "1g.10gb"),
    Kind("medium-inference", 4, 0, 40, 0.35, "3g.40gb"),
    Kind("whole-gpu-job", 2, 1, 80, 0.90),
    Kind("4-gpu-job", 1, 4, 80, 0.85),
)
# The MIG nodes' one layout (every GPU the same, nodePools[].mig devices): four small and one medium.
MIG_LAYOUT = {"1g.10gb": 4, "3g.40gb": 1}


@dataclass(frozen=True)
class Plan:
    mode: str
    whole_nodes: int  # nodes of whole GPUs
    mig_nodes: int  # nodes cut by MIG_LAYOUT
    shared: dict[str, int]  # kind -> pods per shared claim (time-slicing)

    @property
    def gpus_paid(self) -> int:
        return (self.whole_nodes + self.mig_nodes) * GPUS_PER_NODE


def plan(mode: str) -> Plan:
    """The fewest nodes the mode can hold the workload on, by its own packing rule."""
    jobs = sum(k.count * k.gpus for k in WORKLOAD if k.gpus)
    small = [k for k in WORKLOAD if not k.gpus]
    if mode == "whole":
        gpus = jobs + sum(k.count for k in small)
        return Plan(mode, math.ceil(gpus / GPUS_PER_NODE), 0, {})
    if mode == "mig":
        per_gpu = {p: MIG_LAYOUT.get(p, 0) for p in (k.profile for k in small)}
        mig_gpus = max(math.ceil(k.count / per_gpu[k.profile]) for k in small)
        return Plan(mode, math.ceil(jobs / GPUS_PER_NODE), math.ceil(mig_gpus / GPUS_PER_NODE), {})
    if mode == "timeslicing":
        # pods on one GPU: as many as its memory holds (time-slicing and MPS share it, they do not cut it)
        shared = {k.name: GPU_MEMORY_GB // k.memory_gb for k in small}
        gpus = jobs + sum(math.ceil(k.count / shared[k.name]) for k in small)
        return Plan(mode, math.ceil(gpus / GPUS_PER_NODE), 0, shared)
    raise ValueError(mode)


MODES = ("whole", "mig", "timeslicing")


def busy_gpu_hours() -> float:
    return sum(k.count * max(k.gpus, 1) * k.busy for k in WORKLOAD)


def _claim(name: str, count: int, profile: str = "") -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "mig.nvidia.com" if profile else "gpu.nvidia.com",
                               "allocationMode": "ExactCount", "count": count}
    if profile:
        exactly["selectors"] = [{"cel": {"expression": f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}


def _pod(name: str, claim: str, kind: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS, "labels": {"kind": kind}},
            "spec": {"tolerations": [{"operator": "Exists"}],
                     "resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
                     "containers": [{"name": "c", "image": "registry.invalid/none",
                                     "resources": {"requests": {"cpu": "100m"}, "claims": [{"name": "gpu"}]}}]}}


def objects(p: Plan) -> list[dict[str, Any]]:
    """Claims and pods of the workload under the plan's mode."""
    out: list[dict[str, Any]] = []
    for k in WORKLOAD:
        if k.gpus:
            for i in range(k.count):
                out += [_claim(f"{k.name}-{i}", k.gpus), _pod(f"{k.name}-{i}", f"{k.name}-{i}", k.name)]
        elif p.mode == "mig":
            for i in range(k.count):
                out += [_claim(f"{k.name}-{i}", 1, k.profile), _pod(f"{k.name}-{i}", f"{k.name}-{i}", k.name)]
        elif p.mode == "timeslicing":
            per = p.shared[k.name]
            for g in range(math.ceil(k.count / per)):
                out.append(_claim(f"{k.name}-shared-{g}", 1))
                out += [_pod(f"{k.name}-{i}", f"{k.name}-shared-{g}", k.name)
                        for i in range(g * per, min(k.count, (g + 1) * per))]
        else:
            for i in range(k.count):
                out += [_claim(f"{k.name}-{i}", 1), _pod(f"{k.name}-{i}", f"{k.name}-{i}", k.name)]
    return out


def account(claims: list[dict[str, Any]], devices: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    """GPUs held (parents of MIG instances), and the devices' allocated share of GPUs."""
    gpus: set[str] = set()
    allocated = 0.0
    for c in claims:
        for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", []):
            attrs = devices[(r["pool"], r["device"])]["attributes"]
            if attrs["type"]["string"] == "mig":
                gpus.add(attrs["parentUUID"]["string"])
                allocated += share_of(attrs["profile"]["string"])
            else:
                gpus.add(attrs["uuid"]["string"])
                allocated += 1
    return {"gpusHeld": len(gpus), "allocatedGpuHours": round(allocated, 3)}


def run(p: Plan, bin_dir: Path) -> dict[str, Any]:
    lc, dra = load_tool("localcluster"), load_tool("dra_publisher")
    facts = gpu_facts(INSTANCE)
    assert facts is not None and facts.count == GPUS_PER_NODE and GPU in MIG_PROFILES
    model = dra.GpuModel.of(facts.product_name, facts.architecture, facts.memory_mib)
    slots = [dra.MigSlot(m.profile, m.profile_id, m.start, m.size, m.device_suffix)
             for m in placements(GPU, MIG_LAYOUT)]
    nodes = {f"whole-{i}": () for i in range(p.whole_nodes)} | {f"mig-{i}": tuple(slots) for i in range(p.mig_nodes)}
    with tempfile.TemporaryDirectory(prefix="bench-packing-") as work:
        cluster = lc.LocalCluster(Path(work), nodes=0, bin_dir=bin_dir)
        with cluster:
            slices = [dra.resource_slice_manifest(n, GPUS_PER_NODE, model, mig=list(s)) for n, s in nodes.items()]
            cluster.apply([lc.gpu_node_manifest(n, instance_type=INSTANCE, cpu="192", memory="2048Gi", pods="110")
                           for n in nodes] + [dra.device_class_manifest(), dra.mig_device_class_manifest()] + slices
                          + [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}])
            t0 = time.monotonic()
            objs = objects(p)
            pods = sum(o["kind"] == "Pod" for o in objs)

            def scheduled(kind: str | None = None) -> int:
                sel = ["-l", f"kind={kind}"] if kind else []
                return sum(bool(x["spec"].get("nodeName")) for x in cluster.get_json("pods", "-n", NS, *sel)["items"])

            # Largest first, each kind scheduled before the next is created: the default scheduler
            # spreads pods over nodes (its scoring favours the least allocated), so small pods
            # created with the 4-GPU job leave no node four free GPUs. A bin-packing scheduler (KAI)
            # would not need the order; this one is told it.
            for k in sorted(WORKLOAD, key=lambda k: -k.gpus):
                mine = [o for o in objs if o["kind"] == "ResourceClaim" and
                        any(q["metadata"].get("labels", {}).get("kind") == k.name and
                            q["spec"]["resourceClaims"][0]["resourceClaimName"] == o["metadata"]["name"]
                            for q in objs if q["kind"] == "Pod")]
                cluster.apply(mine + [o for o in objs
                                      if o["kind"] == "Pod" and o["metadata"]["labels"]["kind"] == k.name])
                deadline = time.monotonic() + 120
                while scheduled(k.name) < k.count and time.monotonic() < deadline:
                    time.sleep(1)
            placed = scheduled()
            devices = {(s["spec"]["pool"]["name"], d["name"]): d for s in slices for d in s["spec"]["devices"]}
            acct = account(cluster.get_json("resourceclaims", "-n", NS)["items"], devices)
            return {"mode": p.mode, "nodes": p.whole_nodes + p.mig_nodes, "gpusPaid": p.gpus_paid,
                    "podsPlaced": placed, "pods": pods, **acct, "busyGpuHours": round(busy_gpu_hours(), 3),
                    "seconds": round(time.monotonic() - t0, 1)}


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| mode | nodes (8 x H100) | GPU-hours paid | GPUs held | GPU-hours allocated | GPU-hours busy | "
             "busy of paid | pods placed |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['mode']} | {r['nodes']} | {r['gpusPaid']} | {r['gpusHeld']} | {r['allocatedGpuHours']} | "
                     f"{r['busyGpuHours']} | {100 * r['busyGpuHours'] / r['gpusPaid']:.0f}% | "
                     f"{r['podsPlaced']}/{r['pods']} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", type=Path, help="replace the bench_packing section of this Markdown file")
    args = ap.parse_args()
    lc = load_tool("localcluster")
    bin_dir = lc.tools_bin_dir()
    results = [run(plan(m), bin_dir) for m in MODES]
    print(json.dumps(results, indent=2))
    text = table(results)
    print(text)
    if any(r["podsPlaced"] != r["pods"] for r in results):
        print("a mode's plan did not hold the workload: see podsPlaced", file=sys.stderr)
        return 1
    if args.write:
        doc = args.write.read_text()
        start, end = doc.index(MARKS[0]) + len(MARKS[0]), doc.index(MARKS[1])
        args.write.write_text(doc[:start] + "\n" + text + "\n" + doc[end:])
    return 0


if __name__ == "__main__":
    sys.exit(main())

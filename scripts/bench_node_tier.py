#!/usr/bin/env python3
"""Measure the node tier (issue 13's costs): the `local-kubelet` stack on real kubelet nodes.

    python scripts/bench_node_tier.py [--durations DURATIONS.tsv] [--skip-test] [--write docs/benchmarks.md]

Starts the loopback control plane with the stack's KWOK pool and the node tier's kubelet nodes
(tools/nodetier.py), runs `pulumi up` of the stack (its smoke test on the real nodes), and reports:
node tier start, `pulumi up`, each smoke pod's creation -> container start -> the run's pass, and
the peak memory of the tier's processes (kubelet, containerd, shims, runc containers' pause/probe,
the plugin; VmHWM per process, sampled every 0.2 s). Unless --skip-test, it also times the warm
`tests/integration/test_node_tier.py`. --durations names a tools/build.sh durations.tsv of a COLD
build (empty Go build cache) whose node-tier rows give the extra cold build time.
--write replaces only the text between the bench_node_tier markers of the file.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_local import MemorySampler, _cmdline, _kib, _status  # noqa: E402  (scripts/bench_local.py)
from docsection import write_marked_section  # noqa: E402

from components.smoke.expectations import RUN_LABEL  # noqa: E402
from tests.helpers.node_tier import (  # noqa: E402
    SETTINGS_KEY,
    kubelet_pools,
    kubelet_tier,
    stack_settings,
    start_kwok_pool,
)
from tests.helpers.tools import copy_project, load_tool  # noqa: E402
from tests.integration.conftest import EngineTools, inline_kubeconfig, missing_engine_tools  # noqa: E402

START, END = "<!-- bench_node_tier:start", "<!-- bench_node_tier:end -->"
PASSPHRASE = "bench-node-tier"
# tools/build.sh targets the node tier adds.
NODE_TIER_BINARIES = ("kubelet", "containerd", "containerd-shim-runc-v2", "ctr", "ck8s-gpu-kubelet-plugin",
                      "ck8s-sim-nvidia-smi", "ck8s-sim-compute-domain")


def role(cmd: str) -> str:
    exe = Path(cmd.split(" ", 1)[0]).name
    if exe in ("bash", "sleep"):
        return "containers (pause: sleep; probe: bash)"
    return exe


class TierMemory(MemorySampler):
    """Peak VmHWM per role of the processes whose command line names the tier's directories or whose
    cgroup lies under its cgroup root (the containers), and the peak of their summed RSS."""

    def __init__(self, marks: list[str], interval: float = 0.2) -> None:
        super().__init__(ROOT, interval)
        self.marks = marks
        self.sum_peak = 0

    def _sample(self) -> None:
        total = 0
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            cmd = _cmdline(int(entry.name))
            if not cmd or (not any(m in cmd for m in self.marks) and not self._in_container(int(entry.name))):
                continue
            st = _status(int(entry.name))
            r = role(cmd)
            self.peak[r] = max(self.peak.get(r, 0), _kib(st.get("VmHWM", "")))
            total += _kib(st.get("VmRSS", ""))
        self.sum_peak = max(self.sum_peak, total)

    @staticmethod
    def _in_container(pid: int) -> bool:
        try:
            return "/ck8s-gpu-nodes/" in Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            return False


def _ts(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def run() -> dict[str, Any]:
    from pulumi import automation as auto

    lc, nt = load_tool("localcluster"), load_tool("nodetier")
    bin_dir = lc.tools_bin_dir()
    lacking = missing_engine_tools(bin_dir) + nt.missing(bin_dir)
    if lacking:
        raise SystemExit(f"missing: {', '.join(lacking)} (bash tools/build.sh; scripts/install-debs.sh; root)")
    tools = EngineTools(bin_dir)
    settings = stack_settings()
    m: dict[str, Any] = {"gpus": settings["smokeTest"]["gpus"],
                         "nodes": sum(p["desiredSize"] for p in kubelet_pools(settings)),
                         "pools": ", ".join(f"{p['name']}: {p['desiredSize']} x {p['instanceType']}"
                                            for p in kubelet_pools(settings))}
    with tempfile.TemporaryDirectory(prefix="bench-node-tier-") as tmp:
        work = Path(tmp)
        t0 = time.monotonic()
        cluster, _ = start_kwok_pool(work, bin_dir, settings)
        m["cluster_start"] = time.monotonic() - t0
        tier = stack = None
        try:
            tier, _ = kubelet_tier(work, bin_dir, cluster, settings)
            marks = [str(nt.short_root(tier.workdir)), str(work / "nodes")]
            with TierMemory(marks) as mem:
                tier.up()
                m["tier_start"] = tier.start_seconds
                settings["smokeTest"]["image"] = tier.probe.reference
                project = copy_project(work / "project")
                (project / "Pulumi.bench.yaml").write_text(yaml.safe_dump({"config": {SETTINGS_KEY: settings}}))
                stack = auto.create_stack("bench", work_dir=str(project),
                                          opts=tools.workspace(work, project, PASSPHRASE))
                stack.set_config("ck8s-gpu:kubeconfig",
                                 auto.ConfigValue(inline_kubeconfig(Path(cluster.kubeconfig)), secret=True))
                t1 = time.monotonic()
                up = stack.up(color="never")
                m["up"] = time.monotonic() - t1
            m["memory"] = dict(mem.peak)
            m["memory_sum"] = mem.sum_peak
            report = up.outputs["smokeReport"].value
            m["summary"] = report["results"]["summary"]
            m["phases"] = [(ph["case"], ph["state"], float(ph.get("seconds", 0)))
                           for ph in report["results"]["extra"].get("phases", [])]
            run_id = report["results"]["extra"]["runId"]
            pods = cluster.get_json("pods", "-A", "-l", f"{RUN_LABEL}={run_id}")["items"]
            created = [_ts(p["metadata"]["creationTimestamp"]) for p in pods]
            started = [_ts(cs["state"]["terminated"]["startedAt"]) for p in pods
                       for cs in p["status"]["containerStatuses"]]
            passed_at = report["results"]["summary"]["stop"] / 1000
            m["pod_start"] = (min(s - c for s, c in zip(started, created, strict=False)),
                              max(s - c for s, c in zip(started, created, strict=False)))
            m["first_pod_to_pass"] = passed_at - min(created)
            m["pods"] = len(pods)
            stack.destroy(color="never")
        finally:
            if stack is not None:
                stack.workspace.remove_stack("bench", force=True)
            if tier is not None:
                m["leftovers"] = tier.down() + tier.leftovers()
            cluster.down()
    return m


def warm_test() -> tuple[float, str]:
    t = time.monotonic()
    proc = subprocess.run(["bash", "scripts/pytest.sh", "-q", "-p", "no:cacheprovider",
                           "tests/integration/test_node_tier.py"], cwd=ROOT, capture_output=True, text=True)
    last = (proc.stdout.strip().splitlines() or ["no output"])[-1]
    return time.monotonic() - t, last


def cold_rows(path: Path | None) -> list[tuple[str, int]]:
    if path is None or not path.is_file():
        return []
    rows = [line.split("\t") for line in path.read_text().splitlines()[1:]]
    return [(r[0], int(r[1])) for r in rows if r[0] in NODE_TIER_BINARIES and r[2] == "ok"]


def markdown(m: dict[str, Any], warm: tuple[float, str] | None, cold: list[tuple[str, int]],
             cold_source: str) -> str:
    mib = {k: v / 1024 for k, v in m["memory"].items()}
    lines = [
        f"{START} (generated by scripts/bench_node_tier.py; do not edit by hand) -->",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}; "
        f"`stacks/Pulumi.local-kubelet.yaml`: {m['nodes']} kubelet nodes ({m['pools']}; containerd v2.2.9, runc, "
        f"CNI bridge, the simulated NVIDIA GPU and compute-domain kubelet plugins) beside the KWOK pool; every "
        f"smoke case on: {m['pods']} smoke pods ({m['gpus']} of them whole-GPU) on the kubelet nodes.",
        "",
        "| step | seconds |",
        "|---|---:|",
        f"| control plane start (KWOK pool Ready) | {m['cluster_start']:.1f} |",
        f"| node tier start (images built and imported, containerd, kubelet Ready, plugin's slices) | "
        f"{m['tier_start']:.1f} |",
        f"| `pulumi up` (add-ons, smoke chart, smoke run on the real nodes) | {m['up']:.1f} |",
        f"| a smoke pod's creation to its container's start (fastest-slowest of {m['pods']}) | "
        f"{m['pod_start'][0]:.1f}-{m['pod_start'][1]:.1f} |",
        f"| first smoke pod's creation to the smoke pass | {m['first_pod_to_pass']:.1f} |",
        "",
        "Each case's Job, resumed to finished (the runner's phases, in run order):",
        "",
        "| case | state | seconds |",
        "|---|---|---:|",
        *(f"| {c} | {st} | {sec:.1f} |" for c, st, sec in m["phases"]),
        f"| all cases | | {sum(sec for _c, _st, sec in m['phases']):.1f} |",
        "",
        f"Smoke report: {m['summary']['passed']} passed, {m['summary']['failed']} failed, "
        f"{m['summary']['skipped']} skipped. Left behind after the tier stopped: "
        f"{', '.join(m.get('leftovers') or []) or 'nothing'}.",
        "",
        "Peak memory of the tier's processes (VmHWM per process, sampled every 0.2 s from /proc):",
        "",
        "| process | peak RSS (MiB) |",
        "|---|---:|",
        *(f"| {k} | {v:.0f} |" for k, v in sorted(mib.items())),
        f"| the whole tier at once (summed RSS) | {m['memory_sum'] / 1024:.0f} |",
        "",
    ]
    if warm:
        lines.append(f"Warm `tests/integration/test_node_tier.py` (control plane, tier, up, eight broken hops, up, "
                     f"destroy, a second tier start and stop): {warm[0]:.0f} s ({warm[1]}); target under 600 s.")
        lines.append("")
    if cold:
        total = sum(s for _, s in cold)
        lines.append(f"Extra cold build ({cold_source}; serial on 2 cores, empty Go build cache, after the control "
                     "plane's binaries, which share the kubelet's packages): "
                     + ", ".join(f"{n} {s} s" for n, s in cold) + f"; {total} s in all.")
        lines.append("")
    lines.append("Reproduce: `bash tools/build.sh && sudo .venv/bin/python scripts/bench_node_tier.py "
                 "--durations <a cold build's durations.tsv> --write docs/benchmarks.md`.")
    lines.append(END)
    return "\n".join(lines)  # the file's own newline follows the end marker


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--durations", type=Path, help="a cold tools/build.sh durations.tsv")
    ap.add_argument("--skip-test", action="store_true", help="do not time the warm integration test")
    ap.add_argument("--write", type=Path, help="replace the bench_node_tier section of this markdown file")
    args = ap.parse_args()
    m = run()
    warm = None if args.skip_test else warm_test()
    source = f"`{args.durations.name}` of {datetime.fromtimestamp(args.durations.stat().st_mtime):%Y-%m-%d}" \
        if args.durations else ""
    section = markdown(m, warm, cold_rows(args.durations), source)
    print(section)
    if args.write:
        write_marked_section(args.write, START, END, section, "Node tier (local-kubelet stack)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

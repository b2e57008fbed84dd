"""Benchmark the real engine on the `local` stack at scale (a benchmark, not a test).

    python scripts/bench_local.py [--nodes 100] [--gpus 16] [--skip-test] [--write docs/benchmarks.md]

A loopback control plane with N KWOK nodes of p5.48xlarge (8 simulated H100 each, published as
ResourceSlices), the `local` stack's settings with one pool of those N nodes, and a real `pulumi up`
through the Automation API (file backend, temp dir). It measures: cluster start, `pulumi up` start to
smoke pass (the report's stop time), the whole `up`, the smoke run and the verifier's own time (both
from the report), a second preview, destroy, and the peak memory of every process the engine starts
(sampled from /proc: VmHWM per process, summed RSS of the tree). The `up`'s engine events (the
Automation API's `on_event`, arrival times) give each resource's start and end, compared with the
modeled graph of the offline plan of the same settings (components/plan/measured.py). The local
stack's graph is a chain, so a second stack on the same cluster adds one add-on (`observability`
from a loopback chart mirror, its Prometheus Operator CRDs created first) whose release the graph
lets run beside the smoke test's namespace: its measured timeline shows whether the engine did.
Unless --skip-test, it also times the warm integration test (tests/integration/test_local_engine.py)
and a warm `tools/build.sh`.
--write replaces only the text between the bench_local markers of the file (appended if absent).
Needs `bash tools/build.sh`.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Self

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from docsection import write_marked_section  # noqa: E402  (scripts/docsection.py)

from components.plan import measured  # noqa: E402
from components.plan.run import plan_config  # noqa: E402
from components.plan.timeline import Step, build_steps  # noqa: E402
from components.tables.instance_types import gpu_facts  # noqa: E402
from tests.helpers import chart_repo  # noqa: E402
from tests.helpers.tools import load_tool  # noqa: E402
from tests.integration.conftest import (  # noqa: E402
    MONITORING_CRDS,
    EngineTools,
    inline_kubeconfig,
    missing_engine_tools,
)

START, END = "<!-- bench_local:start", "<!-- bench_local:end -->"
INSTANCE_TYPE = "p5.48xlarge"
POOL = "h100"
PASSPHRASE = "bench-local"
PROJECT_PARTS = ("__main__.py", "components", "charts")
# Measured once by the tools' cold build (tools/README.md, "Measurements"): serial, 2 cores.
COLD_BUILD = "3332 s (~56 min) on 2 cores, 1901 s of it the Kubernetes provider (tools/README.md)"


# --- memory ----------------------------------------------------------------------------------


def _status(pid: int) -> dict[str, str]:
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            k, _, v = line.partition(":")
            out[k] = v.strip()
    except OSError:
        pass
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _kib(v: str) -> int:
    return int(v.split()[0]) if v else 0


def role(cmd: str) -> str:
    """What an engine process is, from its command line."""
    exe = Path(cmd.split(" ", 1)[0]).name
    if "pulumi.dynamic" in cmd:
        return "python (dynamic providers)"
    if exe.startswith("python"):
        return "python (program)" if "runner" in cmd or "__main__" in cmd or "pulumi" in cmd else f"python ({cmd[:40]})"
    return exe


class MemorySampler:
    """Every `interval` s: this process's descendants and the cluster's processes (cmdline names
    its dir); peak VmHWM per role, peak summed RSS of the engine's tree."""

    def __init__(self, cluster_dir: Path, interval: float = 0.2) -> None:
        self.cluster_dir, self.interval = str(cluster_dir), interval
        self.peak: dict[str, int] = {}
        self.tree_peak = 0
        self.cluster_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        me = os.getpid()
        parents: dict[int, int] = {}
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                st = _status(int(entry.name))
                if st.get("PPid"):
                    parents[int(entry.name)] = int(st["PPid"])
        tree_rss = cluster_rss = 0
        for pid in parents:
            p, inside = pid, False
            while p > 1:
                p = parents.get(p, 0)
                if p == me:
                    inside = True
                    break
            cmd = _cmdline(pid)
            st = _status(pid)
            if inside and cmd and "kubectl" not in cmd.split(" ", 1)[0]:  # "": exiting
                r = role(cmd)
                self.peak[r] = max(self.peak.get(r, 0), _kib(st.get("VmHWM", "")))
                tree_rss += _kib(st.get("VmRSS", ""))
            elif self.cluster_dir in cmd:
                cluster_rss += _kib(st.get("VmRSS", ""))
        self.tree_peak = max(self.tree_peak, tree_rss)
        self.cluster_peak = max(self.cluster_peak, cluster_rss)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# --- the run ---------------------------------------------------------------------------------


def settings(nodes: int, gpus: int) -> dict[str, Any]:
    base = yaml.safe_load((ROOT / "stacks" / "Pulumi.local.yaml").read_text())["config"]["ck8s-gpu:settings"]
    return {**base,
            "nodePools": [{"name": POOL, "instanceType": INSTANCE_TYPE, "minSize": nodes, "desiredSize": nodes,
                           "maxSize": nodes}],
            "smokeTest": {**base.get("smokeTest", {}), "gpus": gpus}}


def modeled_steps(stack: str, stack_settings: dict[str, Any]) -> list[Step]:
    """The modeled graph of the offline plan (mock engine) of these settings under this stack name."""
    plan = plan_config({"ck8s-gpu:settings": stack_settings}, stack, f"bench stack {stack}")
    return build_steps(plan.resources, platform=plan.settings.platform)


def create_stack(auto: Any, name: str, work: Path, bin_dir: Path, tools: EngineTools, cluster: Any,
                 stack_settings: dict[str, Any], extra_env: dict[str, str] | None = None) -> Any:
    """An Automation API stack of a copy of the project, file backend in `work`."""
    project = work / "project"
    if not project.exists():
        project.mkdir()
        for part in PROJECT_PARTS:
            subprocess.run(["cp", "-r", str(ROOT / part), str(project / part)], check=True)
    (project / f"Pulumi.{name}.yaml").write_text(
        yaml.safe_dump({"config": {"ck8s-gpu:settings": stack_settings}}, sort_keys=False))
    (work / "state").mkdir(exist_ok=True)
    env = tools.env(work / "state", PASSPHRASE)
    env["CK8S_GPU_SMOKE_REPORT_DIR"] = str(work / "reports")
    env.update(extra_env or {})
    stack = auto.create_stack(name, work_dir=str(project), opts=auto.LocalWorkspaceOptions(
        work_dir=str(project), env_vars=env,
        pulumi_command=auto.PulumiCommand(root=str(bin_dir.parent)),
        project_settings=auto.ProjectSettings(
            name="ck8s-gpu", runtime=auto.ProjectRuntimeInfo("python", {"virtualenv": sys.prefix}))))
    stack.set_config("ck8s-gpu:kubeconfig",
                     auto.ConfigValue(inline_kubeconfig(Path(cluster.kubeconfig)), secret=True))
    return stack


def timed_up(stack: Any, steps: list[Step]) -> tuple[Any, float, float, measured.Report]:
    """`up` with the engine's events recorded: (result, seconds, first event after the call, comparison)."""
    recorder = measured.Recorder()
    t = time.monotonic()
    up = stack.up(color="never", on_event=recorder)
    seconds = time.monotonic() - t
    first = recorder.arrivals[0].at - t if recorder.arrivals else 0.0
    return up, seconds, first, measured.compare(steps, measured.measure(recorder.arrivals))


def addon_run(auto: Any, work: Path, bin_dir: Path, tools: EngineTools, cluster: Any, nodes: int,
              gpus: int) -> dict[str, Any]:
    """The same cluster, a second stack: the local settings plus `observability` from a chart mirror."""
    from tests.integration.test_local_engine import chart_mirror, create_crds, with_mirrored_addon

    crds = bin_dir.parent / "crds" / "monitoring.coreos.com"
    create_crds(cluster, [yaml.safe_load((crds / f).read_text()) for f in MONITORING_CRDS])
    with chart_repo.serve(chart_mirror(work / "chart-mirror")) as repository:
        stack_settings = with_mirrored_addon(settings(nodes, gpus), repository)
        steps = modeled_steps("bench-addon", stack_settings)
        helm = {v: str(work / "helm" / v.split("_")[1].lower())
                for v in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME")}
        stack = create_stack(auto, "bench-addon", work, bin_dir, tools, cluster, stack_settings, helm)
        try:
            _, seconds, first, report = timed_up(stack, steps)
        finally:
            stack.destroy(color="never")
            stack.workspace.remove_stack("bench-addon")
    return {"up_s": seconds, "first_event_s": first, "timeline": report}


def run(nodes: int, gpus: int, addon: bool = True) -> dict[str, Any]:
    from pulumi import automation as auto

    lc, dra = load_tool("localcluster"), load_tool("dra_publisher")
    bin_dir = lc.tools_bin_dir()
    missing = missing_engine_tools(bin_dir)
    crds = bin_dir.parent / "crds" / "monitoring.coreos.com"
    missing += [f"{crds / f} (--no-addon runs without it)" for f in MONITORING_CRDS
                if addon and not (crds / f).is_file()]
    if missing:
        sys.exit(f"tools not built: missing {', '.join(missing)}; run `bash tools/build.sh`")
    tools = EngineTools(bin_dir)
    facts = gpu_facts(INSTANCE_TYPE)
    assert facts is not None
    m: dict[str, Any] = {"nodes": nodes, "gpus_per_node": facts.count, "smoke_gpus": gpus,
                         "load_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="bench-local-") as tmp:
        work = Path(tmp)
        t = time.monotonic()
        cluster = lc.LocalCluster(work / "cluster", nodes=nodes, instance_type=INSTANCE_TYPE, bin_dir=bin_dir,
                                  name="ck8s-bench", timeout=600)
        with cluster:
            m["cluster_start_s"] = time.monotonic() - t
            t = time.monotonic()
            cluster.kubectl("label", "nodes", "--all", f"ck8s-gpu/pool={POOL}", "--overwrite")
            model = dra.GpuModel(product_name=facts.product_name, architecture=facts.architecture,
                                 memory=f"{facts.memory_mib}Mi")
            cluster.apply([dra.device_class_manifest()] + [dra.resource_slice_manifest(n, facts.count, model)
                                                           for n in cluster.node_names])
            m["publish_s"] = time.monotonic() - t

            steps = modeled_steps("bench", settings(nodes, gpus))
            stack = create_stack(auto, "bench", work, bin_dir, tools, cluster, settings(nodes, gpus))
            with MemorySampler(cluster.workdir) as mem:
                start_wall_ms = time.time() * 1000
                up, m["up_s"], m["first_event_s"], m["timeline"] = timed_up(stack, steps)
                report = up.outputs["smokeReport"].value
                summary = report["results"]["summary"]
                if summary["failed"] or not summary["passed"]:
                    sys.exit(f"smoke test did not pass: {summary}")
                m["up_to_smoke_pass_s"] = (summary["stop"] - start_wall_ms) / 1000
                m["smoke_run_s"] = (summary["stop"] - summary["start"]) / 1000
                m["verifier_ms"] = sum(float(x["duration"]) for x in report["results"]["tests"])
                m["checks"] = f"{summary['passed']} passed, {summary['skipped']} skipped"
                m["allocations"] = next(x["message"] for x in report["results"]["tests"]
                                        if x["name"] == "distinct-gpus")
                t = time.monotonic()
                pre = stack.preview(color="never")
                m["preview_s"] = time.monotonic() - t
                m["preview_changes"] = {k: v for k, v in pre.change_summary.items() if k != "same" and v}
                t = time.monotonic()
                stack.destroy(color="never")
                m["destroy_s"] = time.monotonic() - t
            m["peak_kib"] = dict(sorted(mem.peak.items()))
            m["tree_peak_kib"] = mem.tree_peak
            m["cluster_peak_kib"] = mem.cluster_peak
            m["rusage_children_maxrss_kib"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            stack.workspace.remove_stack("bench")
            if addon:  # after the memory figures: they are the plain stack's
                m["addon"] = addon_run(auto, work, bin_dir, tools, cluster, nodes, gpus)
    return m


def warm_tools() -> dict[str, float | str]:
    t = time.monotonic()
    subprocess.run(["bash", str(ROOT / "tools" / "build.sh")], check=True, capture_output=True)
    build = time.monotonic() - t
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "pytest", "tests/integration/test_local_engine.py", "-q"], cwd=ROOT,
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"integration test failed:\n{p.stdout[-3000:]}")
    return {"build_s": build, "test_s": time.monotonic() - t,
            "test_summary": (p.stdout.strip().splitlines() or [""])[-1]}


def markdown(m: dict[str, Any], warm: dict[str, Any] | None) -> str:
    def mib(kib: float) -> str:
        return f"{kib / 1024:.0f}"

    lines = [
        f"{START} (generated by scripts/bench_local.py; do not edit by hand) -->",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}; "
        "tools of `tools/build.sh` (Pulumi CLI v3.274.1, Kubernetes v1.34.4, KWOK v0.8.0); 1-minute load "
        f"average before the run {m['load_before']:.2f} (near 0 on an otherwise idle machine; other jobs make "
        "the times below longer).",
        "",
        f"Cold build of the tools: {COLD_BUILD}.",
    ]
    if warm:
        lines += [f"Warm `bash tools/build.sh`: {warm['build_s']:.2f} s. Warm "
                  f"`tests/integration/test_local_engine.py` (cluster start, up, preview, add-on pin A -> B -> "
                  f"refused -> A, negative up, destroy, measured order against the modeled graph): "
                  f"{warm['test_s']:.0f} s ({warm['test_summary']})."]
    lines += [
        "",
        f"`local` stack, {m['nodes']} KWOK nodes x {m['gpus_per_node']} simulated GPUs ({INSTANCE_TYPE}), "
        f"smoke test of {m['smoke_gpus']} GPU pods scheduled by the real kube-scheduler:",
        "",
        "| step | seconds |",
        "|---|---:|",
        f"| cluster start ({m['nodes']} nodes Ready) | {m['cluster_start_s']:.1f} |",
        f"| publish DeviceClass + {m['nodes']} ResourceSlices | {m['publish_s']:.1f} |",
        f"| `pulumi up` start to smoke pass | {m['up_to_smoke_pass_s']:.1f} |",
        f"| `pulumi up` total | {m['up_s']:.1f} |",
        f"| smoke run (report start to stop) | {m['smoke_run_s']:.1f} |",
        f"| verifier, all checks (sum of the report's durations) | {m['verifier_ms'] / 1000:.4f} |",
        f"| second `pulumi preview` (changes: {m['preview_changes'] or 'none'}) | {m['preview_s']:.1f} |",
        f"| `pulumi destroy` | {m['destroy_s']:.1f} |",
        "",
        f"Smoke report: {m['checks']}; distinct-gpus: {m['allocations']}.",
        "",
        "Peak memory during up/preview/destroy (VmHWM per process, sampled every 0.2 s from /proc):",
        "",
        "| process | peak RSS (MiB) |",
        "|---|---:|",
        *[f"| {k} | {mib(v)} |" for k, v in m["peak_kib"].items()],
        f"| all engine processes at once (summed RSS) | {mib(m['tree_peak_kib'])} |",
        f"| control plane + KWOK (etcd, apiserver, scheduler, controller-manager, kwok) | "
        f"{mib(m['cluster_peak_kib'])} |",
        "",
        f"`getrusage(RUSAGE_CHILDREN).ru_maxrss`: {mib(m['rusage_children_maxrss_kib'])} MiB (largest waited-for "
        "descendant).",
        "",
        *timeline_lines(m),
        "Reproduce: `bash tools/build.sh && .venv/bin/python scripts/bench_local.py --write docs/benchmarks.md` "
        "(`--no-addon`: without the second stack; `--skip-test`: without the warm test).",
        END,
    ]
    return "\n".join(lines)


def timeline_lines(m: dict[str, Any]) -> list[str]:
    """The measured timelines against the modeled graph (components/plan/measured.py)."""
    report: measured.Report = m["timeline"]
    addon = m.get("addon")
    reports = [report] + ([addon["timeline"]] if addon else [])
    waits = [(r.wait, r.name) for rep in reports for r in rep.rows if r.wait is not None]
    longest = f"{max(waits)[0]:.2f} s (`{max(waits)[1]}`)" if waits else "none"
    bounds = [r.latency_bound for r in reports if r.latency_bound is not None]
    latency = (f"at most {min(bounds) * 1000:.0f} ms (the tightest of {sum(r.boundaries for r in reports)} "
               "whole-second boundaries: an event stamped with a new second arrived that long after it began)"
               if bounds else "not bounded (no second boundary)")
    lines = [
        "### Measured timeline against the modeled graph",
        "",
        "Each resource's start and end in that `up`, from the engine's events (`resource_pre_event` starts a "
        "step, `res_outputs_event` ends it) as the Automation API's `on_event` received them, timed with "
        "`time.monotonic()` on arrival (the events' own `timestamp` is whole seconds, too coarse here). With "
        "this CLI the events come over one gRPC stream (Pulumi CLI > 3.205; older ones had the SDK tail a "
        f"log file every 0.1 s), in the engine's order; delivery latency {latency}. The first event came "
        f"{m['first_event_s']:.2f} s after the `up` call. Compared with the modeled graph (`build_steps` on the "
        "offline plan of the same settings, same stack name, so the URNs match; components/plan/measured.py): "
        "order by the events' sequence numbers; a wait after the last modeled dependency longer than "
        f"{report.slack:g} s would be a dependency the graph does not have. The slack is for the engine's own "
        "time between one step's end and the next one's start (snapshot write, the program registering the next "
        "resource, the provider's Check); the longest such wait here: "
        f"{longest}. The dynamic resources run on the engine's default `pulumi-python` provider, which the plan "
        "does not have: they count from that provider's step, which the engine runs once it has started the "
        "provider's process (0.55 s idle, 1.1 s loaded, from the engine's log at -v=7; not checked). "
        "A hidden dependency on a step shorter than the slack would not show as a wait: the pairs "
        "that overlapped are the direct evidence that the engine ran side by side what the graph allows.",
        "",
        f"`local` stack, {m['nodes']} nodes ({m['up_s']:.1f} s `up`):",
        "",
        measured.markdown(report),
        "",
    ]
    if addon:
        ok = all(r.ok for r in reports)
        lines += [
            f"The same cluster, a second stack: the `local` settings plus the `observability` add-on from a "
            f"loopback chart mirror (its Prometheus Operator CRDs created first), {addon['up_s']:.1f} s `up`:",
            "",
            measured.markdown(addon["timeline"]),
            "",
            f"Both runs: **measured order matches the modeled graph: {'yes' if ok else 'no'}**"
            + ("." if ok else " (problems listed above)."),
            "",
        ]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--gpus", type=int, default=16, help="smokeTest.gpus")
    ap.add_argument("--skip-test", action="store_true", help="do not time the warm integration test")
    ap.add_argument("--no-addon", action="store_true",
                    help="skip the second stack (local + the observability add-on from a chart mirror)")
    ap.add_argument("--write", type=Path, help="replace the bench_local section of this markdown file")
    args = ap.parse_args()
    # First: RUSAGE_CHILDREN must not see the integration test's processes.
    result = run(args.nodes, args.gpus, addon=not args.no_addon)
    warm = None if args.skip_test else warm_tools()
    section = markdown(result, warm)
    print(section)
    if args.write:
        write_marked_section(args.write, START, END, section, "Real engine (local stack)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`make up`: the control plane with the stack's KWOK pool, the node tier's kubelet nodes for its kubelet
pools (the recipe tests/integration/test_node_tier.py proves: tests/helpers/node_tier.py), then the
`local-kubelet` stack through the real Pulumi engine, its smoke test run on those nodes.

Every process it starts outlives it (tools/nodetier.py starts each in a session of its own, logs to
files; kwokctl detaches the control plane), their pids under <state>/pids for `make down`. A second
`make up` reuses what runs when it is whole and of the same shape (then only `pulumi up` runs again),
and otherwise replaces it: `make down`'s teardown, then a fresh start. Runs in the project's venv."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from . import down, procs
from .preflight import busy_message, other_node_tiers
from .state import SAMPLE_IMAGE, SAMPLE_WORKLOAD, STACK, STACK_FILE, Layout, Record
from .usage import Cluster, env_file, how_to_use

KUBECONFIG_KEY = "ck8s-gpu:kubeconfig"


def say(msg: str) -> None:
    print(f"make up: {msg}", flush=True)


def shape(specs: list[Any], settings: dict[str, Any], cluster_gates: dict[str, Any]) -> str:
    """Fingerprint of what the running cluster must match to be reused: the node tier's specs (names,
    devices, labels, gates, fabric), the KWOK pool and the control plane's gates."""
    doc = {"specs": [dataclasses.asdict(s) for s in specs],
           "kwok": next(p for p in settings["nodePools"] if p["name"] == "gpu"),
           "gates": cluster_gates}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=sorted).encode()).hexdigest()[:16]


def pidfiles(layout: Layout, tier: Any) -> dict[Path, Any]:
    """Pid file -> the Popen of every process of the tier (the cd controller and each node's four)."""
    out = {layout.pids / "cd-controller.pid": tier.cd_controller}
    for node in tier.nodes:
        for role in ("containerd", "kubelet", "plugin", "cd_plugin"):
            out[layout.pids / f"{node.name}.{role}.pid"] = getattr(node, role)
    return out


def whole(layout: Layout, record: Record, want_shape: str, bin_dir: Path, lc: Any) -> str | None:
    """None when what runs can be reused; else why not."""
    if record.shape != want_shape or record.bin_dir != str(bin_dir):
        return "the stack file's nodes or the tools changed"
    if not record.nodes or not record.probe_image or not record.cluster_name:
        return "an earlier `make up` did not finish"
    dead = [p.name for p in sorted(layout.pids.glob("*.pid")) if not procs.alive(p)]
    if dead or not list(layout.pids.glob("*.pid")):
        return f"not running: {', '.join(dead) or 'no pid files'}"
    cluster = lc.LocalCluster(layout.cluster, name=record.cluster_name, nodes=0, bin_dir=bin_dir)
    try:
        if cluster.kubectl("get", "--raw", "/readyz", check=False, timeout=10).strip() != "ok":
            return "the API server does not answer"
        ready = {n["metadata"]["name"] for n in cluster.get_json("nodes")["items"]
                 for c in n["status"].get("conditions", []) if c["type"] == "Ready" and c["status"] == "True"}
    except (RuntimeError, OSError, ValueError) as exc:
        return f"the API server does not answer ({exc})"
    missing = sorted(set(record.nodes) - ready)
    return f"nodes not Ready: {', '.join(missing)}" if missing else None


def start(layout: Layout, bin_dir: Path, settings: dict[str, Any], want_shape: str) -> Record:
    from tests.helpers.node_tier import kubelet_tier, start_kwok_pool

    record = Record(bin_dir=str(bin_dir), shape=want_shape)
    record.write(layout)
    t0 = time.monotonic()
    cluster, _ = start_kwok_pool(layout.dir, bin_dir, settings)
    record.cluster_name = cluster.name
    record.write(layout)
    say(f"control plane up in {time.monotonic() - t0:.0f}s ({cluster.kubeconfig})")
    tier, _ = kubelet_tier(layout.dir, bin_dir, cluster, settings)
    record.nodes = [n.name for n in tier.nodes]
    record.compute_domain_nodes = [n.name for n in tier.nodes if n.spec.compute_domains]
    record.write(layout)  # before up(): a killed start is still removable
    tier.up()
    for path, proc in pidfiles(layout, tier).items():
        if proc is not None:
            procs.write_pidfile(path, proc.pid)
    for node in tier.nodes:  # the sample workload's image name (examples/dra-workload.yaml)
        node.ctr("images", "tag", "--force", tier.probe.name, SAMPLE_IMAGE)
    record.probe_image = tier.probe.reference
    record.write(layout)
    say(f"node tier up in {tier.start_seconds:.0f}s: {', '.join(record.nodes)}")
    return record


def refresh_project(layout: Layout, settings: dict[str, Any], probe_image: str, settings_key: str) -> None:
    """The program's current copy (stacks/ and Pulumi.yaml stay untouched), and its stack file: the
    settings of stacks/Pulumi.local-kubelet.yaml with the probe image; the engine's own keys
    (encryption salt, the secret kubeconfig) are kept."""
    from tests.helpers.tools import copy_project

    fresh = layout.dir / "project.new"
    shutil.rmtree(fresh, ignore_errors=True)
    copy_project(fresh)
    layout.project.mkdir(parents=True, exist_ok=True)
    for part in fresh.iterdir():
        target = layout.project / part.name
        if target.is_dir():
            shutil.rmtree(target)
        part.replace(target)
    fresh.rmdir()
    stack_file = layout.project / f"Pulumi.{STACK}.yaml"
    doc = yaml.safe_load(stack_file.read_text()) if stack_file.exists() else {}
    doc.setdefault("config", {})[settings_key] = {**settings, "smokeTest": {**settings["smokeTest"],
                                                                          "image": probe_image}}
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))


def passphrase(layout: Layout) -> str:
    if not layout.passphrase.exists():
        layout.passphrase.write_text(secrets.token_urlsafe(24) + "\n")
        layout.passphrase.chmod(0o600)
    return layout.passphrase.read_text().strip()


def deploy(layout: Layout, bin_dir: Path, record: Record) -> dict[str, Any] | None:
    """`pulumi up` of the stack (engine output shown and logged); the smoke report, None if `up` failed."""
    from pulumi import automation as auto

    from tests.integration.conftest import EngineTools, inline_kubeconfig

    layout.logs.mkdir(parents=True, exist_ok=True)
    opts = EngineTools(bin_dir).workspace(layout.dir, layout.project, passphrase(layout))
    try:
        stack = auto.create_or_select_stack(STACK, work_dir=str(layout.project), opts=opts)
        stack.set_config(KUBECONFIG_KEY, auto.ConfigValue(inline_kubeconfig(layout.kubeconfig), secret=True))
    except auto.CommandError as exc:
        say(f"the stack could not be selected in {layout.backend}: {str(exc).strip()[-1500:]}")
        return None
    record.stack_up = True
    record.write(layout)
    say(f"pulumi up --stack {STACK} (real engine, file backend {layout.backend}) ...")
    with (layout.logs / "pulumi-up.log").open("w") as log:
        def show(line: str) -> None:
            log.write(line + "\n")
            print(f"  | {line}", flush=True)

        t0 = time.monotonic()
        try:
            result = stack.up(on_output=show, color="never", suppress_outputs=True)  # the report follows, as a table
        except auto.CommandError:
            say(f"pulumi up failed after {time.monotonic() - t0:.0f}s: its output is above and in "
                f"{layout.logs / 'pulumi-up.log'}")
            return None
    say(f"pulumi up done in {time.monotonic() - t0:.0f}s")
    report: dict[str, Any] = result.outputs["smokeReport"].value
    (layout.dir / "smoke-report.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


def run(layout: Layout) -> int:
    from components.settings.load import SettingsError, parse_settings
    from components.smoke.report import passed, table
    from components.tables.labels import SIMULATED_POOL_LABEL
    from tests.helpers.cluster_gates import local_cluster_gates
    from tests.helpers.node_tier import SETTINGS_KEY, gpu_count, node_specs, pool, stack_settings
    from tests.helpers.tools import load_tool
    from tests.integration.conftest import missing_engine_tools

    lc, nt = load_tool("localcluster"), load_tool("nodetier")
    bin_dir = Path(lc.tools_bin_dir())
    lacking = missing_engine_tools(bin_dir) + nt.missing(bin_dir)
    if lacking:
        say("cannot start, missing: " + "; ".join(lacking) + " (`make tools debs` builds and installs them)")
        return 2
    layout = Layout(layout.dir.resolve())
    others = other_node_tiers(str(nt.short_root(layout.nodes)))
    if others:
        print(busy_message("up", others), file=sys.stderr)
        return 3
    settings = stack_settings()
    try:  # the stack file's settings, every problem named, before anything starts
        parse_settings(settings, source=str(STACK_FILE))
    except SettingsError as exc:
        say(str(exc))
        return 2
    specs = node_specs(settings)
    want = shape(specs, settings, local_cluster_gates(settings))
    record = Record.read(layout)
    why = whole(layout, record, want, bin_dir, lc) if record else None
    if record and why is None:
        say(f"reusing the running cluster and node tier ({layout.dir})")
    else:
        if layout.dir.exists():
            say(f"replacing the earlier `make up` in {layout.dir} ({why or 'no record of it'})")
            if down.teardown(layout, quiet=True) != 0:
                say("the earlier one did not go away cleanly (above): fix that, then `make down`")
                return 1
        try:
            record = start(layout, bin_dir, settings, want)
        except (nt.NodeTierError, lc.ToolsMissing, RuntimeError, TimeoutError, OSError) as exc:
            say(f"start failed: {exc}\nWhat started still runs for a look at its logs ({layout.dir}); "
                "`make down` removes it.")
            return 1
    refresh_project(layout, settings, record.probe_image, SETTINGS_KEY)
    report = deploy(layout, bin_dir, record)
    kwok = pool(settings, "gpu")
    cluster = Cluster(layout, bin_dir, sys.executable, {s.name: s.gpus for s in specs},
                      {f"gpu-node-{i}": gpu_count(kwok["instanceType"]) for i in range(kwok["desiredSize"])},
                      SAMPLE_WORKLOAD, SIMULATED_POOL_LABEL)
    layout.env_file.write_text(env_file(cluster))
    if report is None:
        say("the cluster still runs for a look (below); `make down` removes it")
        print(how_to_use(cluster))
        return 1
    ok = passed(report)
    print("\nSmoke report (the stack's DRA smoke test, run on the kubelet nodes):")
    print(table(report))
    print(f"smoke test: {'PASSED' if ok else 'FAILED'} ({layout.dir / 'smoke-report.json'})\n")
    print(how_to_use(cluster))
    return 0 if ok else 1

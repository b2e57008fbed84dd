"""`make down`: `pulumi destroy` (best effort: skipped when the API server is gone), the node tier's
teardown (tools/nodetier.py NodeTier.down: containers, shims, mounts, network namespaces, bridges,
node addresses, cgroups; on processes adopted from <state>/pids), the control plane's
(tools/localcluster.py LocalCluster.down), then a check that nothing is left and the state dir's
removal. Standard library only: it works with the venv gone."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import procs
from .preflight import TOOLS, busy_message, other_node_tiers, tools_bin
from .state import STACK, Layout, Record

DESTROY_TIMEOUT = 300
#: tools/nodetier.py CGROUP_PARENT: the containers' cgroups live below it.
CGROUP_MARK = "/ck8s-gpu-nodes/"


def _tool(name: str) -> Any:
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    return __import__(name)


def say(msg: str) -> None:
    print(f"make down: {msg}", flush=True)


def marks(layout: Layout, short_root: Path) -> list[str]:
    """What the command lines of `up`'s processes name: the cluster dir (kwokctl's components, and every
    node process through the kubeconfig) and the node tier's short root (containerd, its shims)."""
    return [str(layout.cluster) + "/", str(short_root) + "/", str(layout.nodes) + "/"]


def api_answers(bin_dir: Path, layout: Layout) -> bool:
    try:
        out = subprocess.run([str(bin_dir / "kubectl"), "--kubeconfig", str(layout.kubeconfig), "get", "--raw",
                              "/readyz", "--request-timeout=5s"], capture_output=True, text=True, timeout=15,
                             check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.strip() == "ok"


def destroy(layout: Layout, bin_dir: Path) -> None:
    """`pulumi destroy` with the pulumi CLI of the tools cache, as `make up`'s engine ran the stack."""
    if not (layout.project / "Pulumi.yaml").exists() or not layout.backend.exists():
        return
    if not api_answers(bin_dir, layout):
        say("the API server does not answer: skipping pulumi destroy (the stack's state goes with the state dir)")
        return
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "PULUMI_HOME": str(bin_dir.parent / "pulumi-home"), "PULUMI_BACKEND_URL": f"file://{layout.backend}",
           "PULUMI_CONFIG_PASSPHRASE_FILE": str(layout.passphrase), "PULUMI_SKIP_UPDATE_CHECK": "true",
           "PULUMI_IGNORE_AMBIENT_PLUGINS": "true"}
    for var in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):  # as EngineTools.workspace sets them
        env[var] = str(layout.dir / "helm" / var.split("_")[1].lower())
    layout.logs.mkdir(parents=True, exist_ok=True)
    log = layout.logs / "pulumi-destroy.log"
    say(f"pulumi destroy --stack {STACK} ...")
    cmd = [str(bin_dir / "pulumi"), "destroy", "--yes", "--skip-preview", "--non-interactive", "--color", "never",
           "--stack", STACK, "--cwd", str(layout.project)]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            rc = proc.wait(DESTROY_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = -1
    lines = log.read_text(errors="replace").splitlines()
    if rc == 0:
        say("pulumi destroy done")
    else:
        tail = "\n".join(f"  | {line}" for line in lines[-15:])
        say(f"pulumi destroy failed ({'timed out' if rc == -1 else f'exit {rc}'}); going on with the teardown:\n{tail}")


def stop_tier(layout: Layout, record: Record | None, bin_dir: Path) -> tuple[list[str], Any]:
    """NodeTier.down() on the processes of the pid files: what it could not remove, and the tier."""
    if record is None or not record.nodes:
        return [], None
    nt = _tool("nodetier")
    specs = [nt.NodeSpec(n, [], compute_domains=n in record.compute_domain_nodes) for n in record.nodes]
    tier = nt.NodeTier(layout.nodes, layout.kubeconfig, specs, bin_dir=bin_dir)
    tier.cd_controller = procs.Adopted.of(layout.pids / "cd-controller.pid")
    for node in tier.nodes:
        for role in ("containerd", "kubelet", "plugin", "cd_plugin"):
            setattr(node, role, procs.Adopted.of(layout.pids / f"{node.name}.{role}.pid"))
    say(f"stopping the node tier ({', '.join(record.nodes)})")
    problems: list[str] = tier.down()
    return problems, tier


def stop_cluster(layout: Layout, bin_dir: Path) -> None:
    lc = _tool("localcluster")
    clusters = layout.cluster / "kwok" / "clusters"
    for d in sorted(clusters.iterdir()) if clusters.is_dir() else []:
        say(f"stopping the control plane ({d.name})")
        try:
            lc.LocalCluster(layout.cluster, name=d.name, nodes=0, bin_dir=bin_dir).down()
        except OSError as exc:  # kwokctl itself is gone: the sweep below stops its components
            say(f"kwokctl: {exc}")


def sweep(layout: Layout, short_root: Path, bin_dir: Path, wait: float = 15.0) -> list[str]:
    """Kill what is still running of ours after `wait` seconds (the control plane's components exit on
    their SIGTERM): the node tier's containers, and processes of the tools cache (or runc) whose command
    line names this state dir. Anything else naming it is only reported."""
    deadline = time.monotonic() + wait
    while (left := procs.processes(marks(layout, short_root), CGROUP_MARK)) and time.monotonic() < deadline:
        time.sleep(0.5)
    killed, foreign = [], []
    for pid, cmd in sorted(left.items()):
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            exe = ""
        ours = (exe.startswith(str(bin_dir) + "/") or os.path.basename(exe) == "runc"
                or CGROUP_MARK in procs._cgroup(pid))
        if ours:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(f"{pid} {cmd[:100]}")
            except ProcessLookupError:
                pass
        else:
            foreign.append(f"process {pid} names the state dir and is not ours to kill: {cmd[:150]}")
    if killed:
        say("killed what was still running:\n  " + "\n  ".join(killed))
    return foreign


def mounts_under(*roots: Path) -> list[str]:
    prefixes = [str(r).rstrip("/") + "/" for r in roots]
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    return sorted(p for p in points if any(p.startswith(x) or p + "/" == x for x in prefixes))


def leftovers(layout: Layout, short_root: Path, ports: set[int], tier: Any) -> list[str]:
    """What of `up` still exists on this host: processes, mounts, the node tier's root, bridges, node
    addresses, runc containers and cgroups, the ports `up`'s processes listened on."""
    out = list(tier.leftovers()) if tier is not None else []
    out += [f"process {pid} {cmd[:120]}" for pid, cmd in procs.processes(marks(layout, short_root),
                                                                        CGROUP_MARK).items()]
    out += [f"mount {m}" for m in mounts_under(layout.dir, short_root)]
    if short_root.exists():
        out.append(f"directory {short_root}")
    cgroups = Path("/sys/fs/cgroup")
    out += [f"cgroup {d}" for d in [cgroups / "ck8s-gpu-nodes", *cgroups.glob("*/ck8s-gpu-nodes")] if d.exists()]
    out += [f"port {p} still listening" for p in sorted(ports & procs.listening_ports())]
    return out


def teardown(layout: Layout, *, quiet: bool = False) -> int:
    """Everything `up` made in `layout`, gone; 0 when nothing is left, 1 otherwise (each thing printed)."""
    layout = Layout(layout.dir.resolve())
    nt = _tool("nodetier")
    short_root = nt.short_root(layout.nodes)
    others = other_node_tiers(str(short_root))
    if others:
        print(busy_message("down", others), file=sys.stderr)
        return 3
    if not layout.dir.exists() and not short_root.exists():
        if not quiet:
            say(f"nothing to remove ({layout.dir} does not exist)")
        return 0
    record = Record.read(layout)
    bin_dir = Path(record.bin_dir) if record else (tools_bin() or Path("/nonexistent"))
    ports = procs.ports_of(procs.processes(marks(layout, short_root), CGROUP_MARK))
    if record is not None and record.stack_up:
        destroy(layout, bin_dir)
    problems, tier = stop_tier(layout, record, bin_dir)
    stop_cluster(layout, bin_dir)
    problems += sweep(layout, short_root, bin_dir)
    if mounts := mounts_under(layout.dir, short_root):  # unmount before any rmtree can reach into them
        for point in sorted(mounts, key=lambda m: -m.count("/")):
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)
    left = leftovers(layout, short_root, ports, tier)
    if not mounts_under(layout.dir, short_root):
        shutil.rmtree(layout.dir, ignore_errors=True)
        shutil.rmtree(short_root, ignore_errors=True)
        left = leftovers(layout, short_root, ports, tier)
        if layout.dir.exists():
            left.append(f"directory {layout.dir}")
    problems = sorted(set(problems + left) - {""})
    if problems:
        say("could not remove everything:\n  " + "\n  ".join(problems))
        return 1
    say(f"removed: no process, mount, network namespace, bridge, cgroup or port of it is left; {layout.dir} is gone")
    return 0

#!/usr/bin/env python3
"""Check the project's gates and smoke test against the REAL upstream controllers, built from source.

Run by a maintainer at every pin change of the GPU Operator or KAI (components/tables/pins.py CHARTS).
CI cannot fetch upstream sources, so the trees are given by path; without them the script prints
one line and exits 0.

    .venv/bin/python tools/compat_controllers.py \\
        --gpu-operator-src ~/src/gpu-operator --gpu-operator-git ~/mirror/gpu-operator.git \\
        --gpu-operator-bin ~/src/gpu-operator/bin/gpu-operator \\
        --kai-src ~/src/KAI-Scheduler --kai-git ~/mirror/KAI-Scheduler.git --kai-bin-dir ~/src/KAI-Scheduler/bin \\
        [--out docs/compatibility.md] [--runs 20] [--work DIR] [--only gpu-operator|gpu-cluster|kai]

A tree is a checkout (or `git archive <tag> | tar -x`) of the pinned tag. `--*-git` names a git dir
holding the tag: the script then checks the tree equals the tag and records its commit (a
checkout's own .git works too). The binaries are the maintainer's, built from those trees with
upstream's own build (the operator's cmd/gpu-operator; KAI's cmd/scheduler, binder, podgrouper,
queuecontroller): this script compiles nothing; it records each binary's digest and the build
information Go embeds in it. The trees give the CRDs, the charts and the operator's assets.

Against a loopback control plane with KWOK GPU nodes (tools/localcluster.py, binaries from
`bash tools/build.sh`):

* GPU Operator: the ClusterPolicy the upstream chart renders from the project's `aws-dev` values;
  the operator binary runs on the host (its assets under /opt/gpu-operator, seen through a private
  mount namespace: nothing is written to the host's /opt); scenarios no NFD labels, NFD labelled,
  spec change and tainted pool, each judged by the project's gate
  (components.addons.cluster_policy_ready.check_cluster_policy).
* GPU Operator in GPUCluster mode (gpuStack.draManagedBy operator): the GPUCluster the chart
  renders from the same values with that setting, the operator with its chart's env; scenarios a
  ClusterPolicy beside it, no GPU node, NFD labelled with GPUs published, each judged by
  components.addons.gpu_cluster_ready.check_gpu_cluster.
* KAI: CRDs, the chart's PriorityClasses, the project's queues (charts/kai-queues), simulated DRA
  slices (tools/dra_publisher.py), scheduler + binder + podgrouper + queue controller; then
  `ck8s-gpu smoke --scheduler kai` `--runs` times, with the claims left allocated after each run,
  the claim write rate, the PodGroups' priority and the claims' finalizers.

Results go between `<!-- compat:begin -->` and `<!-- compat:end -->` of `--out` (one block per
controller; a run of one controller keeps the other's block). Every process binds 127.0.0.1 and is
stopped, and every cluster deleted, on success, failure and SIGTERM alike.
Exit status: 0 every check passed (or no sources); 1 a check failed; 2 bad arguments or missing tools.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
for _p in (REPO, REPO / "tools"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from localcluster import Watch  # noqa: E402  (tools/ is on the path only from here)

BEGIN, END = "<!-- compat:begin -->", "<!-- compat:end -->"
LOOPBACK = "127.0.0.1"
OPERATOR_NS = "gpu-operator"
POLICY = "cluster-policy"
KAI_NS = "kai-scheduler"
NFD_LABELS = {
    "feature.node.kubernetes.io/pci-10de.present": "true",
    "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
    "feature.node.kubernetes.io/system-os_release.VERSION_ID": "24.04",
}
CUSTOM_TAINT = ("dedicated", "training", "NoSchedule")
DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"
OPERATOR_CRDS = ("nvidia.com_clusterpolicies.yaml", "nvidia.com_nvidiadrivers.yaml", "nvidia.com_gpuclusters.yaml")
# The GPUCluster's controller also watches ComputeDomains (the chart's crds/ at v26.7.0 has them).
GPU_CLUSTER_CRDS = (*OPERATOR_CRDS, "resource.nvidia.com_computedomains.yaml",
                    "resource.nvidia.com_computedomaincliques.yaml")
GPU_CLUSTER = "gpu-cluster"
PARTS = ("gpu-operator", "gpu-cluster", "kai")
KAI_BINARIES = ("scheduler", "binder", "podgrouper", "queuecontroller")

Obj = dict[str, Any]


def log(msg: str) -> None:
    print(f"[compat {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def short(text: Any, limit: int = 500) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


# --------------------------------------------------------------------------------------------
# results


@dataclass
class Check:
    key: str
    title: str
    status: str = "not run"  # passed | failed | error | not run
    summary: str = ""
    evidence: list[str] = field(default_factory=list)

    def say(self, line: str) -> None:
        self.evidence.append(line)
        log(f"{self.key}: {short(line, 300)}")

    def done(self, ok: bool, summary: str) -> None:
        self.status, self.summary = ("passed" if ok else "failed"), summary
        log(f"{self.key}: {self.status}: {short(summary, 300)}")


@dataclass
class Part:
    key: str  # gpu-operator | kai
    title: str
    pin: str
    src: Path
    commit: str = "unknown"
    commit_note: str = ""
    tree_hash: str = ""
    builds: list[dict[str, Any]] = field(default_factory=list)
    date: str = ""
    notes: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    command: str = ""

    def check(self, key: str, title: str) -> Check:
        c = Check(key, title)
        self.checks.append(c)
        return c


# --------------------------------------------------------------------------------------------
# source trees and builds


def tree_hash(root: Path) -> str:
    """Content hash of a source tree (paths, modes, bytes), .git excluded."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for fn in sorted(filenames):
            p = Path(dirpath) / fn
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                h.update(f"L {rel} {os.readlink(p)}\n".encode())
                continue
            h.update(f"F {rel} {os.stat(p).st_mode & 0o111:o}\n".encode())
            with p.open("rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
    return h.hexdigest()


def identify(part: Part, git_dir: Path | None, tag: str) -> None:
    """Commit of the tree: its own .git, or a git dir holding `tag` whose tree must equal it."""
    src = part.src
    if (src / ".git").exists():
        out = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        part.commit = out.stdout.strip() or "unknown"
        part.commit_note = "checkout HEAD" + (" (with local changes)" if dirty else "")
        return
    if git_dir is None:
        part.commit_note = "not a git checkout and no --*-git given: commit not verified"
        return
    commit = subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", f"{tag}^{{commit}}"],
                            capture_output=True, text=True)
    if commit.returncode != 0:
        part.commit_note = f"tag {tag} not in {git_dir}: {short(commit.stderr, 200)}"
        return
    with tempfile.TemporaryDirectory() as td:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(td) / "index")}
        base = ["git", "--git-dir", str(git_dir), "--work-tree", str(src)]
        subprocess.run([*base, "read-tree", commit.stdout.strip()], env=env, check=True, capture_output=True)
        subprocess.run([*base, "update-index", "-q", "--refresh"], env=env, capture_output=True)
        diff = subprocess.run([*base, "diff-files", "--name-status"], env=env, capture_output=True, text=True)
    changed = diff.stdout.strip().splitlines()
    part.commit = commit.stdout.strip()
    part.commit_note = (f"tree equals tag {tag} of {git_dir}" if not changed else
                        f"tree DIFFERS from tag {tag} of {git_dir} in {len(changed)} file(s): "
                        + ", ".join(changed[:5]))


def binary_info(name: str, part: Part, path: Path) -> Path:
    """Record a binary the maintainer built from `part.src` with upstream's own build: its digest
    and the build info Go embeds (`go version -m`: module, Go version, VCS revision). Building is
    not this script's job: nothing here compiles upstream code."""
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise RuntimeError(f"{name}: {path} is not an executable file (build it from {part.src} with upstream's "
                           "own build first)")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    try:
        info = subprocess.run(["go", "version", "-m", str(path)], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        info = f"go version -m unavailable: {exc}"
    lines = [" ".join(ln.split()) for ln in info.splitlines()]
    keep = [ln for ln in lines[:1] + [x for x in lines if x.startswith(("path ", "mod ", "build vcs.revision",
                                                                              "build GOFLAGS"))]]
    part.builds.append({"name": name, "path": str(path), "sha256": digest[:16], "info": "; ".join(keep)[:400]})
    log(f"{name}: {path} sha256 {digest[:16]}")
    return path


# --------------------------------------------------------------------------------------------
# processes, watches


class Controller:
    """A controller binary on the host, in its own process group, log to a file."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], logdir: Path) -> None:
        self.name, self.log = name, logdir / f"{name}.log"
        self._f = self.log.open("w")
        self.proc = subprocess.Popen(argv, env=env, stdout=self._f, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        log(f"started {name} (pid {self.proc.pid})")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, n: int = 2000) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-n:]
        return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
            log(f"stopped {self.name}")
        self._f.close()


def _socket_inodes(pid: int) -> set[str]:
    out = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    out.add(target[8:-1])
    return out


def _hex_addr(h: str) -> str:
    ip, port = h.split(":")
    if len(ip) == 8:
        addr = socket.inet_ntop(socket.AF_INET, bytes.fromhex(ip)[::-1])
    else:
        raw = bytes.fromhex(ip)
        addr = socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
    return f"{addr}:{int(port, 16)}"


def listeners(pid: int) -> list[str]:
    """TCP sockets in LISTEN state the process holds (from /proc)."""
    inodes = _socket_inodes(pid)
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                cols = line.split()
                if len(cols) > 9 and cols[3] == "0A" and cols[9] in inodes:
                    found.append(_hex_addr(cols[1]))
    return sorted(found)


def non_loopback(addrs: list[str]) -> list[str]:
    return [a for a in addrs if not (a.startswith("127.") or a.startswith("::1:") or a.startswith("[::1]"))]


class TimedWatch(Watch):
    """`kubectl get --watch` of one resource (localcluster.Watch); `timed` pairs every event with
    the local monotonic time it arrived, as (time, event type, object)."""

    def __init__(self, kubectl: str, kubeconfig: Path, resource: str, namespace: str | None = None) -> None:
        cmd = [kubectl, "--kubeconfig", str(kubeconfig), "get", resource, "--watch", "--output-watch-events",
               "-o", "json", "--show-managed-fields"]
        cmd += ["-n", namespace] if namespace else ["-A"]
        super().__init__(cmd, dict(os.environ))

    @property
    def timed(self) -> list[tuple[float, str, Obj]]:
        with self._lock:
            pairs = zip(self.arrived, self.events, strict=False)
            return [(t, str(ev.get("type", "")), ev.get("object") or {}) for t, ev in pairs]

    def since(self, t: float, until: float | None = None) -> list[tuple[float, str, Obj]]:
        return [e for e in self.timed if e[0] >= t and (until is None or e[0] <= until)]


def wait_until(what: str, pred: Callable[[], Any], timeout: float, interval: float = 1.0) -> Any:
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            last = pred()
        except RuntimeError as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what} (last: {short(last, 300)})")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------------------------
# the project's values, upstream charts


def project_release_values(stack: str, chart: str, config_edit: Callable[[Obj], None] | None = None
                           ) -> tuple[Obj, str, str]:
    """(values, release name, how) of the release of `chart` in the offline plan of `stack`: the path
    the project's own golden test uses (components.plan.run, components.addons.addon_set.release_args)."""
    import copy

    from components.plan.artifacts import RELEASE
    from components.plan.run import plan_config, stack_file
    from components.settings.load import read_stack_file

    path = stack_file(stack)
    config = copy.deepcopy(read_stack_file(path))
    if config_edit is not None:
        config_edit(config)
    plan = plan_config(config, stack, str(path))
    for r in plan.resources:
        if r.type == RELEASE and str(r.inputs.get("chart", "")).rstrip("/").endswith(chart):
            return (copy.deepcopy(r.raw_inputs["values"] or {}), str(r.inputs.get("name") or chart),
                    f"offline plan of stack {stack} (release {r.name})")
    raise LookupError(f"no {chart} release in the plan of stack {stack}")


def golden_values(stack: str, chart: str) -> Obj:
    import yaml

    doc = yaml.safe_load((REPO / "tests" / "golden" / "addon-values" / f"{stack}.yaml").read_text())
    for rel in doc["releases"].values():
        if str(rel["chart"]).rstrip("/").endswith(chart):
            return dict(rel["values"])
    raise LookupError(f"no {chart} in the {stack} golden")


def render_chart(chart_dir: Path, values: Obj, *, name: str, namespace: str) -> list[Obj]:
    import helm_python
    import yaml

    rendered = helm_python.Chart.load(str(chart_dir)).render(values=values, name=name, namespace=namespace,
                                                             is_install=True)
    out: list[Obj] = []
    for path in sorted(rendered):
        if path.endswith((".yaml", ".yml")):
            for doc in yaml.safe_load_all(rendered[path]):
                if isinstance(doc, dict) and doc.get("kind"):
                    doc.setdefault("metadata", {}).setdefault("annotations", {})
                    doc["metadata"]["annotations"] = doc["metadata"]["annotations"] or {}
                    doc["metadata"]["annotations"]["ck8s-gpu.io/compat-source"] = path
                    out.append(doc)
    return out


def of_kind(objs: list[Obj], kind: str, name_part: str = "") -> list[Obj]:
    return [o for o in objs if o.get("kind") == kind and name_part in o.get("metadata", {}).get("name", "")]


def crd_names(path: Path) -> list[str]:
    import yaml

    return [d["metadata"]["name"] for d in yaml.safe_load_all(path.read_text())
            if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]


def apply_crds(c: Any, files: list[Path]) -> list[str]:
    names = []
    for f in files:
        c.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=ck8s-gpu-compat", "-f", str(f),
                  timeout=120)
        names += crd_names(f)
    for n in names:
        c.kubectl("wait", "--for=condition=Established", f"crd/{n}", "--timeout=60s", timeout=90)
    return names


# --------------------------------------------------------------------------------------------
# GPU Operator


def policy_status(p: Obj | None) -> str:
    if not p:
        return "ClusterPolicy absent"
    st = p.get("status") or {}
    conds = "; ".join(f"{c.get('type')}={c.get('status')}/{c.get('reason')}" + (f" \"{c['message']}\""
                      if c.get("message") else "") for c in st.get("conditions") or [])
    return f"state={st.get('state') or 'unset'!r}" + (f"; {conds}" if conds else "; no conditions")


def status_key(p: Obj) -> str:
    st = p.get("status") or {}
    return json.dumps([st.get("state"), sorted((c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
                                               for c in st.get("conditions") or [])])


def node_labels(c: Any, prefixes: tuple[str, ...] = ("nvidia.com/gpu", "feature.node")) -> list[str]:
    out = []
    for n in c.get_json("nodes")["items"]:
        labels = {k: v for k, v in (n["metadata"].get("labels") or {}).items() if k.startswith(prefixes)}
        out.append(f"{n['metadata']['name']}: " + (", ".join(f"{k}={v}" for k, v in sorted(labels.items()))
                                                    or "(none of nvidia.com/gpu*, feature.node*)"))
    return out


def daemonsets(c: Any, ns: str) -> list[str]:
    out = []
    for d in c.get_json("daemonsets", "-n", ns)["items"]:
        st = d.get("status") or {}
        out.append(f"{d['metadata']['name']}: desired {st.get('desiredNumberScheduled', 0)}, ready "
                   f"{st.get('numberReady', 0)}, available {st.get('numberAvailable', 0)}, updated "
                   f"{st.get('updatedNumberScheduled', 0)}, generation {d['metadata'].get('generation')}/observed "
                   f"{st.get('observedGeneration', 0)}")
    return out


def run_gate(kubeconfig: Path, *, min_gpu_nodes: int, timeout: float, settle: float) -> tuple[bool, str, float]:
    from components.addons.cluster_policy_ready import check_cluster_policy
    from components.kube.wait import WaitTimeout

    t0 = time.monotonic()
    try:
        out = check_cluster_policy(kubeconfig.read_text(), name=POLICY, namespace=OPERATOR_NS,
                                   min_gpu_nodes=min_gpu_nodes, timeout_seconds=timeout, settle_seconds=settle)
    except WaitTimeout as exc:
        return False, f"WaitTimeout: {exc}", time.monotonic()
    except Exception as exc:  # the gate itself broke: that is a finding too
        return False, f"{type(exc).__name__}: {exc}", time.monotonic()
    log(f"gate passed after {time.monotonic() - t0:.0f}s")
    return True, f"passed: {out}", time.monotonic()


def run_cluster_gate(kubeconfig: Path, *, min_gpu_nodes: int, timeout: float,
                     settle: float) -> tuple[bool, str, float]:
    """The GPUCluster gate (components/addons/gpu_cluster_ready.py), as the program runs it."""
    from components.addons.gpu_cluster_ready import check_gpu_cluster
    from components.kube.wait import WaitTimeout

    t0 = time.monotonic()
    try:
        out = check_gpu_cluster(kubeconfig.read_text(), name=GPU_CLUSTER, namespace=OPERATOR_NS,
                                min_gpu_nodes=min_gpu_nodes, timeout_seconds=timeout, settle_seconds=settle)
    except WaitTimeout as exc:
        return False, f"WaitTimeout: {exc}", time.monotonic()
    except Exception as exc:
        return False, f"{type(exc).__name__}: {exc}", time.monotonic()
    log(f"gate passed after {time.monotonic() - t0:.0f}s")
    return True, f"passed: {out}", time.monotonic()


def status_writes(w: TimedWatch, since: float) -> list[tuple[float, Obj]]:
    """Watch events after `since` whose status differs from the previous event's (status writes)."""
    prev: str | None = None
    before = [e for e in w.timed if e[0] < since]
    if before:
        prev = status_key(before[-1][2])
    out = []
    for t, _typ, obj in w.since(since):
        k = status_key(obj)
        if k != prev and prev is not None:
            out.append((t, obj))
        prev = k
    return out


def stage_opt(src: Path, work: Path) -> Path:
    """/opt as the operator's image lays it out (docker/Dockerfile: assets -> /opt/gpu-operator,
    manifests -> /opt/gpu-operator/manifests, validator/manifests -> /opt/validator/manifests)."""
    opt = work / "opt"
    shutil.rmtree(opt, ignore_errors=True)
    shutil.copytree(src / "assets", opt / "gpu-operator")
    if (src / "manifests").is_dir():
        shutil.copytree(src / "manifests", opt / "gpu-operator" / "manifests")
    if (src / "validator" / "manifests").is_dir():
        shutil.copytree(src / "validator" / "manifests", opt / "validator" / "manifests")
    return opt


def start_operator(part: Part, work: Path, cl: Any, stack: contextlib.ExitStack,
                   chart_env: dict[str, str] | None = None) -> Controller:
    """The operator binary on the host against the loopback API server, as the admin user, no leader
    election, its image's /opt (stage_opt) bind-mounted in a private mount namespace."""
    opt = stage_opt(part.src, work)
    binary = Path(part.builds[0]["path"])
    metrics, probes = free_port(), free_port()
    env = {**os.environ, **(chart_env or {}), "OPERATOR_NAMESPACE": OPERATOR_NS, "WATCH_NAMESPACE": "",
           "KUBECONFIG": str(cl.kubeconfig)}
    argv = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", 'mount --bind "$0" /opt && exec "$@"',
            str(opt), str(binary), f"--metrics-bind-address={LOOPBACK}:{metrics}",
            f"--health-probe-bind-address={LOOPBACK}:{probes}", f"--kubeconfig={cl.kubeconfig}", "--zap-log-level=info"]
    op = Controller("gpu-operator", argv, env, work / "logs")
    stack.callback(op.stop)
    return op


def first_status(cl: Any, resource: str, name: str, op: Controller, check: Check) -> bool:
    """Wait for the operator's first status on its custom resource; False (the check failed, saying
    why: a timeout or the operator's exit, with its log) when none comes."""
    try:
        wait_until(f"the operator's first {resource} status", lambda: (not op.alive() and "exited") or (
            (cl.get_json(resource, name).get("status") or {}).get("conditions")), timeout=180)
    except TimeoutError as exc:
        check.done(False, f"{exc}; operator log: {short(op.tail(), 800)}")
        return False
    if not op.alive():
        check.done(False, f"the operator exited (rc {op.proc.returncode}): {short(op.tail(), 1200)}")
        return False
    return True


def fresh_work(a: argparse.Namespace, name: str) -> Path:
    """The part's work directory, emptied, with its logs/ folder."""
    work = Path(a.work) / name
    shutil.rmtree(work, ignore_errors=True)
    (work / "logs").mkdir(parents=True)
    return work


def started_cluster(work: Path, tools_bin: Path, stack: contextlib.ExitStack, name: str, nodes: int = 2,
                    instance_type: str = "g6.xlarge") -> Any:
    """A loopback control plane with KWOK GPU nodes, deleted when `stack` closes."""
    from localcluster import LocalCluster

    cl = LocalCluster(work / "cluster", nodes=nodes, instance_type=instance_type, bin_dir=tools_bin, name=name)
    stack.callback(cl.down)
    cl.up()
    return cl


def install_operator_objects(cl: Any, crds: list[Path], obj: Obj) -> list[str]:
    """The operator's namespace, its CRDs (Established) and `obj`; the CRDs' names."""
    cl.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPERATOR_NS}})
    names = apply_crds(cl, crds)
    cl.apply(obj)
    return names


def server_version(cl: Any) -> str:
    return str(json.loads(cl.kubectl("version", "-o", "json")).get("serverVersion", {}).get("gitVersion"))


def gpu_operator_part(a: argparse.Namespace, part: Part, stack: contextlib.ExitStack, tools_bin: Path) -> None:
    chart = part.src / "deployments" / "gpu-operator"
    work = fresh_work(a, "gpu-operator")
    c1 = part.check("render-clusterpolicy", "ClusterPolicy rendered by the upstream chart from the project's aws-dev "
                                             "values, applied with the CRDs")
    c2 = part.check("no-nfd-labels", "No NFD labels: the gate refuses (NFDLabelsMissing)")
    c3 = part.check("nfd-labelled", "NFD labelled: gpu.present, operands, the gate passes")
    c4 = part.check("spec-change", "Spec change: the operator's status writes, the gate waits for the fresh status")
    c5 = part.check("tainted-pool", "Tainted pool: where the chart's NFD worker DaemonSet lands")

    try:
        values, release, how = project_release_values(a.stack, "gpu-operator")
    except Exception as exc:
        values, release, how = golden_values(a.stack, "gpu-operator"), "gpu-operator", (
            f"FALLBACK tests/golden/addon-values/{a.stack}.yaml (the plan failed: {short(exc, 300)})")
    c1.say(f"values: {how}; release name {release}")
    try:
        objs = render_chart(chart, values, name=release, namespace=OPERATOR_NS)
    except Exception as exc:
        c1.done(False, f"helm render of {chart} failed: {short(exc, 800)}")
        return
    policies = of_kind(objs, "ClusterPolicy")
    policy = policies[0] if policies else None
    if policy is None:
        c1.done(False, "the chart rendered no ClusterPolicy")
        return
    nfd_project = of_kind(objs, "DaemonSet", "worker")
    sa_objs = [o for o in of_kind(objs, "ServiceAccount") if "node-feature-discovery" in o["metadata"]["name"]]
    c1.say(f"rendered {len(objs)} objects; ClusterPolicy {policy['metadata']['name']}: driver.enabled="
           f"{policy['spec'].get('driver', {}).get('enabled')}, devicePlugin.enabled="
           f"{policy['spec'].get('devicePlugin', {}).get('enabled')}, toolkit.enabled="
           f"{policy['spec'].get('toolkit', {}).get('enabled')}, toolkit.env="
           f"{[e['name'] for e in policy['spec'].get('toolkit', {}).get('env') or []]}, daemonsets.tolerations="
           f"{policy['spec'].get('daemonsets', {}).get('tolerations')}")

    log("GPU Operator: starting the local control plane")
    cl = started_cluster(work, tools_bin, stack, "compat-op")
    nodes = cl.node_names
    kubectl = str(tools_bin / "kubectl")
    try:
        names = install_operator_objects(cl, [chart / "crds" / f for f in OPERATOR_CRDS], policy)
    except Exception as exc:
        c1.done(False, f"applying the CRDs or the ClusterPolicy failed: {short(exc, 800)}")
        return
    c1.done(True, f"chart {chart.relative_to(part.src)} rendered with {how}; CRDs {', '.join(names)} and "
                  f"ClusterPolicy {POLICY} accepted by kube-apiserver {server_version(cl)}")

    watch = TimedWatch(kubectl, cl.kubeconfig, "clusterpolicies.nvidia.com")
    stack.callback(watch.stop)
    op = start_operator(part, work, cl, stack)
    part.notes.append("The operator binary runs on the host against the loopback API server, as the admin user, no "
                      "leader election; its image's /opt (assets/, manifests/, validator/manifests/ of the tree) is "
                      "bind-mounted in a private mount namespace (`unshare --mount`): the host's /opt is untouched.")

    # --- 2. no NFD labels --------------------------------------------------------------------
    t_start = time.monotonic()
    if not first_status(cl, "clusterpolicy", POLICY, op, c2):
        return
    time.sleep(5)  # node labelling runs beside it
    lst = listeners(op.proc.pid)
    c2.say(f"operator listening on {', '.join(lst) or 'nothing'}")
    if non_loopback(lst):
        c2.done(False, f"the operator listens beyond loopback: {non_loopback(lst)}")
        return
    writes = status_writes(watch, t_start)
    for t, obj in writes:
        c2.say(f"+{t - t_start:5.1f}s status write: {policy_status(obj)}")
    pol = cl.get_json("clusterpolicy", POLICY)
    for line in node_labels(cl):
        c2.say(f"node {line}")
    c2.say(f"DaemonSets in {OPERATOR_NS}: {daemonsets(cl, OPERATOR_NS) or 'none'}")
    old = (pol.get("status") or {}).get("state") == "ready"
    c2.say(f"old check (state == ready alone): {'would PASS' if old else 'would wait'} (state "
           f"{(pol.get('status') or {}).get('state')!r})")
    ok, msg, _ = run_gate(cl.kubeconfig, min_gpu_nodes=len(nodes), timeout=a.gate_timeout_refuse, settle=10)
    c2.say(f"gate: {msg}")
    c2.done(not ok and "NFDLabelsMissing" in msg,
            f"operator wrote {policy_status(pol)}; the gate {'passed (WRONG)' if ok else 'refused'}"
            + ("" if ok or "NFDLabelsMissing" in msg else " but without naming NFDLabelsMissing")
            + f"; the old state-only check {'would have passed' if old else 'would also wait'}")

    # --- 3. NFD labelled ---------------------------------------------------------------------
    t_label = time.monotonic()
    cl.kubectl("label", "node", *nodes, *(f"{k}={v}" for k, v in NFD_LABELS.items()), "--overwrite")
    c3.say(f"labelled {', '.join(nodes)} with {', '.join(f'{k}={v}' for k, v in NFD_LABELS.items())}")
    ok, msg, t_done = run_gate(cl.kubeconfig, min_gpu_nodes=len(nodes), timeout=a.gate_timeout, settle=10)
    for t, obj in status_writes(watch, t_label):
        c3.say(f"+{t - t_label:5.1f}s status write: {policy_status(obj)}")
    for line in node_labels(cl, ("nvidia.com/gpu.present", "nvidia.com/gpu.deploy")):
        c3.say(f"node {line}")
    ds3 = daemonsets(cl, OPERATOR_NS)
    for line in ds3:
        c3.say(f"DaemonSet {line}")
    pods = cl.get_json("pods", "-n", OPERATOR_NS)["items"]
    c3.say(f"{len(pods)} operand pod(s): " + ", ".join(sorted({f"{p['metadata']['name'].rsplit('-', 1)[0]}@"
                                                                   f"{p['spec'].get('nodeName', '?')}="
                                                                   f"{p.get('status', {}).get('phase')}"
                                                                   for p in pods}))[:1500])
    c3.say(f"gate after {t_done - t_label:.0f}s: {msg}")
    c3.done(ok, f"{len(ds3)} operand DaemonSet(s); final {policy_status(cl.get_json('clusterpolicy', POLICY))}; "
                f"gate {'passed' if ok else 'refused'}: {short(msg, 400)}")
    if not op.alive():
        c4.done(False, f"the operator exited (rc {op.proc.returncode}): {short(op.tail(), 800)}")
        return

    # --- 4. spec change ----------------------------------------------------------------------
    before = cl.get_json("clusterpolicy", POLICY)
    # The operand whose spec changes: the toolkit's where the operator installs it, else (the node
    # image carries it: gpuStack.toolkit host, docs/adr/0046) the DCGM exporter's.
    operand, ds_name = (("toolkit", "nvidia-container-toolkit-daemonset")
                        if before["spec"].get("toolkit", {}).get("enabled", True) is not False
                        else ("dcgmExporter", "nvidia-dcgm-exporter"))
    gen0 = before["metadata"].get("generation")
    stamp = str(int(time.time()))
    has_env = bool(before["spec"].get(operand, {}).get("env"))
    patch = ([{"op": "add", "path": f"/spec/{operand}/env/-", "value": {"name": "CK8S_COMPAT_PROBE", "value": stamp}}]
             if has_env else
             [{"op": "add", "path": f"/spec/{operand}/env", "value": [{"name": "CK8S_COMPAT_PROBE", "value": stamp}]}])
    t_patch = time.monotonic()
    cl.kubectl("patch", "clusterpolicy", POLICY, "--type=json", "-p", json.dumps(patch))
    right_after = cl.get_json("clusterpolicy", POLICY)
    c4.say(f"patched spec.{operand}.env (+CK8S_COMPAT_PROBE={stamp}): generation {gen0} -> "
           f"{right_after['metadata'].get('generation')}; status right after the patch: {policy_status(right_after)}")
    old_ok = (right_after.get("status") or {}).get("state") == "ready"
    ok, msg, t_done = run_gate(cl.kubeconfig, min_gpu_nodes=len(nodes), timeout=a.gate_timeout, settle=10)
    time.sleep(2)
    writes = status_writes(watch, t_patch)
    for t, obj in writes:
        c4.say(f"+{t - t_patch:5.1f}s status write: {policy_status(obj)}")
    if not writes:
        c4.say("no status write after the patch")
    with contextlib.suppress(RuntimeError):
        d = cl.get_json("daemonset", ds_name, "-n", OPERATOR_NS)
        envs = [e.get("name") for ctr in d["spec"]["template"]["spec"]["containers"] for e in ctr.get("env") or []]
        c4.say(f"DaemonSet {ds_name}: generation {d['metadata'].get('generation')}, observed "
               f"{d.get('status', {}).get('observedGeneration')}, CK8S_COMPAT_PROBE in env: "
               f"{'CK8S_COMPAT_PROBE' in envs}")
    c4.say(f"gate returned +{t_done - t_patch:.0f}s after the patch: {msg}")
    not_ready = [t for t, o in writes if (o.get("status") or {}).get("state") == "notReady"]
    ready_after = [t for t, o in writes if not_ready and t > not_ready[0]
                   and (o.get("status") or {}).get("state") == "ready"]
    if not ok:
        verdict, summary = False, f"the gate did not pass after the change: {short(msg, 400)}"
    elif not_ready:
        waited = t_done >= (ready_after[0] if ready_after else float("inf"))
        verdict = waited
        summary = (f"operator wrote notReady +{not_ready[0] - t_patch:.1f}s after the patch"
                   + (f" and ready again +{ready_after[0] - t_patch:.1f}s" if ready_after else ", never ready again")
                   + f"; the gate returned +{t_done - t_patch:.0f}s: "
                   + ("after the fresh ready status" if waited else "BEFORE the fresh status (stale pass)"))
    else:
        verdict = "unchanged for" in msg
        summary = ("the operator wrote no status after the change; the gate "
                   + ("passed only after the settle window" if verdict else "passed without a fresh status"))
    stale = "would have passed at once on the stale ready" if old_ok else "would wait"
    summary += f"; the old state-only check {stale}"
    c4.done(verdict, summary)

    # --- 5. tainted pool -----------------------------------------------------------------------
    tainted = nodes[-1]
    key, val, eff = CUSTOM_TAINT
    cl.kubectl("taint", "node", tainted, f"{key}={val}:{eff}", "--overwrite")
    c5.say(f"tainted {tainted} with {key}={val}:{eff}")

    def add_pool_taint(config: Obj) -> None:
        settings = config["ck8s-gpu:settings"]
        for pool in settings.get("nodePools") or []:
            pool["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                              {"key": key, "value": val, "effect": eff}]

    variants: list[tuple[str, list[Obj]]] = [(f"project values ({a.stack}, pools untainted)", nfd_project)]
    try:
        tv, _, _how = project_release_values(a.stack, "gpu-operator", add_pool_taint)
        variants.append((f"project values ({a.stack} with the pool tainted {key}={val}:{eff})",
                         of_kind(render_chart(chart, tv, name=release, namespace=OPERATOR_NS), "DaemonSet", "worker")))
    except Exception as exc:
        c5.say(f"could not plan {a.stack} with a tainted pool: {short(exc, 300)}")
    variants.append(("chart defaults (no values)",
                     of_kind(render_chart(chart, {}, name=release, namespace=OPERATOR_NS), "DaemonSet", "worker")))
    sa = sa_objs or [{"apiVersion": "v1", "kind": "ServiceAccount",
                      "metadata": {"name": "node-feature-discovery", "namespace": OPERATOR_NS}}]
    cl.apply([{**o, "metadata": {**o["metadata"], "namespace": OPERATOR_NS}} for o in sa])
    landed: dict[str, bool] = {}
    for label, dss in variants:
        if not dss:
            c5.say(f"{label}: the chart rendered no NFD worker DaemonSet")
            continue
        ds = dss[0]
        ds["metadata"]["namespace"] = OPERATOR_NS
        tols = ds["spec"]["template"]["spec"].get("tolerations") or []
        cl.apply(ds)
        dname = ds["metadata"]["name"]

        def scheduled(dname: str = dname) -> list[Obj] | None:
            d = cl.get_json("daemonset", dname, "-n", OPERATOR_NS)
            st = d.get("status") or {}
            if int(st.get("observedGeneration") or 0) < 1:
                return None
            ps = [p for p in cl.get_json("pods", "-n", OPERATOR_NS)["items"]
                  if any(r.get("uid") == d["metadata"]["uid"] for r in p["metadata"].get("ownerReferences") or [])]
            want = int(st.get("desiredNumberScheduled") or 0)
            return ps if want and len(ps) >= want and all(p["spec"].get("nodeName") for p in ps) else None

        with contextlib.suppress(TimeoutError):
            wait_until(f"DaemonSet {dname} pods", scheduled, timeout=60)
        time.sleep(3)
        d = cl.get_json("daemonset", dname, "-n", OPERATOR_NS)
        ps = [p for p in cl.get_json("pods", "-n", OPERATOR_NS)["items"]
              if any(r.get("uid") == d["metadata"]["uid"] for r in p["metadata"].get("ownerReferences") or [])]
        where = sorted(f"{p['spec'].get('nodeName') or 'unscheduled'}({p.get('status', {}).get('phase')})" for p in ps)
        on_tainted = any(p["spec"].get("nodeName") == tainted for p in ps)
        landed[label] = on_tainted
        st = d.get("status") or {}
        shown = [(t.get("key"), t.get("operator"), t.get("value"), t.get("effect")) for t in tols]
        c5.say(f"{label}: tolerations {shown};"
               f" desiredNumberScheduled {st.get('desiredNumberScheduled')}, pods on {', '.join(where) or 'no node'}: "
               f"{'LANDS' if on_tainted else 'does NOT land'} on tainted {tainted}")
        cl.kubectl("delete", "daemonset", dname, "-n", OPERATOR_NS, "--wait=true", "--cascade=foreground",
                   "--timeout=60s", check=False, timeout=90)
        with contextlib.suppress(TimeoutError):
            wait_until("NFD worker pods gone", lambda: not [
                p for p in cl.get_json("pods", "-n", OPERATOR_NS)["items"]
                if "worker" in p["metadata"]["name"] and "feature-discovery" in p["metadata"]["name"]], timeout=60)
    tainted_variant = [k for k in landed if "with the pool tainted" in k]
    ok5 = bool(tainted_variant) and landed[tainted_variant[0]]
    c5.done(ok5, "; ".join(f"{k}: {'lands on' if v else 'does not land on'} the tainted node"
                           for k, v in landed.items()))
    op.stop()


# --------------------------------------------------------------------------------------------
# GPU Operator, GPUCluster mode (gpuStack.draManagedBy operator, docs/adr/0048)

DRA_CAPABILITY = '(.Capabilities.APIVersions.Has "resource.k8s.io/v1/DeviceClass")'


def chart_with_dra_capability(chart: Path, work: Path) -> Path:
    """A copy of the chart whose one capability test (templates/validations.yaml: is a resource.k8s.io
    DeviceClass API served) answers true, as the loopback API server does (checked where it is used):
    helm_python's render takes no --api-versions. No manifest template is touched."""
    copy = work / "chart"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(chart, copy)
    v = copy / "templates" / "validations.yaml"
    text = v.read_text()
    if DRA_CAPABILITY not in text:
        raise RuntimeError(f"{v}: the capability test {DRA_CAPABILITY} is not there: re-read the chart")
    v.write_text(text.replace(DRA_CAPABILITY, "true"))
    return copy


def cluster_status(o: Obj | None) -> str:
    return policy_status(o)


def operator_env(objs: list[Obj]) -> dict[str, str]:
    """The literal env the chart gives the operator's container (templates/operator.yaml at v26.7.0:
    DRIVER_MANAGER_IMAGE, VALIDATOR_IMAGE, operator.env): the GPUCluster's states take the validator
    image from it (internal/state/dra_driver.go), not from the custom resource."""
    deployments = [d for d in of_kind(objs, "Deployment") if d["metadata"]["name"] == "gpu-operator"]
    if len(deployments) != 1:
        raise RuntimeError(f"the chart rendered {len(deployments)} gpu-operator Deployment(s)")
    containers = deployments[0]["spec"]["template"]["spec"]["containers"]
    return {e["name"]: str(e["value"]) for c in containers for e in c.get("env") or [] if "value" in e}


def gpu_cluster_part(a: argparse.Namespace, part: Part, stack: contextlib.ExitStack, tools_bin: Path) -> None:
    import dra_publisher

    upstream_chart = part.src / "deployments" / "gpu-operator"
    work = fresh_work(a, "gpu-cluster")
    c1 = part.check("render-gpucluster", "GPUCluster rendered by the upstream chart from the project's values with "
                                         "draManagedBy operator, applied with the CRDs")
    c2 = part.check("clusterpolicy-beside", "A ClusterPolicy beside it: PrerequisiteNotMet, the gate refuses with the "
                                            "operator's message")
    c3 = part.check("no-gpu-nodes", "No NFD labels: the DRA kubelet plugin targets no node; the gate refuses")
    c4 = part.check("reconciled", "NFD labelled, GPUs published: the DRA kubelet plugin on every GPU node, the gate "
                                  "passes")

    def operator_mode(config: Obj) -> None:
        settings = config["ck8s-gpu:settings"]
        settings["gpuStack"] = {**(settings.get("gpuStack") or {}), "draManagedBy": "operator"}

    values, release, how = project_release_values(a.stack, "gpu-operator", operator_mode)
    chart_values, _, _ = project_release_values(a.stack, "gpu-operator")
    chart = chart_with_dra_capability(upstream_chart, work)
    c1.say(f"values: {how} with gpuStack.draManagedBy operator; release name {release}")
    c1.say(f"values gpuCluster={values.get('gpuCluster')} clusterPolicy={values.get('clusterPolicy')} "
           f"draDriver={values.get('draDriver')} hostPaths={values.get('hostPaths')}")
    objs = render_chart(chart, values, name=release, namespace=OPERATOR_NS)
    clusters, policies = of_kind(objs, "GPUCluster"), of_kind(objs, "ClusterPolicy")
    if len(clusters) != 1 or policies:
        c1.done(False, f"the chart rendered {len(clusters)} GPUCluster(s) and {len(policies)} ClusterPolicy(ies)")
        return
    gc = clusters[0]
    c1.say(f"rendered {len(objs)} objects; GPUCluster {gc['metadata']['name']} spec: {json.dumps(gc['spec'])[:700]}")

    log("GPUCluster: starting the local control plane")
    cl = started_cluster(work, tools_bin, stack, "compat-gc")
    nodes = cl.node_names
    served = cl.kubectl("api-resources", "--api-group=resource.k8s.io", "-o", "name")
    if "deviceclasses.resource.k8s.io" not in served.split():
        c1.done(False, f"the API server serves no DeviceClass: {served!r}")
        return
    c1.say("the API server serves deviceclasses.resource.k8s.io (the capability the render was given)")
    try:
        names = install_operator_objects(cl, [upstream_chart / "crds" / f for f in GPU_CLUSTER_CRDS], gc)
    except Exception as exc:
        c1.done(False, f"applying the CRDs or the GPUCluster failed: {short(exc, 800)}")
        return
    c1.done(True, f"chart rendered with {how} and draManagedBy operator: GPUCluster {GPU_CLUSTER}, no ClusterPolicy; "
                  f"CRDs {', '.join(names)} and the GPUCluster accepted by kube-apiserver {server_version(cl)}")

    # --- 2. a ClusterPolicy beside it ----------------------------------------------------------
    beside = of_kind(render_chart(chart, chart_values, name=release, namespace=OPERATOR_NS), "ClusterPolicy")[0]
    cl.apply(beside)
    watch = TimedWatch(str(tools_bin / "kubectl"), cl.kubeconfig, "gpuclusters.nvidia.com")
    stack.callback(watch.stop)
    chart_env = operator_env(objs)
    c2.say(f"the operator's env from the chart's Deployment: {chart_env}")
    op = start_operator(part, work, cl, stack, chart_env)
    part.notes.append("The operator runs with the literal env of the chart's gpu-operator Deployment "
                      "(DRIVER_MANAGER_IMAGE, VALIDATOR_IMAGE): a GPUCluster takes the validator image from it.")
    part.notes.append("The same binary and /opt staging as the ClusterPolicy run above; the chart is rendered from a "
                      "copy whose one capability test (templates/validations.yaml, a resource.k8s.io DeviceClass API "
                      "served) answers true, as the loopback API server does: helm_python takes no --api-versions.")
    t_start = time.monotonic()
    if not first_status(cl, "gpucluster", GPU_CLUSTER, op, c2):
        return
    ok, msg, _ = run_cluster_gate(cl.kubeconfig, min_gpu_nodes=len(nodes), timeout=a.gate_timeout_refuse, settle=10)
    for t, obj in status_writes(watch, t_start):
        c2.say(f"+{t - t_start:5.1f}s status write: {cluster_status(obj)}")
    c2.say(f"gate: {msg}")
    c2.done(not ok and "PrerequisiteNotMet" in msg and "may not exist at the same time" in msg,
            f"operator wrote {cluster_status(cl.get_json('gpucluster', GPU_CLUSTER))}; the gate "
            + ("passed (WRONG)" if ok else "refused" + ("" if "PrerequisiteNotMet" in msg else
                                                        " but without the operator's reason")))

    # --- 3. no GPU node -----------------------------------------------------------------------
    cl.kubectl("delete", "clusterpolicy", beside["metadata"]["name"], "--wait=true", "--timeout=60s")
    t3 = time.monotonic()
    # PrerequisiteNotMet requeues after a minute (controllers/gpucluster_controller.go): wait that out.
    def prerequisite_gone() -> bool:
        conds = (cl.get_json("gpucluster", GPU_CLUSTER).get("status") or {}).get("conditions")
        return "PrerequisiteNotMet" not in json.dumps(conds)

    with contextlib.suppress(TimeoutError):
        wait_until("the GPUCluster reconciled without the ClusterPolicy", prerequisite_gone, timeout=150)
    time.sleep(5)
    gc_now = cl.get_json("gpucluster", GPU_CLUSTER)
    old = (gc_now.get("status") or {}).get("state") == "ready"
    ok, msg, _ = run_cluster_gate(cl.kubeconfig, min_gpu_nodes=len(nodes), timeout=a.gate_timeout_refuse, settle=10)
    for t, obj in status_writes(watch, t3):
        c3.say(f"+{t - t3:5.1f}s status write: {cluster_status(obj)}")
    c3.say(f"DaemonSets in {OPERATOR_NS}: {daemonsets(cl, OPERATOR_NS) or 'none'}")
    for line in node_labels(cl):
        c3.say(f"node {line}")
    c3.say(f"gate: {msg}")
    reconciled = "Reconciled" in json.dumps((gc_now.get("status") or {}).get("conditions"))
    c3.done(not ok and "0 GPU node(s)" in msg and reconciled,
            f"operator wrote {cluster_status(gc_now)}; the gate {'passed (WRONG)' if ok else 'refused'}; the "
            f"state-only check {'would have passed' if old else 'would also wait'}")

    # --- 4. NFD labelled, GPUs published ------------------------------------------------------
    t4 = time.monotonic()
    cl.kubectl("label", "node", *nodes, *(f"{k}={v}" for k, v in NFD_LABELS.items()), "--overwrite")
    # What the DRA kubelet plugin would publish on a real node (KWOK runs no container): the
    # validator's and the DCGM exporter's adminAccess claims allocate from these.
    cl.apply([dra_publisher.resource_slice_manifest(n, 1) for n in nodes])
    c4.say(f"labelled {', '.join(nodes)} with {', '.join(NFD_LABELS)}; published one gpu.nvidia.com device per node")
    ok, msg, t_done = run_cluster_gate(cl.kubeconfig, min_gpu_nodes=len(nodes), timeout=a.gate_timeout, settle=10)
    for t, obj in status_writes(watch, t4):
        c4.say(f"+{t - t4:5.1f}s status write: {cluster_status(obj)}")
    for line in node_labels(cl, ("nvidia.com/gpu.present", "nvidia.com/gpu.deploy")):
        c4.say(f"node {line}")
    for line in daemonsets(cl, OPERATOR_NS):
        c4.say(f"DaemonSet {line}")
    pods = cl.get_json("pods", "-n", OPERATOR_NS)["items"]
    c4.say(f"{len(pods)} operand pod(s): " + ", ".join(sorted(
        f"{p['metadata']['name'].rsplit('-', 1)[0]}@{p['spec'].get('nodeName', '?')}={p.get('status', {}).get('phase')}"
        for p in pods))[:1500])
    classes = [d["metadata"]["name"] for d in cl.get_json("deviceclasses")["items"]]
    c4.say(f"DeviceClasses: {', '.join(sorted(classes))}")
    c4.say(f"gate after {t_done - t4:.0f}s: {msg}")
    c4.done(ok, f"final {cluster_status(cl.get_json('gpucluster', GPU_CLUSTER))}; gate "
                f"{'passed' if ok else 'refused'}: {short(msg, 400)}")
    op.stop()


# --------------------------------------------------------------------------------------------
# KAI


def claim_rates(events: list[tuple[float, str, Obj]], window: float = 5.0) -> dict[str, tuple[int, float]]:
    """Per claim (ns/name): events seen and the highest number of events in any `window` seconds, per second."""
    per: dict[str, list[float]] = {}
    for t, _typ, o in events:
        per.setdefault(f"{o['metadata'].get('namespace')}/{o['metadata'].get('name')}", []).append(t)
    out = {}
    for k, ts in per.items():
        peak, j = 0, 0
        for i in range(len(ts)):
            while ts[i] - ts[j] > window:
                j += 1
            peak = max(peak, i - j + 1)
        out[k] = (len(ts), peak / window)
    return out


def unallocated_bound(claim_events: list[tuple[float, str, Obj]], pod_events: list[tuple[float, str, Obj]],
                      t0: float) -> list[str]:
    """Claims whose pod got a node while no watched version of the claim ever held an allocation."""
    history: dict[tuple[str, str], list[tuple[float, str, Obj]]] = {}
    for t, typ, o in claim_events:
        history.setdefault((o["metadata"].get("namespace"), o["metadata"].get("name")), []).append((t, typ, o))
    bound: dict[tuple[str, str], tuple[float, str, str]] = {}
    for t, _typ, pod in pod_events:
        node = pod["spec"].get("nodeName")
        if not node:
            continue
        ns = pod["metadata"].get("namespace")
        for st in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            key = (ns, st.get("resourceClaimName"))
            if key not in bound:
                bound[key] = (t, pod["metadata"]["name"], node)
        for ref in pod["spec"].get("resourceClaims") or []:
            if ref.get("resourceClaimName") and (ns, ref["resourceClaimName"]) not in bound:
                bound[(ns, ref["resourceClaimName"])] = (t, pod["metadata"]["name"], node)
    out = []
    for key, (tb, pod_name, node) in sorted(bound.items(), key=lambda kv: kv[1][0]):
        versions = history.get(key, [])
        if any((o.get("status") or {}).get("allocation") for _t, _typ, o in versions):
            continue
        seen = ", ".join(f"+{t - t0:.2f}s {typ} rv {o['metadata'].get('resourceVersion')} reservedFor "
                         f"{[r.get('name') for r in (o.get('status') or {}).get('reservedFor') or []]}"
                         for t, typ, o in versions[:6])
        statuses: list[str] = []
        for _t, _typ, pod in pod_events:
            if pod["metadata"].get("name") == pod_name:
                names = ",".join(str(x.get("resourceClaimName")) for x in
                                 (pod.get("status") or {}).get("resourceClaimStatuses") or [])
                if names and (not statuses or statuses[-1] != names):
                    statuses.append(names)
        siblings = []
        for (ns, cname), vs in history.items():
            owners = {r.get("name") for _t, _typ, o in vs for r in o["metadata"].get("ownerReferences") or []}
            if ns == key[0] and cname != key[1] and pod_name in owners:
                alloc = [allocation_manager(o) for _t, _typ, o in vs if (o.get("status") or {}).get("allocation")]
                gone = [t for t, typ, _o in vs if typ == "DELETED"]
                siblings.append(f"{cname} (" + (f"allocated by {alloc[0]}" if alloc else "never allocated")
                                + (f", deleted +{gone[0] - t0:.2f}s" if gone else "") + ")")
        out.append(f"claim {key[1]}: pod {pod_name} (bound to {node}) names it from +{tb - t0:.2f}s, but no "
                   f"watched version of the claim was allocated; versions: {seen or 'none seen'}; the pod's "
                   f"status.resourceClaimStatuses over time: {' -> '.join(statuses) or 'never set'}; other claims "
                   f"owned by the pod: {', '.join(siblings) or 'none'}")
    return out


def allocation_manager(o: Obj) -> str:
    for mf in o["metadata"].get("managedFields") or []:
        if mf.get("subresource") == "status" and "f:allocation" in json.dumps(mf.get("fieldsV1") or {}):
            return str(mf.get("manager"))
    return "?"


SMOKE_STACK = """\
# Written by tools/compat_controllers.py: `ck8s-gpu smoke --stack` of this file on the KAI compat cluster.
config:
  ck8s-gpu:settings:
    platform: existing
    environment: lab
    kubernetes:
      track: 1.34-classic
    nodePools:
      - name: gpu
        instanceType: {instance_type}
        minSize: {nodes}
        desiredSize: {nodes}
        maxSize: {nodes}
    gpuStack:
      driver: host
    smokeTest:
      scheduler: kai
      queue: {queue}
      gpus: 2
      sharedClaim: true
      sharedNamedClaim: true
      timeoutSeconds: {timeout}
"""


def kai_part(a: argparse.Namespace, part: Part, stack: contextlib.ExitStack, tools_bin: Path) -> None:
    import dra_publisher

    from components.kube.charts import chart_dir

    work = fresh_work(a, "kai")
    c6 = part.check("setup", "CRDs, PriorityClasses, the project's queues, DRA slices, the four controllers")
    c7 = part.check("smoke-runs", f"`ck8s-gpu smoke --scheduler kai` {a.runs} times in a row; allocated claims left, "
                                  "claim write rate")
    c8 = part.check("priority", "Priority KAI gives the smoke pods (PodGroup priorityClassName, preemptibility)")
    c9 = part.check("finalizer", f"Does the binder add {DELETE_PROTECTION} to the claims it allocates")
    crd_dir = part.src / "deployments" / "kai-scheduler" / "crds"
    kai_values, kai_release, how = project_release_values(a.stack, "kai-scheduler")
    q_values, q_release, q_how = project_release_values(a.stack, "kai-queues")
    kai_objs = render_chart(part.src / "deployments" / "kai-scheduler", kai_values, name=kai_release, namespace=KAI_NS)
    pcs = of_kind(kai_objs, "PriorityClass")
    from components.kube.charts import render as render_local

    queues = [o for o in render_local("kai-queues", q_values, release=q_release, namespace=KAI_NS)
              if o.get("kind") == "Queue"]
    if not queues:
        queues_dir = chart_dir("kai-queues")
        c6.done(False, f"charts/kai-queues ({queues_dir}) rendered no Queue from {q_how}")
        return
    leaves = {q["metadata"]["name"] for q in queues} - {q["spec"].get("parentQueue") for q in queues}
    from components.settings.model import SmokeTestSettings

    leaf = SmokeTestSettings().queue
    if leaf not in leaves:
        leaf = sorted(leaves)[0]
    nodes_n, per_node, itype = 2, 4, "g6.12xlarge"
    log("KAI: starting the local control plane")
    cl = started_cluster(work, tools_bin, stack, "compat-kai", nodes=nodes_n, instance_type=itype)
    kubectl = str(tools_bin / "kubectl")
    try:
        names = apply_crds(cl, sorted(crd_dir.glob("*.yaml")))
        cl.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                  for n in (KAI_NS, "kai-resource-reservation")])
        cl.apply(pcs)
        cl.apply(queues)
        dra_publisher.publish(str(cl.kubeconfig), {n: per_node for n in cl.node_names}, kubectl=kubectl)
    except Exception as exc:
        c6.done(False, f"setup failed: {short(exc, 800)}")
        return
    c6.say(f"CRDs from {crd_dir.relative_to(part.src)}: {', '.join(names)}")
    c6.say(f"PriorityClasses from the KAI chart ({how}): "
           + ", ".join(f"{p['metadata']['name']}={p.get('value')}" for p in pcs))
    c6.say(f"Queues from charts/kai-queues ({q_how}): " + ", ".join(
        f"{q['metadata']['name']}" + (f"<{q['spec']['parentQueue']}" if q["spec"].get("parentQueue") else "")
        for q in queues) + f"; smoke leaf queue {leaf}")
    c6.say(f"DeviceClass gpu.nvidia.com + ResourceSlices ({per_node} simulated L4 per node) on "
           f"{', '.join(cl.node_names)} ({itype})")
    bins = {b["name"]: b["path"] for b in part.builds}
    kc = str(cl.kubeconfig)
    base_env = {**os.environ, "KUBECONFIG": kc}
    p = {k: free_port() for k in ("sched-metrics", "sched-plugin", "binder-metrics", "binder-probe",
                                  "pg-metrics", "pg-probe", "qc-metrics", "qc-probe")}
    specs = {
        "scheduler": [bins["scheduler"], f"--listen-address={LOOPBACK}:{p['sched-metrics']}",
                      f"--plugin-server-port={p['sched-plugin']}", "--leader-elect=false"],
        "binder": [bins["binder"], f"--kubeconfig={kc}", f"--metrics-bind-address={LOOPBACK}:{p['binder-metrics']}",
                   f"--health-probe-bind-address={LOOPBACK}:{p['binder-probe']}", "--leader-elect=false"],
        "podgrouper": [bins["podgrouper"], f"-kubeconfig={kc}", f"-metrics-bind-address={LOOPBACK}:{p['pg-metrics']}",
                       f"-health-probe-bind-address={LOOPBACK}:{p['pg-probe']}", "-leader-elect=false"],
        "queuecontroller": [bins["queuecontroller"], f"-kubeconfig={kc}", "-enable-webhook=false",
                            f"-metrics-listen-address={LOOPBACK}:{p['qc-metrics']}", "-leader-elect=false"],
    }
    procs = {}
    for name, argv in specs.items():
        procs[name] = Controller(f"kai-{name}", argv, base_env, work / "logs")
        stack.callback(procs[name].stop)
    time.sleep(15)
    dead = {n: pr for n, pr in procs.items() if not pr.alive()}
    if dead:
        c6.done(False, "; ".join(f"{n} exited (rc {pr.proc.returncode}): {short(pr.tail(), 600)}"
                                 for n, pr in dead.items()))
        return
    bad = {}
    for n, pr in procs.items():
        lst = listeners(pr.proc.pid)
        c6.say(f"{n}: {' '.join(specs[n][1:])}; listening on {', '.join(lst) or 'nothing yet'}")
        if non_loopback(lst):
            bad[n] = non_loopback(lst)
    if bad:
        c6.done(False, f"controllers listen beyond loopback: {bad}")
        return
    c6.done(True, f"4 controllers running, all on loopback; {len(queues)} queues, {len(pcs)} PriorityClasses")
    part.notes.append("KAI runs as four host processes (scheduler, binder, podgrouper, queue controller) with their "
                      "default configuration, not through the KAI operator and its Config/SchedulingShard objects; the "
                      "admission webhook and the podgroup controller are not run.")

    stack_file = work / "Pulumi.compat-kai.yaml"
    stack_file.write_text(SMOKE_STACK.format(instance_type=itype, nodes=nodes_n, queue=leaf, timeout=a.smoke_timeout))
    cli = Path(sys.executable).with_name("ck8s-gpu")
    base_cmd = [str(cli)] if cli.exists() else [sys.executable, "-m", "components.cli"]
    cmd = [*base_cmd, "smoke", "--kubeconfig", kc, "--stack", str(stack_file), "--scheduler", "kai", "--queue", leaf,
           "--no-kubelet", "--dcgm", "off"]
    c7.say(f"command: ck8s-gpu smoke --kubeconfig KUBECONFIG --stack {stack_file.name} --scheduler kai --queue {leaf} "
           f"--no-kubelet --dcgm off --report run-N.json (stack file: platform existing, pool {nodes_n} x {itype}, "
           "gpus 2, sharedClaim, sharedNamedClaim)")
    claims_w = TimedWatch(kubectl, cl.kubeconfig, "resourceclaims.resource.k8s.io")
    pg_w = TimedWatch(kubectl, cl.kubeconfig, "podgroups.scheduling.run.ai")
    pods_w = TimedWatch(kubectl, cl.kubeconfig, "pods")
    for w in (claims_w, pg_w, pods_w):
        stack.callback(w.stop)
    passed_runs, leftovers_any, peak_any, streak, done_runs = 0, False, 0.0, 0, 0
    recreated_runs: set[int] = set()
    for i in range(1, a.runs + 1):
        if a.stop_after and streak >= a.stop_after:
            c7.say(f"stopped after {streak} failed runs in a row (--stop-after {a.stop_after}): "
                   f"runs {i}-{a.runs} not run")
            break
        done_runs = i
        report = work / f"run-{i}.json"
        t0 = time.monotonic()
        try:
            proc = subprocess.run([*cmd, "--report", str(report)], capture_output=True, text=True,
                                  timeout=a.smoke_timeout + 180, cwd=REPO)
            rc, out = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc, out = 124, f"timed out: {exc}"
        t1 = time.monotonic()
        (work / "logs" / f"smoke-run-{i}.log").write_text(out)
        failed = []
        if report.is_file():
            with contextlib.suppress(ValueError, KeyError):
                tests = json.loads(report.read_text())["results"]["tests"]
                failed = [f"{t['name']}: {t.get('message', '')}" for t in tests if t.get("status") == "failed"]
        if rc not in (0, 1):
            failed.append(f"exit {rc}: " + short(out[-800:], 800))
        during = claim_rates(claims_w.since(t0, t1))
        for line in unallocated_bound(claims_w.since(t0, t1 + 2), pods_w.since(t0, t1 + 2), t0):
            c7.say(f"run {i}: {line}")
            if "allocated by" in line and rc != 0:
                recreated_runs.add(i)
        time.sleep(5)
        after_events = claims_w.since(t1, t1 + 5)
        allocated = [f"{o['metadata']['namespace']}/{o['metadata']['name']} (reservedFor "
                     f"{[r.get('name') for r in (o.get('status') or {}).get('reservedFor') or []]})"
                     for o in cl.get_json("resourceclaims", "-A")["items"] if (o.get("status") or {}).get("allocation")]
        after_rate = len(after_events) / 5.0
        peak = max((r for _, r in during.values()), default=0.0)
        peak_any = max(peak_any, peak)
        leftovers_any |= bool(allocated)
        passed_runs += rc == 0
        streak = 0 if rc == 0 else streak + 1
        c7.say(f"run {i}: exit {rc} in {t1 - t0:.0f}s" + (f"; FAILED {'; '.join(short(f, 300) for f in failed)}"
                                                          if failed else "; all checks passed or skipped")
               + f"; claims during the run: {len(during)}, busiest "
               f"{max(during.items(), key=lambda kv: kv[1][1])[0] if during else '-'}"
               f" at {peak:.1f} writes/s (5 s window); after the run: {len(allocated)} allocated claim(s)"
               + (f" {allocated}" if allocated else "") + f", {after_rate:.1f} claim writes/s over 5 s")
        if not all(pr.alive() for pr in procs.values()):
            c7.say("a controller exited: " + "; ".join(f"{n} rc {pr.proc.returncode}: {short(pr.tail(), 400)}"
                                                       for n, pr in procs.items() if not pr.alive()))
            break
    c7.done(passed_runs == a.runs and not leftovers_any,
            f"{passed_runs}/{a.runs} runs passed ({done_runs} run); allocated claims left after a run: "
            f"{'yes' if leftovers_any else 'none'};"
            f" peak claim write rate during runs {peak_any:.1f}/s (5 s window)"
            + (f"; in {len(recreated_runs)} failed run(s) ({', '.join(map(str, sorted(recreated_runs)))}) a finished "
               "pod's allocated claim was deleted and the claim controller made it a new, never allocated one, "
               "re-pointing status.resourceClaimStatuses to it" if recreated_runs else ""))

    # --- priority and finalizers ---------------------------------------------------------------
    pgs: dict[str, Obj] = {}
    for _t, _typ, o in pg_w.since(0):
        pgs[f"{o['metadata'].get('namespace')}/{o['metadata'].get('name')}"] = o
    prios = sorted({(o["spec"].get("priorityClassName"), o["spec"].get("preemptibility") or "(unset)",
                     o["spec"].get("queue")) for o in pgs.values()}, key=str)
    pod_prio = sorted({(o["spec"].get("priorityClassName") or "(none)", o["spec"].get("priority"))
                       for _t, _typ, o in pods_w.since(0)
                       if o["spec"].get("schedulerName") == "kai-scheduler"}, key=str)
    c8.say(f"{len(pgs)} PodGroup(s) seen; (priorityClassName, preemptibility, queue): {prios}")
    c8.say(f"smoke pods' own (priorityClassName, priority): {pod_prio}")
    pc_values = {p["metadata"]["name"]: p.get("value") for p in pcs}
    c8.done(bool(pgs), "PodGroups get (priorityClassName, preemptibility, queue) "
                       f"{[(n, pc_values.get(n), pre, q) for n, pre, q in prios]} (name, value, preemptibility, "
                       f"queue); the smoke pods themselves ask for no priority class {pod_prio}; KAI counts a "
                       "priority < 100 as preemptible unless spec.preemptibility says otherwise"
            if pgs else "no PodGroup was seen (the podgrouper made none)")
    allocated_versions = [(o, allocation_manager(o)) for _t, _typ, o in claims_w.since(0)
                          if (o.get("status") or {}).get("allocation")]
    by_claim: dict[str, tuple[bool, str]] = {}
    for o, mgr in allocated_versions:
        k = f"{o['metadata'].get('namespace')}/{o['metadata'].get('name')}"
        fin = DELETE_PROTECTION in (o["metadata"].get("finalizers") or [])
        prev = by_claim.get(k, (False, mgr))
        by_claim[k] = (prev[0] or fin, mgr if mgr != "?" else prev[1])
    with_fin = sorted(k for k, (f, _m) in by_claim.items() if f)
    managers = sorted({m for _f, m in by_claim.values()})
    c9.say(f"{len(by_claim)} claim(s) seen allocated; status.allocation written by field manager(s) {managers}; "
           f"with {DELETE_PROTECTION}: {len(with_fin)}" + (f" ({', '.join(with_fin[:5])})" if with_fin else ""))
    c9.done(bool(by_claim), (f"the binder allocates WITHOUT the finalizer ({len(by_claim) - len(with_fin)} of "
                             f"{len(by_claim)} allocated claims never carried it)" if not with_fin else
                             f"{len(with_fin)} of {len(by_claim)} allocated claims carried the finalizer")
            if by_claim else "no allocated claim was seen")


# --------------------------------------------------------------------------------------------
# the page


INTRO = """# Compatibility with the real upstream controllers

This page records what the project's gates and smoke test do against the **real** GPU Operator and
KAI scheduler at the pins, run against a loopback control plane with KWOK GPU nodes
(`tools/localcluster.py`). CI runs stand-ins built from their source (tests/fakes/gpu_operator,
tests/fakes/kai): neither upstream module is served by the Go module proxy (403 for
`github.com/NVIDIA/gpu-operator` v26.7.0 and for KAI at any version), so CI can neither fetch nor
build them. A maintainer reruns this at every pin change (`components/tables/pins.py` CHARTS) and commits
the result. Everything between the markers below is written by `tools/compat_controllers.py`;
edit only outside them.

Rerun with the trees at the pinned tags (a checkout, or `git archive <tag> | tar -x`; the `--*-git`
options name a git dir holding the tag, to prove the tree is the tag and record its commit) and the
binaries built from them with upstream's own build (the script compiles nothing; it records each
binary's digest and the build information Go embeds):

```bash
bash tools/build.sh   # the control plane binaries, once
.venv/bin/python tools/compat_controllers.py \\
    --gpu-operator-src SRC/gpu-operator --gpu-operator-git GPU_OPERATOR.git --gpu-operator-bin BIN/gpu-operator \\
    --kai-src SRC/KAI-Scheduler --kai-git KAI-Scheduler.git --kai-bin-dir BIN/kai \\
    --out docs/compatibility.md --runs 20
```

Seen here on 2 cores: the operator builds in about 6 minutes (its vendor/ tree), KAI's four
binaries in about 11 (modules from the Go module proxy). KWOK nodes run no containers: operand
pods and smoke pods are marked Running (and Job pods Succeeded) by KWOK, so what is checked is the
controllers' API behaviour (status writes, labels, scheduling, binding, claim allocation), never
a GPU.

"""


def render_part(part: Part) -> str:
    lines = [f"<!-- compat:{part.key}:begin -->", f"## {part.title} {part.pin}", ""]
    lines.append(f"- Tree: `{part.src}`; commit `{part.commit}` ({part.commit_note}); content hash "
                 f"`{part.tree_hash[:16]}`")
    for b in part.builds:
        lines.append(f"- Binary `{b['name']}`: sha256 `{b['sha256']}`; {b['info']}")
    lines.append(f"- Checked: {part.date}; command: `{part.command}`")
    for n in part.notes:
        lines.append(f"- {n}")
    lines += ["", "| # | check | result |", "|---|---|---|"]
    for i, c in enumerate(part.checks, 1):
        lines.append(f"| {i} | {c.title} (`{c.key}`) | **{c.status}** |")
    for i, c in enumerate(part.checks, 1):
        lines += ["", f"### {i}. {c.title}: {c.status}", ""]
        if c.summary:
            lines += [c.summary.replace("\n", " "), ""]
        if c.evidence:
            lines.append("```text")
            lines += [short(e, 900) for e in c.evidence]
            lines.append("```")
    lines += ["", f"<!-- compat:{part.key}:end -->"]
    return "\n".join(lines)


def write_page(out: Path, parts: list[Part]) -> None:
    text = out.read_text() if out.is_file() else INTRO + f"{BEGIN}\n{END}\n"
    if BEGIN not in text or END not in text:
        text = text.rstrip("\n") + f"\n\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    body, tail = rest.split(END, 1)
    blocks: dict[str, str] = {}
    for key in PARTS:
        m = re.search(rf"<!-- compat:{key}:begin -->.*?<!-- compat:{key}:end -->", body, re.S)
        if m:
            blocks[key] = m.group(0)
    for part in parts:
        blocks[part.key] = render_part(part)
    new_body = "\n" + "\n\n".join(blocks[k] for k in PARTS if k in blocks) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(head + BEGIN + new_body + END + tail)
    os.replace(tmp, out)


# --------------------------------------------------------------------------------------------
# main


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gpu-operator-src", type=Path, help="source tree of NVIDIA/gpu-operator at the pinned tag")
    p.add_argument("--gpu-operator-git", type=Path, help="git dir with the tag (verifies the tree, records the commit)")
    p.add_argument("--kai-src", type=Path, help="source tree of kai-scheduler/KAI-Scheduler at the pinned tag")
    p.add_argument("--kai-git", type=Path, help="git dir with the tag (verifies the tree, records the commit)")
    p.add_argument("--gpu-operator-bin", type=Path, help="the gpu-operator binary built from --gpu-operator-src")
    p.add_argument("--kai-bin-dir", type=Path, help=f"folder with KAI's {', '.join(KAI_BINARIES)} built from --kai-src")
    p.add_argument("--out", type=Path, default=REPO / "docs" / "compatibility.md")
    p.add_argument("--runs", type=int, default=20, help="smoke runs in a row with KAI (default 20)")
    p.add_argument("--work", type=Path, default=None, help="work dir (default: a fresh temporary dir, removed)")
    p.add_argument("--only", choices=PARTS, default=None)
    p.add_argument("--stack", default="aws-dev", help="stack whose values the charts get (default aws-dev)")
    p.add_argument("--gate-timeout", type=float, default=240, help="gate budget where it should pass (s)")
    p.add_argument("--gate-timeout-refuse", type=float, default=60, help="gate budget where it should refuse (s)")
    p.add_argument("--smoke-timeout", type=int, default=300, help="budget of one smoke run (s, >= 60)")
    p.add_argument("--stop-after", type=int, default=3, help="stop the smoke runs after this many failures in a row "
                                                             "(0: never)")
    a = p.parse_args(argv)
    if a.runs < 1 or a.smoke_timeout < 60:
        p.error("--runs must be >= 1 and --smoke-timeout >= 60")
    if a.gpu_operator_src and not a.gpu_operator_bin and a.only in (None, "gpu-operator", "gpu-cluster"):
        p.error("--gpu-operator-src needs --gpu-operator-bin (the binary built from that tree)")
    if a.kai_src and not a.kai_bin_dir and a.only in (None, "kai"):
        p.error("--kai-src needs --kai-bin-dir (KAI's binaries built from that tree)")
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    from components.tables import pins

    wanted = [k for k in PARTS if a.only in (None, k)]
    srcs = {"gpu-operator": a.gpu_operator_src, "gpu-cluster": a.gpu_operator_src, "kai": a.kai_src}
    given = {k: srcs[k] for k in wanted if srcs[k] is not None and Path(srcs[k]).is_dir()}
    if not given:
        print("compat_controllers: no upstream source tree given (--gpu-operator-src/--kai-src): nothing checked")
        return 0
    from localcluster import missing_binaries, tools_bin_dir

    tools_bin = tools_bin_dir()
    missing = missing_binaries(tools_bin)
    if missing:
        print(f"compat_controllers: missing {', '.join(missing)} in {tools_bin}: run `bash tools/build.sh` first",
              file=sys.stderr)
        return 2
    cleanup_work = a.work is None
    a.work = Path(a.work or tempfile.mkdtemp(prefix="ck8s-compat-")).resolve()
    a.work.mkdir(parents=True, exist_ok=True)
    parts: list[Part] = []
    if "gpu-operator" in given:
        parts.append(Part("gpu-operator", "NVIDIA GPU Operator", pins.CHARTS["gpu-operator"].version,
                          Path(given["gpu-operator"]).resolve()))
    if "gpu-cluster" in given:
        parts.append(Part("gpu-cluster", "NVIDIA GPU Operator, GPUCluster mode", pins.CHARTS["gpu-operator"].version,
                          Path(given["gpu-cluster"]).resolve()))
    if "kai" in given:
        parts.append(Part("kai", "KAI scheduler", pins.CHARTS["kai-scheduler"].version, Path(given["kai"]).resolve()))

    def on_term(_sig: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, on_term)
    interrupted = False
    try:
        for part in parts:
            part.date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
            part.command = " ".join(shlex.quote(x) for x in ["tools/compat_controllers.py", *(argv or sys.argv[1:])])
            with contextlib.ExitStack() as stack:
                try:
                    part.tree_hash = tree_hash(part.src)
                    identify(part, a.kai_git if part.key == "kai" else a.gpu_operator_git, part.pin)
                    log(f"{part.key}: {part.src} commit {part.commit} ({part.commit_note}), hash {part.tree_hash[:16]}")
                    if part.key == "gpu-operator":
                        binary_info("gpu-operator", part, a.gpu_operator_bin)
                        gpu_operator_part(a, part, stack, tools_bin)
                    elif part.key == "gpu-cluster":
                        binary_info("gpu-operator", part, a.gpu_operator_bin)
                        gpu_cluster_part(a, part, stack, tools_bin)
                    else:
                        for binary in KAI_BINARIES:
                            binary_info(binary, part, a.kai_bin_dir / binary)
                        kai_part(a, part, stack, tools_bin)
                except KeyboardInterrupt:
                    interrupted = True
                    part.notes.append("INTERRUPTED: the run was stopped before it finished")
                    pending = [c for c in part.checks if c.status == "not run"]
                    if pending:
                        pending[0].status, pending[0].summary = "error", "interrupted while it ran (SIGTERM or Ctrl-C)"
                    raise
                except Exception as exc:
                    log(traceback.format_exc())
                    pending = [c for c in part.checks if c.status == "not run"]
                    msg = f"stopped by {type(exc).__name__}: {short(exc, 1200)}"
                    if pending:
                        pending[0].status, pending[0].summary = "error", msg
                    else:
                        part.notes.append(f"ERROR: {msg}")
                    if not part.checks:
                        part.notes.append(f"ERROR before any check: {msg}")
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGTERM, old)
        write_page(a.out, parts)
        log(f"wrote {a.out}")
        if cleanup_work:
            shutil.rmtree(a.work, ignore_errors=True)
    if interrupted:
        return 130
    bad = [c for p in parts for c in p.checks if c.status != "passed"]
    for p in parts:
        for c in p.checks:
            print(f"{p.key:13} {c.key:22} {c.status:8} {short(c.summary, 160)}")
    return 1 if bad or any(not p.checks for p in parts) else 0


if __name__ == "__main__":
    sys.exit(main())

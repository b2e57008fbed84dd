"""`make up` / `make down` as a newcomer runs them: the `local-kubelet` stack on this machine, and nothing
of it left afterwards.

The end-to-end test works in a fresh `git clone` of this checkout with the working tree's uncommitted
state copied on top (modified, deleted and untracked non-ignored files: what the clone would hold were
the working tree committed), so no venv, no `.local/` and no ignored file of this checkout takes part;
only the tools cache (~/.cache/ck8s-gpu/tools, built from pins) and pip's cache are shared. In it:
`make up` (fresh venv, debs, tools, control plane, kubelet nodes, `pulumi up`) prints a passed smoke
report and how to use the cluster; its processes outlive it; a second `make up` reuses what runs;
examples/dra-workload.yaml, applied with the printed KUBECONFIG and the tools' kubectl, gets a GPU on a
kubelet node (the UUID nvidia-smi prints inside the container is the one its claim was allocated);
`make down` leaves no process, mount, network namespace, bridge, node address, cgroup, node-tier root,
listening port or state dir. Needs root and the tools (`bash tools/build.sh`); skips naming what is
missing, fails under CK8S_GPU_REQUIRE_TOOLS=1 (CI).

The other tests check the pieces without a cluster: the sample's schema, the refusal off root, pid files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers.k8s_schema import VERSIONS, schema_errors
from tests.helpers.tools import load_tool, skip_or_fail
from tests.integration.conftest import ROOT, missing_engine_tools

sys.path.insert(0, str(ROOT / "scripts"))
import local_up  # scripts/local_up.py
from localup import down, preflight, procs
from localup.state import SAMPLE_IMAGE, SAMPLE_WORKLOAD, Layout

UUID_LINE = re.compile(r"^GPU 0: (?P<model>.+) \(UUID: (?P<uuid>GPU-[0-9a-f-]+)\)$", re.M)


# --- without a cluster ---------------------------------------------------------------------------


def test_the_sample_workload_is_strict_resource_v1_asking_for_one_gpu() -> None:
    docs = list(yaml.safe_load_all(SAMPLE_WORKLOAD.read_text()))
    for doc in docs:
        for version in VERSIONS:
            assert schema_errors(doc, version) is None, (version, schema_errors(doc, version))
    template, pod = docs
    assert (template["apiVersion"], template["kind"], pod["kind"]) == ("resource.k8s.io/v1", "ResourceClaimTemplate",
                                                                       "Pod")
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"] == {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1}
    (claim,) = pod["spec"]["resourceClaims"]
    assert claim["resourceClaimTemplateName"] == template["metadata"]["name"]
    (container,) = pod["spec"]["containers"]
    assert container["resources"]["claims"] == [{"name": claim["name"]}]
    assert container["image"] == SAMPLE_IMAGE  # the name `make up` gives the probe image on every node


def test_the_refusal_names_every_reason_and_what_to_do() -> None:
    problems = preflight.machine_problems("Darwin", 501, (3, 9), have_go=False, tools_built=False)
    assert len(problems) == 4, problems
    for word in ("Linux (this is Darwin)", "root", "Python 3.11+", "Go"):
        assert any(word in p for p in problems), (word, problems)
    text = preflight.refusal("up", problems)
    assert "sudo make up" in text and text.endswith("Nothing was created.")
    assert preflight.machine_problems("Linux", 0, (3, 11), have_go=False, tools_built=True) == []
    assert preflight.machine_problems("Linux", 0, (3, 11), have_go=False, tools_built=False, action="down") == []


def test_off_root_make_up_exits_2_and_creates_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    state = tmp_path / "state"
    for action in ("up", "down"):
        assert local_up.main(["--state-dir", str(state), action]) == 2
        err = capsys.readouterr().err
        assert f"make {action}: cannot run here" in err and "it needs root" in err, err
        assert "Traceback" not in err
    assert not state.exists()


def test_a_pid_file_adopts_its_process_and_never_a_recycled_pid(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        path = tmp_path / "p.pid"
        procs.write_pidfile(path, sleeper.pid)
        adopted = procs.Adopted.of(path)
        assert adopted is not None and adopted.poll() is None and procs.alive(path)
        pid, started = procs.read_pidfile(path) or (0, 0)
        path.write_text(f"{pid} {started + 1}\n")  # same pid, another process: not ours
        assert procs.Adopted.of(path) is None and not procs.alive(path)
        # `make down` hands adopted processes to the node tier's own stop (tools/nodetier.py `_stop`).
        load_tool("nodetier")._stop(adopted, grace=5)
        sleeper.wait(5)
        assert adopted.poll() is not None
    finally:
        sleeper.kill()


def test_the_processes_and_ports_of_a_state_dir_are_found(tmp_path: Path) -> None:
    mark = tmp_path / "state-dir-mark"
    server = subprocess.Popen([sys.executable, "-c", "import socket,sys,time; s=socket.socket(); "
                               "s.bind(('127.0.0.1',0)); s.listen(); print(s.getsockname()[1], flush=True); "
                               "time.sleep(60)", str(mark)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        found = procs.processes([str(mark)])
        assert list(found) == [server.pid], found
        assert procs.ports_of(found) == {port}
        assert port in procs.listening_ports()
    finally:
        server.kill()
        server.wait()
    assert procs.processes([str(mark)]) == {}


# In the kubelets lane: it reads which node tiers run on the machine, and the other lane's would be
# the first one `make down` names (a cold CI run saw exactly that, 2026-12-05).
@pytest.mark.kubelets
def test_up_and_down_refuse_while_another_node_tier_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A process naming another tier's short root (tools/nodetier.py short_root) is another node tier.
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                              f"{preflight.NODE_TIER_MARK}0123456789/0/containerd/config.toml"])
    try:
        # The precondition first, so that a failure below is the product's: the other tier is visible.
        # (Once, in a cold CI run under load, teardown saw no such process: a late /proc entry?)
        deadline = time.monotonic() + 10
        while other.pid not in preflight.other_node_tiers("/nonexistent") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert other.pid in preflight.other_node_tiers("/nonexistent"), (other.poll(), other.pid)
        state = tmp_path / "state"
        state.mkdir()
        assert down.teardown(Layout(state)) == 3
        err = capsys.readouterr().err
        assert "another node tier is running" in err and str(other.pid) in err, err
        assert state.exists()  # nothing changed
    finally:
        other.kill()
        other.wait()


# --- end to end ----------------------------------------------------------------------------------


def clone_working_tree(src: Path, dest: Path) -> None:
    """`git clone` of src's HEAD with src's working tree on top: its modified and untracked
    (non-ignored) files copied, the files it deleted removed. Commits nothing."""
    subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(src), str(dest)], check=True, timeout=300)

    def listed(repo: Path, *flags: str) -> set[str]:
        out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", *flags], capture_output=True, check=True)
        return {p for p in out.stdout.decode().split("\0") if p}

    for rel in sorted(listed(dest, "--cached") | listed(src, "--cached", "--others", "--exclude-standard")):
        s, d = src / rel, dest / rel
        if s.is_symlink() or s.is_file():
            d.parent.mkdir(parents=True, exist_ok=True)
            if d.is_symlink() or d.exists():
                d.unlink()
            shutil.copy2(s, d, follow_symlinks=False)
        elif d.is_symlink() or d.is_file():
            d.unlink()


def make(clone: Path, target: str, log: Path, timeout: float) -> tuple[int, str, float]:
    """`make <target>` in the clone, output to a file (the daemons it leaves must hold no pipe of ours)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CK8S_GPU_LOCAL_DIR", "MAKEFLAGS")}
    venv_bin = str(Path(sys.prefix) / "bin")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    t0 = time.monotonic()
    with log.open("w") as out:
        rc = subprocess.run(["make", "--no-print-directory", target], cwd=clone, env=env, stdout=out,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=timeout, check=False).returncode
    return rc, log.read_text(errors="replace"), time.monotonic() - t0


def printed(output: str, name: str) -> str:
    found = re.search(rf"^\s*export {name}=(\S+)", output, re.M)
    assert found, f"`make up` printed no `export {name}=`:\n{output[-3000:]}"
    return found.group(1)


def host_state(layout: Layout, short_root: Path) -> dict[str, Any]:
    """What of a `make up` exists on this host right now."""
    nt = load_tool("nodetier")
    lo = subprocess.run(["ip", "-o", "addr", "show", "dev", "lo"], capture_output=True, text=True).stdout
    cgroups = Path("/sys/fs/cgroup")
    return {
        "processes": procs.processes(down.marks(layout, short_root), down.CGROUP_MARK),
        "mounts": down.mounts_under(layout.dir, short_root),
        "netns": [m for m in Path("/proc/self/mountinfo").read_text().splitlines()
                  if " nsfs " in m and (str(short_root) in m or str(layout.dir) in m)],
        "bridges": sorted(p.name for p in Path("/sys/class/net").glob(f"{nt.bridge_name(0)[:-1]}*")),
        "addresses": re.findall(r"inet (10\.250\.\d+\.1)/32", lo),
        "cgroups": [str(d) for d in [cgroups / nt.CGROUP_PARENT, *cgroups.glob(f"*/{nt.CGROUP_PARENT}")]
                    if d.exists()],
        "dirs": [str(d) for d in (layout.dir, short_root) if d.exists()],
    }


@pytest.fixture
def clone(tmp_path: Path) -> Iterator[Path]:
    lc, nt = load_tool("localcluster"), load_tool("nodetier")
    bin_dir = lc.tools_bin_dir()
    lacking = missing_engine_tools(bin_dir) + nt.missing(bin_dir)
    lacking += [f"{exe} on PATH" for exe in ("git", "make") if shutil.which(exe) is None]
    if lacking:
        skip_or_fail("make up cannot run here: " + "; ".join(lacking))
    if others := preflight.other_node_tiers("/nonexistent"):
        skip_or_fail(f"another node tier is running (pids {sorted(others)}): `make up` would refuse to start")
    dest = tmp_path / "clone"
    clone_working_tree(ROOT, dest)
    yield dest
    if (dest / ".local").exists():  # a failed test: remove what it left, the same way
        make(dest, "down", tmp_path / "cleanup-down.log", timeout=600)


@pytest.mark.integration
@pytest.mark.kubelets  # `make up` starts the node tier (scripts/all_tiers.sh)
def test_make_up_then_make_down_from_a_fresh_clone(clone: Path, tmp_path: Path) -> None:
    kubectl = str(load_tool("localcluster").tools_bin_dir() / "kubectl")
    layout = Layout(clone / ".local")
    short_root = load_tool("nodetier").short_root(layout.nodes)
    rc, out, up_s = make(clone, "up", tmp_path / "up.log", timeout=1200)
    print(f"\nmake up (fresh clone: venv, debs, tools, cluster, node tier, pulumi up): {up_s:.0f}s")
    assert rc == 0, f"make up failed ({rc}):\n{out[-6000:]}"
    assert "smoke test: PASSED" in out, out[-4000:]
    summary = re.search(r"^(\d+) passed, (\d+) failed, (\d+) skipped in", out, re.M)
    assert summary and int(summary.group(1)) > 0 and summary.group(2) == "0", out[-4000:]
    report = json.loads((layout.dir / "smoke-report.json").read_text())
    assert report["results"]["summary"]["failed"] == 0
    kubeconfig = printed(out, "KUBECONFIG")
    assert Path(kubeconfig) == layout.kubeconfig and layout.kubeconfig.is_file(), kubeconfig
    assert str(load_tool("localcluster").tools_bin_dir()) in printed(out, "PATH")
    assert str(SAMPLE_WORKLOAD.relative_to(ROOT)) in out

    # Daemonised: make has exited, every process of the pid files still runs.
    pidfiles = sorted(layout.pids.glob("*.pid"))
    assert pidfiles and all(procs.alive(p) for p in pidfiles), [p.name for p in pidfiles if not procs.alive(p)]
    ours = procs.processes(down.marks(layout, short_root), down.CGROUP_MARK)
    ports = procs.ports_of(ours)
    assert ports, "the control plane and the kubelets listen on loopback ports"

    rc, again, again_s = make(clone, "up", tmp_path / "up-again.log", timeout=900)
    print(f"second make up (reuse): {again_s:.0f}s")
    assert rc == 0 and "reusing the running cluster" in again and "smoke test: PASSED" in again, again[-4000:]
    assert all(procs.alive(p) for p in pidfiles)

    def k(*args: str, check: bool = True) -> str:
        res = subprocess.run([kubectl, "--kubeconfig", kubeconfig, *args], capture_output=True, text=True,
                             timeout=180, check=False)
        assert not check or res.returncode == 0, (args, res.stderr)
        return res.stdout

    sample = clone / SAMPLE_WORKLOAD.relative_to(ROOT)
    k("apply", "-f", str(sample))
    k("wait", "--for=condition=Ready", "pod/dra-sample", "--timeout=120s")
    pod = json.loads(k("get", "pod", "dra-sample", "-o", "json"))
    node = pod["spec"]["nodeName"]
    nodes = {n["metadata"]["name"]: n for n in json.loads(k("get", "nodes", "-o", "json"))["items"]}
    assert nodes[node]["metadata"]["labels"].get("type") != "kwok", f"{node} is a KWOK node: nothing ran"
    log = k("logs", "dra-sample")
    seen = UUID_LINE.search(log)
    assert seen and len(UUID_LINE.findall(log)) == 1, log
    (status,) = pod["status"]["resourceClaimStatuses"]
    claim = json.loads(k("get", "resourceclaim", status["resourceClaimName"], "-o", "json"))
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert (result["driver"], result["pool"]) == ("gpu.nvidia.com", node), result
    slices = json.loads(k("get", "resourceslices", "-o", "json"))["items"]
    devices = {d["name"]: d for s in slices if s["spec"]["driver"] == "gpu.nvidia.com"
               and s["spec"]["pool"]["name"] == node for d in s["spec"]["devices"]}
    allocated = devices[result["device"]]["attributes"]
    assert allocated["uuid"]["string"] == seen["uuid"], (allocated, log)
    assert allocated["productName"]["string"] == seen["model"], (allocated, log)
    print(f"dra-sample on {node}: {seen.group(0)}")
    # What the check after `make down` looks for, seen while it runs: an empty check then means gone.
    running = host_state(layout, short_root)
    assert all(running.values()), {k: v for k, v in running.items() if not v}

    rc, gone, down_s = make(clone, "down", tmp_path / "down.log", timeout=900)
    print(f"make down: {down_s:.0f}s")
    assert rc == 0, f"make down failed ({rc}):\n{gone[-4000:]}"
    assert "pulumi destroy done" in gone, gone[-3000:]
    left = host_state(layout, short_root)
    assert all(not v for v in left.values()), left
    still = ports & procs.listening_ports()
    assert not still, f"ports of `make up`'s processes still listening: {sorted(still)}"

#!/usr/bin/env python3
"""Loopback-only Kubernetes control plane with simulated GPU nodes, for tests.

Runs the REAL etcd, kube-apiserver, kube-controller-manager and kube-scheduler built by
tools/build.sh (no downloads, no containers) through ``kwokctl --runtime binary``, and creates
KWOK nodes (no kubelet) labelled like GPU nodes. KWOK's default stages move pods on those nodes
to Running, and pods owned by a Job on to Succeeded.

Library use::

    from localcluster import LocalCluster
    with LocalCluster("/tmp/lc", nodes=2) as c:
        c.kubectl("get", "nodes")

CLI::

    python tools/localcluster.py up --dir DIR [--nodes 2] [--instance-type g6.xlarge]
    python tools/localcluster.py down --dir DIR

``up`` prints ``export KUBECONFIG=DIR/kubeconfig`` on its last line; the cluster keeps running
until ``down``. Pure standard library (Python 3.11+).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

REPO = Path(__file__).resolve().parent.parent
BUILD_SCRIPT = REPO / "tools" / "build.sh"

#: Binaries the cluster needs, all from the tools cache.
REQUIRED_BINARIES = (
    "kwokctl",
    "kwok",
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
)
#: Must match tools/build.sh ($kube_version).
KUBE_VERSION = "v1.34.4"
LOOPBACK = "127.0.0.1"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"

_T = TypeVar("_T")


class ToolsMissing(RuntimeError):
    """The cached binaries are not built (run ``bash tools/build.sh``)."""


def tools_bin_dir() -> Path:
    """The cache bin dir for the current pins (does not build anything).

    ``CK8S_GPU_TOOLS_BIN`` wins; otherwise ask ``tools/build.sh --print`` (pure path computation).
    """
    env = os.environ.get("CK8S_GPU_TOOLS_BIN")
    if env:
        return Path(env)
    out = subprocess.run(
        ["bash", str(BUILD_SCRIPT), "--print"], check=True, capture_output=True, text=True
    ).stdout
    return Path(out.strip().splitlines()[-1])


def missing_binaries(bin_dir: Path, names: Iterable[str] = REQUIRED_BINARIES) -> list[str]:
    return [n for n in names if not os.access(bin_dir / n, os.X_OK)]


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def _bindable(port: int) -> bool:
    for host in (LOOPBACK, ""):  # kwok's own test (pkg/utils/net/unused_port.go isPortUnused)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port))
            except OSError:
                return False
    return True


#: Where component_ports() draws from: below Linux's default ephemeral range (32768-60999,
#: /proc/sys/net/ipv4/ip_local_port_range), so no outgoing connection takes one as its source port
#: between the draw and the component's bind, and above the kubelet's and containerd's 10xxx ports.
COMPONENT_PORTS = range(20000, 32768)


def component_ports(n: int) -> list[int]:
    """``n`` distinct ports free right now, drawn at random from COMPONENT_PORTS.

    Left to itself, kwokctl walks down from 32767 taking the first free port, in every process
    alike (kwok v0.8.0 pkg/utils/net/unused_port.go GetUnusedPort, lastUsedPort = 32767; used by
    pkg/kwokctl/runtime/binary/cluster_setup.go for etcd, etcd peer and kwok-controller, and by
    cluster_kube_{controller_manager,scheduler}.go): two clusters created at the same moment in two
    CI lanes pick the same ports before either binds them, and a stopped cluster's ports go to the
    next cluster created, so its `kwokctl start` cannot bind them again. One CI run lost its KAI
    claims cluster to a 180 s `create` timeout that way. A random draw makes both a 1-in-12,000 chance.
    """
    picked: list[int] = []
    while len(picked) < n:
        port = random.choice(COMPONENT_PORTS)
        if port not in picked and _bindable(port):
            picked.append(port)
    return picked


# --------------------------------------------------------------------------------------------
# manifests


def gpu_node_manifest(
    name: str,
    *,
    instance_type: str,
    cpu: str,
    memory: str,
    pods: str,
    extra_labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A KWOK-managed Node labelled like a GPU node of the NVIDIA DRA driver.

    GPUs are NOT advertised as an extended resource: with DRA they come from ResourceSlices
    (see tools/dra_publisher.py).
    """
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": instance_type,
        "nvidia.com/gpu.present": "true",
        "nvidia.com/dra-kubelet-plugin": "true",
        "type": "kwok",
    }
    labels.update(extra_labels or {})
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            # The kwok controller started by kwokctl manages nodes with this annotation.
            "annotations": {KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {},
        "status": {
            "allocatable": resources,
            "capacity": resources,
        },
    }


def kwokctl_config(bin_dir: Path, *, apiserver_port: int, ports: Sequence[int] | None = None) -> str:
    """kwokctl configuration: binary runtime, local binaries only, loopback only; every component's
    port is ours (``ports``: etcd, etcd peer, kwok-controller, controller-manager, scheduler; drawn
    by component_ports() when not given), never kwokctl's scan."""
    etcd, etcd_peer, kwok, kcm, scheduler = ports if ports is not None else component_ports(5)
    opts = {
        "runtime": "binary",
        "kubeVersion": KUBE_VERSION,
        # kwokctl's default is 0.0.0.0 for every component.
        "bindAddress": LOOPBACK,
        "kubeApiserverPort": apiserver_port,
        "etcdPort": etcd,
        "etcdPeerPort": etcd_peer,
        "kwokControllerPort": kwok,
        "kubeControllerManagerPort": kcm,
        "kubeSchedulerPort": scheduler,
        "etcdBinary": str(bin_dir / "etcd"),
        "kubeApiserverBinary": str(bin_dir / "kube-apiserver"),
        "kubeControllerManagerBinary": str(bin_dir / "kube-controller-manager"),
        "kubeSchedulerBinary": str(bin_dir / "kube-scheduler"),
        "kwokControllerBinary": str(bin_dir / "kwok"),
        "kubectlBinary": str(bin_dir / "kubectl"),
        "disableQPSLimits": True,
        "quietPull": True,
    }
    doc = {
        "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
        "kind": "KwokctlConfiguration",
        "options": opts,
        "componentsPatches": [
            # Real kubelet nodes' hostnames resolve nowhere here: reach them by their InternalIP first,
            # as kubeadm's API server does (k8s v1.34.4 cmd/kubeadm/app/phases/controlplane/manifests.go);
            # the API server's own default puts Hostname first.
            {"name": "kube-apiserver", "extraArgs": [
                {"key": "kubelet-preferred-address-types", "value": "InternalIP,ExternalIP,Hostname"},
            ]},
            # kwokctl's binary runtime starts kwok with --manage-all-nodes=true (kwok v0.8.0
            # pkg/kwokctl/components/kwok_controller.go: only the kind runtime sets a selector): kwok
            # would then fake the status of real kubelet nodes (tools/nodetier.py) and of their pods.
            # The later flags win: only nodes annotated like gpu_node_manifest's are KWOK's.
            {"name": "kwok-controller", "extraArgs": [
                {"key": "manage-all-nodes", "value": "false"},
                {"key": "manage-nodes-with-annotation-selector", "value": f"{KWOK_NODE_ANNOTATION}=fake"},
            ]},
        ],
    }
    # JSON is valid YAML; kwokctl reads either.
    return json.dumps(doc, indent=2) + "\n"


# --------------------------------------------------------------------------------------------
# cluster


@dataclass
class LocalCluster:
    """A kwokctl "binary runtime" cluster living entirely under ``workdir``."""

    workdir: Path | str
    nodes: int = 2
    node_prefix: str = "gpu-node"
    instance_type: str = "g6.xlarge"
    node_cpu: str = "4"
    node_memory: str = "16Gi"
    node_pods: str = "110"
    name: str = "ck8s-gpu"
    bin_dir: Path | None = None
    timeout: float = 180.0
    # What components/facts/feature_gates.py required(settings) says the stack needs; the caller computes it,
    # this file only passes it on. kwokctl hands its one --kube-feature-gates to kube-apiserver,
    # kube-controller-manager and kube-scheduler alike (kwok v0.8.0 pkg/kwokctl/runtime/binary/
    # cluster_kube_{apiserver,controller_manager,scheduler}.go) and --kube-runtime-config to the apiserver.
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    runtime_config: Sequence[str] = ()  # group/version keys, each switched on
    start_seconds: float | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir).resolve()
        if self.bin_dir is None:
            self.bin_dir = tools_bin_dir()
        self.bin_dir = Path(self.bin_dir)

    # paths --------------------------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        return Path(self.workdir) / "kubeconfig"

    @property
    def kwok_workdir(self) -> Path:
        return Path(self.workdir) / "kwok"

    @property
    def node_names(self) -> list[str]:
        return [f"{self.node_prefix}-{i}" for i in range(self.nodes)]

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        # kwokctl keeps clusters, caches and logs under KWOK_WORKDIR (default ~/.kwok).
        env["KWOK_WORKDIR"] = str(self.kwok_workdir)
        env["PATH"] = f"{self.bin_dir}{os.pathsep}{env.get('PATH', '')}"
        env.pop("KUBECONFIG", None)
        return env

    def create_flags(self) -> list[str]:
        """The gate and API flags of `kwokctl create cluster` (kwok v0.8.0 pkg/kwokctl/cmd/create/
        cluster/cluster.go:181-182); none when there is nothing to set."""
        flags: list[str] = []
        if self.feature_gates:
            gates = ",".join(f"{k}={str(v).lower()}" for k, v in sorted(self.feature_gates.items()))
            flags += ["--kube-feature-gates", gates]
        if self.runtime_config:
            flags += ["--kube-runtime-config", ",".join(f"{api}=true" for api in sorted(self.runtime_config))]
        return flags

    def _kwokctl(self, *args: str, check: bool = True, timeout: float | None = None) -> str:
        assert self.bin_dir is not None
        cmd = [str(self.bin_dir / "kwokctl"), "--name", self.name, *args]
        proc = subprocess.run(
            cmd,
            env=self._env(),
            capture_output=True,
            text=True,
            timeout=timeout or self.timeout,
        )
        log = Path(self.workdir) / "kwokctl.log"
        with log.open("a") as f:
            f.write(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}\n")
        if check and proc.returncode != 0:
            raise RuntimeError(
                f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}"
            )
        return proc.stdout

    # kubectl ------------------------------------------------------------------------------
    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 60
    ) -> str:
        assert self.bin_dir is not None
        cmd = [str(self.bin_dir / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args]
        proc = subprocess.run(
            cmd, input=input, capture_output=True, text=True, timeout=timeout, env=self._env()
        )
        if check and proc.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc.stdout

    def get_json(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json"))

    def apply(self, objs: Sequence[dict[str, Any]] | dict[str, Any]) -> str:
        items = [objs] if isinstance(objs, dict) else list(objs)
        doc = {"apiVersion": "v1", "kind": "List", "items": items}
        return self.kubectl("apply", "--server-side", "--field-manager=ck8s-gpu-test", "-f", "-",
                            input=json.dumps(doc))

    def create(self, objs: Sequence[dict[str, Any]] | dict[str, Any]) -> str:
        items = [objs] if isinstance(objs, dict) else list(objs)
        doc = {"apiVersion": "v1", "kind": "List", "items": items}
        return self.kubectl("create", "-f", "-", input=json.dumps(doc))

    def watch(self, resource: str, namespace: str | None = None) -> Watch:
        """Start recording every version of ``resource`` (a kubectl watch)."""
        assert self.bin_dir is not None
        cmd = [str(self.bin_dir / "kubectl"), "--kubeconfig", str(self.kubeconfig), "get",
               resource, "--watch", "--output-watch-events", "-o", "json"]
        cmd += ["-n", namespace] if namespace else ["-A"]
        return Watch(cmd, self._env())

    def wait_for(self, what: str, predicate: Callable[[], _T], timeout: float = 60.0, interval: float = 0.5) -> _T:
        """Poll ``predicate()`` until it returns a truthy value; raise TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            try:
                value = predicate()
            except RuntimeError as e:  # transient API errors while starting
                last = e
            else:
                last = value
                if value:
                    return value
            time.sleep(interval)
        raise TimeoutError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")

    # lifecycle ----------------------------------------------------------------------------
    def up(self) -> LocalCluster:
        assert self.bin_dir is not None
        missing = missing_binaries(self.bin_dir)
        if missing:
            raise ToolsMissing(
                f"missing {', '.join(missing)} in {self.bin_dir}; build with: bash {BUILD_SCRIPT}"
            )
        t0 = time.monotonic()
        wd = Path(self.workdir)
        wd.mkdir(parents=True, exist_ok=True)
        if (self.kwok_workdir / "clusters" / self.name).exists():
            self.down()  # leftovers of an earlier run in the same dir
        conf = wd / "kwokctl.json"
        apiserver, *ports = component_ports(6)
        conf.write_text(kwokctl_config(self.bin_dir, apiserver_port=apiserver, ports=ports))
        self.kubeconfig.unlink(missing_ok=True)
        try:
            try:
                self._kwokctl(
                    "create", "cluster",
                    "--config", str(conf),
                    "--kubeconfig", str(self.kubeconfig),
                    "--wait", f"{int(self.timeout)}s",
                    *self.create_flags(),
                    # kwokctl's own wait ends first, so its message is what we see, not our timeout.
                    timeout=self.timeout + 60,
                )
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                raise RuntimeError(f"{e}\n{self.component_logs()}") from e
            self._check_loopback()
            self.wait_for("the API server", lambda: self.kubectl(
                "get", "--raw", "/readyz", check=False).strip() == "ok", timeout=self.timeout)
            if self.nodes:  # none: every node comes later (an autoscaler's, tests/helpers/karpenter.py)
                self.apply([
                    gpu_node_manifest(n, instance_type=self.instance_type, cpu=self.node_cpu,
                                      memory=self.node_memory, pods=self.node_pods)
                    for n in self.node_names
                ])
            self.wait_for(f"{self.nodes} Ready nodes", self._nodes_ready, timeout=self.timeout)
            # Pods need the default ServiceAccount, made by the controller-manager.
            self.wait_for("the default ServiceAccount", lambda: self.kubectl(
                "get", "serviceaccount", "default", "-n", "default", check=False).strip(),
                timeout=self.timeout)
        except BaseException:
            self.down()
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def component_logs(self, lines: int = 15) -> str:
        """The last lines of each component's log (kwokctl keeps them under the cluster's logs/)."""
        logs = sorted((self.kwok_workdir / "clusters" / self.name / "logs").glob("*.log"))
        parts = [f"--- {log.name} (last {lines} lines) ---\n"
                 + "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) for log in logs]
        return "\n".join(parts) or "(no component logs)"

    def stop(self) -> None:
        """Stop every component, keeping the cluster's state: the API no longer answers (an outage)."""
        self._kwokctl("stop", "cluster", timeout=120)

    def start(self) -> None:
        """Start a stopped cluster again and wait until its API and nodes are back."""
        self._kwokctl("start", "cluster", timeout=self.timeout)
        self.wait_for("the API server", lambda: self.kubectl(
            "get", "--raw", "/readyz", check=False).strip() == "ok", timeout=self.timeout)
        self.wait_for(f"{self.nodes} Ready nodes", self._nodes_ready, timeout=self.timeout)

    def _nodes_ready(self) -> bool:
        items = self.get_json("nodes")["items"]
        ready = {
            n["metadata"]["name"]
            for n in items
            for c in n.get("status", {}).get("conditions", [])
            if c["type"] == "Ready" and c["status"] == "True"
        }
        return set(self.node_names) <= ready

    def _check_loopback(self) -> None:
        server = self.kubectl("config", "view", "--minify", "-o",
                              "jsonpath={.clusters[0].cluster.server}")
        if f"//{LOOPBACK}:" not in server:
            raise RuntimeError(f"API server is not on loopback: {server}")

    def down(self) -> None:
        """Stop every component and remove the cluster's state (idempotent)."""
        cluster_dir = self.kwok_workdir / "clusters" / self.name
        if not cluster_dir.exists():
            return
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self._kwokctl("delete", "cluster", "--kubeconfig", str(self.kubeconfig), timeout=120)
        # Fallback: kwokctl records component pids under the cluster dir.
        for pidfile in cluster_dir.rglob("*.pid") if cluster_dir.exists() else []:
            with contextlib.suppress(ValueError, ProcessLookupError, PermissionError):
                os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)
        shutil.rmtree(cluster_dir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()


class Watch:
    """Records events of a ``kubectl get --watch --output-watch-events -o json`` stream."""

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        self.events: list[dict[str, Any]] = []
        self.arrived: list[float] = []  # time.monotonic() when each event came, index for index
        self._lock = threading.Lock()
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      text=True, env=env)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        dec = json.JSONDecoder()
        buf = ""
        for line in self._proc.stdout:
            buf += line
            while True:
                s = buf.lstrip()
                if not s:
                    buf = ""
                    break
                try:
                    obj, end = dec.raw_decode(s)
                except json.JSONDecodeError:
                    break
                with self._lock:
                    self.events.append(obj)
                    self.arrived.append(time.monotonic())
                buf = s[end:]

    def objects(self) -> list[dict[str, Any]]:
        with self._lock:
            return [e["object"] for e in self.events if "object" in e]

    def stop(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --------------------------------------------------------------------------------------------
# CLI


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="start the cluster and create the GPU nodes")
    down = sub.add_parser("down", help="stop the cluster and delete its state")
    for sp in (up, down):
        sp.add_argument("--dir", required=True, type=Path, help="data dir of this cluster")
        sp.add_argument("--name", default="ck8s-gpu")
        sp.add_argument("--bin-dir", type=Path, default=None,
                        help="tools bin dir (default: CK8S_GPU_TOOLS_BIN or tools/build.sh --print)")
    up.add_argument("--nodes", type=int, default=2)
    up.add_argument("--node-prefix", default="gpu-node")
    up.add_argument("--instance-type", default="g6.xlarge")
    up.add_argument("--cpu", default="4")
    up.add_argument("--memory", default="16Gi")
    up.add_argument("--pods", default="110")
    a = p.parse_args(argv)
    if a.cmd == "up":
        c = LocalCluster(a.dir, nodes=a.nodes, node_prefix=a.node_prefix,
                         instance_type=a.instance_type, node_cpu=a.cpu, node_memory=a.memory,
                         node_pods=a.pods, name=a.name, bin_dir=a.bin_dir)
        try:
            c.up()
        except ToolsMissing as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        print(f"cluster {a.name} up in {c.start_seconds:.1f}s; nodes: {' '.join(c.node_names)}",
              file=sys.stderr)
        print(f"export KUBECONFIG={c.kubeconfig}")
    else:
        LocalCluster(a.dir, name=a.name, bin_dir=a.bin_dir, nodes=0).down()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Real kubelet nodes beside the local control plane: containers run, GPUs come through DRA and CDI.

Each node is its own containerd v2 (CRI, CDI on, Debian's runc and CNI plugins), a real kubelet
(built from k8s.io/kubernetes at the control plane's pin) and this project's simulated NVIDIA DRA
kubelet plugin (tools/mod/simgpu: driver ``gpu.nvidia.com``, one ResourceSlice shaped like the
NVIDIA driver's, a CDI spec per prepared claim with ``/dev/nvidiaN`` nodes and an ``nvidia-smi``
that lists exactly the GPUs whose nodes the container has). Pods on these nodes really start: the
smoke probe's in-container checks run for real.

Two nodes share one host without clashing: every path (containerd root/state/socket, runc root,
kubelet root dir, pod logs, CNI config and IPAM state, network namespaces, CDI specs, device
nodes) lives under the node's own short root (short_root: unix sockets must fit 108 bytes), its
logs under the tier's directory; every port is its own; each node has its own bridge, pod subnet,
node IP and cgroup root. All run as root (runc, overlayfs, network namespaces and cgroups need it).

``down()`` stops what ``up()`` started and removes what the containers left behind: runc
containers (and with them their cgroups), shims, mounts, network namespaces, the bridge, the node
IP and the cgroup root. It runs on any failure of ``up()`` and from the context manager, and
``up()`` first clears leftovers of an earlier run in the same directory, so a killed test does not
poison the next one (``leftovers()`` lists what is still there).

Library use (the cluster: tools/localcluster.py)::

    with LocalCluster(d / "lc", nodes=2) as c, NodeTier(d / "nodes", c.kubeconfig, [
            NodeSpec("gpu-kubelet-0", devices=dra.resource_slice_manifest("gpu-kubelet-0", 1)["spec"]["devices"]),
    ]) as tier:
        tier.probe.reference   # the smoke probe image, imported into every node's containerd

Pure standard library (Python 3.11+); needs root, ``runc`` and ``/usr/lib/cni`` (Debian's
runc and containernetworking-plugins, scripts/install-debs.sh) and the tools cache
(tools/build.sh: kubelet, containerd, containerd-shim-runc-v2, ctr, ck8s-gpu-kubelet-plugin,
ck8s-sim-nvidia-smi).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compute_domain_sim
import probe_image
from localcluster import LOOPBACK, component_ports, free_port, tools_bin_dir

#: The NVIDIA Container Toolkit of a GPU node image (tools/mod/nvidia-container-toolkit, the pinned
#: version): nvidia-ctk, the three runtimes the GPU Operator's RuntimeClasses name, and the prestart
#: hook the legacy one adds (found on containerd's PATH, the bin dir first).
TOOLKIT_BINARIES = ("nvidia-ctk", "nvidia-container-runtime", "nvidia-container-runtime.cdi",
                    "nvidia-container-runtime.legacy", "nvidia-container-runtime-hook")
#: Binaries of the tools cache this tier needs (tools/build.sh).
#: The smoke `inference` case's model-server stand-in, carried in the probe image (tools/probe_image.py).
MODEL_SERVER = "ck8s-model-server"
#: dcgm-exporter's stand-in (tools/mod/simgpu cmd/ck8s-sim-dcgm-exporter), one per node, on the node's
#: address at NodeTier.dcgm_port: what the utilization report and the smoke test's DCGM hop read.
DCGM_EXPORTER = "ck8s-sim-dcgm-exporter"
REQUIRED_BINARIES = ("kubelet", "containerd", "containerd-shim-runc-v2", "ctr", "ck8s-gpu-kubelet-plugin",
                     "ck8s-sim-nvidia-smi", compute_domain_sim.BINARY, MODEL_SERVER, DCGM_EXPORTER,
                     *TOOLKIT_BINARIES)
#: The EC2 node script: its host_toolkit function configures a host-toolkit node's containerd here too.
NODE_SCRIPT = Path(__file__).resolve().parents[1] / "components" / "aws" / "scripts" / "ck8s-node.sh"
TOOLKIT_UNIT = "snap.k8s.containerd.service.d/10-ck8s-gpu-nvidia-runtime.conf"
#: Host programs from Debian packages (scripts/install-debs.sh).
RUNC = "/usr/sbin/runc"
DELETE_ATTEMPTS = 5  # runc delete of a container its shim is still moving (NodeTier.down)
CNI_BIN_DIR = "/usr/lib/cni"
REQUIRED_HOST = (RUNC, f"{CNI_BIN_DIR}/bridge", f"{CNI_BIN_DIR}/host-local", f"{CNI_BIN_DIR}/loopback")
# Set by scripts/all_tiers.sh in the lanes that must not start a node tier (NodeTier.up).
FORBID_ENV = "CK8S_GPU_NO_KUBELETS"
DRIVER = "gpu.nvidia.com"
CRI_NAMESPACE = "k8s.io"  # containerd namespace of the CRI plugin
#: Faults the simulated plugin injects on prepare (tools/mod/simgpu: a test hook, not NVIDIA's).
#: `unhealthy` is an NVML XID on the claim's first GPU: the plugin taints it and republishes the
#: slice if its gate NVMLDeviceHealthCheck is on (gpu_plugin_gates), and prepares on, as NVIDIA's does.
FAULTS = ("cdi-refused", "wrong-device", "unhealthy")
#: Node labels every kubelet node carries: those tools/localcluster.py gives KWOK GPU nodes, but `type`.
BASE_LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/dra-kubelet-plugin": "true"}


class NodeTierError(RuntimeError):
    """A node did not come up; the message names the step and the log to read."""


def missing(bin_dir: Path) -> list[str]:
    """What this tier lacks on this machine, each with where it comes from ([] = ready)."""
    out = [f"{n} (tools/build.sh)" for n in REQUIRED_BINARIES if not os.access(bin_dir / n, os.X_OK)]
    out += [f"{p} (scripts/install-debs.sh)" for p in REQUIRED_HOST if not os.access(p, os.X_OK)]
    if os.geteuid() != 0:
        out.append("root (runc, overlayfs mounts, network namespaces and cgroups need it)")
    return out


@dataclass
class NodeSpec:
    name: str
    devices: list[dict[str, Any]]  # resource.k8s.io/v1 Devices the plugin publishes (tools/dra_publisher.py)
    labels: dict[str, str] = field(default_factory=dict)
    # Also run the simulated compute-domain.nvidia.com plugin (tools/compute_domain_sim.py; IMEX channels).
    compute_domains: bool = False
    # The kubelet's gates from components/facts/feature_gates.py required(settings) (the caller computes them).
    feature_gates: dict[str, bool] = field(default_factory=dict)
    # The GPU plugin's --feature-gates (NVIDIA driver 0.5 names: FabricManagerPartitioning, NVMLDeviceHealthCheck).
    gpu_plugin_gates: dict[str, bool] = field(default_factory=dict)
    # The simulated Fabric Manager's partitions, id -> GPU module ids (dra_publisher.hgx_8gpu_partitions());
    # None: no NVSwitch fabric on the node.
    fabric_partitions: dict[int, list[int]] | None = None
    # containerd gets the NVIDIA runtimes as an EC2 GPU worker of `gpuStack.toolkit: host` does on a CDI
    # track: the node script's own host_toolkit writes the unit drop-in, its ExecStartPre lines run
    # with the real nvidia-ctk before containerd starts (KubeletNode.configure_toolkit).
    host_toolkit: bool = False
    # The node's GPUs in MIG mode (tools/dra_publisher.py mig_parents), whose MIG devices `devices` holds.
    mig_parents: list[dict[str, Any]] = field(default_factory=list)

    @property
    def gpus(self) -> int:
        """Physical GPUs: a MIG node publishes its GPUs' instances, not the GPUs."""
        return len(self.mig_parents) if self.mig_parents else len(self.devices)

    def devices_file(self) -> str:
        """The plugin's --devices-file (tools/mod/simgpu cmd/ck8s-gpu-kubelet-plugin devices.go devicesFile)."""
        doc: dict[str, Any] = {"devices": self.devices}
        if self.mig_parents:
            doc["migParents"] = self.mig_parents
        return json.dumps(doc, indent=2)


# --- configuration files (pure) ---------------------------------------------------------------


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(f"no TOML for {value!r}")


def toml(tables: dict[str, dict[str, Any]]) -> str:
    """Flat TOML: {"": top-level keys, "<dotted table>": keys}; enough for containerd's config."""
    lines = [f"{k} = {_toml(v)}" for k, v in tables.get("", {}).items()]
    for table, keys in tables.items():
        if table:
            lines += ["", f"[{table}]", *(f"  {k} = {_toml(v)}" for k, v in keys.items())]
    return "\n".join(lines) + "\n"


# A unix socket's path must fit sockaddr_un (108 bytes): pytest's temp dirs are too deep for the
# kubelet's plugin sockets, so each node's state lives under a short root named after the tier's
# directory (the same directory finds its leftovers again); logs stay in the tier's directory.
SHORT_ROOT = Path("/tmp")


def short_root(workdir: Path) -> Path:
    return SHORT_ROOT / f"ck8s-nt-{hashlib.sha256(str(workdir).encode()).hexdigest()[:10]}"


@dataclass(frozen=True)
class NodePaths:
    root: Path
    logs: Path  # in the tier's own directory (no socket lives there)

    @property
    def containerd(self) -> Path:
        return self.root / "containerd"

    @property
    def socket(self) -> Path:
        return self.containerd / "containerd.sock"

    @property
    def runc_root(self) -> Path:
        return self.root / "runc"

    @property
    def kubelet(self) -> Path:
        return self.root / "kubelet"

    @property
    def cni_conf(self) -> Path:
        return self.root / "cni" / "conf"

    @property
    def cni_ipam(self) -> Path:
        return self.root / "cni" / "ipam"

    @property
    def netns(self) -> Path:
        return self.containerd / "state" / "netns"  # netns_mounts_under_state_dir

    @property
    def cdi(self) -> Path:
        return self.root / "cdi"

    @property
    def gpu(self) -> Path:
        return self.root / "gpu"

    @property
    def fault_file(self) -> Path:
        return self.gpu / "fault"


def containerd_config(p: NodePaths, *, sandbox_image: str, stream_port: int) -> str:
    """containerd v2.2 (config version 3) confined to the node's directory. Keys from the pinned
    binary's `containerd config default` and its docs/cri/config.md."""
    cri_runtime = 'plugins."io.containerd.cri.v1.runtime"'
    runc = f"{cri_runtime}.containerd.runtimes.runc"
    return toml({
        "": {"version": 3, "root": str(p.containerd / "root"), "state": str(p.containerd / "state"),
             "temp": str(p.containerd / "tmp")},
        "grpc": {"address": str(p.socket), "tcp_address": ""},
        "ttrpc": {"address": f"{p.socket}.ttrpc"},
        "debug": {"address": ""},
        "metrics": {"address": ""},
        'plugins."io.containerd.grpc.v1.cri"': {"disable_tcp_service": True, "stream_server_address": LOOPBACK,
                                                "stream_server_port": str(stream_port)},
        cri_runtime: {
            "enable_cdi": True,
            "cdi_spec_dirs": [str(p.cdi)],
            # Network namespaces under <state>/netns, not the host's /var/run/netns.
            "netns_mounts_under_state_dir": True,
            # Root here lacks CAP_SYS_RESOURCE (a VM sandbox): lowering oom_score_adj (-998 for every
            # sandbox) fails runc's init; this clamps it to containerd's own score instead.
            "restrict_oom_score_adj": True,
        },
        f"{cri_runtime}.containerd": {"default_runtime_name": "runc"},
        runc: {"runtime_type": "io.containerd.runc.v2"},
        f"{runc}.options": {"BinaryName": RUNC, "Root": str(p.runc_root), "SystemdCgroup": False},
        f"{cri_runtime}.cni": {"bin_dirs": [CNI_BIN_DIR], "conf_dir": str(p.cni_conf), "max_conf_num": 1},
        'plugins."io.containerd.cri.v1.images"': {"snapshotter": "overlayfs"},
        'plugins."io.containerd.cri.v1.images".pinned_images': {"sandbox": sandbox_image},
        'plugins."io.containerd.cri.v1.images".registry': {"config_path": ""},
        'plugins."io.containerd.image-verifier.v1.bindir"': {"bin_dir": str(p.containerd / "image-verifier")},
        'plugins."io.containerd.internal.v1.opt"': {"path": str(p.containerd / "opt")},
        'plugins."io.containerd.nri.v1.nri"': {"disable": True},
    })


def cni_config(index: int, p: NodePaths) -> dict[str, Any]:
    """One bridge per node with its own /24 and IPAM state under the node's directory
    (containernetworking-plugins bridge and host-local; cniVersion 1.0.0 is the newest 1.1.1 knows)."""
    return {
        "cniVersion": "1.0.0",
        "name": f"ck8s-node-{index}",
        "plugins": [{
            "type": "bridge",
            "bridge": bridge_name(index),
            "isGateway": True,
            "ipMasq": False,  # the probes need no network (and a NetworkPolicy denies it anyway)
            "ipam": {"type": "host-local", "ranges": [[{"subnet": pod_subnet(index)}]],
                     "dataDir": str(p.cni_ipam)},
        }],
    }


def bridge_name(index: int) -> str:
    return f"ck8sgpu{index}"


def pod_subnet(index: int) -> str:
    return f"10.244.{100 + index}.0/24"


def node_ip(index: int) -> str:
    """The node's own address, added to `lo`: the kubelet refuses a loopback node IP and one no
    interface holds (k8s v1.34 pkg/kubelet/nodestatus/setters.go validateNodeIP), and without an
    address the API server cannot reach it for logs (`no preferred addresses found`). This kernel
    has no dummy links; an extra address on `lo` is local and reaches no network."""
    return f"10.250.{index}.1"


CGROUP_FS = Path("/sys/fs/cgroup")
CGROUP_PARENT = "ck8s-gpu-nodes"


def cgroup_root(node: str) -> str:
    """The node's own cgroup subtree (kubelet --cgroup-root): its QoS tiers and pods live below it,
    so two kubelets never meet in one cgroup and teardown removes exactly this subtree."""
    return f"/{CGROUP_PARENT}/{node}"


def cgroup_hierarchies(fs: Path = CGROUP_FS) -> list[Path]:
    """Mounted cgroup hierarchies (v1 controllers, the named systemd one, a hybrid's unified)."""
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if " - cgroup" in line]
    return sorted(Path(m) for m in mounts if Path(m).parent == fs or Path(m) == fs)


def kubelet_config(index: int, p: NodePaths, *, port: int, healthz_port: int, cgroups: str,
                   feature_gates: dict[str, bool] | None = None) -> dict[str, Any]:
    """KubeletConfiguration (kubelet.config.k8s.io/v1beta1, k8s v1.34 staging/src/k8s.io/kubelet/config/v1beta1)."""
    gates = {"featureGates": dict(sorted(feature_gates.items()))} if feature_gates else {}
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node_ip(index),
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": LOOPBACK,
        "healthzPort": healthz_port,
        # Loopback only, a throwaway cluster: the API server's log and exec calls need no client cert.
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "containerRuntimeEndpoint": f"unix://{p.socket}",
        "cgroupDriver": "cgroupfs",
        "cgroupsPerQOS": True,
        "cgroupRoot": cgroups,
        "failSwapOn": False,
        # Each kubelet removes log dirs of pods it does not know: two on one /var/log/pods delete
        # each other's container logs.
        "podLogsDir": str(p.root / "pod-logs"),
        "podCIDR": pod_subnet(index),
        "resolvConf": "",
        "maxPods": 16,
        "serializeImagePulls": False,
        # Never collect the locally imported images nor evict on a small CI disk.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                         "nodefs.inodesFree": "1%"},
        "protectKernelDefaults": False,
        "localStorageCapacityIsolation": False,
        "nodeStatusUpdateFrequency": "4s",
        "shutdownGracePeriod": "0s",
        **gates,
    }


# --- processes ----------------------------------------------------------------------------------


def _start(cmd: Sequence[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as f:
        f.write(f"\n$ {' '.join(cmd)}\n".encode())
        f.flush()
        return subprocess.Popen(list(cmd), stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)


def _stop(proc: subprocess.Popen[bytes] | None, grace: float = 10.0) -> None:
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


def _pids_mentioning(text: str) -> list[int]:
    """Processes whose command line names `text` (the shims of one containerd, by its socket)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if text.encode() in (d / "cmdline").read_bytes():
                out.append(int(d.name))
    return out


def _mounts_under(root: Path) -> list[str]:
    """Mount points at or below `root`, deepest first (/proc/self/mountinfo field 5)."""
    prefix = str(root).rstrip("/") + "/"
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(prefix) or point == str(root):
            points.append(point)
    return sorted(set(points), key=lambda m: (-m.count("/"), m))


def _tail(path: Path, lines: int = 12) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return "(no log)"


# --- one node -----------------------------------------------------------------------------------


@dataclass
class KubeletNode:
    spec: NodeSpec
    index: int
    paths: NodePaths
    bin_dir: Path
    kubeconfig: Path
    containerd: subprocess.Popen[bytes] | None = None
    kubelet: subprocess.Popen[bytes] | None = None
    plugin: subprocess.Popen[bytes] | None = None
    cd_plugin: subprocess.Popen[bytes] | None = None
    exporter: subprocess.Popen[bytes] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        # containerd finds its shim on PATH; the shim finds runc by the BinaryName option.
        env["PATH"] = f"{self.bin_dir}{os.pathsep}/usr/sbin{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
        env.pop("KUBECONFIG", None)
        return env

    def ctr(self, *args: str, check: bool = True, timeout: float = 120) -> str:
        cmd = [str(self.bin_dir / "ctr"), "--address", str(self.paths.socket), "--namespace", CRI_NAMESPACE, *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=self._env())
        if check and proc.returncode != 0:
            raise NodeTierError(f"{self.name}: ctr {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc.stdout

    def write_configs(self, sandbox_image: str) -> None:
        p = self.paths
        for d in (p.containerd, p.runc_root, p.kubelet, p.cni_conf, p.cni_ipam, p.netns, p.cdi, p.gpu / "dev",
                  p.gpu / "state", p.logs):
            d.mkdir(parents=True, exist_ok=True)
        (p.containerd / "config.toml").write_text(
            containerd_config(p, sandbox_image=sandbox_image, stream_port=free_port()))
        (p.cni_conf / "10-ck8s-bridge.conflist").write_text(json.dumps(cni_config(self.index, p), indent=2))
        conf = kubelet_config(self.index, p, port=free_port(), healthz_port=free_port(),
                              cgroups=cgroup_root(self.name), feature_gates=self.spec.feature_gates)
        (p.kubelet / "config.json").write_text(json.dumps(conf, indent=2))
        (p.gpu / "devices.json").write_text(self.spec.devices_file())
        p.fault_file.unlink(missing_ok=True)

    def add_address(self) -> None:
        cmd = ["ip", "addr", "add", f"{node_ip(self.index)}/32", "dev", "lo"]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise NodeTierError(f"{self.name}: {' '.join(cmd)}: {res.stderr.strip()}")

    def has_address(self) -> bool:
        out = subprocess.run(["ip", "-o", "addr", "show", "dev", "lo"], capture_output=True, text=True,
                             check=False).stdout
        return f" {node_ip(self.index)}/32 " in out

    def configure_toolkit(self) -> list[str]:
        """ck8s-node.sh host_toolkit with CK8S_HOST_TOOLKIT=cdi, its paths pointed at this node (the
        script's own CK8S_* overrides; systemctl a no-op: no systemd here), then each ExecStartPre
        line of the unit drop-in it wrote, in order, as systemd runs them before containerd starts
        (systemd.service(5): a failing one fails the start). Returns the lines run."""
        p, work = self.paths, self.paths.root / "toolkit"
        stub = work / "bin"
        stub.mkdir(parents=True, exist_ok=True)
        (stub / "systemctl").write_text("#!/bin/sh\nexit 0\n")
        (stub / "systemctl").chmod(0o755)
        (work / "node.env").write_text("")
        body, last = NODE_SCRIPT.read_text().rstrip("\n").rsplit("\n", 1)
        if last != 'main "$@"':
            raise NodeTierError(f"{NODE_SCRIPT} no longer ends with main \"$@\": cannot run host_toolkit alone")
        env = {"PATH": f"{stub}:/usr/bin:/bin", "HOME": str(work), "CK8S_ROLE": "worker",
               "CK8S_CONFIG_DIR": str(work), "CK8S_LOG_DIR": str(work), "CK8S_CONSOLE": str(work / "console"),
               "CK8S_SYSTEMD_DIR": str(work / "units"), "CK8S_CONTAINERD_ETC": str(p.containerd),
               "CK8S_NVIDIA_CTK": str(self.bin_dir / "nvidia-ctk"), "CK8S_NVIDIA_RUNTIME_DIR": str(self.bin_dir),
               "CK8S_NVIDIA_RUNTIMES_WORK": str(work / "chain"), "CK8S_HOST_TOOLKIT": "cdi"}
        res = subprocess.run(["bash", "-c", f"{body}\nhost_toolkit\n"], env=env, capture_output=True, text=True,
                             timeout=60, check=False)
        if res.returncode != 0:
            raise NodeTierError(f"{self.name}: host_toolkit failed: {res.stderr.strip()}")
        lines = [line.removeprefix("ExecStartPre=") for line in (work / "units" / TOOLKIT_UNIT).read_text().splitlines()
                 if line.startswith("ExecStartPre=")]
        for line in lines:
            run = subprocess.run(shlex.split(line), capture_output=True, text=True, timeout=60, check=False,
                                 env={"PATH": "/usr/bin:/bin"})
            if run.returncode != 0:
                raise NodeTierError(f"{self.name}: ExecStartPre={line} exited {run.returncode}: {run.stderr.strip()}")
        return lines

    def start_containerd(self) -> None:
        self.containerd = _start([str(self.bin_dir / "containerd"), "--config",
                                  str(self.paths.containerd / "config.toml")],
                                 self.paths.logs / "containerd.log", self._env())
        _until(f"{self.name}: containerd's socket", lambda: self.paths.socket.exists()
               and self.ctr("version", check=False).startswith("Client"), 60, self.containerd,
               self.paths.logs / "containerd.log")

    def import_image(self, archive: Path) -> None:
        self.ctr("images", "import", "--all-platforms", str(archive))

    def cgroup_dirs(self) -> list[Path]:
        """The node's cgroup root in every mounted hierarchy."""
        return [h / cgroup_root(self.name).strip("/") for h in cgroup_hierarchies()]

    def make_cgroups(self) -> None:
        """The kubelet wants its --cgroup-root to exist in every hierarchy; a v1 cpuset child has
        no CPUs until told, so it takes its parent's."""
        for top in self.cgroup_dirs():
            for child in (top.parent, top):
                child.mkdir(exist_ok=True)
                for knob in ("cpuset.cpus", "cpuset.mems"):
                    if (child / knob).exists() and not (child / knob).read_text().strip():
                        (child / knob).write_text((child.parent / knob).read_text())

    def remove_cgroups(self) -> list[str]:
        """Remove the node's subtree bottom-up (empty once its containers are deleted)."""
        problems = []
        for top in self.cgroup_dirs():
            if not top.is_dir():
                continue
            for d in [*sorted((d for d in top.rglob("*") if d.is_dir()), key=lambda d: -len(d.parts)), top]:
                try:
                    d.rmdir()
                except OSError as exc:
                    problems.append(f"cgroup {d}: {exc.strerror}")
            with contextlib.suppress(OSError):
                top.parent.rmdir()  # the shared parent, once the last node's subtree is gone
        return problems

    def start_kubelet(self) -> None:
        labels = {**BASE_LABELS, "kubernetes.io/hostname": self.name, **self.spec.labels}
        self.kubelet = _start([
            str(self.bin_dir / "kubelet"),
            f"--config={self.paths.kubelet / 'config.json'}",
            f"--kubeconfig={self.kubeconfig}",
            f"--root-dir={self.paths.kubelet / 'root'}",
            f"--cert-dir={self.paths.kubelet / 'pki'}",
            f"--hostname-override={self.name}",
            f"--node-ip={node_ip(self.index)}",
            "--node-labels=" + ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
            "--v=2",
        ], self.paths.logs / "kubelet.log", self._env())

    def check_kubelet_config(self) -> None:
        """The kubelet falls back to lenient decoding and ignores a key it does not know
        (k8s.io/kubernetes pkg/kubelet/kubeletconfig/util/codec): here a misspelt key is an error."""
        log = self.paths.logs / "kubelet.log"
        for line in log.read_text(errors="replace").splitlines():
            if "strict decoding failed" in line:
                raise NodeTierError(f"{self.name}: the kubelet ignored part of its configuration: {line.strip()}")

    def start_plugin(self) -> None:
        root = self.paths.kubelet / "root"
        gates = ",".join(f"{k}={str(on).lower()}" for k, on in sorted(self.spec.gpu_plugin_gates.items()))
        args = [
            str(self.bin_dir / "ck8s-gpu-kubelet-plugin"),
            f"--node-name={self.name}",
            f"--kubeconfig={self.kubeconfig}",
            f"--devices-file={self.paths.gpu / 'devices.json'}",
            f"--plugin-data-dir={root / 'plugins' / DRIVER}",
            f"--registrar-dir={root / 'plugins_registry'}",
            f"--cdi-dir={self.paths.cdi}",
            f"--dev-dir={self.paths.gpu / 'dev'}",
            f"--nvidia-smi={self.bin_dir / 'ck8s-sim-nvidia-smi'}",
            f"--state-dir={self.paths.gpu / 'state'}",
            f"--fault-file={self.paths.fault_file}",
            f"--feature-gates={gates}",
        ]
        # The simulated Fabric Manager's table (tools/mod/simgpu/internal/fabric Table).
        fabric = self.paths.gpu / "fabric-partitions.json"
        fabric.unlink(missing_ok=True)
        if self.spec.fabric_partitions is not None:
            fabric.write_text(json.dumps({"partitions": [
                {"id": pid, "gpuModuleIDs": list(mods)} for pid, mods in sorted(self.spec.fabric_partitions.items())]}))
            args.append(f"--fabric-partitions-file={fabric}")
        self.plugin = _start(args, self.paths.logs / "plugin.log", self._env())

    def stop_plugin(self) -> None:
        _stop(self.plugin)
        self.plugin = None

    def start_exporter(self, port: int) -> None:
        """The simulated dcgm-exporter on this node's address: the plugin's GPU table and devices, the
        kubelet's pod-resources socket (<root-dir>/pod-resources/kubelet.sock, the kubelet's default)."""
        self.exporter = _start([
            str(self.bin_dir / DCGM_EXPORTER),
            f"--node-name={self.name}",
            f"--kubeconfig={self.kubeconfig}",
            f"--gpu-table={self.paths.gpu / 'state' / 'gpus.json'}",
            f"--devices-file={self.paths.gpu / 'devices.json'}",
            f"--pod-resources-socket={self.paths.kubelet / 'root' / 'pod-resources' / 'kubelet.sock'}",
            f"--listen={node_ip(self.index)}:{port}",
        ], self.paths.logs / "dcgm-exporter.log", self._env())

    def set_fault(self, fault: str | None) -> None:
        if fault is None:
            self.paths.fault_file.unlink(missing_ok=True)
            return
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
        self.paths.fault_file.write_text(fault + "\n")

    # the compute-domain plugin (tools/compute_domain_sim.py) ------------------------------------
    @property
    def cd_state(self) -> Path:
        return self.paths.root / "cd"

    def start_cd_plugin(self) -> None:
        self.cd_state.mkdir(parents=True, exist_ok=True)
        (self.cd_state / "proc-devices").write_text(compute_domain_sim.proc_devices())
        self.cd_plugin = _start(compute_domain_sim.plugin_command(
            self.bin_dir, self.kubeconfig, self.name, self.paths.kubelet / "root", self.paths.cdi, self.cd_state),
            self.paths.logs / "cd-plugin.log", self._env())

    def stop_cd_plugin(self) -> None:
        _stop(self.cd_plugin)
        self.cd_plugin = None

    def set_cd_fault(self, fault: str | None) -> None:
        path = self.cd_state / "fault"
        if fault is None:
            path.unlink(missing_ok=True)
            return
        if fault not in compute_domain_sim.FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(compute_domain_sim.FAULTS)}")
        path.write_text(fault + "\n")

    # teardown ---------------------------------------------------------------------------------
    def down(self) -> list[str]:
        """Stop everything of this node and remove what its containers left; returns problems."""
        problems: list[str] = []
        self.stop_cd_plugin()
        _stop(self.exporter)
        _stop(self.plugin)
        _stop(self.kubelet, grace=20)
        self.exporter = self.plugin = self.kubelet = None
        # Containers first (their cgroups go with `runc delete`), then the shims and containerd.
        runc_ns = self.paths.runc_root / CRI_NAMESPACE
        if runc_ns.is_dir():
            listed = subprocess.run([RUNC, "--root", str(runc_ns), "list", "-q"], capture_output=True, text=True,
                                    check=False).stdout.split()
            for cid in listed:
                subprocess.run([RUNC, "--root", str(runc_ns), "kill", cid, "KILL"], capture_output=True, check=False)
                # The container's shim still runs here and may move it between states while `delete
                # --force` freezes it to kill what is left: "invalid state transition from stopped to
                # paused" (seen in CI, 2026-12-05) is such a race, so a failed delete is tried again.
                for attempt in range(DELETE_ATTEMPTS):
                    res = subprocess.run([RUNC, "--root", str(runc_ns), "delete", "--force", cid],
                                         capture_output=True, text=True, check=False)
                    if res.returncode == 0 or "does not exist" in res.stderr:
                        break
                    if attempt + 1 < DELETE_ATTEMPTS:
                        time.sleep(0.5)
                else:
                    problems.append(f"runc delete {cid} ({DELETE_ATTEMPTS} tries): {res.stderr.strip()}")
        _stop(self.containerd)
        self.containerd = None
        for pid in _pids_mentioning(str(self.paths.socket)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for ns in sorted(self.paths.netns.glob("*")) if self.paths.netns.is_dir() else []:
            subprocess.run(["umount", "-l", str(ns)], capture_output=True, check=False)
            with contextlib.suppress(OSError):
                ns.unlink()
        subprocess.run(["ip", "link", "delete", bridge_name(self.index)], capture_output=True, check=False)
        subprocess.run(["ip", "addr", "del", f"{node_ip(self.index)}/32", "dev", "lo"], capture_output=True,
                       check=False)
        for point in _mounts_under(self.paths.root):
            res = subprocess.run(["umount", "-l", point], capture_output=True, text=True, check=False)
            if res.returncode != 0:
                problems.append(f"umount {point}: {res.stderr.strip()}")
        problems += self.remove_cgroups()
        return problems

    def leftovers(self) -> list[str]:
        """What of this node still exists on the host (empty after a clean `down`)."""
        out = [f"mount {m}" for m in _mounts_under(self.paths.root)]
        out += [f"process {pid}" for pid in _pids_mentioning(str(self.paths.root))]
        if Path(f"/sys/class/net/{bridge_name(self.index)}").exists():
            out.append(f"bridge {bridge_name(self.index)}")
        if self.has_address():
            out.append(f"address {node_ip(self.index)} on lo")
        runc_ns = self.paths.runc_root / CRI_NAMESPACE
        if runc_ns.is_dir():
            out += [f"runc container {c.name}" for c in runc_ns.iterdir() if c.is_dir()]
        out += [f"cgroup {d}" for d in self.cgroup_dirs() if d.exists()]
        return out


def _until(what: str, ok: Any, timeout: float, proc: subprocess.Popen[bytes] | None, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise NodeTierError(f"{what}: the process exited with {proc.returncode}; {log}:\n{_tail(log)}")
        with contextlib.suppress(subprocess.SubprocessError, OSError, NodeTierError, ValueError):
            if ok():
                return
        time.sleep(0.3)
    raise NodeTierError(f"timed out after {timeout:.0f}s waiting for {what}; {log}:\n{_tail(log)}")


# --- the tier -----------------------------------------------------------------------------------


@dataclass
class NodeTier:
    workdir: Path
    kubeconfig: Path
    specs: Sequence[NodeSpec]
    bin_dir: Path | None = None
    timeout: float = 120.0
    nodes: list[KubeletNode] = field(default_factory=list, init=False)
    probe: probe_image.Image | None = field(default=None, init=False)
    pause: probe_image.Image | None = field(default=None, init=False)
    start_seconds: float | None = field(default=None, init=False)
    cd_controller: subprocess.Popen[bytes] | None = field(default=None, init=False)
    # Every node's exporter listens on this port of its own address (one Service port reaches them all).
    dcgm_port: int = field(default_factory=lambda: component_ports(1)[0], init=False)

    def __post_init__(self) -> None:
        self.workdir = Path(self.workdir).resolve()
        self.bin_dir = Path(self.bin_dir or tools_bin_dir())
        root = short_root(self.workdir)
        self.nodes = [KubeletNode(s, i, NodePaths(root / str(i), self.workdir / s.name / "logs"), self.bin_dir,
                                  Path(self.kubeconfig)) for i, s in enumerate(self.specs)]

    def kubectl(self, *args: str, check: bool = True) -> str:
        assert self.bin_dir is not None
        proc = subprocess.run([str(self.bin_dir / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args],
                              capture_output=True, text=True, timeout=60, check=False)
        if check and proc.returncode != 0:
            raise NodeTierError(f"kubectl {' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout

    def node_ready(self, name: str) -> bool:
        node = json.loads(self.kubectl("get", "node", name, "-o", "json"))
        return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))

    def slice_published(self, name: str, driver: str = DRIVER) -> bool:
        slices = json.loads(self.kubectl("get", "resourceslices", "-o", "json"))["items"]
        return any(s["spec"].get("nodeName") == name and s["spec"].get("driver") == driver
                   and s["spec"].get("devices") for s in slices)

    def up(self) -> NodeTier:
        assert self.bin_dir is not None
        # Node tiers share bridge names and node addresses by index (bridge_name, node_address): one at
        # a time per machine. CI runs the tests that start one in a lane of their own (pytest marker
        # `kubelets`, scripts/all_tiers.sh) and forbids them in the lane beside it.
        if os.environ.get(FORBID_ENV):
            raise NodeTierError(f"{FORBID_ENV} is set: this lane runs no real kubelets; mark the test "
                                "`@pytest.mark.kubelets` so it runs in the kubelets lane (scripts/all_tiers.sh)")
        lacking = missing(self.bin_dir)
        if lacking:
            raise NodeTierError("the node tier needs: " + "; ".join(lacking))
        t0 = time.monotonic()
        self.down()  # an earlier run's leftovers in the same directory
        try:
            self.probe, self.pause = probe_image.build(self.workdir / "images", self.bin_dir / MODEL_SERVER)
            for node in self.nodes:
                node.write_configs(self.pause.name)
                node.make_cgroups()
                node.add_address()
                if node.spec.host_toolkit:
                    node.configure_toolkit()
                node.start_containerd()
                node.import_image(self.pause.archive)
                node.import_image(self.probe.archive)
                node.start_kubelet()
            for node in self.nodes:
                _until(f"node {node.name} Ready", lambda n=node.name: self.node_ready(n), self.timeout,
                       node.kubelet, node.paths.logs / "kubelet.log")
                node.check_kubelet_config()
                node.start_plugin()
            for node in self.nodes:
                _until(f"{node.name}'s ResourceSlice from the kubelet plugin",
                       lambda n=node.name: self.slice_published(n), self.timeout, node.plugin,
                       node.paths.logs / "plugin.log")
                node.start_exporter(self.dcgm_port)
            self.start_compute_domains()
        except BaseException:
            self.down()
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def start_compute_domains(self) -> None:
        """CRDs, DeviceClasses, one controller and a compute-domain plugin per node that asks."""
        cd_nodes = [n for n in self.nodes if n.spec.compute_domains]
        if not cd_nodes:
            return
        assert self.bin_dir is not None
        compute_domain_sim.apply_manifests(self.bin_dir / "kubectl", Path(self.kubeconfig))
        log = self.workdir / "cd-controller.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        self.cd_controller = _start(compute_domain_sim.controller_command(self.bin_dir, Path(self.kubeconfig)), log)
        for node in cd_nodes:
            node.start_cd_plugin()
        for node in cd_nodes:
            _until(f"{node.name}'s {compute_domain_sim.DRIVER} ResourceSlice",
                   lambda n=node.name: self.slice_published(n, compute_domain_sim.DRIVER), self.timeout,
                   node.cd_plugin, node.paths.logs / "cd-plugin.log")

    def down(self) -> list[str]:
        problems: list[str] = []
        _stop(self.cd_controller)
        self.cd_controller = None
        for node in self.nodes:
            problems += node.down()
        if not problems:  # nothing mounted is left under it: the state can go
            shutil.rmtree(short_root(Path(self.workdir)), ignore_errors=True)
        return problems

    def leftovers(self) -> list[str]:
        return [f"{n.name}: {item}" for n in self.nodes for item in n.leftovers()]

    def node(self, name: str) -> KubeletNode:
        return next(n for n in self.nodes if n.name == name)

    def republish(self, name: str, devices: list[dict[str, Any]],
                  fabric_partitions: dict[int, list[int]] | str | None = "keep", timeout: float = 60) -> None:
        """Restart node `name`'s GPU plugin with other devices (and Fabric Manager table; "keep": as it
        is), as a driver upgrade or a changed fabric would, and wait until its slice shows them."""
        node = self.node(name)
        node.stop_plugin()
        fabric = node.spec.fabric_partitions if fabric_partitions == "keep" else fabric_partitions
        node.spec = dataclasses.replace(node.spec, devices=devices, fabric_partitions=fabric)  # type: ignore[arg-type]
        (node.paths.gpu / "devices.json").write_text(node.spec.devices_file())
        node.start_plugin()

        def shows_them() -> bool:
            for sl in json.loads(self.kubectl("get", "resourceslices", "-o", "json"))["items"]:
                spec = sl["spec"]
                if spec.get("nodeName") == name and spec.get("driver") == DRIVER:
                    got = spec.get("devices") or []
                    return [(d["name"], d.get("attributes")) for d in got] == [
                        (d["name"], d.get("attributes")) for d in devices]
            return False

        _until(f"node {name}'s plugin to publish its new devices", shows_them, timeout, node.plugin,
               node.paths.logs / "plugin.log")

    @contextlib.contextmanager
    def fault(self, kind: str) -> Iterator[None]:
        """Every node's plugin injects `kind` (FAULTS) on prepare until the block ends."""
        try:
            for node in self.nodes:
                node.set_fault(kind)
            yield
        finally:
            for node in self.nodes:
                node.set_fault(None)

    @contextlib.contextmanager
    def cd_fault(self, kind: str) -> Iterator[None]:
        """Every compute-domain plugin injects `kind` (compute_domain_sim.FAULTS) until the block ends."""
        nodes = [n for n in self.nodes if n.spec.compute_domains]
        try:
            for node in nodes:
                node.set_cd_fault(kind)
            yield
        finally:
            for node in nodes:
                node.set_cd_fault(None)

    def remove_probe_image(self) -> None:
        """Negative test: the probe image is absent (and no registry answers for it)."""
        assert self.probe is not None
        for node in self.nodes:  # both names the import made (tools/probe_image.py)
            node.ctr("images", "remove", "--sync", self.probe.name, self.probe.by_digest)

    def restore_probe_image(self) -> None:
        assert self.probe is not None
        for node in self.nodes:
            node.import_image(self.probe.archive)

    def __enter__(self) -> NodeTier:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()


def main(argv: Sequence[str] | None = None) -> int:  # pragma: no cover - manual use
    import argparse

    ap = argparse.ArgumentParser(description="real kubelet nodes for a tools/localcluster.py cluster")
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--kubeconfig", type=Path, required=True)
    ap.add_argument("--nodes", type=int, default=2)
    args = ap.parse_args(argv)
    import dra_publisher

    specs = [NodeSpec(f"gpu-kubelet-{i}", dra_publisher.resource_slice_manifest(f"gpu-kubelet-{i}", 1)["spec"]
                      ["devices"]) for i in range(args.nodes)]
    tier = NodeTier(args.dir, args.kubeconfig, specs).up()
    print(f"node tier up in {tier.start_seconds:.1f}s; probe image {tier.probe.reference if tier.probe else ''}")
    print("Ctrl-C to stop")
    with contextlib.suppress(KeyboardInterrupt):
        signal.pause()
    print("\n".join(tier.down()) or "down")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""GPU node checks on a testinfra host: pure verdicts from command outputs.

Every check runs commands through `Node.run` (testinfra's `host.run`), parses what they print,
and returns a `Verdict`: problems (empty = pass) or a skip reason (no GPU on this node, or a
feature the stack does not use). The unit tests replay recorded outputs through a fake testinfra
backend; the live suite (test_node.py) runs the same functions against real nodes.

Facts the commands rely on (checked upstream):
- snapd REST API on /run/snapd.socket: `/v2/snaps/<name>` (`tracking-channel`, `status`, `hold`)
  and `/v2/apps?names=<snap>&select=service` (`name`, `enabled`, `active`): canonical/snapd
  client/packages.go, client/apps.go.
- k8s-snap services (snap/snapcraft.yaml apps, canonical/k8s-snap d924cc2): containerd, k8sd,
  kubelet on every node; kube-apiserver etc. only on control planes; `k8s kubectl` is the snap's
  `bin/kubectl` with KUBECONFIG defaulting to admin.conf (k8s/lib.sh), so the kubelet's own
  credentials (/etc/kubernetes/kubelet.conf) are used here, which also works on workers.
- GPU Operator v26.7.0: toolkit drop-in /etc/containerd/conf.d/99-nvidia.toml (the project's
  RUNTIME_DROP_IN_CONFIG), CDI specs in /var/run/cdi, driver root /run/nvidia/driver, DCGM
  exporter pods labelled app=nvidia-dcgm-exporter on port 9400 (not host network by default).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Protocol

SNAPD = "curl -sS --unix-socket /run/snapd.socket"
SNAP_INFO = f"{SNAPD} http://localhost/v2/snaps/k8s"
SNAP_SERVICES = f"{SNAPD} 'http://localhost/v2/apps?names=k8s&select=service'"
KUBELET_ARGS = "cat /var/snap/k8s/common/args/kubelet"
HOSTNAME = "hostname"
KUBECTL = "/snap/k8s/current/bin/kubectl --kubeconfig=/etc/kubernetes/kubelet.conf"
DROP_IN_PATH = "/etc/containerd/conf.d/99-nvidia.toml"
DROP_IN = f"cat {DROP_IN_PATH}"
ROOT_CONFIG = "cat /etc/containerd/config.toml"
CDI_KINDS = "grep -rhsE '^[[:space:]]*\"?kind\"?[[:space:]]*:' /var/run/cdi /etc/cdi"
PCI = 'for d in /sys/bus/pci/devices/*; do echo "$(cat $d/vendor) $(cat $d/class)"; done'
MODULES = "cat /proc/modules"
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
_SMI_QUERY = "nvidia-smi --query-gpu=index,name,uuid,memory.total --format=csv,noheader"
# Host driver: nvidia-smi on PATH. Operator-managed driver: it lives in the driver root.
NVIDIA_SMI = f"{_SMI_QUERY} || chroot {OPERATOR_DRIVER_ROOT} {_SMI_QUERY}"
DCGM_LOCAL = "curl -sf --max-time 5 http://127.0.0.1:9400/metrics"

REQUIRED_SERVICES = ("containerd", "k8sd", "kubelet")
NVIDIA_VENDOR = "0x10de"
MODULES_NEEDED = ("nvidia", "nvidia_uvm")


class Result(Protocol):
    @property
    def rc(self) -> int: ...
    @property
    def stdout(self) -> str: ...


class Host(Protocol):
    def run(self, command: str, *args: str, **kwargs: Any) -> Result: ...


class Node:
    """A testinfra host, optionally seen through a chroot (a `kubectl debug node/...` pod mounts
    the node's root filesystem at /host)."""

    def __init__(self, host: Host, chroot: str | None = None) -> None:
        self.host = host
        self.chroot = chroot

    def run(self, command: str) -> Result:
        if self.chroot:
            command = f"chroot {shlex.quote(self.chroot)} sh -c {shlex.quote(command)}"
        return self.host.run(command)

    def out(self, command: str) -> str | None:
        """stdout when the command succeeded, else None."""
        result = self.run(command)
        return result.stdout if result.rc == 0 else None


@dataclass(frozen=True)
class Expectations:
    track: str | None = None  # e.g. "1.34-classic"; None = do not check the track
    hold_refresh: bool = False
    gpus: int | None = None  # per node; None = as many as the PCI bus shows
    product_name: str | None = None
    cdi: bool = True  # containerd can do CDI (not on track 1.32)
    dcgm_namespace: str = "gpu-operator"


@dataclass
class Verdict:
    check: str
    problems: list[str] = field(default_factory=list)
    skipped: str | None = None
    details: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.skipped is None and not self.problems

    def __str__(self) -> str:
        if self.skipped:
            return f"{self.check}: skipped ({self.skipped})"
        return f"{self.check}: " + ("ok" if not self.problems else "; ".join(self.problems))


def _json(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except json.JSONDecodeError:
        return None


# --- GPU presence ---------------------------------------------------------------------------

def pci_gpus(node: Node) -> int:
    """NVIDIA display/3D controllers (PCI class 0x03xxxx); NVSwitches and bridges do not count."""
    listing = node.out(PCI) or ""
    count = 0
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].lower() == NVIDIA_VENDOR and parts[1].lower().startswith("0x03"):
            count += 1
    return count


def no_gpu_reason(node: Node) -> str | None:
    if pci_gpus(node) == 0:
        return "no NVIDIA GPU on the PCI bus of this node (a control plane or CPU node)"
    return None


def expected_gpus(node: Node, exp: Expectations) -> tuple[int, list[str]]:
    """(GPUs this node must show, problems): the instance type's count when known, checked
    against the PCI bus (a missing GPU is a hardware or hypervisor fault worth reporting)."""
    seen = pci_gpus(node)
    if exp.gpus is None:
        return seen, []
    if seen != exp.gpus:
        return exp.gpus, [f"the instance type has {exp.gpus} GPU(s) but the PCI bus shows {seen}"]
    return exp.gpus, []


# --- Kubernetes snap ------------------------------------------------------------------------

def check_snap(node: Node, exp: Expectations) -> Verdict:
    v = Verdict("k8s snap")
    doc = _json(node.out(SNAP_INFO))
    snap = doc.get("result") if isinstance(doc, dict) and doc.get("status-code") == 200 else None
    if not isinstance(snap, dict):
        v.problems.append("snap k8s is not installed (snapd has no such snap)")
        return v
    channel = str(snap.get("tracking-channel", ""))
    v.details.append(f"k8s {snap.get('version')} rev {snap.get('revision')} tracking {channel}")
    if snap.get("confinement") not in (None, "classic"):
        v.problems.append(f"confinement is {snap.get('confinement')}, expected classic")
    if exp.track and channel.split("/")[0] != exp.track:
        v.problems.append(f"tracking {channel or 'nothing'}, expected track {exp.track}")
    if snap.get("status") != "active":
        v.problems.append(f"snap status is {snap.get('status')}, expected active")
    if exp.hold_refresh and not snap.get("hold"):
        v.problems.append("refreshes are not held (`snap refresh --hold k8s`): the snap may upgrade itself")
    return v


def check_services(node: Node) -> Verdict:
    v = Verdict("k8s services")
    doc = _json(node.out(SNAP_SERVICES))
    apps = doc.get("result") if isinstance(doc, dict) else None
    if not isinstance(apps, list) or not apps:
        v.problems.append("snapd lists no k8s services")
        return v
    state = {str(a.get("name")): (bool(a.get("enabled")), bool(a.get("active"))) for a in apps if isinstance(a, dict)}
    for name in REQUIRED_SERVICES:
        enabled, active = state.get(name, (False, False))
        if not (enabled and active):
            v.problems.append(f"k8s.{name} is {'enabled' if enabled else 'disabled'} and "
                              f"{'active' if active else 'inactive'}; it must run on every node")
    for name, (enabled, active) in sorted(state.items()):
        if enabled and not active and name not in REQUIRED_SERVICES:
            v.problems.append(f"k8s.{name} is enabled but not running")
    v.details.append("running: " + ", ".join(sorted(n for n, (_, a) in state.items() if a)))
    return v


def node_name(node: Node) -> str:
    args = node.out(KUBELET_ARGS) or ""
    match = re.search(r"--hostname-override=['\"]?([^\s'\"]+)", args)
    if match:
        return match.group(1)
    return (node.out(HOSTNAME) or "").strip()


def check_node_ready(node: Node) -> Verdict:
    v = Verdict("node joined and Ready")
    name = node_name(node)
    if not name:
        v.problems.append("cannot tell the node's name (no kubelet --hostname-override, no hostname)")
        return v
    doc = _json(node.out(f"{KUBECTL} get node {shlex.quote(name)} -o json"))
    if not isinstance(doc, dict):
        v.problems.append(f"node {name} is not registered with the API server (or the kubelet cannot reach it)")
        return v
    conditions = {c.get("type"): c for c in doc.get("status", {}).get("conditions", []) if isinstance(c, dict)}
    ready = conditions.get("Ready", {})
    if ready.get("status") != "True":
        v.problems.append(f"node {name} is not Ready: {ready.get('reason', 'no Ready condition')} "
                          f"{ready.get('message', '')}".rstrip())
    for kind in ("MemoryPressure", "DiskPressure", "PIDPressure"):
        if conditions.get(kind, {}).get("status") == "True":
            v.problems.append(f"node {name} reports {kind}")
    v.details.append(f"node {name}")
    return v


# --- GPU runtime path -----------------------------------------------------------------------

def check_containerd_nvidia(node: Node) -> Verdict:
    v = Verdict("containerd NVIDIA runtime drop-in")
    if reason := no_gpu_reason(node):
        v.skipped = reason
        return v
    drop_in = node.out(DROP_IN)
    if drop_in is None:
        v.problems.append(f"{DROP_IN_PATH} is missing: the container toolkit has not configured containerd")
    elif not re.search(r"runtimes\.['\"]?nvidia['\"]?\]", drop_in) or "nvidia-container-runtime" not in drop_in:
        v.problems.append(f"{DROP_IN_PATH} defines no `nvidia` runtime using nvidia-container-runtime")
    root = node.out(ROOT_CONFIG) or ""
    if "/etc/containerd/conf.d/" not in root:
        v.problems.append("/etc/containerd/config.toml does not import conf.d/*.toml: the drop-in is ignored")
    return v


def check_cdi(node: Node, exp: Expectations) -> Verdict:
    v = Verdict("CDI specs")
    if reason := no_gpu_reason(node):
        v.skipped = reason
        return v
    if not exp.cdi:
        v.skipped = "this track's containerd cannot do CDI (GPU Operator runs with cdi.enabled=false)"
        return v
    kinds = []
    for line in (node.out(CDI_KINDS) or "").splitlines():
        _, _, value = line.partition(":")
        kinds.append(value.strip().strip("\",'"))
    if not any(re.search(r"(^|\.)nvidia\.com/gpu$", k) for k in kinds):
        v.problems.append("no CDI spec for nvidia.com/gpu under /var/run/cdi or /etc/cdi")
    v.details.append("kinds: " + ", ".join(sorted(set(kinds))))
    return v


def check_kernel_modules(node: Node) -> Verdict:
    v = Verdict("NVIDIA kernel modules")
    if reason := no_gpu_reason(node):
        v.skipped = reason
        return v
    loaded = {line.split()[0] for line in (node.out(MODULES) or "").splitlines() if line.strip()}
    v.problems += [f"kernel module {m} is not loaded" for m in MODULES_NEEDED if m not in loaded]
    return v


def check_nvidia_smi(node: Node, exp: Expectations) -> Verdict:
    v = Verdict("nvidia-smi")
    if reason := no_gpu_reason(node):
        v.skipped = reason
        return v
    want, problems = expected_gpus(node, exp)
    v.problems += problems
    listing = node.out(NVIDIA_SMI)
    if listing is None:
        v.problems.append("nvidia-smi failed (no driver loaded, or not on PATH nor in the driver root)")
        return v
    rows = [[c.strip() for c in line.split(",")] for line in listing.splitlines() if line.strip()]
    if len(rows) != want:
        v.problems.append(f"nvidia-smi lists {len(rows)} GPU(s), expected {want}")
    if exp.product_name:
        wrong = sorted({r[1] for r in rows if len(r) > 1 and r[1] != exp.product_name})
        if wrong:
            v.problems.append(f"GPU model {', '.join(wrong)}, expected {exp.product_name}")
    v.details += [", ".join(r) for r in rows]
    return v


def check_dcgm_exporter(node: Node, exp: Expectations) -> Verdict:
    v = Verdict("DCGM exporter on 9400")
    if reason := no_gpu_reason(node):
        v.skipped = reason
        return v
    metrics = node.out(DCGM_LOCAL)
    where = "127.0.0.1:9400"
    if metrics is None:  # not host network (the operator's default): ask for this node's pod
        name = node_name(node)
        ip = (node.out(f"{KUBECTL} get pods -n {shlex.quote(exp.dcgm_namespace)} -l app=nvidia-dcgm-exporter "
                       f"--field-selector spec.nodeName={shlex.quote(name)} "
                       "-o jsonpath='{.items[0].status.podIP}'") or "").strip()
        if not ip:
            v.problems.append(f"no DCGM exporter answers on 127.0.0.1:9400 and no nvidia-dcgm-exporter pod runs "
                              f"on this node in namespace {exp.dcgm_namespace}")
            return v
        where = f"{ip}:9400"
        metrics = node.out(f"curl -sf --max-time 5 http://{ip}:9400/metrics")
        if metrics is None:
            v.problems.append(f"the DCGM exporter pod at {where} does not answer /metrics")
            return v
    gpus = {m.group(1) for m in re.finditer(r'^DCGM_FI_DEV_GPU_UTIL\{[^}]*\bgpu="(\d+)"', metrics, re.MULTILINE)}
    want, _ = expected_gpus(node, exp)
    if len(gpus) != want:
        v.problems.append(f"DCGM_FI_DEV_GPU_UTIL covers {len(gpus)} GPU(s) at {where}, expected {want}")
    v.details.append(f"metrics from {where}")
    return v


def expectations_for(settings: Any, pool: str | None = None, dcgm_namespace: str = "gpu-operator") -> Expectations:
    """What a node of `settings` (components.settings.model.Settings) must show; `pool` names the
    node pool this node belongs to (its instance type gives the GPU count and model)."""
    from components.settings.facts import pool_gpus
    from components.tables import pins

    track = settings.kubernetes.track
    gpus = product = None
    if pool is not None:
        match = [p for p in settings.node_pools if p.name == pool]
        if not match:
            names = ", ".join(p.name for p in settings.node_pools)
            raise ValueError(f"no node pool {pool!r} in these settings ({names})")
        facts = pool_gpus(match[0])
        if facts is not None:
            gpus, product = facts.count, facts.product_name
    return Expectations(
        track=track,
        hold_refresh=settings.kubernetes.hold_snap_refresh,
        gpus=gpus,
        product_name=product,
        cdi=pins.track(track).cdi,
        dcgm_namespace=dcgm_namespace,
    )

#!/usr/bin/env python3
"""The simulated NVIDIA ComputeDomain driver of the node tier: its manifests, names and processes.

NVIDIA's DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu, chart 0.5.0-dev at main 95932046)
ships ComputeDomains: a ComputeDomain (resource.nvidia.com/v1beta1) makes its controller create a
ResourceClaimTemplate whose claims get the IMEX channel on each node that joins. Here
``ck8s-sim-compute-domain`` (tools/mod/simgpu) plays the controller (one host process) and the
``compute-domain.nvidia.com`` kubelet plugin (one per node, beside the GPU plugin); the CRDs are
tools/sim/crds (written from the Go API types), the DeviceClasses below are shaped from the chart's
templates. tools/nodetier.py starts it all for NodeSpecs with ``compute_domains=True``.

Pure standard library (PyYAML only for :func:`crds`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

DRIVER = "compute-domain.nvidia.com"
RESOURCE_API = "resource.k8s.io/v1"  # the chart's resourceApiVersion on Kubernetes >= 1.34
CD_API = "resource.nvidia.com/v1beta1"
#: DeviceClass names (deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-compute-domain-*.yaml).
DEFAULT_CHANNEL_CLASS = "compute-domain-default-channel.nvidia.com"
DAEMON_CLASS = "compute-domain-daemon.nvidia.com"
#: The device a channel claim gets and what its container sees (nvlib.go getNVCapIMEXChannelDeviceInfo).
CHANNEL_DEVICE = "channel-0"
CHANNEL_PATH = "/dev/nvidia-caps-imex-channels/channel0"
#: Where the cliques live: the driver's namespace (upstream: the chart's release namespace).
DRIVER_NAMESPACE = "nvidia-dra-driver-gpu"
#: Simulator test hook (not NVIDIA's): prepare succeeds but the container gets no IMEX channel.
FAULTS = ("no-imex-channel",)
#: The NVIDIA driver registers nvidia-caps-imex-channels with a dynamic character major that the
#: plugin reads from /proc/devices (internal/common/nvcaps.go GetDeviceMajor). No driver is loaded
#: here, so the plugin reads this stand-in file instead: major 60 is in a range Linux reserves for
#: local/experimental use (Documentation/admin-guide/devices.txt: 60-63 char) and never hands out
#: dynamically, so the node runc makes in the container is inert.
IMEX_MAJOR = 60
CRD_DIR = Path(__file__).resolve().parent / "sim" / "crds"
CRD_FILES = ("resource.nvidia.com_computedomains.yaml", "resource.nvidia.com_computedomaincliques.yaml")
BINARY = "ck8s-sim-compute-domain"


def proc_devices() -> str:
    """A /proc/devices with the IMEX channels' stand-in major (the format GetDeviceMajor parses)."""
    return f"Character devices:\n  1 mem\n {IMEX_MAJOR} nvidia-caps-imex-channels\n\nBlock devices:\n  7 loop\n"


def _device_class(name: str, expression: str) -> dict[str, Any]:
    return {"apiVersion": RESOURCE_API, "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def device_classes() -> list[dict[str, Any]]:
    """The chart's two ComputeDomain DeviceClasses with computeDomains enabled, driver-managed IMEX
    (deviceclass-compute-domain-default-channel.yaml, deviceclass-compute-domain-daemon.yaml)."""
    attrs = f"device.attributes['{DRIVER}']"
    return [
        _device_class(DEFAULT_CHANNEL_CLASS,
                      f"device.driver == '{DRIVER}' && {attrs}.type == 'channel' && {attrs}.id == 0"),
        _device_class(DAEMON_CLASS, f"device.driver == '{DRIVER}' && {attrs}.type == 'daemon'"),
    ]


def crd_paths() -> list[Path]:
    return [CRD_DIR / f for f in CRD_FILES]


def crds() -> list[dict[str, Any]]:
    import yaml  # the venv's; the tier itself applies the files with kubectl

    return [yaml.safe_load(p.read_text()) for p in crd_paths()]


def compute_domain(name: str, namespace: str, template: str, num_nodes: int = 0,
                   allocation_mode: str = "Single") -> dict[str, Any]:
    """A ComputeDomain as NVIDIA's demo writes it (demo/specs/imex/channel-injection.yaml)."""
    return {"apiVersion": CD_API, "kind": "ComputeDomain", "metadata": {"name": name, "namespace": namespace},
            "spec": {"numNodes": num_nodes,
                     "channel": {"resourceClaimTemplate": {"name": template}, "allocationMode": allocation_mode}}}


def controller_command(bin_dir: Path, kubeconfig: Path) -> list[str]:
    return [str(bin_dir / BINARY), "controller", f"--kubeconfig={kubeconfig}", f"--namespace={DRIVER_NAMESPACE}"]


def plugin_command(bin_dir: Path, kubeconfig: Path, node: str, kubelet_root: Path, cdi_dir: Path,
                   state_dir: Path) -> list[str]:
    """The node's plugin: its data dir is <kubelet root>/plugins/<driver> and it registers in the
    kubelet's plugins_registry, beside the GPU plugin (the kubelet's plugin watcher serves every
    driver whose <driver>-reg.sock appears there)."""
    return [str(bin_dir / BINARY), "kubelet-plugin", f"--kubeconfig={kubeconfig}", f"--namespace={DRIVER_NAMESPACE}",
            f"--node-name={node}", f"--plugin-data-dir={kubelet_root / 'plugins' / DRIVER}",
            f"--registrar-dir={kubelet_root / 'plugins_registry'}", f"--cdi-dir={cdi_dir}",
            f"--proc-devices={state_dir / 'proc-devices'}", f"--fault-file={state_dir / 'fault'}"]


def apply_manifests(kubectl: Path, kubeconfig: Path) -> None:
    """CRDs (established before use), the driver namespace and the DeviceClasses."""
    import json

    def run(*args: str, stdin: str | None = None) -> None:
        proc = subprocess.run([str(kubectl), "--kubeconfig", str(kubeconfig), *args], input=stdin,
                              capture_output=True, text=True, timeout=90, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {proc.stderr.strip()}")

    for p in crd_paths():
        run("apply", "-f", str(p))
    run("wait", "--for=condition=Established", "--timeout=60s",
        *(f"crd/{f.removeprefix('resource.nvidia.com_').removesuffix('.yaml')}.resource.nvidia.com"
          for f in CRD_FILES))
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DRIVER_NAMESPACE}}
    items = {"apiVersion": "v1", "kind": "List", "items": [ns, *device_classes()]}
    run("apply", "-f", "-", stdin=json.dumps(items))

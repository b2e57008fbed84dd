"""What this machine must be before `make up` creates anything (run by the system python3, before the
venv exists): Linux, root, Python 3.11+, Go or an already built tools cache; and no other node tier
running (tools/nodetier.py's bridges, node addresses and cgroup root have fixed names: two tiers
would tear down each other's). Standard library only."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .procs import processes
from .state import ROOT

TOOLS = ROOT / "tools"
#: tools/nodetier.py short_root(): every node tier's sockets and mounts live under /tmp/ck8s-nt-<hash>.
NODE_TIER_MARK = "/tmp/ck8s-nt-"
# What `make up` runs, from the tools cache (tools/localcluster.py REQUIRED_BINARIES, tools/nodetier.py
# REQUIRED_BINARIES, tests/integration/conftest.py ENGINE_BINARIES): with all of them Go is not needed.
TOOL_BINARIES = ("kwokctl", "kwok", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl",
                 "kubelet", "containerd", "containerd-shim-runc-v2", "ctr", "ck8s-gpu-kubelet-plugin",
                 "ck8s-sim-nvidia-smi", "ck8s-sim-compute-domain", "pulumi", "pulumi-language-python",
                 "pulumi-resource-kubernetes")


def machine_problems(system: str, euid: int, python: tuple[int, int], have_go: bool, tools_built: bool,
                     action: str = "up") -> list[str]:
    """Why `make <action>` cannot run on this machine, one reason a line ([]: it can)."""
    out = []
    if system != "Linux":
        out.append(f"it needs Linux (this is {system}): the kubelet nodes are Linux processes, runc containers, "
                   "network namespaces and cgroups")
    if euid != 0:
        out.append("it needs root: runc, overlayfs mounts, network namespaces, the nodes' bridges and addresses "
                   "and their cgroups all do")
    if python < (3, 11):
        out.append(f"it needs Python 3.11+ as python3 (this is {python[0]}.{python[1]}); or `make {action} "
                   "PY=python3.11`")
    if action == "up" and not have_go and not tools_built:
        out.append("it needs Go (https://go.dev/dl/, 1.26) once, to build the pinned tools into "
                   "~/.cache/ck8s-gpu/tools (tools/README.md), or CK8S_GPU_TOOLS_BIN naming a built bin dir")
    return out


def refusal(action: str, problems: Sequence[str]) -> str:
    """One message: what cannot be done, each reason, what to do instead; nothing was created."""
    reasons = "\n".join(f"  - {p}" for p in problems)
    return (f"make {action}: cannot run here:\n{reasons}\n"
            f"Run `sudo make {action}` on a Linux machine (or VM) with Python 3.11+ and Go. Without root, "
            "`make plan` shows the stack offline and docs/kind.md runs the kind stack where Docker exists.\n"
            "Nothing was created.")


def tools_bin() -> Path | None:
    env = os.environ.get("CK8S_GPU_TOOLS_BIN")
    if env:
        return Path(env)
    out = subprocess.run(["bash", str(TOOLS / "build.sh"), "--print"], capture_output=True, text=True, check=False)
    return Path(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 and out.stdout.strip() else None


def tools_built(bin_dir: Path | None) -> bool:
    return bin_dir is not None and all(os.access(bin_dir / b, os.X_OK) for b in TOOL_BINARIES)


def have_go() -> bool:
    return shutil.which("go") is not None or os.access("/usr/local/go/bin/go", os.X_OK)


def check(action: str) -> list[str]:
    euid = os.geteuid() if hasattr(os, "geteuid") else -1
    return machine_problems(platform.system(), euid, sys.version_info[:2], have_go(),
                            tools_built(tools_bin()), action)


def other_node_tiers(own_short_root: str) -> dict[int, str]:
    """Processes of a node tier that is not this state dir's (a test's, another checkout's `make up`)."""
    return {pid: cmd for pid, cmd in processes([NODE_TIER_MARK]).items() if own_short_root not in cmd}


def busy_message(action: str, others: dict[int, str]) -> str:
    shown = "\n".join(f"  {pid} {cmd[:150]}" for pid, cmd in sorted(others.items())[:6])
    return (f"make {action}: another node tier is running on this machine (a tests/integration node-tier "
            f"test, or `make up` of another checkout):\n{shown}\n"
            "Its bridges, node addresses and cgroup root have the names this one would use: wait until it "
            "ends (or `make down` in that checkout), then run this again. Nothing was changed.")

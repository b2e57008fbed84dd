"""A simulated fleet of EC2 instances running the REAL node script from rendered user-data.

Each instance has its own root directory (its /etc/ck8s-gpu from user-data, /etc/kubernetes,
/snap, /var/log, console), its own fake `aws`, `snap`, `cloud-init` and `systemctl` on PATH, the
real bash and python3, the real curl behind the world's network, and acts in the shared world
(world.py). Control planes serve k8sd's CAPI endpoint on their loopback address once they are
cluster members (k8sd_server.py).
"""

from __future__ import annotations

import random
import secrets
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.aws.userdata import decoded_files
from tests.fakes.k8s_snap import forkserver, world
from tests.fakes.k8s_snap.k8sd_server import Supervisor
from tests.fakes.k8s_snap.main import shim

SCRIPT_PATH = "/usr/local/sbin/ck8s-gpu-node"


@dataclass
class Instance:
    fleet: Fleet
    id: str
    ip: str
    name: str
    root: Path
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[str] | None = None
    result: subprocess.CompletedProcess[str] | None = None

    def start(self, **env: str) -> Instance:
        self.process = subprocess.Popen(
            ["bash", str(self.root / SCRIPT_PATH.lstrip("/"))], env={**self.env, **env},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        return self

    def wait(self, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        assert self.process is not None, "start() first"
        out, err = self.process.communicate(timeout=timeout)
        self.result = subprocess.CompletedProcess(self.process.args, self.process.returncode, out, err)
        self.process = None
        return self.result

    def run(self, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
        return self.start(**env).wait(timeout)

    def exec(self, argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run one command on this instance as SSM RunShellScript would (root, its PATH: the fake
        `snap`, `aws`, `cloud-init`, and `k8s` once the snap is installed); an absolute /snap/...
        path is this instance's snap dir (`/snap/k8s/current/bin/kubectl`)."""
        if argv and argv[0].startswith("/snap/"):
            argv = [str(self.root / argv[0].lstrip("/")), *argv[1:]]
        return subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout, check=False)

    @property
    def log(self) -> str:
        return "\n".join(p.read_text() for p in sorted((self.root / "var/log").glob("ck8s-gpu-*.log")))

    @property
    def console(self) -> str:
        path = self.root / "dev/console"
        return path.read_text() if path.exists() else ""

    @property
    def state(self) -> dict[str, Any]:
        return dict(world.read(self.fleet.dir)["instances"][self.id])

    def pull(self, ref: str) -> str:
        """The kubelet pulls `ref` through this node's containerd (containerd.py): where it came from."""
        from tests.fakes.k8s_snap import containerd

        with world.locked(self.fleet.dir) as state:
            return containerd.pull(state, self.id, ref)

    def calls(self, prefix: str = "") -> list[str]:
        return [c["call"] for c in world.read(self.fleet.dir)["calls"]
                if c["instance"] == self.id and c["call"].startswith(prefix)]


class Fleet:
    def __init__(self, directory: Path, region: str) -> None:
        self.dir = directory
        self.region = region
        forkserver.ensure_started()  # the shims written from here on call through it
        directory.mkdir(parents=True, exist_ok=True)
        with world.locked(directory) as state:
            state.update(world.empty())
        # From the OS, not the global `random`: with the fork server, the rollout scenarios under
        # `-n 2` had fleets of both xdist workers on one net (k8sd "Address already in use" at
        # addresses the other worker held); draws from the OS cannot repeat across processes.
        pick = random.SystemRandom()
        self.net = f"127.{pick.randint(64, 250)}.{pick.randint(0, 250)}"
        self.instances: dict[str, Instance] = {}
        self.supervisor = Supervisor(directory)
        self.supervisor.start()

    def close(self) -> None:
        for inst in self.instances.values():
            if inst.process is not None:
                inst.process.kill()
                inst.process.communicate()
        self.supervisor.stop()
        assert not self.supervisor.errors, f"the fake k8sd could not listen: {self.supervisor.errors}"

    # ------------------------------------------------------------------------------ world setup

    def mutate(self) -> Any:
        return world.locked(self.dir)

    def add_instance(self, user_data: str, tags: dict[str, str], role_policies: list[dict[str, Any]],
                     role: str, asg: str | None = None, arch: str = "amd64") -> Instance:
        """`arch`: the instance type's CPU architecture (which builds the fake Snap Store serves it)."""
        n = len(self.instances) + 10
        ip = f"{self.net}.{n}"
        iid = f"i-{secrets.token_hex(8)}{n:x}"
        name = f"ip-{ip.replace('.', '-')}.{self.region}.compute.internal"
        root = self.dir / iid
        contents = decoded_files(user_data)  # cloud-init decodes `encoding: gz+b64` (cc_write_files.py)
        for f in yaml.safe_load(user_data)["write_files"]:
            target = root / f["path"].lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(contents[f["path"]])
            target.chmod(int(f["permissions"], 8))
        (root / "dev").mkdir(parents=True, exist_ok=True)
        (root / "etc/systemd/system").mkdir(parents=True, exist_ok=True)  # Ubuntu's, there from the start
        with world.locked(self.dir) as state:
            # EC2's LaunchTime has whole seconds. Instances the program orders (control plane n+1
            # after control plane 0 is running) launch seconds apart; the fake keeps them strictly
            # increasing so a test adding two in one second still sees which came first.
            launched = max(int(world.now(state)), max((i["launched"] for i in state["instances"].values()),
                                                      default=0) + 1)
            state["instances"][iid] = {
                "ip": ip, "name": name, "tags": dict(tags), "state": "running", "health": "Healthy",
                "role": role, "role_policies": role_policies, "asg": asg, "root": str(root), "node": {"snap": {}},
                "ssm_online": True, "launched": launched, "arch": arch,
            }
        fake_bin = root / "fakebin"
        # systemctl: what systemctl.py models; curl: the real one behind the world's network (network.py)
        for tool in ("aws", "snap", "cloud-init", "systemctl", "curl"):
            shim(fake_bin / tool, tool, iid, str(self.dir), self.region)
        env = {
            "PATH": f"{fake_bin}:{root / 'snap/bin'}:/usr/bin:/bin:{Path(sys.executable).parent}",
            "HOME": str(root),
            "CK8S_CONFIG_DIR": str(root / "etc/ck8s-gpu"),
            "CK8S_STATE_DIR": str(root / "var/lib/ck8s-gpu"),
            "CK8S_RUN_DIR": str(root / "run/ck8s-gpu"),
            "CK8S_LOG_DIR": str(root / "var/log"),
            "CK8S_KUBE_DIR": str(root / "etc/kubernetes"),
            "CK8S_SNAP_DIR": str(root / "snap"),
            "CK8S_CONSOLE": str(root / "dev/console"),
            "CK8S_SNAP_COMMON": str(root / "var/snap/k8s/common"),
            "CK8S_CONTAINERD_HOSTS_DIR": str(root / "etc/containerd/hosts.d"),
            "CK8S_CONTAINERD_ETC": str(root / "etc/containerd"),  # containerd base dir = root (containerd.py)
            "CK8S_NVIDIA_CTK": str(root / "usr/bin/nvidia-ctk"),  # there if the image has it (node_media.toolkit)
            "CK8S_NVIDIA_RUNTIMES_WORK": str(root / "run/ck8s-gpu-nvidia-runtimes"),
            "CK8S_SYSTEMD_DIR": str(root / "etc/systemd/system"),
            "CK8S_SIDELOAD_WAIT_SECONDS": "3",
            "CK8S_RETRY_BASE_SECONDS": "0",
            "CK8S_MINT_POLL_SECONDS": "0",
            "CK8S_JOIN_ATTEMPTS": "4",
        }
        inst = Instance(self, iid, ip, name, root, env)
        self.instances[iid] = inst
        return inst

    def terminate(self, inst: Instance) -> None:
        """The instance is gone (its Node stays until removed, NotReady: the kubelet stopped)."""
        from tests.fakes.k8s_snap import invariants

        with world.locked(self.dir) as state:
            state["instances"][inst.id]["state"] = "terminated"
            invariants.check(state, f"termination of {inst.id}")

    @property
    def cluster(self) -> dict[str, Any] | None:
        return world.read(self.dir).get("cluster")

    @property
    def world(self) -> dict[str, Any]:
        return world.read(self.dir)

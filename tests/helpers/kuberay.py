"""KubeRay's real ray-operator on the local control plane (tests/integration/test_kuberay_local.py).

The binary is github.com/ray-project/kuberay/ray-operator v1.5.2's main package, built by
tools/build.sh (tools/mod/kuberay); its CRDs are copied beside it. What the process is given, and why:

- no `--batch-scheduler`, as the kuberay-operator add-on renders it (components/addons/
  kuberay_operator.py: KAI's plugin refuses RayJobs at v1.5.2); pod templates name KAI themselves.
- `ENABLE_WEBHOOKS=true` (main.go: the only switch; it registers the RayCluster validator alone) and
  a serving certificate in `$TMPDIR/k8s-webhook-server/serving-certs/tls.{crt,key}`, where
  controller-runtime v0.22.1's webhook server reads it (pkg/webhook/server.go defaults: port 9443,
  that directory); the API server reaches it at 127.0.0.1:9443 through a URL webhook.
- leader election off (one process), metrics and probes on free loopback ports.
"""

from __future__ import annotations

import contextlib
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers import certs
from tests.helpers.controller_env import Process
from tests.helpers.tools import load_tool

BINARY = "ray-operator"
WEBHOOK_PORT = 9443  # controller-runtime v0.22.1 pkg/webhook/server.go DefaultPort; main.go sets no other
WEBHOOK_NAME = "vraycluster.kb.io"
WEBHOOK_PATH = "/validate-ray-io-v1-raycluster"


def crd_dir(bin_dir: Path) -> Path:
    """ray.io CRDs at the pin, as tools/build.sh copies them beside the binaries."""
    return bin_dir.parent / "crds" / "kuberay"


def missing(bin_dir: Path) -> list[str]:
    out = [] if (bin_dir / BINARY).is_file() else [str(bin_dir / BINARY)]
    if len(list(crd_dir(bin_dir).glob("ray.io_*.yaml"))) < 3:
        out.append(f"the three ray.io CRDs under {crd_dir(bin_dir)}")
    return out


def serving_certificate(cert_dir: Path) -> bytes:
    """A CA and a serving certificate for 127.0.0.1 signed by it, written as controller-runtime
    reads them (tls.crt, tls.key); returns the CA's PEM for the webhook's caBundle."""
    return certs.issue(cert_dir, "ray-operator webhook", ips=["127.0.0.1"])


def webhook_configuration(ca_pem: bytes, port: int = WEBHOOK_PORT) -> dict[str, Any]:
    """Upstream's RayCluster entry of config/webhook/manifests.yaml (v1.5.2), alone: main.go registers
    no other validator, and the RayJob / RayService entries there, with `failurePolicy: Fail`, would
    refuse those kinds on a 404. The Service reference becomes the process's loopback URL (the local
    API server has no Service network)."""
    import base64

    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "kuberay-validating-webhook"},
            "webhooks": [{"name": WEBHOOK_NAME, "admissionReviewVersions": ["v1"], "sideEffects": "None",
                          "failurePolicy": "Fail",
                          "clientConfig": {"url": f"https://127.0.0.1:{port}{WEBHOOK_PATH}",
                                           "caBundle": base64.b64encode(ca_pem).decode()},
                          "rules": [{"apiGroups": ["ray.io"], "apiVersions": ["v1"],
                                     "operations": ["CREATE", "UPDATE"], "resources": ["rayclusters"]}]}]}


@dataclass
class RayOperator:
    """One ray-operator process against `kubeconfig`."""

    workdir: Path
    kubeconfig: Path
    bin_dir: Path
    batch_scheduler: str = ""  # the add-on's (none)
    process: Process = field(init=False)
    ca_pem: bytes = field(default=b"", init=False)

    def __post_init__(self) -> None:
        self.process = Process("ray-operator", self.workdir)

    @property
    def log(self) -> Path:
        return self.process.log

    def start(self) -> RayOperator:
        lc = load_tool("localcluster")
        tmp = self.workdir / "tmp"
        self.ca_pem = serving_certificate(tmp / "k8s-webhook-server" / "serving-certs")
        env = {"KUBECONFIG": str(self.kubeconfig), "TMPDIR": str(tmp), "ENABLE_WEBHOOKS": "true"}
        args = [str(self.bin_dir / BINARY), f"--kubeconfig={self.kubeconfig}",
                *([f"--batch-scheduler={self.batch_scheduler}"] if self.batch_scheduler else []),
                "--enable-leader-election=false",
                f"--metrics-addr=127.0.0.1:{lc.free_port()}",
                f"--health-probe-bind-address=127.0.0.1:{lc.free_port()}",
                "--log-stdout-encoder=console"]
        self.process.run(args, env)
        return self

    def wait_serving(self, timeout: float = 60) -> None:
        """Until the webhook port accepts connections (the manager started its webhook server)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.process.check_alive()
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", WEBHOOK_PORT), 1):
                return
            time.sleep(0.5)
        raise AssertionError(f"ray-operator's webhook server not listening on {WEBHOOK_PORT}:\n{self.tail()}")

    def log_of(self, name: str) -> str:
        """The log lines that name an object (console encoder: its name in the JSON fields)."""
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(line for line in text.splitlines() if f'"{name}"' in line)

    def tail(self, lines: int = 40) -> str:
        return self.process.tail(lines)

    def stop(self) -> None:
        self.process.stop()

    def alive(self) -> bool:
        return self.process.alive()

"""What the real-controller scenarios share (Karpenter, KubeRay, KEDA): a cluster handle that reads like
kubectl, waits that say what they saw, and a controller process with its log, stopped politely, then firmly."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def stop_process(proc: subprocess.Popen[bytes], *, kill: bool = False) -> None:
    """SIGTERM (SIGKILL with `kill`), 20 s to exit, then SIGKILL."""
    with contextlib.suppress(ProcessLookupError):
        proc.kill() if kill else proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def wait_established(cluster: Any, *crds: str, timeout: float = 60) -> None:
    """Until each CRD is Established. Not `kubectl wait`: right after the create its status has no
    conditions yet, and kubectl's condition wait fails on that ("<nil> is of the type <nil>")."""

    def established(name: str) -> bool:
        status = cluster.get_json("crd", name).get("status") or {}
        return any(c["type"] == "Established" and c["status"] == "True" for c in status.get("conditions") or [])

    for name in crds:
        cluster.wait_for(f"CRD {name} Established", lambda n=name: established(n), timeout=timeout, interval=0.5)


@dataclass
class Process:
    """One controller process, its output in `<workdir>/<name>.log`."""

    name: str
    workdir: Path
    proc: subprocess.Popen[bytes] | None = field(default=None, init=False)

    @property
    def log(self) -> Path:
        return self.workdir / f"{self.name}.log"

    def run(self, args: list[str], env: dict[str, str]) -> None:
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(args, env={**os.environ, **env}, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True, cwd=self.workdir)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self) -> None:
        if not self.alive():
            raise AssertionError(f"{self.name} exited ({self.proc and self.proc.returncode}):\n{self.tail()}")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:]) if self.log.exists() else ""

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
        self.proc = None


class ClusterEnv:
    """A local cluster (tools/localcluster.py) seen through kubectl; `debug()` is what a timed-out
    wait shows beside the timeout."""

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster

    def kubectl(self, *args: str, check: bool = True, input: str | None = None) -> str:
        out: str = self.cluster.kubectl(*args, check=check, input=input)
        return out

    def items(self, *args: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.cluster.get_json(*args)["items"]
        return found

    def debug(self) -> str:
        return ""

    def devices_of(self, pods: list[dict[str, Any]], namespace: str) -> dict[str, list[tuple[str, str]]]:
        """pod -> the (pool, device) pairs its claims were allocated, read from the claims themselves."""
        claims = {c["metadata"]["name"]: c for c in self.items("resourceclaims", "-n", namespace)}
        out: dict[str, list[tuple[str, str]]] = {}
        for pod in pods:
            names = [s.get("resourceClaimName") for s in pod.get("status", {}).get("resourceClaimStatuses") or []]
            out[pod["metadata"]["name"]] = [
                (r["pool"], r["device"]) for n in names if n in claims
                for r in (claims[n].get("status", {}).get("allocation") or {}).get("devices", {}).get("results", [])]
        return out

    def wait(self, what: str, predicate: Callable[[], Any], timeout: float = 90) -> Any:
        try:
            return self.cluster.wait_for(what, predicate, timeout=timeout, interval=0.5)
        except TimeoutError as e:
            raise AssertionError(f"{e}\n{self.debug()}") from e

"""What the real-controller scenarios share (Karpenter, KubeRay): a cluster handle that reads like
kubectl, waits that say what they saw, and stopping a controller process politely, then firmly."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable
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

    def wait(self, what: str, predicate: Callable[[], Any], timeout: float = 90) -> Any:
        try:
            return self.cluster.wait_for(what, predicate, timeout=timeout, interval=0.5)
        except TimeoutError as e:
            raise AssertionError(f"{e}\n{self.debug()}") from e

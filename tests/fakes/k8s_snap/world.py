"""The simulated world every fake command reads and changes: EC2 instances, Auto Scaling groups,
Secrets Manager, SSM, and the one Canonical Kubernetes cluster with its k8sd database.

One JSON file under a lock (fcntl.flock), because the node scripts run as separate processes,
several at once, exactly as several instances boot at once. Time is the real clock plus an offset
a test may advance (token expiry without waiting).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

STATE = "world.json"
LOCK = "world.lock"


def world_dir() -> Path:
    return Path(os.environ["FAKE_WORLD"])


def now(state: dict[str, Any]) -> float:
    return time.time() + float(state.get("clock_offset", 0))


@contextlib.contextmanager
def locked(directory: Path | None = None) -> Iterator[dict[str, Any]]:
    """The world state, read under an exclusive lock and written back when the block ends, also when
    it ends with an error answer (a refused call may still count, e.g. a spent retry budget)."""
    d = directory or world_dir()
    with open(d / LOCK, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = d / STATE
        state = json.loads(path.read_text()) if path.exists() else {}
        try:
            yield state
        finally:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(state, indent=1, sort_keys=True))
            tmp.replace(path)


def read(directory: Path | None = None) -> dict[str, Any]:
    d = directory or world_dir()
    with open(d / LOCK, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        state: dict[str, Any] = json.loads((d / STATE).read_text())
        return state


def empty() -> dict[str, Any]:
    return {
        "clock_offset": 0.0,
        "account": "123456789012",
        "partition": "aws",
        "instances": {},
        "asgs": {},
        "secrets": {},
        "documents": {},
        "load_balancers": {},  # name -> {"dns", "state"}
        "commands": {},
        "cluster": None,
        "calls": [],
    }


def record(state: dict[str, Any], instance: str, what: str) -> None:
    """The call log tests assert order and counts on (never a secret: callers pass redacted text)."""
    state["calls"].append({"instance": instance, "call": what, "at": now(state)})

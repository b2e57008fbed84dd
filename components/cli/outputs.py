"""Output paths checked before a command starts work (not a subcommand: main.py registers only SUBCOMMANDS).

`smoke --report`, `report utilization --out` and `conformance run --out` write at the end of a run
that creates objects in a cluster or queries it for minutes: a path that cannot be written is
refused up front, as a bad argument (exit 2), instead of failing once the work is done.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def output_problem(path: Path, *, folder: bool) -> str | None:
    """Why `path` (a folder to write in, else a file) cannot be written; None when it can.

    The nearest folder on the way that exists takes a probe folder, removed at once: a permission
    check alone passes for root on a read-only file system, and /proc refuses even root."""
    path = path.absolute()
    if path.exists() and path.is_dir() != folder:
        return f"{path} is {'not ' if folder else ''}a folder"
    existing = path if folder else path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder"
    try:
        probe = tempfile.mkdtemp(prefix=".ck8s-gpu-probe-", dir=existing)
    except OSError as exc:
        return f"{existing}: cannot write there ({exc.strerror or exc})"
    os.rmdir(probe)
    return None

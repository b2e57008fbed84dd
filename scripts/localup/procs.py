"""Processes `make up` leaves running and `make down` finds again: pid files, the processes of a state
dir, the ports they listen on. Linux /proc only (proc(5): /proc/<pid>/stat, cmdline, cgroup, fd;
/proc/net/tcp{,6}). Standard library only."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

PROC = Path("/proc")


def start_time(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (clock ticks after boot): with the pid it names one process, so a
    recycled pid is never taken for ours. None when the process is gone or a zombie."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces and parentheses
    return None if fields[0] == "Z" else int(fields[19])


def write_pidfile(path: Path, pid: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{pid} {start_time(pid) or 0}\n")


def read_pidfile(path: Path) -> tuple[int, int] | None:
    try:
        pid, started = path.read_text().split()
        return int(pid), int(started)
    except (OSError, ValueError):
        return None


def alive(path: Path) -> bool:
    rec = read_pidfile(path)
    return rec is not None and start_time(rec[0]) == rec[1]


class Adopted:
    """A process an earlier `make up` started, stopped through the calls tools/nodetier.py's `_stop`
    makes on a Popen (poll, send_signal, wait, pid): SIGTERM, then SIGKILL of its process group
    (nodetier starts each one in a session of its own)."""

    def __init__(self, pid: int, started: int) -> None:
        self.pid, self._started = pid, started
        self.returncode: int | None = None

    @classmethod
    def of(cls, path: Path) -> Adopted | None:
        rec = read_pidfile(path)
        return cls(*rec) if rec is not None and start_time(rec[0]) == rec[1] else None

    def poll(self) -> int | None:
        if self.returncode is None and start_time(self.pid) != self._started:
            self.returncode = 0  # not our child: its exit status is init's to read
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(0.1)
        return 0


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    return ""


def _cgroup(pid: int) -> str:
    with contextlib.suppress(OSError):
        return (PROC / str(pid) / "cgroup").read_text()
    return ""


def processes(marks: Sequence[str], cgroup_mark: str | None = None) -> dict[int, str]:
    """pid -> command line of every live process (this one aside) whose command line names one of
    `marks` (a state dir, a node's short root) or whose cgroup path holds `cgroup_mark` (the node
    tier's containers: their command lines name nothing of ours)."""
    out = {}
    for d in PROC.iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        pid = int(d.name)
        cmd = _cmdline(pid)
        if not cmd or start_time(pid) is None:
            continue
        if any(m in cmd for m in marks) or (cgroup_mark is not None and cgroup_mark in _cgroup(pid)):
            out[pid] = cmd
    return out


def listening_sockets() -> dict[int, int]:
    """inode -> port of every listening TCP socket (/proc/net/tcp and tcp6: state 0A is LISTEN)."""
    out = {}
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in (PROC / "net" / table).read_text().splitlines()[1:]:
                f = line.split()
                if len(f) > 9 and f[3] == "0A":
                    out[int(f[9])] = int(f[1].rsplit(":", 1)[1], 16)
    return out


def ports_of(pids: Iterable[int]) -> set[int]:
    """The TCP ports these processes listen on (their socket fds matched against listening sockets)."""
    sockets = listening_sockets()
    ports = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in (PROC / str(pid) / "fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:[") and int(target[8:-1]) in sockets:
                        ports.add(sockets[int(target[8:-1])])
    return ports


def listening_ports() -> set[int]:
    return set(listening_sockets().values())

"""Files the CLI writes are whole or absent (issue 14): atomic replace, and Ctrl-C exits 130
promptly, `stamp --offline` included, leaving no worker behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from components import PROJECT_DIR
from components.runtime.atomic import write_text_atomic


def test_an_interrupted_write_leaves_the_old_file_and_no_temp(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text("encryptionsalt: v1:SALT\n")
    path.chmod(0o600)

    def interrupted(_fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_text_atomic(path, "config: {}\n")
    assert path.read_text() == "encryptionsalt: v1:SALT\n"
    assert [p.name for p in tmp_path.iterdir()] == ["Pulumi.x.yaml"]
    monkeypatch.undo()
    write_text_atomic(path, "config: {}\n")
    assert path.read_text() == "config: {}\n" and path.stat().st_mode & 0o777 == 0o600


def test_nothing_in_the_package_writes_a_file_in_place() -> None:
    """Every write goes through components/runtime/atomic.py (a plain write_text truncates first)."""
    offenders = []
    for py in (PROJECT_DIR / "components").rglob("*.py"):
        if py.name == "atomic.py":
            continue
        for n, line in enumerate(py.read_text().splitlines(), 1):
            if re.search(r"\.write_(text|bytes)\(|open\([^)]*['\"][wa]b?['\"]", line):
                offenders.append(f"{py.relative_to(PROJECT_DIR)}:{n}: {line.strip()}")
    assert offenders == []


def _group(pgid: int) -> list[int]:
    """Live processes of a process group (from /proc: no extra dependency)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            pids.append(int(stat.parent.name))
    return pids


def test_ctrl_c_during_stamp_offline_exits_130_and_stops_every_worker(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.aws-prod.yaml").write_text((PROJECT_DIR / "stacks" / "Pulumi.aws-prod.yaml").read_text())
    # Six regions on two workers: before the fix, Ctrl-C here left the pool waiting for ever.
    # Each region names its own zones and no reservation (zone-scoped fields, stamping/derive.py).
    regions = ("us-east-2", "us-west-1", "eu-central-2", "eu-south-1", "eu-west-3", "eu-north-1")
    (tmp_path / "aws-prod.regions.yaml").write_text("regions:\n" + "".join(
        f"  {r}: {{network: {{availabilityZones: [{r}a, {r}b, {r}c]}}, nodePools: [{{name: h100, availabilityZone: "
        f"{r}a, capacityReservation: null, placement: null}}]"
        + (", backup: {region: eu-central-1}" if r.startswith("eu-") else "") + "}\n" for r in regions))
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from components.cli.main import main; sys.exit(main(sys.argv[1:]))",
         "stamp", "--template", "aws-prod", "--regions", ",".join(regions),
         "--offline", "--parallel", "2",
         "--stacks-dir", str(tmp_path)],
        cwd=PROJECT_DIR, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(_group(proc.pid)) < 2 and proc.poll() is None:
        time.sleep(0.05)  # until a planning worker runs beside the parent
    time.sleep(0.5)
    assert proc.poll() is None, "stamp finished before it could be interrupted"
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: the whole process group
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert time.monotonic() - t0 < 30
    assert "interrupted" in err and "Traceback" not in err
    deadline = time.monotonic() + 10
    while _group(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _group(proc.pid) == []  # no worker of the group is left
    for f in tmp_path.glob("Pulumi.aws-prod-*.yaml"):  # any stack file written is whole
        assert isinstance(yaml.safe_load(f.read_text()), dict)


def test_a_killed_planning_worker_fails_the_batch_instead_of_hanging(monkeypatch: pytest.MonkeyPatch) -> None:
    """multiprocessing.Pool waits for ever when a worker dies mid-task; ProcessPoolExecutor raises
    BrokenProcessPool, which stamp reports as a failed batch (components/stamping/offline.py)."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool
    from typing import Any

    from components.stamping import offline

    class DyingPool:
        def __init__(self, *_a: Any, **_k: Any) -> None:
            pass

        def submit(self, *_a: Any) -> Any:  # a dead worker fails every pending future so
            future: Future[Any] = Future()
            future.set_exception(BrokenProcessPool("A process in the process pool was terminated abruptly"))
            return future

        def shutdown(self, *_a: Any, **_k: Any) -> None:
            pass

    monkeypatch.setattr(offline, "ProcessPoolExecutor", DyingPool)
    stamped = [type("S", (), {"stack": f"t-{r}", "region": r, "config": {}})() for r in ("us-east-2", "us-west-1")]
    results = offline.plan_regions(stamped, parallel=2, file_actions={})  # type: ignore[arg-type]
    assert [r.ok for r in results] == [False, False]
    assert all("planning worker died" in r.error and "--parallel 1" in r.error for r in results)

"""The simulated GPU driver's own Go tests (tools/mod/simgpu): CDI spec per claim, the faults,
the GPU table, nvidia-smi's output and exit codes, the driver's feature gates, Fabric Manager
partitions at prepare and the health taint. Run with the pinned module graph, offline
(-mod=readonly), as tools/build.sh builds it; the node tier then runs the binaries for real."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.tools import skip_or_fail

pytestmark = pytest.mark.integration

MODULE = Path(__file__).resolve().parents[2] / "tools" / "mod" / "simgpu"


def test_simgpu_go_tests_pass() -> None:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if go is None:
        skip_or_fail("no Go toolchain: tools/mod/simgpu's tests need one (as tools/build.sh does)")
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly -buildvcs=false", "CGO_ENABLED": "0"}
    proc = subprocess.run([go, "test", "-count=1", "./..."], cwd=MODULE, env=env, capture_output=True, text=True,
                          timeout=900)
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    # Every package with tests ran them (a package without tests says so, and is not ours to hide).
    ran = [line for line in proc.stdout.splitlines() if line.startswith("ok ")]
    assert len(ran) >= 6, proc.stdout  # plugin, claimspec, gputable, smi, fabric, featuregate
    for pkg in ("internal/fabric", "internal/featuregate", "cmd/ck8s-gpu-kubelet-plugin"):
        assert any(line.split()[1].endswith(pkg) for line in ran), (pkg, proc.stdout)

"""Our own Go modules' tests, run with the pinned module graph, offline (-mod=readonly, no proxy),
as tools/build.sh builds them:

- tools/mod/simgpu, the simulated GPU driver: CDI spec per claim, the faults, the GPU table,
  nvidia-smi's output and exit codes, the driver's feature gates, Fabric Manager partitions at
  prepare and the health taint (the node tier then runs the binaries for real);
- tools/mod/ganggate, the gang gate's release decision, table-driven (the real Karpenter then judges
  the binary in tests/integration/test_karpenter_local.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.tools import skip_or_fail

pytestmark = pytest.mark.integration

MODS = Path(__file__).resolve().parents[2] / "tools" / "mod"
# (module, packages that must have run tests, at least this many packages with tests). A package
# without tests says so, and is not ours to hide.
MODULES = [
    ("simgpu", ("internal/fabric", "internal/featuregate", "cmd/ck8s-gpu-kubelet-plugin"), 6),
    ("ganggate", ("internal/gate",), 1),
]


@pytest.mark.parametrize(("module", "packages", "at_least"), MODULES, ids=[m[0] for m in MODULES])
def test_our_go_modules_tests_pass(module: str, packages: tuple[str, ...], at_least: int) -> None:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if go is None:
        skip_or_fail(f"no Go toolchain: tools/mod/{module}'s tests need one (as tools/build.sh does)")
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly -buildvcs=false", "CGO_ENABLED": "0",
           "GOPROXY": "off"}
    proc = subprocess.run([go, "test", "-count=1", "./..."], cwd=MODS / module, env=env, capture_output=True,
                          text=True, timeout=900)
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    ran = [line for line in proc.stdout.splitlines() if line.startswith("ok ")]
    assert len(ran) >= at_least, proc.stdout
    for pkg in packages:
        assert any(line.split()[1].endswith(pkg) for line in ran), (pkg, proc.stdout)

"""The gang gate's own Go tests (tools/mod/ganggate internal/gate: the release decision, table-driven).
Run with the pinned module graph, offline (-mod=readonly), as tools/build.sh builds it; the real
Karpenter then judges the binary in tests/integration/test_karpenter_local.py."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.tools import skip_or_fail

pytestmark = pytest.mark.integration

MODULE = Path(__file__).resolve().parents[2] / "tools" / "mod" / "ganggate"


def test_ganggate_go_tests_pass() -> None:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if go is None:
        skip_or_fail("no Go toolchain: tools/mod/ganggate's tests need one (as tools/build.sh does)")
    env = {**os.environ, "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly -buildvcs=false", "CGO_ENABLED": "0",
           "GOPROXY": "off"}
    proc = subprocess.run([go, "test", "-count=1", "./..."], cwd=MODULE, env=env, capture_output=True, text=True,
                          timeout=600)
    print(proc.stdout)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    ran = [line for line in proc.stdout.splitlines() if line.startswith("ok ")]
    assert any(line.split()[1].endswith("internal/gate") for line in ran), proc.stdout

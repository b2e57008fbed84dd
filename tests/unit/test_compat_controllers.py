"""tools/compat_controllers.py in CI: without upstream trees it says so and exits 0; a tree
without the binaries built from it is a usage error (exit 2), never a silent pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "compat_controllers.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def test_without_source_trees_it_checks_nothing_and_exits_0(tmp_path: Path) -> None:
    out = tmp_path / "compat.md"
    r = run("--out", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ("compat_controllers: no upstream source tree given (--gpu-operator-src/--kai-src): "
                                "nothing checked")
    assert not out.exists()


def test_a_tree_without_its_binaries_is_refused(tmp_path: Path) -> None:
    r = run("--kai-src", str(tmp_path))
    assert r.returncode == 2 and "--kai-src needs --kai-bin-dir" in r.stderr
    assert "Traceback" not in r.stderr

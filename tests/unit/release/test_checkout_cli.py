"""The editable install's console script imports the package as `ck8s_gpu`; the checkout's program
imports it as `components`. `ck8s-gpu plan` must run both as one tree (ADR 0044)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from components import PROJECT_DIR

SCRIPT = Path(sys.executable).parent / "ck8s-gpu"
BAD_STACKS = PROJECT_DIR / "tests" / "data" / "bad_stacks"


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    if not SCRIPT.is_file():
        pytest.fail(f"no console script {SCRIPT}: `make setup` installs the checkout editable")
    return subprocess.run([str(SCRIPT), *argv], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_the_console_script_plans_a_stack_from_anywhere(tmp_path: Path) -> None:
    out = _run("plan", "--stack", "kind", "--quiet", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "ck8s-gpu:index:SmokeTest" in out.stdout and "total" in out.stdout


def test_a_bad_stack_is_caught_across_the_two_names(tmp_path: Path) -> None:
    # The program raises the settings error of the `components` name; the CLI catches its own
    # name's class. One tree makes them one class: exit 2, the message, no traceback.
    out = _run("plan", "--stack", "offline-with-egress", "--stacks-dir", str(BAD_STACKS), cwd=tmp_path)
    assert out.returncode == 2, out.stderr[-3000:]
    assert "settings.network.natGateways" in out.stderr and "Traceback" not in out.stderr


ALIAS = """
import sys
import ck8s_gpu.settings.model as installed
from ck8s_gpu.runtime.checkout_alias import alias_checkout_name
assert "components" not in sys.modules
alias_checkout_name(); alias_checkout_name()
import components.settings.model as checkout
from components.validate import parse
assert checkout is installed and sys.modules["components"] is sys.modules["ck8s_gpu"]
assert parse.__module__ == "ck8s_gpu.validate"
print(sum(1 for f in sys.meta_path if type(f).__name__ == "_Alias"))
"""


def test_the_alias_maps_every_checkout_module_to_the_installed_one(tmp_path: Path) -> None:
    # Run where `components` is not on the path: only the alias can resolve it.
    out = subprocess.run([sys.executable, "-c", ALIAS], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "1"

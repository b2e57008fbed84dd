"""The Go-built tools tier: importing the stdlib scripts under tools/ and the skip-or-fail rule."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

TOOLS_DIR = Path(__file__).resolve().parents[2] / "tools"


def load_tool(name: str) -> ModuleType:
    """tools/<name>.py (stdlib-only scripts, not a package), imported once per process."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, TOOLS_DIR / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def skip_or_fail(reason: str) -> None:
    """Skip with the reason; CI (CK8S_GPU_REQUIRE_TOOLS=1) builds the tools, so there it fails."""
    if os.environ.get("CK8S_GPU_REQUIRE_TOOLS") == "1":
        pytest.fail(f"CK8S_GPU_REQUIRE_TOOLS=1 and {reason}", pytrace=False)
    pytest.skip(reason)


# What a Pulumi program run needs of the checkout; tests run it from a temp copy so the engine
# never writes stack files into stacks/ or rewrites Pulumi.yaml.
PROJECT_PARTS = ("__main__.py", "components", "charts")


def copy_project(dest: Path) -> Path:
    """A runnable copy of the program (no stack files) at `dest`."""
    root = TOOLS_DIR.parent
    dest.mkdir(parents=True)
    for part in PROJECT_PARTS:
        src = root / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / part)
    return dest

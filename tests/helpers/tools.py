"""The Go-built tools tier: importing the stdlib scripts under tools/ and the skip-or-fail rule."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

TOOLS_DIR = Path(__file__).resolve().parents[2] / "tools"
SCRIPTS_DIR = TOOLS_DIR.parent / "scripts"


def load_tool(name: str, folder: Path = TOOLS_DIR) -> ModuleType:
    """tools/<name>.py (stdlib-only scripts, not a package), imported once per process."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def load_script(name: str) -> ModuleType:
    """scripts/<name>.py (not a package), imported once per process."""
    return load_tool(name, SCRIPTS_DIR)


# --- skip or fail: the one rule -------------------------------------------------------------------
# A test that cannot run here (a tool, a binary, a stack file is missing) skips naming what is
# missing. Where skips must not pass (CI=true; CK8S_GPU_REQUIRE_TOOLS=1, which scripts/pytest.sh
# also sets in CI) the hooks in tests/conftest.py turn EVERY skip into a failure, however it was
# raised (pytest.skip, a fixture, a module-level skip, importorskip, an empty parametrize), except
# the skips of ALLOWED_SKIPS. Tests never read those variables themselves.

REQUIRE_TOOLS = "CK8S_GPU_REQUIRE_TOOLS"
KIND_NEEDS = "kind stack test needs: "  # tests/integration/test_kind_stack.py starts its reasons so


def skip_or_fail(reason: str) -> NoReturn:
    """Skip naming what is missing; where skips must not pass (see above) the test fails instead."""
    __tracebackhide__ = True  # the skip is reported at the caller's line
    pytest.skip(reason)


def skips_must_fail() -> str | None:
    """Why a skip is a failure in this run (`CI=true` or `CK8S_GPU_REQUIRE_TOOLS=1`), or None."""
    if os.environ.get("CI") == "true":
        return "CI=true"
    if os.environ.get(REQUIRE_TOOLS) == "1":
        return f"{REQUIRE_TOOLS}=1"
    return None


@dataclass(frozen=True)
class AllowedSkip:
    """A skip that stays a skip in CI: raised in `path` with a reason matching `reason`, because `why`.

    `required_by` names the switch of a job that can run it after all: set to 1 there, the skip fails."""

    path: str  # relative to the repository root
    reason: str  # regular expression, matched at the start of the skip reason
    why: str
    required_by: str | None = None

    def covers(self, path: str, reason: str) -> bool:
        return path == self.path and re.match(self.reason, reason) is not None


ALLOWED_SKIPS = (
    AllowedSkip("tests/integration/test_kind_stack.py", re.escape(KIND_NEEDS),
                "CI's machines can never run Docker; a Docker-capable job sets CK8S_GPU_REQUIRE_KIND=1",
                required_by="CK8S_GPU_REQUIRE_KIND"),
    AllowedSkip("tests/unit/smoke/test_stack_plans.py", r"stack \S+ disables the smoke test$",
                "not a missing tool: a stack without the smoke test has no smoke release to check"),
    AllowedSkip("tests/integration/test_provider_sdks.py", re.escape("C# SDK: "),
                "the C# SDK's generator (the .NET language host, github.com/pulumi/pulumi-dotnet) is refused by "
                "the Go module proxy, and neither a .NET SDK nor nuget.org's `Pulumi` package can be had here; "
                "the skip says what failed. A job with .NET sets CK8S_GPU_REQUIRE_CSHARP=1",
                required_by="CK8S_GPU_REQUIRE_CSHARP"),
    AllowedSkip("tests/node/test_node.py", r"[^:]+: ",  # "<check>: <why it does not apply>"
                "not a missing tool: a check that does not apply to this node (a CPU node has no GPU); "
                "collected only with --hosts"),
)


def skip_failure(path: str, reason: str) -> str | None:
    """The failure a skip in `path` (relative to the repository root) becomes, or None: it stays a skip."""
    for allowed in ALLOWED_SKIPS:
        if allowed.covers(path, reason):
            if allowed.required_by and os.environ.get(allowed.required_by) == "1":
                return f"{allowed.required_by}=1 turns this skip into a failure: {reason}"
            return None
    why = skips_must_fail()
    return None if why is None else f"{why} turns this skip into a failure: {reason}"


# What a Pulumi program run needs of the checkout; tests run it from a temp copy so the engine
# never writes stack files into stacks/ or rewrites Pulumi.yaml.
PROJECT_PARTS = ("__main__.py", "components", "charts")


def cluster_bin_dir() -> Path:
    """The tools cache's bin folder when it holds the local control plane's binaries
    (tools/localcluster.py); else skip, or fail where skips must not pass (CI)."""
    lc = load_tool("localcluster")
    bin_dir: Path = lc.tools_bin_dir()
    if missing := lc.missing_binaries(bin_dir):
        skip_or_fail(f"tools not built: missing {', '.join(missing)} in {bin_dir}; build them with "
                     "`bash tools/build.sh`")
    return bin_dir


def copy_project(dest: Path) -> Path:
    """A runnable copy of the program (no stack files) at `dest`."""
    return copy_parts(dest, PROJECT_PARTS)


def copy_parts(dest: Path, parts: tuple[str, ...]) -> Path:
    """Files and folders of the checkout, copied to `dest` (no __pycache__)."""
    root = TOOLS_DIR.parent
    dest.mkdir(parents=True)
    for part in parts:
        src = root / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dest / part)
    return dest

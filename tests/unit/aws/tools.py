"""External validators (Debian `cloud-init`, `shellcheck`): skip with the reason when absent,
fail instead when CK8S_GPU_REQUIRE_TOOLS=1 (CI installs them through scripts/install-debs.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        msg = f"`{tool}` is not installed (apt-get install -y --no-install-recommends {tool})"
        if os.environ.get("CK8S_GPU_REQUIRE_TOOLS") == "1":
            pytest.fail(f"CK8S_GPU_REQUIRE_TOOLS=1 and {msg}", pytrace=False)
        pytest.skip(msg)
    return path


def cloud_init_schema(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [require("cloud-init"), "schema", "-c", str(path)], capture_output=True, text=True, check=False
    )


def shellcheck(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [require("shellcheck"), "--shell=bash", "--severity=style", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )

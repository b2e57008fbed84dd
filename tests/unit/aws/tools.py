"""External validators (Debian `cloud-init`, `shellcheck`): skip with the reason when absent, fail
instead where skips must not pass (CI installs them through scripts/install-debs.sh; tests/helpers/tools.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.helpers.tools import skip_or_fail


def require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        skip_or_fail(f"`{tool}` is not installed (apt-get install -y --no-install-recommends {tool})")
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

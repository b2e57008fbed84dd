"""The golden kind configs through kind's OWN loader and validator (Go, kind v0.30.0).

The pydantic model in components/kind/schema.py is written from kind's types; this checks the
same files with kind's code, so a field kind renamed or a check we missed cannot slip through.
Needs `go` (and the Go module proxy on a cold cache); skips naming what is missing, or fails where
skips must not pass (CI; tests/helpers/tools.py). The binary is cached outside the checkout, keyed by its sources.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from components.tables import pins
from tests.helpers.tools import skip_or_fail

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "kind_config_check"
GOLDEN = HERE.parents[1] / "golden" / "kind"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ck8s-gpu" / "tools"


@pytest.fixture(scope="module")
def checker() -> Path:
    digest = hashlib.sha256(b"".join((SOURCES / f).read_bytes() for f in ("go.mod", "go.sum", "main.go")))
    binary = CACHE / f"kind-config-check-{digest.hexdigest()[:16]}" / "kind-config-check"
    if not binary.exists():
        go = shutil.which("go")
        if go is None:
            skip_or_fail("`go` is not on PATH and kind's config validator is not cached: cannot build "
                         "tests/unit/kind/kind_config_check")
        binary.parent.mkdir(parents=True, exist_ok=True)
        build = subprocess.run([str(go), "build", "-o", str(binary), "."], cwd=SOURCES, capture_output=True,
                               text=True, timeout=900, env={**os.environ, "GOFLAGS": "-mod=readonly"})
        if build.returncode != 0:
            skip_or_fail(f"building kind's config validator failed (Go module proxy unreachable?): "
                         f"{build.stderr.strip()[-400:]}")
    return binary


def _check(binary: Path, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), str(path)], capture_output=True, text=True, timeout=60)


def test_validator_is_built_from_the_pinned_kind_release() -> None:
    go_mod = (SOURCES / "go.mod").read_text()
    assert re.search(r"^require sigs\.k8s\.io/kind (\S+)$", go_mod, re.M).group(1) == pins.TOOLS["kind"]  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["kind-config.yaml", "kind-config-k8s-1.33.yaml"])
def test_kind_accepts_the_golden_config(checker: Path, name: str) -> None:
    result = _check(checker, GOLDEN / name)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("podSubnet:", "podSubnett:"), "field podSubnett not found"),
        (("role: worker", "role: gpu"), "not a valid node role"),
        (("apiVersion: kind.x-k8s.io/v1alpha4", "apiVersion: kind.x-k8s.io/v1alpha3"), "unknown apiVersion"),
    ],
)
def test_kind_rejects_a_broken_config(checker: Path, tmp_path: Path, edit: tuple[str, str], message: str) -> None:
    text = (GOLDEN / "kind-config.yaml").read_text()
    assert edit[0] in text
    broken = tmp_path / "kind.yaml"
    broken.write_text(text.replace(edit[0], edit[1], 1))
    result = _check(checker, broken)
    assert result.returncode == 1 and message in result.stderr, result.stderr

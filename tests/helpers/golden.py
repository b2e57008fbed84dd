"""Golden files: rendered artifacts are committed so every change shows as a reviewable diff.

`UPDATE_GOLDEN=1 pytest ...` rewrites them; otherwise a mismatch fails with a unified diff.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

GOLDEN_ROOT = Path(__file__).resolve().parent.parent / "golden"


def assert_golden(path: Path, text: str) -> None:
    path = path if path.is_absolute() else GOLDEN_ROOT / path
    if os.environ.get("UPDATE_GOLDEN") == "1":
        if os.environ.get("CI") == "true":  # CI compares; a regenerated golden would pass anything
            raise AssertionError("UPDATE_GOLDEN=1 is refused with CI=true: regenerate golden files locally")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    if not path.exists():
        raise AssertionError(f"golden file {path} is missing; run with UPDATE_GOLDEN=1 and commit it")
    expected = path.read_text()
    if expected != text:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True), text.splitlines(keepends=True), str(path), "rendered"
            )
        )
        raise AssertionError(f"rendered output differs from {path} (UPDATE_GOLDEN=1 to accept):\n{diff}")

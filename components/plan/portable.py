"""Plans must compare equal across checkouts: strip this checkout's absolute path from values."""

from __future__ import annotations

from typing import Any

from ..tables.paths import PROJECT_DIR


def portable(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace(f"{PROJECT_DIR}/", "")
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [portable(v) for v in value]
    return value

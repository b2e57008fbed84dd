"""The running Pulumi program's config (the real engine or the mock engine); components.validate
validates it (load_settings)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from pulumi.runtime.config import CONFIG, get_config_env


def project_config(project: str, structured: frozenset[str]) -> dict[str, Any]:
    """The running program's config keys of `project`; the `structured` ones JSON-decoded (the engine
    hands structured values over as JSON text). Undecodable text stays text: validation says so."""
    raw = {**get_config_env(), **CONFIG.get()}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if not key.startswith(f"{project}:"):
            continue
        if key in structured and isinstance(value, str):
            with contextlib.suppress(json.JSONDecodeError):  # validation reports "must be a mapping"
                value = json.loads(value)
        out[key] = value
    return out

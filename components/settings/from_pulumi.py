"""Read settings from the running Pulumi program's config (the real engine or the mock engine)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pulumi
from pulumi.runtime.config import CONFIG, get_config_env

from components.settings.load import PROJECT, SETTINGS_KEY, SettingsError, settings_from_config
from components.settings.model import Settings


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


def _config() -> dict[str, Any]:
    return project_config(PROJECT, frozenset({SETTINGS_KEY}))


def load_settings() -> Settings:
    """Validated settings, or a clean RunError (message only, no traceback) before any resource."""
    try:
        return settings_from_config(_config(), f"stack {pulumi.get_stack()}")
    except SettingsError as exc:
        raise pulumi.RunError(exc.message) from None

"""The running Pulumi program's config (the real engine or the mock engine); components.validate
validates it (load_settings)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from pulumi.runtime.config import CONFIG, get_config_env, get_config_secret_keys_env
from pulumi.runtime.config import is_config_secret as _sdk_is_secret


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


def is_config_secret(key: str) -> bool:
    """Whether the engine lists `key` as holding a secret (PULUMI_CONFIG_SECRET_KEYS, or what
    set_all_config was given). A structured key is listed whole when any value inside it is
    `secure:` (pulumi/pulumi sdk/go/common/resource/config/value.go hasSecureValue): which leaf was
    secret is not passed to the program."""
    return _sdk_is_secret(key) or key in get_config_secret_keys_env()

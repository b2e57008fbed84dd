"""Render a stamped stack file and decide whether writing it creates, updates or leaves it (pure).

Stamped files are generated: their header says from what. Re-stamping keeps what Pulumi and the
operator added to the file since: the stack's secrets-provider keys (`encryptionsalt` ...; dropping
them makes every secret of the stack unreadable) and secure config values set with
`pulumi config set --secret` (the template's own secrets are never copied: they are encrypted
with the template stack's key).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from ..runtime.atomic import write_text_atomic
from .derive import StampedStack, is_secret

# Stack-file keys owned by Pulumi's secrets provider: kept from the existing file verbatim.
PROVIDER_KEYS = ("secretsprovider", "encryptedkey", "encryptionsalt")
FileAction = Literal["create", "update", "unchanged"]


def header(stamped: StampedStack, overrides_source: str | None) -> str:
    origin = f"stacks/Pulumi.{stamped.template}.yaml"
    if overrides_source:
        origin += f" + {overrides_source} (regions.{stamped.region})"
    lines = [
        f"# Stamped by `ck8s-gpu stamp --template {stamped.template} --regions {stamped.region}` from {origin}.",
        "# Do not edit: change the template or the overrides and stamp again (re-stamping keeps this",
        "# stack's encryption keys and the secrets set on it with `pulumi config set --secret`).",
    ]
    lines += [f"# Secret to set on this stack: pulumi config set --secret {k} -s {stamped.stack}"
              for k in stamped.secrets_to_set]
    return "\n".join(lines) + "\n"


def _existing(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return {}  # an unreadable file is replaced; the action says "update"
    return doc if isinstance(doc, dict) else {}


def render(stamped: StampedStack, existing_text: str | None, overrides_source: str | None = None) -> str:
    old = _existing(existing_text)
    doc: dict[str, Any] = {k: old[k] for k in PROVIDER_KEYS if k in old}
    config = dict(stamped.config)
    old_config = old.get("config") if isinstance(old.get("config"), dict) else {}
    for key, value in (old_config or {}).items():
        if is_secret(value) and key not in config:
            config[key] = value
    doc["config"] = config
    body = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=120)
    return header(stamped, overrides_source) + body


def file_action(existing_text: str | None, new_text: str) -> FileAction:
    if existing_text is None:
        return "create"
    return "unchanged" if existing_text == new_text else "update"


@dataclass(frozen=True)
class StackFile:
    stack: str
    path: Path
    text: str
    action: FileAction


def stack_path(stacks_dir: Path, stack: str) -> Path:
    return stacks_dir / f"Pulumi.{stack}.yaml"


def prepare(stamped: list[StampedStack], stacks_dir: Path, overrides_source: str | None) -> list[StackFile]:
    """What writing each stamped stack file would do (reads the existing files, writes nothing)."""
    out = []
    for s in stamped:
        path = stack_path(stacks_dir, s.stack)
        existing = path.read_text() if path.exists() else None
        text = render(s, existing, overrides_source)
        out.append(StackFile(s.stack, path, text, file_action(existing, text)))
    return out


def write(files: list[StackFile]) -> None:
    for f in files:
        if f.action != "unchanged":
            write_text_atomic(f.path, f.text)

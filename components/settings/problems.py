"""The vocabulary every settings rule speaks (pure; standard library only): a problem is a field
path as the user writes it and a plain reason. Rules of every layer (settings, add-ons, platforms,
the smoke test) import it from here, below all of them."""

from __future__ import annotations

import json
import re

Problem = tuple[str, str]  # (field path as the user writes it, plain reason)

ROOT = "settings"

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_./-]+$")


def path_key(key: object) -> str:
    """One segment of a field path: `.name` for a plain key (camelCase settings, label keys with
    their / and .), else `["..."]` (JSON-quoted) so a key with `:`, spaces or control characters
    cannot make the path ambiguous or split the message."""
    text = str(key)
    return f".{text}" if _PLAIN_KEY.match(text) else "[" + json.dumps(text) + "]"


def field_path(loc: tuple[int | str, ...], root: str = ROOT) -> str:
    """A location (pydantic's, or a walk of raw values) as the user writes it:
    settings.nodePools[0].labels["a b"]; also what `pulumi config set --path` takes. pydantic
    marks an error in a mapping's KEY with a trailing `[key]`: the path is the key's own."""
    if loc and loc[-1] == "[key]":
        loc = loc[:-1]
    return root + "".join(f"[{part}]" if isinstance(part, int) else path_key(part) for part in loc)


def cut(value: str, limit: int = 80) -> str:
    """A bad value echoed in a reason, cut short."""
    return value if len(value) <= limit else value[:limit] + "..."

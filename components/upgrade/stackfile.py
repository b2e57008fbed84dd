"""Changing `kubernetes.track` in a stack file without losing its comments, atomically.

The stack file is the reviewed record of a stack (comments explain choices), so it is edited as
text: exactly one `track:` line inside the settings' `kubernetes:` block, or none (then one is
added under `kubernetes:`). The result is parsed again and must differ only in that value.
Written to a temp file in the same folder, fsynced, then renamed over the old one: an interrupted
write leaves the old file or the new one, never a partial file.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from ..runtime.atomic import write_text_atomic
from ..settings.load import SETTINGS_KEY

_KUBERNETES = re.compile(r"^(?P<indent>[ ]+)kubernetes:[ ]*(#.*)?$")


class StackFileError(ValueError):
    pass


def _settings(text: str) -> dict[str, Any]:
    doc = yaml.safe_load(text) or {}
    return dict(((doc.get("config") or {}).get(SETTINGS_KEY)) or {})


def with_track(text: str, track: str) -> str:
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _KUBERNETES.match(line.rstrip("\n"))), None)
    if start is None:
        raise StackFileError("no `kubernetes:` block in the settings: add `kubernetes: {track: <current>}` first")
    indent = len(_KUBERNETES.match(lines[start].rstrip("\n")).group("indent"))  # type: ignore[union-attr]
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip(" ")) > indent):
        end += 1
    hits = [i for i in range(start + 1, end) if re.match(r"^\s+track:\s*\S", lines[i])]
    if len(hits) > 1:
        raise StackFileError("more than one `track:` under kubernetes:")
    if hits:
        i = hits[0]
        lines[i] = re.sub(r"(track:\s*)([^\s#]+)", lambda m: m.group(1) + track, lines[i], count=1)
    else:
        child = " " * (indent + 2)
        lines.insert(start + 1, f"{child}track: {track}\n")
    out = "".join(lines)
    before, after = _settings(text), _settings(out)
    expected = {**before, "kubernetes": {**(before.get("kubernetes") or {}), "track": track}}
    if after != expected:
        raise StackFileError("could not change the track line alone; edit kubernetes.track by hand")
    return out


write_atomic = write_text_atomic  # kept: callers and tests name it here

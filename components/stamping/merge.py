"""Deep merge of `ck8s-gpu:settings` mappings (template <- per-region override), pure."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


def _named(items: Any) -> bool:
    """A list whose items are all mappings with a string `name` (nodePools, queues)."""
    return (
        isinstance(items, list)
        and bool(items)
        and all(isinstance(i, Mapping) and isinstance(i.get("name"), str) for i in items)
    )


def merge_settings(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` over `base`, neither modified.

    - mappings merge key by key;
    - lists of named mappings (nodePools, queues) merge item by item on `name`; new names are
      appended in override order, so a region can change one pool's instance type without
      repeating the others;
    - `null` removes the key (the model default applies again), e.g. `backup: null`;
    - anything else in `override` replaces `base` (plain lists included).
    """
    out: dict[str, Any] = copy.deepcopy(dict(base))
    for key, value in override.items():
        current = out.get(key)
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(current, Mapping):
            out[key] = merge_settings(current, value)
        elif _named(value) and isinstance(current, list) and _named(current):
            out[key] = _merge_named(current, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _merge_named(base: list[Mapping[str, Any]], override: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    by_name = {str(item["name"]): dict(item) for item in base}
    order = [str(item["name"]) for item in base]
    for item in override:
        name = str(item["name"])
        if name in by_name:
            by_name[name] = merge_settings(by_name[name], item)
        else:
            by_name[name] = copy.deepcopy(dict(item))
            order.append(name)
    return [by_name[name] for name in order]

"""Helm's reading of values, for code that judges values before Helm renders them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def helm_truthy(value: Any) -> bool:
    """Go template truthiness, which is what `{{ if .Values.x }}` in a chart applies.

    Non-empty strings are true, including "false": a switch spelled as a string is never safe.
    """
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    # (a policy's read-only Sequence proxy counts as a list; a string is not one)
    if isinstance(value, str | Mapping) or (isinstance(value, Sequence) and not isinstance(value, bytes)):
        return len(value) > 0
    return True

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


def renders_true(value: Any) -> bool:
    """Whether a value a chart prints into a boolean field with `{{ .Values.x }}` (or `| default
    false`) becomes true there: Kubernetes reads the printed text as YAML 1.1 (sigs.k8s.io/yaml), so
    "false" is false and "yes", "on" or "True" true; a value Helm finds empty prints false."""
    import yaml

    if not helm_truthy(value):
        return False
    rendered = "true" if value is True else str(value)
    return yaml.safe_load(rendered) is True  # PyYAML reads YAML 1.1 booleans too


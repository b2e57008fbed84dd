"""Strict Kubernetes schema validation for rendered objects (kubernetes-validate)."""

from __future__ import annotations

from typing import Any

import kubernetes_validate

VERSIONS = ("1.34.0", "1.35.0", "1.36.0")


def schema_errors(obj: dict[str, Any], version: str) -> str | None:
    """None when `obj` validates strictly for `version`; the error text otherwise.

    Custom resources (no upstream schema) raise SchemaNotFoundError: callers decide whether that
    kind is an allowed exception, so an unknown built-in kind is never silently accepted.
    """
    try:
        kubernetes_validate.validate(obj, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}: {exc.message}"
    return None

"""Strict Kubernetes schema validation for rendered objects: built-in kinds with kubernetes-validate,
custom resources against their CRD's openAPIV3Schema."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import jsonschema
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


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A CRD's structural schema as JSON Schema that refuses unknown fields, as the API server does
    under fieldValidation=Strict (apiextensions-apiserver: a field the schema does not name is
    unknown unless x-kubernetes-preserve-unknown-fields or additionalProperties allows it)."""
    out: dict[str, Any] = {k: v for k, v in schema.items() if not k.startswith("x-kubernetes-")}
    if "properties" in schema:
        out["properties"] = {k: strict_schema(v) for k, v in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    if isinstance(schema.get("additionalProperties"), Mapping):
        out["additionalProperties"] = strict_schema(schema["additionalProperties"])
    if isinstance(schema.get("items"), Mapping):
        out["items"] = strict_schema(schema["items"])
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    return out


def crd_schemas(crds: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> the strict schema of each served version of these CRDs."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for crd in crds:
        if crd.get("kind") != "CustomResourceDefinition":
            continue
        spec = crd["spec"]
        for v in spec.get("versions", []):
            schema = (v.get("schema") or {}).get("openAPIV3Schema")
            if v.get("served") and schema:
                # apiVersion, kind and metadata are the API server's own (ObjectMeta), not the CRD's
                props = {**schema.get("properties", {}), "apiVersion": {"type": "string"},
                         "kind": {"type": "string"}, "metadata": {"type": "object"}}
                out[(f"{spec['group']}/{v['name']}", spec["names"]["kind"])] = strict_schema(
                    {**schema, "properties": props})
    return out


def custom_resource_errors(obj: Mapping[str, Any], schemas: Mapping[tuple[str, str], dict[str, Any]]) -> str | None:
    """None when `obj` validates against its CRD's schema; the error text otherwise (also when no
    CRD here defines its apiVersion and kind)."""
    name = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
    schema = schemas.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
    if schema is None:
        return f"{name}: {obj.get('apiVersion')} {obj.get('kind')} is neither built in nor defined by a CRD here"
    errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(dict(obj)), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        return f"{name}: {'.'.join(str(x) for x in e.absolute_path) or '(root)'}: {e.message}"
    return None

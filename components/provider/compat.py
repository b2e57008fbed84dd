"""Which changes between two package schemas break a consumer of the generated SDKs.

A program that compiled against the old SDK must compile against the new one and mean the same:
so a resource, type, property or enum value that goes away breaks it, as does a property whose
type changes (including `plain`: Go's `string` vs `pulumi.StringInput`), an input that becomes
required, an output that may now be missing, or an import name that moves (the `language`
names: npm package, Go import path, C# namespace, Python package). A new optional input, a new
output, a new type or enum value, a description or the version break nothing. Field meanings are
Pulumi's schema reference (pkg/codegen/schema/pulumi.json of pulumi/pulumi).
"""

from collections.abc import Iterator, Mapping
from typing import Any

# language.<lang>.<field>: what a consumer's import statement names.
IMPORT_NAMES = (("nodejs", "packageName"), ("go", "importBasePath"), ("csharp", "rootNamespace"),
                ("csharp", "namespaces"), ("python", "packageName"))
_REF_PREFIX = "#/types/"


def _shape(prop: Mapping[str, Any]) -> Any:
    """What a property's SDK type is made of (descriptions and defaults aside)."""
    return {"type": prop.get("type"), "$ref": prop.get("$ref"), "plain": bool(prop.get("plain")),
            "items": _shape(prop["items"]) if "items" in prop else None,
            "additionalProperties": _shape(prop["additionalProperties"]) if "additionalProperties" in prop else None}


def _text(shape: Any) -> str:
    if shape is None:
        return "none"
    base = shape["$ref"].removeprefix(_REF_PREFIX) if shape["$ref"] else shape["type"]
    if shape["items"] is not None:
        base = f"array of {_text(shape['items'])}"
    elif shape["additionalProperties"] is not None:
        base = f"map of {_text(shape['additionalProperties'])}"
    return f"plain {base}" if shape["plain"] else str(base)


def _refs(prop: Mapping[str, Any]) -> Iterator[str]:
    if (ref := prop.get("$ref", "")).startswith(_REF_PREFIX):
        yield ref.removeprefix(_REF_PREFIX)
    for key in ("items", "additionalProperties"):
        if key in prop:
            yield from _refs(prop[key])


def _reachable(spec: Mapping[str, Any], side: str) -> set[str]:
    """Type tokens an SDK uses on the input (`inputProperties`) or output (`properties`) side."""
    todo = [t for r in spec.get("resources", {}).values() for p in r.get(side, {}).values() for t in _refs(p)]
    seen: set[str] = set()
    while todo:
        token = todo.pop()
        if token in seen:
            continue
        seen.add(token)
        todo += [t for p in spec.get("types", {}).get(token, {}).get("properties", {}).values() for t in _refs(p)]
    return seen


def _properties(path: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> Iterator[str]:
    for name, prop in sorted(old.items()):
        if name not in new:
            yield f"{path}.{name}: removed"
        elif _shape(prop) != _shape(new[name]):
            yield f"{path}.{name}: type changed from {_text(_shape(prop))} to {_text(_shape(new[name]))}"


def _required(path: str, old: Mapping[str, Any], new: Mapping[str, Any], key: str, *, inputs: bool,
              outputs: bool) -> Iterator[str]:
    before, after = set(old.get(key, ())), set(new.get(key, ()))
    if inputs:
        for name in sorted(after - before):
            yield f"{path}.{name}: newly required"
    if outputs:
        for name in sorted((before - after) & set(new.get("properties", {}))):
            yield f"{path}.{name}: no longer always set"


def _enum(path: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> Iterator[str]:
    if "enum" not in old:
        return
    if "enum" not in new or old.get("type") != new.get("type"):
        yield f"{path}: no longer an enum of {old.get('type')}"
        return
    values = {v["value"] for v in new["enum"]}
    for v in old["enum"]:
        if v["value"] not in values:
            yield f"{path}.enum[{v['value']!r}]: removed"


def breaking_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Every change from `old` to `new` that breaks a consumer, each as `<schema path>: <what>`."""
    out: list[str] = []
    if old.get("name") != new.get("name"):
        out.append(f"name: changed from {old.get('name')!r} to {new.get('name')!r}")
    for lang, key in IMPORT_NAMES:
        before, after = old.get("language", {}).get(lang, {}).get(key), new.get("language", {}).get(lang, {}).get(key)
        if before is not None and before != after:
            out.append(f"language.{lang}.{key}: changed from {before!r} to {after!r}")
    new_resources = new.get("resources", {})
    for token, res in sorted(old.get("resources", {}).items()):
        path = f"resources.{token}"
        if token not in new_resources:
            out.append(f"{path}: removed")
            continue
        now = new_resources[token]
        out += _properties(f"{path}.inputProperties", res.get("inputProperties", {}), now.get("inputProperties", {}))
        out += _properties(f"{path}.properties", res.get("properties", {}), now.get("properties", {}))
        out += _required(f"{path}.inputProperties", res, now, "requiredInputs", inputs=True, outputs=False)
        out += _required(f"{path}.properties", res, now, "required", inputs=False, outputs=True)
    new_types = new.get("types", {})
    as_input, as_output = _reachable(new, "inputProperties"), _reachable(new, "properties")
    for token, typ in sorted(old.get("types", {}).items()):
        path = f"types.{token}"
        if token not in new_types:
            out.append(f"{path}: removed")
            continue
        now = new_types[token]
        out += _enum(path, typ, now)
        out += _properties(f"{path}.properties", typ.get("properties", {}), now.get("properties", {}))
        out += _required(f"{path}.properties", typ, now, "required", inputs=token in as_input,
                         outputs=token in as_output)
    return out

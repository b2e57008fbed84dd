"""`yaml.UnmarshalStrict` (gopkg.in/yaml.v2 v2.4.0) as k8s-snap's CLI uses it on config files.

Unknown fields, duplicate fields and type mismatches are collected, each as
`line N: <problem>`, and reported together under `yaml: unmarshal errors:` like yaml.v2's
TypeError. An empty document parses to nothing. Error texts as observed by running the upstream
types (see tests/fakes/k8s_snap/tracks.py for the refs).
"""

from __future__ import annotations

from typing import Any

import yaml

from tests.fakes.k8s_snap.tracks import TYPE_NAMES

BOOL_WORDS = {"true", "false"}


class StrictYamlError(ValueError):
    pass


def _scalar_ok(kind: str, node: yaml.Node) -> bool:
    if kind == "bool":
        return isinstance(node, yaml.ScalarNode) and node.value in BOOL_WORDS and node.style is None
    if kind == "int":
        return isinstance(node, yaml.ScalarNode) and node.tag.endswith(":int")
    if kind == "str":
        return isinstance(node, yaml.ScalarNode)
    if kind == "list":
        return isinstance(node, yaml.SequenceNode) or (isinstance(node, yaml.ScalarNode) and node.tag.endswith("null"))
    if kind == "map":
        return isinstance(node, yaml.MappingNode) or (isinstance(node, yaml.ScalarNode) and node.tag.endswith("null"))
    raise AssertionError(kind)


def _walk(node: yaml.Node, schema: dict[str, object], type_name: str, pkg: str, errors: list[str]) -> None:
    if not isinstance(node, yaml.MappingNode):
        errors.append(f"line {node.start_mark.line + 1}: cannot unmarshal !!{node.tag.rsplit(':', 1)[-1]} "
                      f"`{str(getattr(node, 'value', ''))[:10]}...` into {type_name}")
        return
    seen: set[str] = set()
    for key_node, value_node in node.value:
        key = key_node.value
        line = key_node.start_mark.line + 1
        if key in seen:
            errors.append(f"line {line}: field {key} already set in type {type_name}")
            continue
        seen.add(key)
        if key not in schema:
            errors.append(f"line {line}: field {key} not found in type {type_name}")
            continue
        kind = schema[key]
        if isinstance(kind, dict):
            _walk(value_node, kind, f"{pkg}.{TYPE_NAMES.get(key, key)}", pkg, errors)
        elif not _scalar_ok(str(kind), value_node):
            shown = getattr(value_node, "value", "")
            errors.append(f"line {value_node.start_mark.line + 1}: cannot unmarshal "
                          f"!!{value_node.tag.rsplit(':', 1)[-1]} `{shown}` into {kind}")


def unmarshal_strict(text: str, schema: dict[str, object], type_name: str, pkg: str) -> dict[str, Any]:
    try:
        node = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise StrictYamlError(f"yaml: {exc}") from None
    if node is None:
        return {}
    errors: list[str] = []
    _walk(node, schema, type_name, pkg, errors)
    if errors:
        raise StrictYamlError("yaml: unmarshal errors:\n  " + "\n  ".join(errors))
    return yaml.safe_load(text) or {}

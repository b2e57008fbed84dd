"""Compare two plans' resources.json: added, removed and changed resources (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def resource_key(urn: str) -> str:
    """`TYPE::NAME` (qualified by parents): the URN without stack and project, so plans of two
    stacks (regions) compare resource by resource."""
    return "::".join(urn.split("::")[2:])


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, v in enumerate(value):
            out.update(_flatten(v, f"{prefix}[{i}]"))
        return out
    return {prefix: value}


@dataclass
class Change:
    key: str
    fields: dict[str, tuple[Any, Any]]  # path -> (old, new)


@dataclass
class PlanDiff:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[Change] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


def _comparable(resource: dict[str, Any]) -> dict[str, Any]:
    return {
        "inputs": resource.get("inputs", {}),
        "dependencies": sorted(resource_key(d) for d in resource.get("dependencies", [])),
        "protect": resource.get("protect", False),
        "retain_on_delete": resource.get("retain_on_delete", False),
    }


def diff_resources(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> PlanDiff:
    before = {resource_key(r["urn"]): r for r in old}
    after = {resource_key(r["urn"]): r for r in new}
    result = PlanDiff(
        added=sorted(set(after) - set(before)),
        removed=sorted(set(before) - set(after)),
    )
    for key in sorted(set(before) & set(after)):
        a, b = _flatten(_comparable(before[key])), _flatten(_comparable(after[key]))
        fields = {p: (a.get(p), b.get(p)) for p in sorted(set(a) | set(b)) if a.get(p) != b.get(p)}
        if fields:
            result.changed.append(Change(key, fields))
    return result


def format_diff(diff: PlanDiff) -> list[str]:
    if diff.empty:
        return ["no changes"]
    lines = [f"+ {k}" for k in diff.added] + [f"- {k}" for k in diff.removed]
    for change in diff.changed:
        lines.append(f"~ {change.key}")
        lines += [f"    {path}: {old!r} -> {new!r}" for path, (old, new) in change.fields.items()]
    lines.append(f"{len(diff.added)} to add, {len(diff.changed)} to change, {len(diff.removed)} to remove")
    return lines

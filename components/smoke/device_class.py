"""What a DeviceClass selects, read from its CEL selectors (pure).

A DeviceClass selects the devices for which every `spec.selectors[].cel.expression` is true
(KEP-4381; k8s.io/api resource/v1 DeviceClassSpec: "All selectors must be satisfied"). The name
says nothing: a class named `gpu.nvidia.com` whose selectors let any driver's devices through
hands claims someone else's devices. This reads only what an expression IMPLIES: the terms of
its top-level `&&` chain, and nothing of an expression with a top-level `||` (either side may
hold). NVIDIA's classes (dra-driver-nvidia-gpu deployments/helm templates, deviceclass-*.yaml)
are `device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_DRIVER = re.compile(r"""^device\.driver\s*==\s*(['"])(?P<v>[^'"]*)\1$|^(['"])(?P<w>[^'"]*)\3\s*==\s*device\.driver$""")
_TYPE = re.compile(r"""^device\.attributes\[(['"])(?P<d>[^'"]+)\1\]\.type\s*==\s*(['"])(?P<t>[^'"]*)\3$""")


def _outside_strings(expr: str) -> Iterator[tuple[int, str, int]]:
    """(index, character, bracket depth) of every character outside string literals."""
    depth, quote, i = 0, "", 0
    while i < len(expr):
        ch = expr[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        else:
            if ch in ")]}":
                depth -= 1
            yield i, ch, depth
            if ch in "([{":
                depth += 1
        i += 1


def _top_level(expr: str, op: str) -> list[str]:
    """Split `expr` on `op` outside parentheses, brackets and string literals."""
    parts, start = [], 0
    for i, _ch, depth in _outside_strings(expr):
        if depth == 0 and i >= start and expr.startswith(op, i):
            parts.append(expr[start:i])
            start = i + len(op)
    parts.append(expr[start:])
    return [p.strip() for p in parts]


def _unwrap(expr: str) -> str:
    """`(a && b)` -> `a && b` when the parentheses enclose the whole expression."""
    expr = expr.strip()
    while expr.startswith("(") and expr.endswith(")") and _balanced(expr[1:-1]):
        expr = expr[1:-1].strip()
    return expr


def _balanced(expr: str) -> bool:
    """No bracket of `expr` closes one it did not open, and every one it opens is closed."""
    depth = 0
    for _i, ch, _depth in _outside_strings(expr):
        depth += (ch in "([{") - (ch in ")]}")
        if depth < 0:
            return False
    return depth == 0


def implied_terms(expr: str) -> list[str]:
    """The terms `expr` implies: its top-level `&&` chain, recursively; [] past a top-level `||`."""
    expr = _unwrap(expr)
    if len(_top_level(expr, "||")) > 1:
        return []
    terms = _top_level(expr, "&&")
    if len(terms) == 1:
        return terms
    return [t for term in terms for t in implied_terms(term)]


@dataclass(frozen=True)
class Selects:
    drivers: frozenset[str]  # drivers every selected device must have; empty: any driver
    types: frozenset[str]  # `type` attribute values implied (any domain); empty: any type


def _expressions(device_class: Any) -> Iterator[str]:
    spec = device_class.get("spec") if isinstance(device_class, dict) else None
    for selector in (spec or {}).get("selectors") or []:
        cel = selector.get("cel") if isinstance(selector, dict) else None
        expression = cel.get("expression") if isinstance(cel, dict) else None
        if isinstance(expression, str):
            yield expression


def selects(device_class: Any) -> Selects:
    drivers: set[str] = set()
    types: set[str] = set()
    for expression in _expressions(device_class):
        for term in implied_terms(expression):
            if m := _DRIVER.match(term):
                drivers.add(m["v"] if m["v"] is not None else m["w"])
            elif m := _TYPE.match(term):
                types.add(m["t"])
    return Selects(frozenset(drivers), frozenset(types))


def problems(device_class: Any, driver: str, want_type: str) -> list[str]:
    """Why this class would hand a claim devices other than `driver`'s `want_type` devices."""
    name = str(((device_class or {}).get("metadata") or {}).get("name", "")) if isinstance(device_class, dict) else ""
    s = selects(device_class)
    out = []
    if not s.drivers:
        out.append(f"DeviceClass {name} selects devices of any driver (no selector implies "
                   f"device.driver == '{driver}')")
    elif s.drivers != {driver}:
        out.append(f"DeviceClass {name} selects driver {', '.join(sorted(s.drivers))}, not {driver}")
    if s.types and s.types != {want_type}:
        out.append(f"DeviceClass {name} selects devices of type {', '.join(sorted(s.types))}, the smoke test "
                   f"wants type {want_type}")
    return out

"""Issue 45, "settings": every number of the settings model is bounded by the type its consumer stores
it in, so a value that would overflow there is refused at its path before anything is registered.
Enumerated over the model itself (a new numeric field without a bound fails here), with the few
numbers bounded elsewhere named and why."""

from __future__ import annotations

import typing
from typing import Any

import annotated_types
import pytest
from pydantic import BaseModel

from components.settings import model
from components.settings.model import DURATION_MAX_HOURS, INT64_MAX, QUANTITY_MAX_GIB, QUANTITY_MAX_MIB, Settings
from components.validate import parse
from tests.unit.helpers import settings_problems

# Bounded by something other than a Field bound, and why.
ELSEWHERE = {
    "controlPlane.count": "a rule: 1 or 3 (settings/rules/cluster.py _control_plane)",
    # KAI's Queue stores these as float64 (scheduling.run.ai/v2 QueueResource); non-finite values are
    # refused (allow_inf_nan=False): every finite float fits.
    **{f"queues[].{r}.{k}": "float64, finite" for r in ("gpu", "cpu", "memory")
       for k in ("quota", "limit", "overQuotaWeight")},
}


def _numbers(m: type[BaseModel], path: str, seen: set[type]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for name, f in m.model_fields.items():
        here = f"{path}.{f.alias or name}" if path else (f.alias or name)
        todo: list[Any] = [f.annotation]
        bounded = any(isinstance(x, (annotated_types.Le, annotated_types.Lt)) for x in f.metadata)
        numeric = False
        while todo:
            a = todo.pop()
            origin = typing.get_origin(a)
            if origin is typing.Annotated:
                inner, *meta = typing.get_args(a)
                bounded = bounded or any(isinstance(x, (annotated_types.Le, annotated_types.Lt))
                                         for m2 in meta for x in getattr(m2, "metadata", [m2]))
                todo.append(inner)
            elif a in (int, float):
                numeric = True
            elif isinstance(a, type) and issubclass(a, BaseModel):
                if a not in seen:
                    out += _numbers(a, here, seen | {a})
            elif origin in (tuple, list):
                for arg in typing.get_args(a):
                    if isinstance(arg, type) and issubclass(arg, BaseModel) and arg not in seen:
                        out += _numbers(arg, f"{here}[]", seen | {arg})
                    elif arg is not Ellipsis:
                        todo.append(arg)
            elif origin is dict:
                todo.append(typing.get_args(a)[1])
            else:
                todo += [x for x in typing.get_args(a) if x is not type(None)]
        if numeric and not bounded:
            out.append((here, f.annotation))
    return out


def test_the_enumeration_finds_numbers() -> None:
    found = {p for p, _ in _numbers(Settings, "", set())}
    assert "controlPlane.count" in found  # a walk that finds nothing would pass the next test vacuously


def test_every_number_has_an_upper_bound_or_a_named_reason() -> None:
    unbounded = {p for p, _ in _numbers(Settings, "", set())}
    assert unbounded <= set(ELSEWHERE), sorted(unbounded - set(ELSEWHERE))


@pytest.mark.parametrize(("path", "raw", "limit"), [
    ("backup.ttlHours", {"backup": {"region": "eu-central-1", "ttlHours": DURATION_MAX_HOURS + 1}}, DURATION_MAX_HOURS),
    ("smokeTest.minMemoryGiB", {"smokeTest": {"minMemoryGiB": QUANTITY_MAX_GIB + 1}}, QUANTITY_MAX_GIB),
    ("smokeTest.mpsPinnedMemoryLimitMiB", {"smokeTest": {"mpsPinnedMemoryLimitMiB": QUANTITY_MAX_MIB + 1}},
     QUANTITY_MAX_MIB),
    ("nodePools[0].gpu.memoryGiB", {"nodePools": [{"name": "x", "instanceType": "x9.large", "gpu": {
        "count": 1, "productName": "X", "memoryGiB": 10**30}}]}, QUANTITY_MAX_GIB),
    ("kubernetes.snap.revisions.amd64", {"kubernetes": {"snap": {"version": "v1.34.4", "revisions": {
        "amd64": INT64_MAX + 1}}}}, INT64_MAX),
])
def test_a_number_past_its_consumers_type_is_refused_at_its_path(path: str, raw: dict[str, Any], limit: int) -> None:
    problems = settings_problems({"platform": "aws", "region": "eu-north-1", **raw})
    assert any(p.startswith(f"settings.{path}") for p in problems), problems


def test_the_bounds_are_the_consumers_types() -> None:
    assert DURATION_MAX_HOURS == 2562047  # Go's time.Duration: 2562047h47m16.854775807s
    assert QUANTITY_MAX_GIB * 2**30 <= INT64_MAX < (QUANTITY_MAX_GIB + 1) * 2**30
    assert model.QUANTITY_MAX_MIB * 2**20 <= INT64_MAX
    s = parse({"platform": "aws", "region": "eu-north-1",
               "backup": {"region": "eu-central-1", "ttlHours": DURATION_MAX_HOURS}})
    assert s.backup is not None and s.backup.ttl_hours == DURATION_MAX_HOURS  # the bound itself is accepted

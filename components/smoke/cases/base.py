"""A smoke case family: what one kind of case adds to a run (docs/smoke-test.md "Adding a case").

A family owns its expectations (which Jobs, how many pods, what to hold them to), its chart values
(merged into charts/gpu-smoke-test's values; `cases` is merged key by key), its settings refusals
and its checks. Adding a case touches its settings (components/settings/model.py), its chart
template (charts/gpu-smoke-test/templates), its module here plus one line in the registry
(components/smoke/cases/__init__.py), and its test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ...settings.model import Settings
from ...settings.problems import Problem
from ..checks.base import Check
from ..expectations import CaseExpectation

NameFn = Callable[[str], str]  # a chart object part -> its name in this run ("<release>-<part>-<runId>")


def _no_cases(_s: Settings, _name: NameFn) -> tuple[CaseExpectation, ...]:
    return ()


def _no_values(_s: Settings) -> dict[str, Any]:
    return {}


def _no_problems(_s: Settings) -> Iterable[Problem]:
    return ()


@dataclass(frozen=True)
class CaseFamily:
    name: str  # the smokeTest key, e.g. mig
    checks: tuple[Check, ...] = ()
    expect: Callable[[Settings, NameFn], tuple[CaseExpectation, ...]] = _no_cases
    values: Callable[[Settings], dict[str, Any]] = _no_values
    problems: Callable[[Settings], Iterable[Problem]] = _no_problems

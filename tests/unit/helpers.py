"""Plain helpers of the pure tier (tests/unit), imported by name; the fixtures are in conftest.py.

Settings problems. A refusal is a SettingsError whose `.problems` is a sorted list of
(field path, reason); `components.validate.validate` returns the same pairs, in rule order, without
raising. Tests read them in one of three shapes, each named here so a test says which it checks:

- `by_path`: {path: reason}, one reason a path; where a path has several, the last wins (what
  `dict(problems)` does). Most tests check one reason at one path, and this is that shape.
- `joined_by_path`: {path: "reason<sep>reason"}, every reason at a path in one string.
- `listed_by_path`: {path: [reason, ...]}, every reason at a path, in order.

`raised_problems(load, ...)` runs a loader that must refuse (the test fails where it accepts) and
returns its pairs. `settings_problems` and `model_problems` are the two entry points most tests
use; they differ in which rules run, so a test picks the one it means.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from components.settings import SettingsError, parse_settings
from components.settings.problems import Problem
from components.validate import parse


def raised_problems(load: Callable[..., object], *args: Any, **kwargs: Any) -> list[Problem]:
    """`load(*args, **kwargs)` must raise SettingsError; its (path, reason) pairs, sorted as the error keeps them."""
    with pytest.raises(SettingsError) as err:
        load(*args, **kwargs)
    return list(err.value.problems)


def by_path(problems: Iterable[Problem]) -> dict[str, str]:
    """{path: reason}; where a path has several reasons, the last one (as `dict(problems)`)."""
    return dict(problems)


def joined_by_path(problems: Iterable[Problem], sep: str) -> dict[str, str]:
    """{path: every reason at that path, in the order given, joined by `sep`}."""
    out: dict[str, str] = {}
    for path, reason in problems:
        out[path] = f"{out[path]}{sep}{reason}" if path in out else reason
    return out


def listed_by_path(problems: Iterable[Problem]) -> dict[str, list[str]]:
    """{path: [every reason at that path, in the order given]}."""
    out: dict[str, list[str]] = {}
    for path, reason in problems:
        out.setdefault(path, []).append(reason)
    return out


def settings_problems(raw: Any) -> dict[str, str]:
    """Why the one gate (components.validate.parse: the settings' rules, the add-on graph, the
    platform, the smoke test's plan, AWS names) refuses these raw camelCase settings, as
    {path: reason} (`by_path`). The test fails where the settings are accepted."""
    return by_path(raised_problems(parse, raw))


def model_problems(raw: Any) -> dict[str, str]:
    """Why components.settings.parse_settings refuses these raw settings, as {path: reason}: the
    model and the settings' own cross-field rules only, none of the layers above them (add-on
    graph, platform, smoke plan) that `settings_problems` adds. Fails the test where accepted."""
    return by_path(raised_problems(parse_settings, raw))


def cpu_seconds(work: Callable[[], object]) -> float:
    """The CPU time this process spends on `work`, for the guards against super-linear scanning.

    Wall-clock time counts whatever else shares the machine: in CI's pure tier a 0.8 s scan of
    1.5 MB once took 14.6 s of wall time beside the other workers and failed a 10 s bound. CPU time
    counts only this process, so the bound still tells linear (about a second) from quadratic
    (hours on these inputs) and nothing else."""
    started = time.process_time()
    work()
    return time.process_time() - started

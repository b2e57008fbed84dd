"""Shared fixtures of the pure tier (tests/unit): fixtures that more than one directory here needs.

Only fixtures live here (pytest hands them to tests by name, in every module under tests/unit);
plain functions, such as the settings-problem shapes, are in tests/unit/helpers.py and are imported
explicitly. A directory's own fixtures stay in its own conftest.py (aws/, platforms/, ...). Nothing
here is autouse: a module opts in, so no test changes behaviour by living under tests/unit.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from components.kube import wait


@pytest.fixture
def backoff_seconds() -> float:
    """The pause `quick_backoff` repeats between attempts. A module whose waits need another pace
    (threads that must get a turn, a real API server) overrides this fixture with its own value."""
    return 0.01


@pytest.fixture
def quick_backoff(monkeypatch: pytest.MonkeyPatch, backoff_seconds: float) -> float:
    """components.kube.wait.backoff_delays repeats `backoff_seconds` instead of 1, 2, 4 ... 15 s,
    so retry loops (readiness gates, waits) against fakes end in milliseconds. Opt in per module
    with `pytestmark = pytest.mark.usefixtures("quick_backoff")`. Returns the pause used."""

    def delays(*_: object, **__: object) -> Iterator[float]:
        return itertools.repeat(backoff_seconds)

    monkeypatch.setattr(wait, "backoff_delays", delays)
    return backoff_seconds

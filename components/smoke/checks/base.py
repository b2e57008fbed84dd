"""A named check on one hop: what the registry (components/smoke/cases) orders and the report shows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..view import CheckResult, View


@dataclass(frozen=True)
class Check:
    name: str  # the report's check name, e.g. case-mig
    hop: str  # the hop it judges, e.g. MIG
    run: Callable[[View], CheckResult]

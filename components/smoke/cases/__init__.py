"""The smoke case registry: every case family, in the order its Jobs run and its checks report.

Add a family here (one line) after writing its module (components/smoke/cases/base.py says what a
family holds). The path's own checks run before every family's (components/smoke/checks/path.py
BEFORE_CASES) and the DCGM check after them (AFTER_CASES).
"""

from __future__ import annotations

from collections.abc import Iterator

from ...settings.model import Settings
from ...settings.problems import Problem
from ..checks.base import Check
from ..checks.path import AFTER_CASES, BEFORE_CASES
from ..expectations import CaseExpectation, InferenceExpectation, object_name
from . import (
    all_reduce,
    compute_domain,
    first_available,
    gang,
    gpu_health,
    inference,
    mig,
    nvlink_group,
    shared,
    sharing,
    whole_gpu,
)
from .base import CaseFamily

FAMILIES: tuple[CaseFamily, ...] = (
    whole_gpu.FAMILY,
    shared.SHARED,
    shared.NAMED,
    gang.FAMILY,
    mig.FAMILY,
    sharing.FAMILY,
    all_reduce.FAMILY,
    compute_domain.FAMILY, first_available.FAMILY,
    nvlink_group.FAMILY, gpu_health.FAMILY,
    inference.FAMILY,
)

CHECKS: tuple[Check, ...] = BEFORE_CASES + tuple(c for f in FAMILIES for c in f.checks) + AFTER_CASES


def case_expectations(settings: Settings, *, release: str, run_id: str) -> tuple[CaseExpectation, ...]:
    """Every case this run makes, family by family."""

    def name(part: str) -> str:
        return object_name(release, part, run_id)

    return tuple(c for f in FAMILIES for c in f.expect(settings, name))


def inference_expectation(settings: Settings, *, release: str, run_id: str) -> InferenceExpectation | None:
    """Case `inference`'s objects and drive (not a Job case: the runner runs it after them)."""
    return inference.expectation(settings, lambda part: object_name(release, part, run_id), run_id)


def case_problems(settings: Settings) -> Iterator[Problem]:
    """The families' settings refusals (components/validate.py runs them after the settings' own)."""
    if not settings.smoke_test.enabled:
        return
    for family in FAMILIES:
        yield from family.problems(settings)

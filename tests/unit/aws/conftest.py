"""Shared helpers for the AWS platform tests: settings variants and cached mock-engine runs."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from components.addons.selected import addon_facts
from components.plan.artifacts import user_data
from components.plan.mockengine import PlanRun, Recorded, run_program
from components.settings.load import read_stack_file
from components.settings.model import Settings
from components.validate import parse as parse_settings

ROOT = Path(__file__).resolve().parents[3]
AWS_STACKS = ("aws-dev", "aws-prod")


def stack_raw(stack: str) -> dict[str, Any]:
    """The raw `ck8s-gpu:settings` mapping of a committed stack file (a deep copy to modify)."""
    return copy.deepcopy(read_stack_file(ROOT / "stacks" / f"Pulumi.{stack}.yaml")["ck8s-gpu:settings"])


def settings_for(stack: str, change: Callable[[dict[str, Any]], None] | None = None) -> Settings:
    """A committed stack changed by `change`; a variant on another track names that track's image line
    (cluster_sim.on_track_images), as a real move would (settings refuse the old one)."""
    from tests.unit.aws.cluster_sim import on_track_images

    raw = stack_raw(stack)
    before = str((raw.get("kubernetes") or {}).get("track", ""))
    if change is not None:
        change(raw)
    after = str((raw.get("kubernetes") or {}).get("track", before))
    if after != before:
        on_track_images(raw, before, after)
    return parse_settings(raw, f"{stack} (test variant)")


def run_cluster(settings: Settings, stack: str = "test") -> PlanRun:
    """AwsCluster alone under the mock engine (what __main__ will wire for platform aws)."""
    from components.aws import AwsCluster

    def program() -> None:
        AwsCluster(settings.cluster_name, settings, addon_facts(settings))

    return run_program(program, {}, stack=stack, region=settings.region or "")


_RUNS: dict[str, PlanRun] = {}


@pytest.fixture(scope="session")
def stack_run() -> Callable[[str], PlanRun]:
    """Mock-engine run of a committed AWS stack, cached for the session (runs are deterministic)."""

    def get(stack: str) -> PlanRun:
        if stack not in _RUNS:
            _RUNS[stack] = run_cluster(settings_for(stack), stack)
        return _RUNS[stack]

    return get


def of_type(run: PlanRun, typ: str) -> list[Recorded]:
    return [r for r in run.resources if r.type == typ]


def user_data_by_name(run: PlanRun) -> dict[str, str]:
    out = {}
    for r in run.resources:
        if r.type in ("aws:ec2/launchTemplate:LaunchTemplate", "aws:ec2/instance:Instance"):
            text = user_data(r)
            assert text is not None, f"{r.name}: user-data missing or secret"
            out[r.name] = text
    return out

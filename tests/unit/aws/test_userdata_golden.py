"""Golden user-data of every node role of the committed AWS stacks, rendered by the real AwsCluster
under the mock engine (fake ARNs, DNS names and PEMs are deterministic). A rendering change fails
here until `UPDATE_GOLDEN=1` rewrites tests/golden/user-data/<stack>/ and the diff is reviewed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from components.aws import userdata as ud
from components.plan.mockengine import PlanRun
from tests.helpers.golden import GOLDEN_ROOT, assert_golden
from tests.unit.aws.conftest import AWS_STACKS, settings_for, user_data_by_name


def golden_names(stack: str, run: PlanRun) -> dict[str, str]:
    """{golden file name: user-data}: resource names without the cluster prefix (`cp-0`, `pool-l4`)."""
    prefix = f"{settings_for(stack).cluster_name}-"
    out = {}
    for name, text in user_data_by_name(run).items():
        short = name.removeprefix(prefix).removesuffix("-lt")
        out[f"{short}.yaml"] = ud.readable(text)  # the gzipped node script shown as text
    return out


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_user_data_matches_golden(stack: str, stack_run: Callable[[str], PlanRun]) -> None:
    rendered = golden_names(stack, stack_run(stack))
    for name, text in sorted(rendered.items()):
        assert_golden(Path("user-data") / stack / name, text)
    # No stale golden file for a role that no longer exists.
    on_disk = {p.name for p in (GOLDEN_ROOT / "user-data" / stack).glob("*.yaml")}
    assert on_disk == set(rendered)


def test_every_role_has_a_golden_file() -> None:
    dev = {p.name for p in (GOLDEN_ROOT / "user-data" / "aws-dev").glob("*.yaml")}
    prod = {p.name for p in (GOLDEN_ROOT / "user-data" / "aws-prod").glob("*.yaml")}
    assert dev == {"cp-0.yaml", "pool-l4.yaml"}
    assert prod == {"cp-0.yaml", "cp-1.yaml", "cp-2.yaml", "pool-l40s.yaml", "pool-h100.yaml"}

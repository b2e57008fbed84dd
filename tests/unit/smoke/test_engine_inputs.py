"""The run spec as the real Pulumi engine hands it to the SmokeRun dynamic provider: null
properties dropped, every number a float. The mock engine passes it through untouched, so only
this (and tests/integration/test_local_engine.py) sees that shape."""

from __future__ import annotations

from typing import Any

import pytest

from components.smoke.run import RunSpec
from tests.unit.smoke import settings_fixtures as sf


def as_engine_delivers(value: Any) -> Any:
    """What crosses the engine: nulls skipped (map entries), ints as float64, tuples as lists."""
    if isinstance(value, dict):
        return {k: as_engine_delivers(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [as_engine_delivers(v) for v in value]
    if isinstance(value, bool) or not isinstance(value, int):
        return value
    return float(value)


@pytest.mark.parametrize("raw", [sf.LOCAL, sf.AWS, sf.AWS_ALL_CASES], ids=["local", "aws", "aws-all-cases"])
def test_run_spec_survives_the_engine(raw: dict[str, Any]) -> None:
    spec = sf.plan(raw).spec()
    delivered = as_engine_delivers(spec)
    assert delivered != spec  # the shape really differs (dcgm null dropped, counts as floats)
    got = RunSpec.from_dict(delivered)
    assert got == RunSpec.from_dict(spec)
    for pool in got.expectations.pools or ():
        assert type(pool.nodes) is int and type(pool.gpus_per_node) is int
    assert all(type(c.pods) is int for c in got.expectations.cases)
    assert got.expectations.dcgm is None


def test_unknown_pools_stay_unknown_after_the_engine() -> None:
    """`pools: None` (the CLI without a stack file) is dropped by the engine, not turned into []."""
    spec = sf.plan(sf.LOCAL).spec()
    spec["expectations"]["pools"] = None
    assert RunSpec.from_dict(as_engine_delivers(spec)).expectations.pools is None

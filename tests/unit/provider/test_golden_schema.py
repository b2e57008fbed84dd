"""The schema is committed (tests/golden/provider/schema.json): every change shows as a diff, and a
change that would break the SDKs' consumers fails naming what breaks (components/provider/compat.py).

The compatibility check runs first: with UPDATE_GOLDEN=1 it still names the breaking paths
against the committed golden before the golden test rewrites it."""

from __future__ import annotations

import json

from components.provider.compat import breaking_changes
from components.provider.schema import schema
from tests.helpers.golden import GOLDEN_ROOT, assert_golden

GOLDEN = GOLDEN_ROOT / "provider" / "schema.json"


def render() -> str:
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"


def test_no_change_breaks_the_consumers_of_the_committed_schema() -> None:
    assert GOLDEN.is_file(), f"golden file {GOLDEN} is missing; run with UPDATE_GOLDEN=1 and commit it"
    breaking = breaking_changes(json.loads(GOLDEN.read_text()), schema())
    assert not breaking, ("these schema changes break programs built on the generated SDKs; if meant, "
                          "bump the major version, say so in CHANGELOG.md and accept with UPDATE_GOLDEN=1:\n"
                          + "\n".join(breaking))


def test_the_schema_matches_the_golden() -> None:
    assert_golden(GOLDEN, render())

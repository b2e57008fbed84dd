"""Every committed stack keeps its names: logical (URN) and physical, as recorded before long
environment names got a hashed form (docs/adr/0042). A renamed logical name is a new resource to
Pulumi (replace, or a lost one), a changed physical name is a replacement: either must show here.

The snapshot (name_snapshot.json) was generated from the code BEFORE that change. A resource a later
change adds is not a rename, so new URNs pass; a snapshot URN that is gone, or whose names differ,
fails. `UPDATE_GOLDEN=1` rewrites it (locally only): do that only for a rename you mean, with aliases.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from components.aws.naming import NAME_RULES, physical_name
from components.plan import run as plan_run
from components.plan.artifacts import user_data
from components.plan.mockengine import Recorded
from components.settings.load import read_stack_file
from components.stamping.derive import derive_all
from components.stamping.overrides import load_overrides

SNAPSHOT = Path(__file__).with_name("name_snapshot.json")
STACKS_DIR = plan_run.PROJECT_DIR / "stacks"
# What a node is told about names (components/aws/userdata.py): it finds its cluster's AWS objects by them.
BOOT_NAMES = ("CK8S_CLUSTER", "CK8S_API_LB_NAME", "CK8S_MINT_DOCUMENT")
TEST_DATA = Path(__file__).resolve().parents[2] / "data" / "stamping"
# A region that is the template's backup region needs another (docs/runbooks/dr-rebuild.md).
REBUILD_BACKUP_REGION = {("aws-prod", "us-west-2"): "us-east-2"}


@cache
def _committed() -> dict[str, tuple[str, dict[str, Any], str]]:
    """key -> (stack, config, source): every stacks/Pulumi.*.yaml; every region of stacks/*.regions.yaml
    stamped and rebuilt (restore) as docs/runbooks/dr-rebuild.md does; the stamping tests' templates."""
    out: dict[str, tuple[str, dict[str, Any], str]] = {}
    for path in sorted(STACKS_DIR.glob("Pulumi.*.yaml")):
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        out[stack] = (stack, read_stack_file(path), str(path))
    test_templates = {"aws-prod": out["aws-prod"][1], "gpu-prod": read_stack_file(TEST_DATA / "Pulumi.gpu-prod.yaml")}
    for path in sorted(TEST_DATA.glob("*.regions.yaml")):
        template = path.name.removesuffix(".regions.yaml")
        overrides = load_overrides(path)
        for s in derive_all(template, test_templates[template], sorted(overrides), overrides):
            out[f"{s.stack} (tests/data/stamping)"] = (s.stack, s.config, f"{path} ({s.stack})")
    for path in sorted(STACKS_DIR.glob("*.regions.yaml")):
        template = path.name.removesuffix(".regions.yaml")
        overrides = load_overrides(path)
        for restore in (False, True):
            for region in sorted(overrides):
                [s] = derive_all(template, out[template][1], [region], overrides, restore=restore,
                                 backup_region=REBUILD_BACKUP_REGION.get((template, region)))
                out[f"{s.stack}{' (rebuild)' if restore else ''}"] = (s.stack, s.config, f"{path} ({s.stack})")
    return out


def _physical(r: Recorded) -> str | None:
    rule = NAME_RULES.get(r.type)
    if rule is not None:
        explicit = r.inputs.get(rule.prop)
        return physical_name(r.type, r.name, explicit if isinstance(explicit, str) else None)
    metadata = r.inputs.get("metadata")
    for value in (r.inputs.get("name"), metadata.get("name") if isinstance(metadata, dict) else None):
        if isinstance(value, str):
            return value
    return None


def _entry(r: Recorded) -> dict[str, Any]:
    entry: dict[str, Any] = {"physical": _physical(r)}
    tags = r.inputs.get("tags")
    if isinstance(tags, dict):
        entry["tags"] = {k: v for k, v in tags.items() if k in ("Name", "ck8s-gpu/cluster") and isinstance(v, str)}
    text = user_data(r)
    if text:
        entry["boot"] = sorted(line.strip() for line in text.splitlines()
                               if line.strip().split("=", 1)[0].removeprefix("export ") in BOOT_NAMES)
    return {k: v for k, v in entry.items() if v}


@cache
def names(key: str) -> dict[str, Any]:
    stack, config, source = _committed()[key]
    plan = plan_run.plan_config(config, stack, source)
    return {
        "clusterName": plan.outputs.get("clusterName"),
        "resources": {r.urn: _entry(r) for r in sorted(plan.resources, key=lambda r: r.urn)},
    }


def _snapshot() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SNAPSHOT.read_text())
    return data


def test_the_snapshot_covers_every_committed_stack() -> None:
    if os.environ.get("UPDATE_GOLDEN") == "1":
        assert os.environ.get("CI") != "true", "UPDATE_GOLDEN=1 is refused with CI=true"
        SNAPSHOT.write_text(json.dumps({k: names(k) for k in sorted(_committed())}, indent=1, sort_keys=True) + "\n")
    assert sorted(_snapshot()) == sorted(_committed())


def differences(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What a stack lost against the snapshot: a URN gone (renamed or dropped) or names changed."""
    out = [f"clusterName {before['clusterName']} -> {now['clusterName']}"] if now["clusterName"] != before[
        "clusterName"] else []
    for urn, was in before["resources"].items():
        if urn not in now["resources"]:
            out.append(f"gone (renamed or dropped: add aliases): {urn}")
        elif now["resources"][urn] != was:
            out.append(f"names changed: {urn}: {was} -> {now['resources'][urn]}")
    return out


@pytest.mark.parametrize("stack", sorted(_snapshot()))
def test_committed_stack_keeps_every_logical_and_physical_name(stack: str) -> None:
    found = differences(_snapshot()[stack], names(stack))
    assert found == [], f"{stack}: {len(found)} differences:\n" + "\n".join(found[:10])


def test_a_rename_or_a_new_physical_name_is_a_difference() -> None:
    before = _snapshot()["aws-dev"]
    lb = next(u for u in before["resources"] if u.endswith("::ck8s-dev-us-east-1-api-nlb"))
    renamed = {**before, "resources": {(u + "-x" if u == lb else u): e for u, e in before["resources"].items()}}
    assert differences(before, renamed) == [f"gone (renamed or dropped: add aliases): {lb}"]
    moved = {**before, "resources": {**before["resources"], lb: {**before["resources"][lb], "physical": "other"}}}
    assert differences(before, moved) == [f"names changed: {lb}: {before['resources'][lb]} -> {moved['resources'][lb]}"]
    added = {**before, "resources": {**before["resources"], "urn:new": {}}}
    assert differences(before, added) == []  # a new resource is not a rename

"""Golden files of the values every committed stack gives each third-party Helm chart.

For each stack in stacks/, the offline plan (the real __main__.py under the mock engine, as
`ck8s-gpu plan`) records every Helm Release; for those whose chart is not one of this repository's
(charts/), tests/golden/addon-values/<stack>.yaml holds chart, version, repository, namespace and
the values, secrets masked. A change to what an upstream chart receives, in any stack, shows as a
reviewable diff: `UPDATE_GOLDEN=1 pytest tests/unit/addons/test_values_golden.py` (refused in CI).
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.plan.artifacts import RELEASE, local_chart
from components.plan.mockengine import MASK, Recorded
from components.plan.portable import portable
from components.plan.run import PLACEHOLDER_KUBECONFIG, SECRET_PLACEHOLDER, Plan, plan_stack
from tests.helpers.golden import GOLDEN_ROOT, assert_golden

ROOT = Path(__file__).resolve().parents[3]
STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
GOLDEN_DIR = Path("addon-values")
# Stacks that install no third-party chart (the local tier runs only the smoke test's own chart).
NO_THIRD_PARTY = {"local", "local-kubelet"}
# Charts whose whole `values` the engine marks secret because one part is a secret Output merged in:
# velero gets its AWS credentials from BackupTarget. The golden shows the rest and masks these paths;
# a chart not listed here whose values are secret shows as [secret] as a whole.
SECRET_SUBTREES = {"velero": ("credentials.secretContents",)}


@cache
def _plan(stack: str) -> Plan:
    return plan_stack(stack)


def third_party(plan: Plan) -> dict[str, Recorded]:
    return {r.name: r for r in plan.resources if r.type == RELEASE and local_chart(r) is None}


def _mask(values: dict[str, Any], dotted: str) -> None:
    *parents, leaf = dotted.split(".")
    node = values
    for key in parents:
        node = node[key]  # a KeyError: the secret moved, SECRET_SUBTREES must follow it
    assert leaf in node, f"{dotted} is not in the values: SECRET_SUBTREES must follow where the secret went"
    node[leaf] = MASK


def shown_values(r: Recorded) -> Any:
    """What the golden shows: the engine's masked values, or for SECRET_SUBTREES the values minus those paths."""
    chart = str(r.inputs["chart"])
    if r.inputs.get("values") != MASK or chart not in SECRET_SUBTREES:
        return portable(r.inputs.get("values") or {})
    values = copy.deepcopy(r.raw_inputs["values"])
    for dotted in SECRET_SUBTREES[chart]:
        _mask(values, dotted)
    return portable(values)


def document(stack: str, plan: Plan) -> str:
    releases = {}
    for name, r in sorted(third_party(plan).items()):
        repo = r.inputs.get("repositoryOpts")
        releases[name] = {
            "chart": r.inputs["chart"],
            "version": r.inputs.get("version"),
            "repository": repo.get("repo") if isinstance(repo, dict) else None,
            "namespace": r.inputs.get("namespace"),
            "values": shown_values(r),
        }
    head = (f"# Third-party Helm releases of stack {stack}: the values each gets in the offline plan, secrets\n"
            "# masked. Written by tests/unit/addons/test_values_golden.py (UPDATE_GOLDEN=1); review the diff.\n")
    return head + yaml.safe_dump({"releases": releases}, sort_keys=True, allow_unicode=True, width=120)


@pytest.mark.parametrize("stack", STACKS)
def test_third_party_values_match_golden(stack: str) -> None:
    plan = _plan(stack)
    releases = third_party(plan)
    assert bool(releases) == (stack not in NO_THIRD_PARTY), sorted(releases)
    text = document(stack, plan)
    # Secrets masked: the values are the engine's masked inputs (every secret Output is [secret]), except
    # SECRET_SUBTREES (test below); nothing the offline plan stands in for a secret reaches a chart.
    assert SECRET_PLACEHOLDER not in text and PLACEHOLDER_KUBECONFIG not in text, stack
    assert "offline-plan.invalid" not in text, stack
    assert_golden(GOLDEN_DIR / f"{stack}.yaml", text)


def _at(doc: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        doc = doc[key]
    return doc


def test_masked_subtrees_hide_the_secret_and_keep_the_rest() -> None:
    [velero] = [r for r in third_party(_plan("aws-prod")).values() if r.inputs["chart"] == "velero"]
    assert velero.inputs["values"] == MASK  # the engine's view: all of it
    shown = shown_values(velero)
    secret = _at(velero.raw_inputs["values"], "credentials.secretContents")
    assert secret and _at(shown, "credentials.secretContents") == MASK
    assert str(secret) not in yaml.safe_dump(shown) and "aws_access_key_id" not in yaml.safe_dump(shown)
    assert shown["configuration"]["backupStorageLocation"], shown  # the rest stays reviewable


def test_one_golden_per_committed_stack() -> None:
    on_disk = sorted(p.stem for p in (GOLDEN_ROOT / GOLDEN_DIR).glob("*.yaml"))
    assert on_disk == STACKS, "a golden of a removed stack, or a stack without one (UPDATE_GOLDEN=1)"


def test_ci_refuses_to_regenerate_a_golden(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """In CI a regenerated golden would pass anything: UPDATE_GOLDEN=1 fails there and writes nothing."""
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    monkeypatch.setenv("CI", "true")
    target = tmp_path / "addon-values" / "aws-dev.yaml"
    with pytest.raises(AssertionError, match="refused with CI=true"):
        assert_golden(target, "releases: {}\n")
    assert not target.exists()

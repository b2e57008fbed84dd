"""The GitHub Actions workflows a user copies (.github/workflows/): pinned, least privilege, and in
step with the project's own pins and stacks. actionlint checks them as GitHub reads them
(tests/integration/test_actionlint.py); this checks what actionlint does not know.

GitHub's rules: "Security hardening for GitHub Actions" (pin an action to a full-length commit
SHA), "Controlling permissions for GITHUB_TOKEN" (`permissions:`; a job's block replaces the
workflow's), "Control the concurrency of workflows and jobs".
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.settings.load import read_stack_file
from components.tables import pins

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
PINNED = re.compile(r"^\s*(?:- )?uses: (?P<action>[\w.-]+/[\w./-]+)@(?P<sha>\S+)(?: # (?P<tag>\S+))?\s*$")
# The only grant beyond `contents: read`, and the job that may have it.
EXTRA_GRANTS = {("pull-request.yml", "preview"): {"id-token": "write"}}


def load(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    assert isinstance(doc, dict), path
    if True in doc:  # YAML 1.1 reads the key `on` as a boolean
        doc["on"] = doc.pop(True)
    return doc


def steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for job in doc["jobs"].values() for s in job.get("steps", [])]


def uses(doc: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in steps(doc) if str(s.get("uses", "")).startswith(f"{action}@")]


def test_the_two_workflows_a_user_copies_are_there() -> None:
    assert {"pull-request.yml", "kind-stack.yml"} <= {p.name for p in WORKFLOWS}
    assert load(ROOT / ".github/workflows/pull-request.yml")["on"] == {"pull_request": None}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_to_a_commit_named_by_its_release(path: Path) -> None:
    lines = [line for line in path.read_text().splitlines() if re.match(r"^\s*(- )?uses:", line)]
    assert lines, path
    for line in lines:
        m = PINNED.match(line)
        assert m and re.fullmatch(r"[0-9a-f]{40}", m["sha"]), f"not pinned to a commit SHA: {line.strip()}"
        assert m["tag"] and re.fullmatch(r"v\d+\.\d+\.\d+", m["tag"]), f"no `# vX.Y.Z` release comment: {line.strip()}"


def test_one_action_one_commit_across_workflows() -> None:
    seen: dict[str, set[tuple[str, str]]] = {}
    for path in WORKFLOWS:
        for m in filter(None, map(PINNED.match, path.read_text().splitlines())):
            seen.setdefault(m["action"], set()).add((m["sha"], m["tag"]))
    assert seen and all(len(v) == 1 for v in seen.values()), seen


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_least_privilege_and_one_run_at_a_time(path: Path) -> None:
    doc = load(path)
    assert doc["permissions"] == {"contents": "read"}, "the workflow's token reads the repository, nothing else"
    for name, job in doc["jobs"].items():
        extra = EXTRA_GRANTS.get((path.name, name))
        if extra is None:
            assert "permissions" not in job, f"job {name} widens the token"
        else:
            assert job["permissions"] == {"contents": "read", **extra}, name
        assert job.get("timeout-minutes"), f"job {name} has no timeout"
    assert "${{ github.workflow }}" in doc["concurrency"]["group"] and "cancel-in-progress" in doc["concurrency"]
    for step in steps(doc):
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False, "the token must not stay in .git/config"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_the_tool_versions_are_the_projects_pins(path: Path) -> None:
    doc = load(path)
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    for step in uses(doc, "actions/setup-python"):
        assert f">={step['with']['python-version']}" == requires, step
    for step in uses(doc, "pulumi/actions"):
        assert step["with"]["pulumi-version"] == pins.TOOLS["pulumi"].removeprefix("v"), step
    for step in uses(doc, "helm/kind-action"):
        assert step["with"]["version"] == pins.TOOLS["kind"], step


def test_the_preview_matrix_names_committed_stacks_and_their_regions() -> None:
    doc = load(ROOT / ".github/workflows/pull-request.yml")
    matrix = doc["jobs"]["preview"]["strategy"]["matrix"]["include"]
    assert matrix
    for entry in matrix:
        settings = read_stack_file(ROOT / "stacks" / f"Pulumi.{entry['stack']}.yaml")["ck8s-gpu:settings"]
        want = settings.get("region", "") if settings["platform"] == "aws" else ""
        assert entry["region"] == want, f"{entry['stack']}: the AWS credentials' region must be the stack's"
    preview = uses(doc, "pulumi/actions")
    assert [s["with"]["command"] for s in preview] == ["preview"] and preview[0]["with"]["policyPacks"] == "policy"
    assert (ROOT / preview[0]["with"]["policyPacks"] / "PulumiPolicy.yaml").is_file()


def test_the_kind_workflow_destroys_whatever_happened() -> None:
    doc = load(ROOT / ".github/workflows/kind-stack.yml")
    runs = [(s.get("name"), s.get("if"), s.get("run", "")) for s in steps(doc)]
    up = next(i for i, (_, _, run) in enumerate(runs) if "pulumi up --stack kind" in run)
    destroy = next(i for i, (_, _, run) in enumerate(runs) if "pulumi destroy --stack kind" in run)
    assert up < destroy and runs[destroy][1] == "always()", runs[destroy]
    assert any("smokeReport" in run for _, _, run in runs[up:destroy]), "the smoke report is checked"
    cluster = read_stack_file(ROOT / "stacks" / "Pulumi.kind.yaml")["ck8s-gpu:settings"].get("kind", {})
    assert cluster.get("clusterName", "ck8s-gpu") in runs[destroy][2]

"""actionlint (built by tools/build.sh from github.com/rhysd/actionlint) over every workflow under
.github/workflows/: no finding at all, shellcheck included on every `run:` script.

actionlint checks a step's `with:` inputs only for the actions it knows by `owner/repo@vN`
(its popular_actions.go); a commit SHA pin hides them from it. So the workflows are linted twice:
as committed, and as a copy whose pins `@<sha> # vX.Y.Z` read `@vX`, the release line the comment
names (tests/unit/test_workflows.py holds every pin to that form).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.tools import load_tool, skip_or_fail

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
SHA_PIN = re.compile(r"@[0-9a-f]{40} # (v\d+)\.\d+\.\d+")
# One mistake of each kind the committed workflows must never have, each on a line of its own.
BAD = """\
on: pull_request
permissions:
  contents: read
jobs:
  bad:
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/checkout@v6
        with:
          fetch-dept: 0
      - run: echo $HOME
      - run: echo "${{ github.event.pull_request.title }}"
      - run: echo "${{ matrix.missing }}"
"""
# kind of finding -> the lines of BAD it must be reported on
BAD_FINDINGS = {"action": [10], "shellcheck": [11], "expression": [12, 13]}


@pytest.fixture(scope="module")
def actionlint() -> Path:
    bin_dir = load_tool("localcluster").tools_bin_dir()
    exe: Path = bin_dir / "actionlint"
    if not exe.is_file():
        skip_or_fail(f"actionlint not built: missing {exe}; build it with `bash tools/build.sh`")
    if shutil.which("shellcheck") is None:
        skip_or_fail("shellcheck is not on PATH: actionlint would skip the `run:` scripts; "
                     "install it with `bash scripts/install-debs.sh` (Debian's shellcheck)")
    return exe


def lint(exe: Path, files: list[Path], cwd: Path) -> list[dict[str, Any]]:
    """actionlint's findings (its `-format '{{json .}}'`: message, filepath, line, column, kind)."""
    out = subprocess.run([str(exe), "-no-color", "-format", "{{json .}}", *map(str, files)], cwd=cwd,
                         capture_output=True, text=True, timeout=300)
    # Exit status (its command.go): 0 no problem, 1 problems found, 2 bad option, 3 failure.
    assert out.returncode in (0, 1), f"actionlint failed ({out.returncode}): {out.stderr[-2000:]}"
    found: list[dict[str, Any]] = json.loads(out.stdout or "[]")
    assert (out.returncode == 1) == bool(found), out
    return found


def as_tags(src: Path, dest: Path) -> Path:
    """A copy of the workflow whose SHA pins read as the release line of their comment."""
    dest.mkdir(parents=True, exist_ok=True)
    text, n = SHA_PIN.subn(r"@\1 # \1", src.read_text())
    assert n, f"{src.name} has no SHA pin to rewrite"
    (dest / src.name).write_text(text)
    return dest / src.name


def report(found: list[dict[str, Any]]) -> str:
    return "\n".join(f"{Path(f['filepath']).name}:{f['line']}:{f['column']}: [{f['kind']}] {f['message']}"
                     for f in found)


def test_there_are_workflows_to_lint() -> None:
    assert WORKFLOWS


def test_every_workflow_passes_actionlint(actionlint: Path) -> None:
    found = lint(actionlint, WORKFLOWS, ROOT)
    assert found == [], report(found)


def test_every_workflow_passes_with_its_action_inputs_checked(actionlint: Path, tmp_path: Path) -> None:
    copies = [as_tags(p, tmp_path / ".github" / "workflows") for p in WORKFLOWS]
    found = lint(actionlint, copies, tmp_path)
    assert found == [], report(found)


def test_a_bad_workflow_is_reported_with_each_kind_of_mistake(actionlint: Path, tmp_path: Path) -> None:
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "bad.yml").write_text(BAD)
    found = lint(actionlint, [folder / "bad.yml"], tmp_path)
    lines: dict[str, list[int]] = {}
    for f in found:
        lines.setdefault(f["kind"], []).append(f["line"])
    assert {k: sorted(v) for k, v in lines.items()} == BAD_FINDINGS, report(found)
    assert any("SC2086" in f["message"] for f in found), report(found)
    assert any('"fetch-dept" is not defined' in f["message"] for f in found), report(found)

"""The DR runbook and the stamping guide name only commands the CLI has, with arguments it accepts."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from components.cli.main import build_parser
from components.plan.run import PROJECT_DIR

DOCS = [PROJECT_DIR / "docs" / "runbooks" / "dr-rebuild.md", PROJECT_DIR / "docs" / "stamping.md"]


def commands(path: Path) -> list[str]:
    """Every `ck8s-gpu ...` invocation: in code blocks (continuations joined) and inline code."""
    text = path.read_text()
    found: list[str] = []
    for block in re.findall(r"```(?:sh|bash)?\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("ck8s-gpu "):
                found.append(line)
    found += [c for c in re.findall(r"`(ck8s-gpu [^`]+)`", text)]
    return found


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_ck8s_gpu_command_parses(path: Path) -> None:
    found = commands(path)
    assert len(found) >= 3, f"{path.name}: expected ck8s-gpu commands"
    parser = build_parser()
    subcommands = set(parser._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    for command in found:
        argv = shlex.split(command)[1:]
        assert argv[0] in subcommands, f"{path.name}: `{command}`: no subcommand {argv[0]!r}"
        if len(argv) == 1 or "<" in command:  # a bare mention or a placeholder: the name is enough
            continue
        try:
            parser.parse_args(argv)
        except SystemExit as exc:
            raise AssertionError(f"{path.name}: `{command}` is rejected by the CLI parser") from exc


def test_the_runbook_covers_every_step_with_a_duration() -> None:
    text = DOCS[0].read_text()
    for step in ("state", "stamp", "restore", "smoke", "cut over"):
        assert step in text.lower(), step
    rows = re.findall(r"^\| \d \| .* \| (.*) \|$", text, flags=re.M)
    assert len(rows) == 8 and all(re.search(r"\d+(-\d+)? min", r) for r in rows), rows


def test_the_deploy_steps_duration_is_the_modeled_one() -> None:
    """Step 4's minutes are aws-prod's modeled `up` (the generated table beside it, issue 46): the
    low bound rounded down, the high bound up, in the step table and the step's heading."""
    text = DOCS[0].read_text()
    row = re.search(r"^\| `aws-prod` \| (\d+)m(\d+)s-(\d+)m(\d+)s \|", text, flags=re.M)
    assert row is not None, "the generated modeled-rebuild table has no aws-prod row"
    low = int(row.group(1))
    high = int(row.group(3)) + (1 if int(row.group(4)) else 0)
    expected = f"{low}-{high} min"
    step = re.search(r"^\| 4 \| deploy the replacement .* \| (.*) \|$", text, flags=re.M)
    assert step is not None and step.group(1).startswith(expected), (step and step.group(1), expected)
    assert f"### 4. Deploy ({expected}" in text


def test_the_expected_total_adds_up_the_steps() -> None:
    text = DOCS[0].read_text()
    rows = re.findall(r"^\| \d \| .* \| (\d+)(?:-(\d+))? min", text, flags=re.M)
    low = sum(int(a) for a, _ in rows)
    high = sum(int(b or a) for a, b in rows)
    hours = -(-high // 60)
    assert f"Expected total: **{low} min to {hours} hours**" in text, (low, high)

"""docs/runbooks/upgrade.md names only commands that exist, with arguments the CLI accepts."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from components.cli.main import build_parser
from components.plan.run import PROJECT_DIR
from tests.unit.test_dr_docs import commands

RUNBOOK = PROJECT_DIR / "docs" / "runbooks" / "upgrade.md"
# Programs the runbook may tell an operator to run besides ck8s-gpu, and the subcommands used.
OTHER = {"pulumi": {"stack", "preview", "up"}, "aws": {"ssm"}, "sudo": {"k8s", "journalctl"}}
K8S = {"status", "kubectl"}


def code_lines() -> list[str]:
    text = RUNBOOK.read_text()
    lines = []
    for block in re.findall(r"```(?:sh|bash)?\n(.*?)```", text, flags=re.S):
        lines += [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]
    lines += re.findall(r"`((?:ck8s-gpu|pulumi|aws|sudo) [^`]+)`", text)
    return lines


def test_every_ck8s_gpu_command_parses() -> None:
    found = commands(RUNBOOK)
    assert {shlex.split(c)[1] for c in found} >= {"upgrade", "replace-node"}
    parser = build_parser()
    for command in found:
        argv = shlex.split(command)[1:]
        parser.parse_args(argv)  # SystemExit (a failure) on anything the CLI refuses


def test_every_other_command_is_one_the_runbook_declares() -> None:
    for line in code_lines():
        argv = shlex.split(line.replace("<", "").replace(">", ""))
        tool = argv[0]
        if tool == "ck8s-gpu":
            continue
        assert tool in OTHER, f"undeclared program in the runbook: {line}"
        assert argv[1] in OTHER[tool], f"undeclared {tool} subcommand: {line}"
        if argv[:2] == ["sudo", "k8s"]:
            assert argv[2] in K8S, line
        if argv[:2] == ["sudo", "journalctl"]:  # k8s-snap's services are snap.k8s.<component>
            assert argv[-1].startswith("snap.k8s."), line


def test_the_upgrade_and_resume_use_the_same_command() -> None:
    found = [c for c in commands(RUNBOOK) if c.startswith("ck8s-gpu upgrade") and "--plan" not in c
             and "--repin" not in c]  # --repin moves the files; the roll and its resume are one command
    assert len(set(found)) == 1 and len(found) >= 2, found


def test_every_step_row_has_a_duration() -> None:
    rows = re.findall(r"^\| \d \| .* \| (.*) \|$", RUNBOOK.read_text(), flags=re.M)
    assert len(rows) == 6 and all(re.search(r"\d+(-\d+)? min", r) for r in rows), rows


def test_the_refusal_quoted_for_a_pinned_stack_is_the_clis(capsys: pytest.CaptureFixture[str]) -> None:
    """The runbook quotes what `upgrade` says on the pinned aws-prod (issue 46): the same words."""
    from components.cli.main import main

    assert main(["upgrade", "--stack", "aws-prod", "--to", "1.35-classic"]) == 2
    said = " ".join(capsys.readouterr().err.removeprefix("ck8s-gpu upgrade: ").split())
    quoted = " ".join(" ".join(line[2:] for line in RUNBOOK.read_text().splitlines()
                               if line.startswith("> ")).split())
    assert said == quoted, (said, quoted)


def test_the_worked_examples_numbers_are_the_models() -> None:
    """The runbook's step 3 and its node counts are aws-prod's `upgrade --plan`: they fail when they part."""
    import math
    from pathlib import Path

    from components.upgrade.steps import upgrade_steps
    from components.validate import load_stack

    prod = load_stack(Path(PROJECT_DIR / "stacks" / "Pulumi.aws-prod.yaml"))
    steps = upgrade_steps(prod, "1.34-classic", "1.35-classic")
    low = round(sum(s.seconds[0] for s in steps) / 60)
    high = math.ceil(sum(s.seconds[1] for s in steps) / 60)
    text = RUNBOOK.read_text()
    assert f"| 3 | run the upgrade | {low}-{high} min (+ bounded waits) |" in text
    assert f"### 3. Run the upgrade ({low}-{high} min)" in text
    pools = " and ".join(f"`{p.name}` x{p.desired_size}" for p in prod.node_pools)
    assert f"({prod.control_plane.count} control planes, pools {pools})" in " ".join(text.split())


def test_the_pinned_worked_example_runs_on_the_committed_stack(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The runbook's three commands on copies of aws-prod and images/ (issue 46: the example runs):
    --repin moves the files and names the lines to build, the moved stack plans offline with its new
    lines, and `upgrade --plan` from the deployed 1.34 shows the roll. Revisions are made up."""
    import shutil

    from components.cli.main import main

    stacks, images = tmp_path / "stacks", tmp_path / "images"
    stacks.mkdir()
    shutil.copy(PROJECT_DIR / "stacks" / "Pulumi.aws-prod.yaml", stacks)
    shutil.copytree(PROJECT_DIR / "images", images)
    [line] = [c for c in commands(RUNBOOK) if "--repin" in c]
    argv = shlex.split(line.replace("<rev>", "6101", 1).replace("<rev>", "6104"))[1:]
    assert main([*argv, "--stacks-dir", str(stacks), "--images-dir", str(images)]) == 0
    out = capsys.readouterr().out
    assert "pulumi up -C images -s us-east-1-control-plane-k8s-1.35-classic" in out
    assert out.index("control-plane-k8s-1.35-classic") < out.index("-s us-east-1-k8s-1.35-classic")
    assert (images / "Pulumi.us-east-1-k8s-1.35-classic.yaml").exists()
    assert main(["plan", "--stack", "aws-prod", "--stacks-dir", str(stacks), "--images-dir", str(images),
                 "--quiet"]) == 0
    assert main(["upgrade", "--stack", "aws-prod", "--to", "1.35-classic", "--from", "1.34-classic", "--plan",
                 "--stacks-dir", str(stacks)]) == 0
    assert "1.34-classic -> 1.35-classic" in capsys.readouterr().out
    # the old lines still serve 1.34: the committed stack plans against the copied folder too
    assert main(["plan", "--stack", "aws-dev", "--images-dir", str(images), "--quiet"]) == 0


def test_a_stack_whose_image_lines_carry_another_pin_does_not_plan(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    from components.cli.main import main

    images = tmp_path / "images"
    shutil.copytree(PROJECT_DIR / "images", images)
    line = images / "Pulumi.us-east-1.yaml"
    line.write_text(line.read_text().replace("revision: 5325", "revision: 5324"))
    assert main(["plan", "--stack", "aws-dev", "--images-dir", str(images), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "settings.nodePools[0].ami: names image line us-east-1" in err
    assert "amd64 revision 5324 (the stack pins 5325)" in err

"""`ck8s-gpu plan`: tree, files, secrets masked, and --diff reporting exactly what changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.cli.main import main

DIFF = Path(__file__).resolve().parent.parent / "data" / "diff"


def test_kind_plan_prints_a_sorted_tree_with_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "kind"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    tree = lines[1:lines.index("")]  # after the heading, up to the blank line before the counts
    tops = [line.split()[0] for line in tree if not line.startswith(" ")]
    assert tops == ["ck8s-gpu:index:AddonSet", "ck8s-gpu:index:KindCluster", "ck8s-gpu:index:SmokeTest"]
    assert "  kubernetes:helm.sh/v3:Release gpu-stack-fake-gpu-operator" in out
    assert "chart=charts/gpu-observability" in out  # checkout-relative: plans compare across machines
    assert lines[-2].split() == ["total", str(len(tree))]
    assert lines[-1] == "cost: not priced: platform kind creates no AWS resources"  # every plan's last line


def test_stacks_dir_is_read_from_the_working_directory_and_named_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A relative --stacks-dir is the caller's folder, never the checkout's file of the same name, and
    the plan names the file it read (issue 46)."""
    mine = tmp_path / "stacks"
    mine.mkdir()
    checkout = Path(__file__).resolve().parents[2] / "stacks" / "Pulumi.kind.yaml"
    (mine / "Pulumi.kind.yaml").write_text(checkout.read_text())
    monkeypatch.chdir(tmp_path)
    assert main(["plan", "--stack", "kind", "--stacks-dir", "stacks"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"Stack kind (kind) from {mine / 'Pulumi.kind.yaml'}:"
    assert main(["plan", "--stack", "aws-dev", "--stacks-dir", "stacks", "--quiet"]) == 2  # only the checkout has it
    assert f"invalid settings in {mine / 'Pulumi.aws-dev.yaml'}" in capsys.readouterr().err


def test_plan_writes_resources_manifests_and_masks_secrets(tmp_path: Path) -> None:
    assert main(["plan", "--stack", "kind", "--out", str(tmp_path), "--quiet"]) == 0
    doc = json.loads((tmp_path / "resources.json").read_text())
    assert doc["stack"] == "kind" and doc["counts"]["ck8s-gpu:index:SmokeTest"] == 1
    assert sum(doc["counts"].values()) == len(doc["resources"])
    assert doc["outputs"]["kubeconfig"] == "[secret]"
    gate = next(r for r in doc["resources"] if r["type"].endswith(":ApiReady"))
    assert gate["inputs"]["kubeconfig"] == "[secret]" and "kubeconfig" in gate["secret_paths"]
    names = {p.name for p in (tmp_path / "manifests").iterdir()}
    assert {"smoke-test-chart.yaml", "gpu-stack-kai-queues.yaml", "gpu-stack-observability.yaml"} <= names
    assert "kind: ResourceClaimTemplate" in (tmp_path / "manifests" / "smoke-test-chart.yaml").read_text()
    assert (tmp_path / "releases" / "gpu-stack-fake-gpu-operator.values.yaml").is_file()


def test_diff_reports_exactly_the_changes_between_two_variants(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "--stack", "before", "--stacks-dir", str(DIFF), "--out", str(tmp_path), "--quiet"]) == 0
    capsys.readouterr()
    old = tmp_path / "resources.json"
    assert main(["plan", "--stack", "after", "--stacks-dir", str(DIFF), "--diff", str(old), "--quiet"]) == 0
    report = capsys.readouterr().out.split(f"Changes against {old}:\n", 1)[1].splitlines()
    changed = [line for line in report if line.startswith(("~", "+", "-"))]
    assert changed == [
        "~ ck8s-gpu:index:AddonSet$kubernetes:helm.sh/v3:Release::gpu-stack-kai-queues",
        "~ ck8s-gpu:index:SmokeTest$kubernetes:helm.sh/v3:Release::smoke-test-chart",
        "~ ck8s-gpu:index:SmokeTest$pulumi-python:dynamic/ck8s-gpu:SmokeRun::smoke-test-run",
    ]
    assert "    inputs.values.queues[1].resources.gpu.quota: 2 -> 3" in report
    assert "    inputs.values.queues[3].resources.gpu.quota: 2 -> 1" in report  # [2] is KAI's fallback default-queue
    assert "    inputs.values.gpus: 2 -> 1" in report
    assert report[-1] == "0 to add, 3 to change, 0 to remove"


def test_diff_against_itself_is_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "before", "--stacks-dir", str(DIFF), "--out", str(tmp_path), "--quiet"]) == 0
    assert main(["plan", "--stack", "before", "--stacks-dir", str(DIFF), "--quiet",
                 "--diff", str(tmp_path / "resources.json")]) == 0
    assert capsys.readouterr().out.rstrip().endswith("no changes")


def test_diff_with_an_unreadable_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "old.json"
    bad.write_text("not json")
    assert main(["plan", "--stack", "kind", "--diff", str(bad)]) == 2
    assert "not a resources.json" in capsys.readouterr().err


def test_unknown_stack_exits_2_without_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "does-not-exist"]) == 2
    err = capsys.readouterr().err
    assert "Pulumi.does-not-exist.yaml" in err and "does not exist" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["plan", "stamp", "preflight", "rebuild-plan", "upgrade", "smoke"])
def test_help_says_what_each_command_does_and_its_exit_codes(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    description = text.split("\n\n")[1]  # argparse: usage, blank line, description
    assert not description.startswith(("options:", "positional")) and len(description.split()) >= 15, text
    if command in ("plan", "stamp", "preflight", "rebuild-plan"):
        assert "Exit 0" in text

"""`ck8s-gpu stamp` end to end with the Automation API replaced: files written, exit codes, --check,
--offline (real offline plans in child processes), and refusals before anything is written."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from components.cli import stamp as stamp_cli
from components.cli.main import main
from components.stamping import backend as backend_module
from components.stamping.backend import BackendUnavailable, OpResult
from components.tables.ec2_regional_prices import ON_DEMAND as REGIONAL
from components.tables.ec2_regional_prices import PRICE_AS_OF
from tests.unit.stamping.helpers import DATA, STACKS, FakeBackend


@pytest.fixture
def stacks(tmp_path: Path) -> Path:
    for name in ("aws-dev", "aws-prod"):
        shutil.copy(STACKS / f"Pulumi.{name}.yaml", tmp_path)
    shutil.copy(DATA / "aws-prod.regions.yaml", tmp_path)
    return tmp_path


def _use(monkeypatch: pytest.MonkeyPatch, fake: FakeBackend | Exception) -> None:
    def make(*_args: Any) -> FakeBackend:
        if isinstance(fake, Exception):
            raise fake
        return fake

    monkeypatch.setattr(backend_module, "AutomationBackend", make)


def test_up_writes_stack_files_and_exits_1_when_a_region_fails(
    stacks: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeBackend(results={"aws-prod-eu-central-1": OpResult(ok=False, error="boom")})
    _use(monkeypatch, fake)
    monkeypatch.setattr(stamp_cli, "_preflight", lambda _profile: lambda _s: [])
    code = main(["stamp", "--template", "aws-prod", "--regions", "us-east-2,eu-central-1", "--up",
                 "--stacks-dir", str(stacks)])
    out = capsys.readouterr().out
    assert code == 1
    assert (stacks / "Pulumi.aws-prod-us-east-2.yaml").exists()
    assert (stacks / "Pulumi.aws-prod-eu-central-1.yaml").exists()
    assert sorted(fake.calls) == [("up", "aws-prod-eu-central-1"), ("up", "aws-prod-us-east-2")]
    assert "1 of 2 region(s) succeeded, 1 failed" in out and "boom" in out


def test_up_runs_preflight_by_default_and_preview_does_not(
    stacks: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    checked: list[str] = []

    def fake_preflight(_profile: str | None) -> Any:
        return lambda s: checked.append(s.stack) or ["ERROR not-offered [x]: p5.48xlarge is not offered"]

    monkeypatch.setattr(stamp_cli, "_preflight", fake_preflight)
    fake = FakeBackend()
    _use(monkeypatch, fake)
    assert main(["stamp", "--template", "aws-prod", "--regions", "us-east-2", "--preview",
                 "--stacks-dir", str(stacks)]) == 0
    assert checked == [] and fake.calls == [("preview", "aws-prod-us-east-2")]
    assert main(["stamp", "--template", "aws-prod", "--regions", "us-east-2", "--up",
                 "--stacks-dir", str(stacks)]) == 1
    assert checked == ["aws-prod-us-east-2"] and ("up", "aws-prod-us-east-2") not in fake.calls
    assert "pre-flight failed" in capsys.readouterr().out


def test_check_reports_drift_until_stamped(stacks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["stamp", "--template", "aws-dev", "--regions", "us-east-2", "--stacks-dir", str(stacks)]
    assert main([*args, "--check"]) == 1
    assert not (stacks / "Pulumi.aws-dev-us-east-2.yaml").exists()  # --check writes nothing
    _use(monkeypatch, FakeBackend())
    assert main([*args, "--preview"]) == 0
    assert main([*args, "--check"]) == 0
    (stacks / "Pulumi.aws-dev.yaml").write_text((stacks / "Pulumi.aws-dev.yaml").read_text().replace(
        "maxSize: 3", "maxSize: 4"))
    assert main([*args, "--check"]) == 1  # the template changed: the stamped file is stale


def test_bad_input_exits_2_and_writes_nothing(stacks: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stamp", "--template", "aws-prod", "--regions", "eu-central-1,us-west-2", "--offline",
                 "--stacks-dir", str(stacks), "--overrides", str(stacks / "nope.yaml")]) == 2
    assert main(["stamp", "--template", "aws-prod", "--regions", "us-west-2", "--offline",
                 "--stacks-dir", str(stacks)]) == 2
    err = capsys.readouterr().err
    assert "[us-west-2]" in err and "which is this region" in err
    assert list(stacks.glob("Pulumi.aws-prod-*.yaml")) == []


def test_backend_unavailable_exits_2_before_writing(
    stacks: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _use(monkeypatch, BackendUnavailable("the Pulumi CLI is not installed"))
    assert main(["stamp", "--template", "aws-dev", "--regions", "us-east-2", "--up", "--stacks-dir", str(stacks)]) == 2
    assert "not installed" in capsys.readouterr().err
    assert not (stacks / "Pulumi.aws-dev-us-east-2.yaml").exists()


def test_offline_plans_every_region(stacks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plans"
    code = main(["stamp", "--template", "aws-prod", "--regions", "us-east-2,eu-central-1", "--offline",
                 "--parallel", "2", "--stacks-dir", str(stacks), "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "2 of 2 region(s) succeeded" in text and text.count("planned") == 2
    costs = text.split("Cost of what the stamped stacks create:\n")[1].splitlines()  # docs/cost.md
    # eu-central-1 prices the l40s pool (2/2/8 x g6e.12xlarge) from the regional table, nothing else
    l40s = REGIONAL["eu-central-1"]["g6e.12xlarge"]
    priced = f"${2 * l40s:,.2f}/h min, ${2 * l40s:,.2f}/h desired, ${8 * l40s:,.2f}/h max"
    assert costs[0] == (
        "  aws-prod-us-east-2: cost: no price for us-east-2 in the table (`ck8s-gpu plan --cost` lists the line items)")
    assert costs[1].startswith(f"  aws-prod-eu-central-1: cost: at least {priced} (On-Demand, eu-central-1, "
                               f"prices of {PRICE_AS_OF}); not priced: control planes (m7i.2xlarge) (no price for "
                               "m7i.2xlarge in eu-central-1 in the table)")
    assert costs[2:] == [f"  total: at least {priced} (not priced in full: aws-prod-us-east-2, aws-prod-eu-central-1)"]
    for stack in ("aws-prod-us-east-2", "aws-prod-eu-central-1"):
        assert (out / stack / "resources.json").exists()


def test_files_pulumi_rewrote_during_the_run_are_stamped_again(
    stacks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pulumi stack init` adds the salt and re-serialises the file; the stamper restores its own
    rendering with the salt kept, so `--check` is clean right after a first `--up`."""
    path = stacks / "Pulumi.aws-dev-us-east-2.yaml"

    class InitWritesSalt(FakeBackend):
        def up(self, stack: str, on_output: Any) -> OpResult:
            path.write_text("encryptionsalt: v1:SALT\nconfig: {}\n")
            return super().up(stack, on_output)

    _use(monkeypatch, InitWritesSalt())
    monkeypatch.setattr(stamp_cli, "_preflight", lambda _profile: lambda _s: [])
    args = ["stamp", "--template", "aws-dev", "--regions", "us-east-2", "--stacks-dir", str(stacks)]
    assert main([*args, "--up"]) == 0
    text = path.read_text()
    assert text.startswith("# Stamped by") and "encryptionsalt: v1:SALT" in text and "ck8s-gpu:settings" in text
    assert main([*args, "--check"]) == 0

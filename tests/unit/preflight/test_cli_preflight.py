"""`ck8s-gpu preflight --stack NAME`: exit 0 when the region fits, 1 with findings, 2 on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.cli.main import main
from components.preflight import run as preflight_run
from tests.unit.preflight.recorded import RecordedSession

DATA = Path(__file__).resolve().parents[2] / "data" / "stamping"


def _replay(monkeypatch: pytest.MonkeyPatch, scenario: str) -> None:
    monkeypatch.setattr(preflight_run, "default_session", lambda _profile=None: RecordedSession(scenario))


def test_ok_region_exits_0(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _replay(monkeypatch, "us-east-1-ok.json")
    assert main(["preflight", "--stack", "gpu-prod", "--stacks-dir", str(DATA)]) == 0
    assert "pre-flight gpu-prod (us-east-1): ok, 0 error(s), 0 warning(s)" in capsys.readouterr().out


def test_findings_exit_1_and_are_printed(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _replay(monkeypatch, "quota-too-low.json")
    assert main(["preflight", "--stack", "gpu-prod", "--stacks-dir", str(DATA)]) == 1
    out = capsys.readouterr().out
    assert "FAILED, 2 error(s)" in out and "ERROR quota-too-low [L-417A185B" in out


def test_non_aws_or_unknown_stacks_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preflight", "--stack", "kind"]) == 2
    assert main(["preflight", "--stack", "does-not-exist"]) == 2
    err = capsys.readouterr().err
    assert "kind stack" in err and "does not exist" in err

"""Every committed bad stack file: one message naming its bad field paths, exit 2, no traceback,
and no resource registered when the real program runs on it under the mock engine."""

from __future__ import annotations

import runpy
from pathlib import Path

import pulumi
import pytest

from components.cli.main import main
from components.plan.mockengine import run_program
from components.plan.run import PROJECT_DIR
from components.settings.load import read_stack_file
from tests.helpers.registrations import resources_only, watch_registrations

BAD = Path(__file__).resolve().parent.parent / "data" / "bad_stacks"
FILES = sorted(BAD.glob("Pulumi.*.yaml"))
# Files whose problem only matters to deploy (a missing secret): the offline plan notes it and goes on.
DEPLOY_TIME = [p for p in FILES if p.read_text().startswith("# deploy-time: ")]
PLAN_TIME = [p for p in FILES if p not in DEPLOY_TIME]


def expected_paths(path: Path) -> list[str]:
    first = path.read_text().splitlines()[0]
    assert first.startswith(("# expect: ", "# deploy-time: ")), f"{path.name} must start with '# expect: <paths>'"
    return [p.strip() for p in first.split(": ", 1)[1].split(",")]


def stack_name(path: Path) -> str:
    return path.name.removeprefix("Pulumi.").removesuffix(".yaml")


def test_there_are_at_least_twelve_kinds_of_bad_stack() -> None:
    assert len(FILES) >= 12


@pytest.mark.parametrize("path", PLAN_TIME, ids=stack_name)
def test_plan_rejects_with_every_bad_path(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--stack", stack_name(path), "--stacks-dir", str(BAD)])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    assert err.count("invalid settings in") == 1, err  # one message, not one per problem
    for field in expected_paths(path):
        assert f"  {field}: " in err, f"{field} not named in:\n{err}"
    # Nothing else is reported: the message lists exactly the expected problems.
    reported = [line.strip().split(": ")[0] for line in err.splitlines()[1:] if line.startswith("  ")]
    assert set(reported) == set(expected_paths(path)), err


@pytest.mark.parametrize("path", DEPLOY_TIME, ids=stack_name)
def test_plan_notes_deploy_time_problems(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--stack", stack_name(path), "--stacks-dir", str(BAD), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0
    for field in expected_paths(path):
        assert field.removeprefix("config.") in err


@pytest.mark.parametrize("path", FILES, ids=stack_name)
def test_program_registers_nothing_on_bad_settings(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = watch_registrations(monkeypatch)
    with pytest.raises(pulumi.RunError) as err:
        run_program(
            lambda: runpy.run_path(str(PROJECT_DIR / "__main__.py"), run_name="__main__"),
            read_stack_file(path),
            stack=stack_name(path),
        )
    assert expected_paths(path)[0] in str(err.value)
    assert resources_only(recorded) == []

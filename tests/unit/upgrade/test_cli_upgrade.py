"""`ck8s-gpu upgrade --plan`, its refusals, `plan --diff` against a deployed track, and the
node-upgrade resources' preview check (the same rule inside `pulumi up`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from components.cli.main import main
from components.settings.load import SETTINGS_KEY
from components.upgrade import resources, skew
from tests.unit.addons.helpers import ancestors
from tests.unit.aws.cluster_sim import from_the_store, on_track_images

ROOT = Path(__file__).resolve().parents[3]


def test_plan_prints_the_steps_and_changes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    before = (ROOT / "stacks/Pulumi.aws-dev.yaml").read_text()
    assert main(["upgrade", "--stack", "aws-dev", "--to", "1.35-classic", "--plan"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("upgrade ck8s-dev-us-east-1: 1.34-classic -> 1.35-classic (5 steps)")
    assert "control plane ck8s-dev-us-east-1-cp-0" in out and "pool l4 [l4-node-1]" in out
    assert (ROOT / "stacks/Pulumi.aws-dev.yaml").read_text() == before


def test_a_skipped_minor_exits_2_naming_the_setting(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["upgrade", "--stack", "aws-dev", "--to", "1.36-classic", "--plan"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ck8s-gpu upgrade: settings.kubernetes.track: 1.34-classic -> 1.36-classic skips 1 minor")
    assert "Traceback" not in err


def test_from_says_what_runs_now(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["upgrade", "--stack", "aws-dev", "--from", "1.35-classic", "--to", "1.36-classic", "--plan"]) == 0
    assert "1.35-classic -> 1.36-classic" in capsys.readouterr().out


def test_a_non_aws_stack_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["upgrade", "--stack", "kind", "--to", "1.35-classic", "--plan"]) == 2
    assert "platform kind" in capsys.readouterr().err


def test_help_says_what_it_does() -> None:
    out = subprocess.run([sys.executable, "-m", "components.cli.main", "upgrade", "--help"], capture_output=True,
                         text=True, cwd=ROOT, check=True).stdout
    assert "control planes one at a time" in " ".join(out.split())


def test_plan_diff_refuses_a_track_that_skips_the_deployed_one(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    old = {"resources": [{"type": skew.UPGRADE_TYPES[0], "inputs": {"track": "1.32-classic"}}]}
    path = tmp_path / "resources.json"
    path.write_text(json.dumps(old))
    assert main(["plan", "--stack", "aws-dev", "--diff", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "settings.kubernetes.track: 1.32-classic -> 1.34-classic skips 1 minor" in err


@pytest.mark.parametrize(("old", "new", "refused"), [
    ("1.34-classic", "1.35-classic", False), ("1.34-classic", "1.36-classic", True),
    ("1.35-classic", "1.34-classic", True), (None, "1.36-classic", False),
])
def test_the_preview_check_refuses_what_the_cli_refuses(old: str | None, new: str, refused: bool) -> None:
    olds = {"track": old} if old else {}
    result = resources._NodeProvider().check(olds, {"track": new})
    assert bool(result.failures) is refused
    assert all(f.property == "track" for f in result.failures)


def test_create_does_nothing_and_only_a_track_change_runs_work(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    provider = resources._PoolProvider()
    monkeypatch.setattr(provider, "run", lambda inputs: calls.append(inputs["track"]) or [])
    created = provider.create({"track": "1.34-classic", "pool": "l4"})
    assert created.outs["outcomes"] == [] and calls == []
    olds = {"track": "1.34-classic", "pool": "l4", "policy": {"maxUnavailable": 1}}
    provider.update("id", olds, {**olds, "policy": {"maxUnavailable": 2}})
    assert calls == []
    provider.update("id", olds, {**olds, "track": "1.35-classic"})
    assert calls == ["1.35-classic"]
    diff = provider.diff("id", olds, {**olds, "track": "1.35-classic"})
    assert diff.changes and not diff.replaces
    assert resources._NodeProvider().diff("id", {"instanceId": "i-1"}, {"instanceId": "i-2"}).replaces == ["instanceId"]


def test_every_addon_release_and_the_smoke_test_follow_the_pool_upgrades() -> None:
    """Add-on values change with the track (containerd 2 on 1.35): no release moves before the nodes."""
    from components.plan.run import plan_stack

    plan = plan_stack("aws-dev")
    pools = {r.name for r in plan.resources if r.type == skew.UPGRADE_TYPES[1]}
    assert pools
    gated = [r for r in plan.resources if r.type in ("kubernetes:helm.sh/v3:Release",
                                                     "pulumi-python:dynamic/ck8s-gpu:SmokeRun")]
    assert gated
    for r in gated:
        assert pools <= ancestors(plan, r.name), f"{r.name} does not wait for every pool upgrade"


class _Output:
    def __init__(self, value: str) -> None:
        self.value = value


class _Stack:
    """The two calls `upgrade` makes on an Automation API Stack (outputs, up), recorded."""

    def __init__(self, deployed: str, fail: BaseException | None = None) -> None:
        self.deployed, self.fail, self.ups = deployed, fail, 0

    def outputs(self) -> dict[str, _Output]:
        return {"kubernetesTrack": _Output(self.deployed)}

    def up(self, **kwargs: object) -> object:
        self.ups += 1
        assert callable(kwargs["on_event"])
        if self.fail is not None:
            raise self.fail

        class Result:
            outputs = {"kubernetesTrack": _Output("1.35-classic")}

        return Result()


def _stacks(tmp_path: Path) -> Path:
    """aws-dev unpinned (cluster_sim.from_the_store): the stack whose track `upgrade` writes. The
    committed aws-dev is pinned, which `upgrade` refuses (the last test here)."""
    doc = yaml.safe_load((ROOT / "stacks/Pulumi.aws-dev.yaml").read_text())
    from_the_store(doc["config"][SETTINGS_KEY])
    # control planes on Canonical's AMI: an image line named for 1.34 would be refused on 1.35 (below)
    doc["config"][SETTINGS_KEY]["controlPlane"].pop("ami")
    (tmp_path / "Pulumi.aws-dev.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return tmp_path


def test_an_unpinned_stack_booting_the_old_tracks_image_is_refused_before_anything_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from components.cli import upgrade as cli

    stack = _Stack("1.34-classic", None)
    monkeypatch.setattr(cli, "_automation_stack", lambda _name: stack)
    doc = yaml.safe_load((ROOT / "stacks/Pulumi.aws-dev.yaml").read_text())
    from_the_store(doc["config"][SETTINGS_KEY])  # keeps controlPlane.ami .../k8s-1.34-classic
    path = tmp_path / "Pulumi.aws-dev.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    before = path.read_text()
    assert main(["upgrade", "--stack", "aws-dev", "--to", "1.35-classic", "--stacks-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "settings.controlPlane.ami" in err and "built for track 1.34-classic" in err and "nothing written" in err
    assert path.read_text() == before and stack.ups == 0


@pytest.mark.parametrize(("fail", "code"), [(None, 0), (KeyboardInterrupt(), 130), (RuntimeError("error: boom"), 1)])
def test_upgrade_writes_the_track_then_runs_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str], fail: BaseException | None,
                                               code: int) -> None:
    from components.cli import upgrade as cli

    stack = _Stack("1.34-classic", fail)
    monkeypatch.setattr(cli, "_automation_stack", lambda _name: stack)
    stacks = _stacks(tmp_path)
    assert main(["upgrade", "--stack", "aws-dev", "--to", "1.35-classic", "--stacks-dir", str(stacks)]) == code
    assert "track: 1.35-classic" in (stacks / "Pulumi.aws-dev.yaml").read_text()
    assert stack.ups == 1
    err = capsys.readouterr().err
    if code == 130:
        assert "Run the same command to resume" in err
    if code == 1:
        assert "error: boom" in err and "Traceback" not in err


def test_a_deployed_track_two_minors_behind_refuses_before_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from components.cli import upgrade as cli

    stack = _Stack("1.33-classic")
    monkeypatch.setattr(cli, "_automation_stack", lambda _name: stack)
    stacks = _stacks(tmp_path)
    before = (stacks / "Pulumi.aws-dev.yaml").read_text()
    assert main(["upgrade", "--stack", "aws-dev", "--to", "1.35-classic", "--stacks-dir", str(stacks)]) == 2
    assert "1.33-classic -> 1.35-classic skips 1 minor" in capsys.readouterr().err
    assert (stacks / "Pulumi.aws-dev.yaml").read_text() == before and stack.ups == 0


def test_progress_prints_one_line_per_watched_step_from_real_engine_events(capsys: pytest.CaptureFixture[str]) -> None:
    from pulumi.automation.events import EngineEvent

    from components.cli.upgrade import _progress

    def event(kind: str, op: str, typ: str, name: str) -> EngineEvent:
        meta = {"op": op, "urn": f"urn:pulumi:aws-dev::ck8s-gpu::{typ}::{name}", "type": typ, "provider": ""}
        return EngineEvent.from_json({"sequence": 1, "timestamp": 0, kind: {"metadata": meta}})

    for e in (event("resourcePreEvent", "update", skew.UPGRADE_TYPES[0], "cp-0-upgrade"),
              event("resOutputsEvent", "update", skew.UPGRADE_TYPES[0], "cp-0-upgrade"),
              event("resourcePreEvent", "same", skew.UPGRADE_TYPES[1], "pool-l4-upgrade"),
              event("resourcePreEvent", "update", "aws:ec2/securityGroup:SecurityGroup", "sg")):
        _progress(e)
    assert capsys.readouterr().out.splitlines() == ["  started  update   cp-0-upgrade",
                                                    "  done     update   cp-0-upgrade"]


def test_a_track_change_runs_the_smoke_test_again_after_the_upgrade() -> None:
    from components.plan.run import plan_config
    from components.settings.load import read_stack_file

    config = read_stack_file(ROOT / "stacks/Pulumi.aws-dev.yaml")

    def smoke_run(track: str) -> dict:  # type: ignore[type-arg]
        raw = json.loads(json.dumps(config))
        # unpinned at both tracks: the committed pin (v1.34.4) is refused on 1.35, and a pinned
        # stack's track moves only with its pin, so the track is the one difference
        from_the_store(raw[SETTINGS_KEY])
        on_track_images(raw[SETTINGS_KEY], raw[SETTINGS_KEY]["kubernetes"]["track"], track)
        raw[SETTINGS_KEY]["kubernetes"]["track"] = track
        plan = plan_config(raw, "aws-dev", "test")
        [run] = [r for r in plan.resources if r.type == "pulumi-python:dynamic/ck8s-gpu:SmokeRun"]
        return dict(run.inputs["spec"])

    before, after = smoke_run("1.34-classic"), smoke_run("1.35-classic")
    assert before["runId"] != after["runId"]


def test_a_pinned_stack_is_not_half_upgraded_by_the_track_alone(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """ADR 0039: track and snap pin change together; the CLI writes neither and says so. The
    committed aws-dev is itself pinned now (issue 29: v1.34.4 from its images), so it is the case."""
    pinned = (ROOT / "stacks/Pulumi.aws-dev.yaml").read_text()
    path = tmp_path / "Pulumi.aws-dev.yaml"
    path.write_text(pinned)
    assert main(["upgrade", "--stack", "aws-dev", "--stacks-dir", str(tmp_path), "--to", "1.35-classic"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ck8s-gpu upgrade: settings.kubernetes.snap: pinned to v1.34.4;") and "Traceback" not in err
    assert path.read_text() == pinned

"""`ck8s-gpu smoke`: exit codes and the cleanup path, with the cluster boundary faked."""

from __future__ import annotations

import io
import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.cli import main as cli_main
from components.cli import smoke as cli
from tests.unit.smoke import settings_fixtures as sf
from tests.unit.smoke.fake_cluster import FakeClock, FakeCluster

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    return path


def args(*argv: str) -> Any:
    return cli_main.build_parser().parse_args(["smoke", *argv])


def execute(cluster: FakeCluster, *argv: str, **kw: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.execute(args(*argv), connect=lambda _text, _ctx: cluster, out=out, err=err,
                       clock=FakeClock(), poll_seconds=1.0, **kw)
    return code, out.getvalue(), err.getvalue()


def leftovers(cluster: FakeCluster) -> list[str]:
    kinds = ("Namespace", "NetworkPolicy", "ConfigMap", "ResourceClaimTemplate", "PodGroup", "Job", "Pod")
    return [f"{k}/{o['metadata']['name']}" for k in kinds for o in cluster.of(k)]


def test_exit_0_writes_the_report_and_deletes_everything(kubeconfig: Path, tmp_path: Path) -> None:
    cluster = FakeCluster(gpus_per_node=4)
    report = tmp_path / "out" / "smoke.json"
    code, out, err = execute(cluster, "--kubeconfig", str(kubeconfig), "--gpus", "2", "--report", str(report))
    assert code == 0, out + err
    assert "resumed Job smoke-cli-gpus-" in out and "barrier released" in out
    assert "passed, 0 failed" in out
    doc = json.loads(report.read_text())
    assert doc["reportFormat"] == "CTRF" and doc["results"]["summary"]["failed"] == 0
    assert leftovers(cluster) == []


def test_exit_1_when_a_hop_fails_and_still_cleans_up(kubeconfig: Path) -> None:
    cluster = FakeCluster(gpus_per_node=4, wrong_uuid=True)
    code, out, _ = execute(cluster, "--kubeconfig", str(kubeconfig), "--gpus", "2")
    assert code == 1
    assert re.search(r"\ncontainer-device +kubelet/CDI +FAIL ", out)  # columns as wide as the longest check name
    assert leftovers(cluster) == []


def test_exit_2_when_the_cluster_cannot_be_reached(kubeconfig: Path) -> None:
    cluster = FakeCluster(unreachable=True)
    code, out, err = execute(cluster, "--kubeconfig", str(kubeconfig))
    assert code == 2 and out == ""
    assert f"cannot reach the cluster of {kubeconfig}: MaxRetryError: connection refused" in err
    assert cluster.calls == ["version"]  # nothing created


def test_exit_2_for_a_missing_kubeconfig(tmp_path: Path) -> None:
    code, _, err = execute(FakeCluster(), "--kubeconfig", str(tmp_path / "nope"))
    assert code == 2 and f"--kubeconfig {tmp_path / 'nope'}: No such file or directory" in err


def test_exit_2_for_an_unusable_kubeconfig_through_the_real_client(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("apiVersion: v1\nkind: Config\n")
    out, err = io.StringIO(), io.StringIO()
    assert cli.execute(args("--kubeconfig", str(bad)), out=out, err=err) == 2
    assert "kubeconfig has no clusters" in err.getvalue()


@pytest.mark.parametrize(("argv", "message"), [
    (["--gpus", "0"], "--gpus: Input should be greater than or equal to 1"),
    (["--gang", "--gpus", "1"], "--gang needs --gpus 2 or more"),
    (["--gang", "--gpus", "2", "--scheduler", "default"], "--gang needs --scheduler kai"),
    (["--namespace", "Bad_NS"], "--namespace: String should match pattern"),
])
def test_exit_2_for_bad_options(kubeconfig: Path, argv: list[str], message: str) -> None:
    cluster = FakeCluster()
    code, _, err = execute(cluster, "--kubeconfig", str(kubeconfig), *argv)
    assert code == 2 and message in err
    assert cluster.calls == []


def test_exit_2_for_bad_arguments_through_main(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli_main.main(["smoke"])  # --kubeconfig is required
    assert exc.value.code == 2
    assert "--kubeconfig" in capsys.readouterr().err


def test_exit_2_for_bad_stack_settings(kubeconfig: Path, tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.bad.yaml"
    stack.write_text(yaml.safe_dump({"config": {"ck8s-gpu:settings": {"platform": "aws"}}}))
    code, _, err = execute(FakeCluster(), "--kubeconfig", str(kubeconfig), "--stack", str(stack))
    assert code == 2 and "settings.region: required when platform is aws" in err


def test_stack_file_supplies_expected_pools(kubeconfig: Path, tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.aws.yaml"
    stack.write_text(yaml.safe_dump({"config": {"ck8s-gpu:settings": sf.AWS}}))
    report = tmp_path / "smoke.json"
    code, out, _ = execute(FakeCluster(gpus_per_node=4), "--kubeconfig", str(kubeconfig), "--stack", str(stack),
                           "--report", str(report))
    assert code == 0, out
    # g6.12xlarge has 4 GPUs: the fake's nodes advertise 4 each, as the stack expects (the report holds the
    # whole message; the table cuts it to its width).
    slices = next(t for t in json.loads(report.read_text())["results"]["tests"] if t["name"] == "resource-slices")
    assert slices["status"] == "passed" and "4 GPU(s)" in slices["message"]
    code, out, _ = execute(FakeCluster(gpus_per_node=1), "--kubeconfig", str(kubeconfig), "--stack", str(stack))
    assert code == 1 and "advertises 1 GPU(s), expected 4" in out


class Interrupting(FakeCluster):
    """Raises like Ctrl-C (or SIGTERM) the first time the runner looks at the test's pods."""

    how: str = "ctrl-c"

    def list(self, api_version: str, kind: str, namespace: str | None = None, **kw: Any) -> Any:
        if kind == "Pod" and namespace and self.how:
            how, self.how = self.how, ""
            if how == "sigterm":
                os.kill(os.getpid(), signal.SIGTERM)
            else:
                raise KeyboardInterrupt
        return super().list(api_version, kind, namespace, **kw)


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_interrupt_cleans_up_then_propagates(kubeconfig: Path, how: str) -> None:
    cluster = Interrupting(gpus_per_node=4)
    cluster.how = how
    before = signal.getsignal(signal.SIGTERM)
    err = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        cli.execute(args("--kubeconfig", str(kubeconfig), "--gpus", "2"), connect=lambda _t, _c: cluster,
                    out=io.StringIO(), err=err, clock=FakeClock(), poll_seconds=1.0)
    assert "interrupted, cleaning up" in err.getvalue()
    assert leftovers(cluster) == []
    assert any(c.startswith("delete Namespace/") for c in cluster.calls)
    assert signal.getsignal(signal.SIGTERM) == before  # handler restored


def test_main_turns_an_interrupt_into_exit_130_after_cleanup(kubeconfig: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    cluster = Interrupting(gpus_per_node=4)
    monkeypatch.setattr(cli, "_connect", lambda _t, _c: cluster)
    assert cli_main.main(["smoke", "--kubeconfig", str(kubeconfig), "--timeout", "60"]) == 130
    assert leftovers(cluster) == []
    assert "interrupted" in capsys.readouterr().err


def test_second_interrupt_during_cleanup_lists_what_is_left(kubeconfig: Path) -> None:
    class StubbornCleanup(Interrupting):
        def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
                   propagation: str = "Background") -> bool:
            if kind == "ConfigMap":
                raise KeyboardInterrupt
            return super().delete(api_version, kind, name, namespace, propagation=propagation)

    cluster = StubbornCleanup(gpus_per_node=4)
    err = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        cli.execute(args("--kubeconfig", str(kubeconfig)), connect=lambda _t, _c: cluster, out=io.StringIO(),
                    err=err, clock=FakeClock(), poll_seconds=1.0)
    text = err.getvalue()
    assert "cleanup interrupted" in text and "not deleted (delete by hand):" in text
    assert "ConfigMap/smoke-cli-probe-" in text and "Namespace/gpu-smoke-test" in text
    assert "Job/" not in text.split("not deleted")[1]  # deleted before the second interrupt


def test_keep_leaves_the_objects(kubeconfig: Path) -> None:
    cluster = FakeCluster(gpus_per_node=4)
    code, _, err = execute(cluster, "--kubeconfig", str(kubeconfig), "--keep")
    assert code == 0 and "--keep: left" in err
    assert any(x.startswith("Job/smoke-cli-gpus-") for x in leftovers(cluster))


def test_each_run_gets_its_own_run_id(kubeconfig: Path) -> None:
    ids = set()
    for _ in range(2):
        cluster = FakeCluster(gpus_per_node=4)
        _, out, _ = execute(cluster, "--kubeconfig", str(kubeconfig))
        ids.add(out.split()[2])
    assert len(ids) == 2


def test_kwok_cluster_without_stack(kubeconfig: Path) -> None:
    cluster = FakeCluster(gpus_per_node=2, kubelet=False)
    code, out, _ = execute(cluster, "--kubeconfig", str(kubeconfig), "--no-kubelet", "--scheduler", "default",
                           "--gpus", "2")
    assert code == 0, out
    assert "no kubelet on simulated nodes" in out

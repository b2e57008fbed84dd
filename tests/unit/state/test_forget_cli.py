"""`ck8s-gpu forget-cluster` over a stand-in stack (the real engine path: tests/integration/
test_unreachable_cluster.py): refused while the cluster answers, lists without --yes, imports with it."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from components.cli import forget_cluster
from components.cli.main import main
from tests.unit.state.test_forget import REL, deployment


class FakeStack:
    def __init__(self, work_dir: Path) -> None:
        from pulumi import automation as auto

        self.workspace = SimpleNamespace(work_dir=str(work_dir))
        self.exported = auto.Deployment(version=3, deployment=deployment())
        self.imported: list[Any] = []

    def export_stack(self) -> Any:
        return self.exported

    def outputs(self) -> dict[str, Any]:
        return {"kubeconfig": SimpleNamespace(value="kubeconfig text", secret=True)}

    def import_stack(self, state: Any) -> None:
        self.imported.append(state)


@pytest.fixture
def stack(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeStack:
    fake = FakeStack(tmp_path)
    monkeypatch.setattr(forget_cluster, "_select", lambda name, cwd: fake)
    return fake


def reachable(monkeypatch: pytest.MonkeyPatch, reason: str | None) -> None:
    import components.kube.client as kube_client

    monkeypatch.setattr(kube_client, "unreachable_reason", lambda kubeconfig, **_: reason)


def test_refused_while_the_cluster_answers(stack: FakeStack, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    reachable(monkeypatch, None)
    assert main(["forget-cluster", "--stack", "s", "--yes"]) == 1
    assert "answers: refusing" in capsys.readouterr().err
    assert stack.imported == []


def test_lists_without_yes_and_changes_nothing(stack: FakeStack, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    reachable(monkeypatch, "https://127.0.0.1:1 does not answer (MaxRetryError)")
    assert main(["forget-cluster", "--stack", "s"]) == 0
    out = capsys.readouterr().out
    assert "would forget 5 resource(s)" in out and "smoke-chart" in out and "nothing changed" in out
    assert stack.imported == []


def test_forgets_with_yes_and_keeps_the_export_it_started_from(
    stack: FakeStack, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    reachable(monkeypatch, "https://127.0.0.1:1 does not answer (MaxRetryError)")
    assert main(["forget-cluster", "--stack", "s", "--yes"]) == 0
    [state] = stack.imported
    assert state.version == 3 and REL not in json.dumps(state.deployment)
    [backup] = (tmp_path / "out" / "forget-cluster").glob("s-*.json")
    assert json.loads(backup.read_text())["deployment"] == deployment()


def test_unreachable_reason_says_a_closed_port_does_not_answer() -> None:
    from components.kube.client import unreachable_reason

    kubeconfig = json.dumps({"apiVersion": "v1", "kind": "Config", "current-context": "c",
                             "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
                             "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                             "users": [{"name": "u", "user": {"token": "t"}}]})
    reason = unreachable_reason(kubeconfig, timeout_seconds=2)
    assert reason is not None and "does not answer" in reason
    assert unreachable_reason("{not: [yaml", timeout_seconds=1) is not None

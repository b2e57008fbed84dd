"""The real Automation API boundary, as far as it runs without a Pulumi CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.plan.run import PROJECT_DIR
from components.stamping.backend import AutomationBackend, BackendUnavailable


def test_missing_cli_is_reported_as_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no `pulumi` anywhere
    with pytest.raises(BackendUnavailable, match="Pulumi CLI is not installed"):
        AutomationBackend(PROJECT_DIR).existing_stacks()


def test_stack_files_must_be_where_pulumi_reads_them(tmp_path: Path) -> None:
    AutomationBackend(PROJECT_DIR, PROJECT_DIR / "stacks")  # Pulumi.yaml: stackConfigDir: stacks
    with pytest.raises(BackendUnavailable, match="stackConfigDir"):
        AutomationBackend(PROJECT_DIR, tmp_path)

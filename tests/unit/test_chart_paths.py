"""Local charts as release inputs: relative to the Pulumi project, so state and plans do not change
with the folder a plan runs from or where the project is checked out (issue: `plan --diff` from
another directory reported a changed `inputs.chart`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pulumi.runtime import settings as pulumi_settings

from components import PROJECT_DIR
from components.kube.charts import CHARTS_DIR, local_chart_dir, release_chart_path
from components.plan.run import plan_stack

RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.fixture
def root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pulumi_settings.SETTINGS, "root_directory", None)


def test_relative_to_the_engines_root_directory_else_absolute(root: None, monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    monkeypatch.setattr(pulumi_settings.SETTINGS, "root_directory", str(PROJECT_DIR))
    monkeypatch.chdir(tmp_path)  # the working directory plays no part once the engine names the root
    assert release_chart_path("gpu-smoke-test") == "charts/gpu-smoke-test"
    assert local_chart_dir("charts/gpu-smoke-test") == PROJECT_DIR / "charts" / "gpu-smoke-test"
    monkeypatch.setattr(pulumi_settings.SETTINGS, "root_directory", str(tmp_path))
    assert release_chart_path("gpu-smoke-test") == str(CHARTS_DIR / "gpu-smoke-test")
    assert local_chart_dir(str(CHARTS_DIR / "kai-queues")) == CHARTS_DIR / "kai-queues"


def test_a_plan_from_another_folder_records_the_same_chart_inputs(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    def charts() -> list[str]:
        return sorted(str(r.inputs["chart"]) for r in plan_stack("local").resources if r.type == RELEASE)

    monkeypatch.chdir(PROJECT_DIR)
    here = charts()
    monkeypatch.chdir(tmp_path)
    assert charts() == here
    assert "charts/gpu-smoke-test" in here

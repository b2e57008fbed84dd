"""tools/compat_controllers.py in CI: without upstream trees it says so and exits 0; a tree
without the binaries built from it is a usage error (exit 2), never a silent pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.tools import load_tool

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "compat_controllers.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def test_without_source_trees_it_checks_nothing_and_exits_0(tmp_path: Path) -> None:
    out = tmp_path / "compat.md"
    r = run("--out", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ("compat_controllers: no upstream source tree given (--gpu-operator-src/--kai-src): "
                                "nothing checked")
    assert not out.exists()


def test_a_tree_without_its_binaries_is_refused(tmp_path: Path) -> None:
    r = run("--kai-src", str(tmp_path))
    assert r.returncode == 2 and "--kai-src needs --kai-bin-dir" in r.stderr
    assert "Traceback" not in r.stderr


def test_the_gpucluster_render_answers_only_the_dra_capability(tmp_path: Path) -> None:
    """helm_python takes no --api-versions: the copy answers the one capability test, and refuses a
    chart whose test changed (re-read it), leaving every other line alone."""
    compat = load_tool("compat_controllers")
    chart = tmp_path / "gpu-operator"
    (chart / "templates").mkdir(parents=True)
    test = '{{- if not (or (.Capabilities.APIVersions.Has "resource.k8s.io/v1/DeviceClass") x) }}fail{{- end }}\n'
    (chart / "templates" / "validations.yaml").write_text("keep: 1\n" + test)
    (chart / "templates" / "gpucluster.yaml").write_text("kind: GPUCluster\n")
    copy = compat.chart_with_dra_capability(chart, tmp_path / "work")
    assert (copy / "templates" / "validations.yaml").read_text() == "keep: 1\n" + test.replace(
        '(.Capabilities.APIVersions.Has "resource.k8s.io/v1/DeviceClass")', "true")
    assert (copy / "templates" / "gpucluster.yaml").read_text() == "kind: GPUCluster\n"
    (chart / "templates" / "validations.yaml").write_text("keep: 1\n")
    with pytest.raises(RuntimeError, match="re-read the chart"):
        compat.chart_with_dra_capability(chart, tmp_path / "work2")


def test_the_operator_gets_its_charts_literal_env() -> None:
    compat = load_tool("compat_controllers")
    deployment = {"kind": "Deployment", "metadata": {"name": "gpu-operator"}, "spec": {"template": {"spec": {
        "containers": [{"env": [{"name": "OPERATOR_NAMESPACE", "valueFrom": {"fieldRef": {}}},
                                {"name": "VALIDATOR_IMAGE", "value": "nvcr.io/nvidia/gpu-operator:v26.7.0"}]}]}}}}
    assert compat.operator_env([deployment, {"kind": "Deployment", "metadata": {"name": "nfd-master"}}]) == {
        "VALIDATOR_IMAGE": "nvcr.io/nvidia/gpu-operator:v26.7.0"}

"""`pulumi up -s kind` end to end through the Automation API: kind cluster -> add-ons -> smoke test.

An ephemeral stack (file backend in a temp dir, passphrase secrets) with the config of
stacks/Pulumi.kind.yaml under a unique kind cluster name: up -> the smoke report passed (hardware
checks skipped with a reason) -> a second preview changes nothing -> destroy -> the kind cluster
is gone. Skips naming every missing prerequisite (a reachable Docker daemon, kind, the Pulumi
CLI), or fails instead under CK8S_GPU_REQUIRE_KIND=1 (a Docker-capable job). Takes 10-20 minutes on a laptop.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.tables import pins
from tests.helpers.tools import KIND_NEEDS, copy_project, skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
STACK_FILE = ROOT / "stacks" / "Pulumi.kind.yaml"
# What `pulumi up` needs from the checkout: the program, its package and its own charts.


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.lstrip("v").split("-")[0].split(".")[:3])


def missing_prerequisites(env: dict[str, str] | None = None) -> list[str]:
    """One line per missing tool, saying what is missing and how it showed."""
    env = env if env is not None else dict(os.environ)
    path = env.get("PATH", "")
    missing: list[str] = []
    docker = shutil.which("docker", path=path)
    if docker is None:
        missing.append("Docker: `docker` is not on PATH")
    else:
        info = subprocess.run([docker, "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True,
                              env=env, timeout=30)
        if info.returncode != 0:
            last = (info.stderr.strip().splitlines() or ["no output"])[-1]
            missing.append(f"Docker daemon not reachable (`docker info` failed: {last})")
    kind = shutil.which("kind", path=path)
    want = pins.TOOLS["kind"]
    if kind is None:
        missing.append(f"kind {want} or newer: `kind` is not on PATH")
    else:
        out = subprocess.run([kind, "version"], capture_output=True, text=True, env=env, timeout=30).stdout.split()
        have = out[1] if len(out) > 1 else "unknown"
        try:
            too_old = _version_tuple(have) < _version_tuple(want)
        except ValueError:
            too_old = True
        if too_old:
            missing.append(f"kind {want} or newer: found {have}")
    if shutil.which("pulumi", path=path) is None:
        missing.append("Pulumi CLI: `pulumi` is not on PATH (https://www.pulumi.com/docs/install/)")
    return missing


def ephemeral_project(tmp: Path, stack: str, cluster_name: str) -> Path:
    """A copy of the project whose stack file is the kind stack's, renamed and with its own cluster."""
    project = copy_project(tmp / "project")
    doc = yaml.safe_load(STACK_FILE.read_text())
    doc["config"]["ck8s-gpu:settings"].setdefault("kind", {})["clusterName"] = cluster_name
    (project / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return project


def test_missing_prerequisites_are_each_named(tmp_path: Path) -> None:
    """The skip message names every missing tool (checked with stand-ins, runs everywhere)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    daemon_down = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock"
    (bin_dir / "docker").write_text(f"#!/bin/sh\necho '{daemon_down}' >&2\nexit 1\n")
    (bin_dir / "kind").write_text("#!/bin/sh\necho 'kind v0.29.0 go1.24.2 linux/amd64'\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    assert missing_prerequisites(env) == [
        "Docker daemon not reachable (`docker info` failed: Cannot connect to the Docker daemon at "
        "unix:///var/run/docker.sock)",
        f"kind {pins.TOOLS['kind']} or newer: found v0.29.0",
        "Pulumi CLI: `pulumi` is not on PATH (https://www.pulumi.com/docs/install/)",
    ]
    assert missing_prerequisites({"PATH": str(tmp_path / "empty")}) == [
        "Docker: `docker` is not on PATH",
        f"kind {pins.TOOLS['kind']} or newer: `kind` is not on PATH",
        "Pulumi CLI: `pulumi` is not on PATH (https://www.pulumi.com/docs/install/)",
    ]


def test_ephemeral_project_uses_the_kind_stack_config_under_its_own_cluster_name(tmp_path: Path) -> None:
    project = ephemeral_project(tmp_path, "kind-it", "ck8s-it-x")
    config = yaml.safe_load((project / "Pulumi.kind-it.yaml").read_text())["config"]
    original = yaml.safe_load(STACK_FILE.read_text())["config"]
    assert config["ck8s-gpu:settings"]["kind"] == {**original["ck8s-gpu:settings"]["kind"], "clusterName": "ck8s-it-x"}
    assert {k: v for k, v in config["ck8s-gpu:settings"].items() if k != "kind"} == {
        k: v for k, v in original["ck8s-gpu:settings"].items() if k != "kind"}
    assert (project / "__main__.py").is_file() and (project / "components" / "platforms" / "kind.py").is_file()


def _kind_clusters() -> list[str]:
    return subprocess.run(["kind", "get", "clusters"], capture_output=True, text=True, check=True).stdout.split()


@pytest.mark.integration
def test_kind_stack_up_smoke_passes_then_destroy(tmp_path: Path) -> None:
    missing = missing_prerequisites()
    if missing:
        # CI's machines can never run Docker: this skip is in ALLOWED_SKIPS (tests/helpers/tools.py), so CI=true
        # keeps it a skip; a Docker-capable job sets CK8S_GPU_REQUIRE_KIND=1, which makes it a failure.
        skip_or_fail(KIND_NEEDS + "; ".join(missing))
    from pulumi import automation as auto

    from components.smoke.report import passed

    suffix = uuid.uuid4().hex[:6]
    stack_name, cluster_name = f"kind-it-{suffix}", f"ck8s-it-{suffix}"
    project = ephemeral_project(tmp_path, stack_name, cluster_name)
    state = tmp_path / "state"
    state.mkdir()
    opts = auto.LocalWorkspaceOptions(
        work_dir=str(project),
        # The interpreter running this test has every dependency: the program runs on it too.
        project_settings=auto.ProjectSettings(
            name="ck8s-gpu", runtime=auto.ProjectRuntimeInfo("python", {"virtualenv": sys.prefix})),
        env_vars={"PULUMI_BACKEND_URL": f"file://{state}", "PULUMI_CONFIG_PASSPHRASE": "kind-integration-test"},
    )
    stack = auto.create_stack(stack_name, work_dir=str(project), opts=opts)
    destroyed = False
    try:
        up = stack.up(on_output=print, color="never")
        outputs: dict[str, Any] = {k: v.value for k, v in up.outputs.items()}
        assert up.outputs["kubeconfig"].secret, "the kubeconfig output must be a secret"
        report = outputs["smokeReport"]
        summary = report["results"]["summary"]
        assert passed(report), f"smoke test did not pass: {summary}"
        for test in report["results"]["tests"]:
            if test["status"] == "skipped":
                assert test["message"], f"{test['name']} skipped without a reason"
        assert cluster_name in _kind_clusters()

        again = stack.preview(on_output=print, color="never")
        changes = {op: n for op, n in again.change_summary.items() if op != "same" and n}  # OpType is a str
        assert changes == {}, f"a second preview wants changes: {changes}"

        stack.destroy(on_output=print, color="never")
        destroyed = True
        assert cluster_name not in _kind_clusters()
    finally:
        if not destroyed:
            try:
                stack.destroy(on_output=print, color="never")
            finally:
                subprocess.run(["kind", "delete", "cluster", "--name", cluster_name], check=False)
        stack.workspace.remove_stack(stack_name)

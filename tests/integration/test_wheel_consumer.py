"""A consumer outside the checkout: the built wheel installed into a fresh virtualenv, the examples/
programs planned from it under the mock engine, and the first deployed onto the local control plane
by the real engine (docs/components.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import PROJECT_DIR
from components.smoke.report import passed
from tests.helpers.local_stack import local_settings, pool_nodes, publish, start_cluster
from tests.helpers.wheel import Installed, install
from tests.integration.conftest import EngineTools, inline_kubeconfig
from tests.integration.test_local_engine import PASSPHRASE

pytestmark = pytest.mark.integration

EXAMPLES = PROJECT_DIR / "examples"
ADDONS_EXAMPLE = "gpu-addons-existing-cluster"
# Where the smoke chart is, seen from an example's folder whose `venv` holds the wheel.
SMOKE_CHART = (f"venv/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages/"
               "ck8s_gpu/_charts/gpu-smoke-test")
CLUSTER_EXAMPLE = "gpu-cluster-own-vpc"

# Runs inside the fresh virtualenv, in the example's copy: the example's own program under the mock
# engine, with its Pulumi.example.yaml config (+ secrets from argv); prints what it registered.
PLAN = textwrap.dedent("""
    import json, runpy, sys
    from pathlib import Path
    import yaml
    import ck8s_gpu
    from ck8s_gpu.plan.mockengine import run_program

    project = yaml.safe_load(Path("Pulumi.yaml").read_text())["name"]
    config = dict(yaml.safe_load(Path("Pulumi.example.yaml").read_text())["config"])
    secrets = json.loads(sys.argv[1])
    config.update({f"{project}:{k}": v for k, v in secrets.items()})
    try:
        run = run_program(lambda: runpy.run_path("__main__.py", run_name="__main__"), config, stack="example",
                          project=project, region=config.get(f"{project}:region", ""),
                          secret_keys=[f"{project}:{k}" for k in secrets], root_directory=Path.cwd())
    except Exception as exc:
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        sys.exit(0)
    print(json.dumps({"components": ck8s_gpu.__file__, "outputs": run.outputs,
                      "resources": [{"type": r.type, "name": r.name, "parent": r.parent, "urn": r.urn,
                                     "chart": r.inputs.get("chart")} for r in run.resources]}))
""")
KUBECONFIG = ("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: c, cluster: {server: "
              "'https://127.0.0.1:6443'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
              "users: [{name: u, user: {token: t0ken-not-real}}]\n")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return install(tmp_path_factory.mktemp("wheel"))


def example_copy(name: str, dest: Path, installed: Installed) -> Path:
    """The example as a consumer has it: its own folder, its `venv` the fresh virtualenv."""
    project = dest / name
    shutil.copytree(EXAMPLES / name, project)
    (project / "venv").symlink_to(installed.venv)
    return project


def plan(installed: Installed, project: Path, secrets: dict[str, str]) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PULUMI_CONFIG")}
    python = project / "venv" / "bin" / "python"  # as the language host runs it
    out = subprocess.run([str(python), "-c", PLAN, json.dumps(secrets)], cwd=project, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_the_wheel_carries_charts_and_node_script_and_imports_only_from_itself(installed: Installed,
                                                                              tmp_path: Path) -> None:
    code = ("import ck8s_gpu; from ck8s_gpu.kube.charts import CHARTS_DIR; from pathlib import Path; "
            "print(ck8s_gpu.__file__); print(CHARTS_DIR); "
            "print((Path(ck8s_gpu.__file__).parent / 'aws/scripts/ck8s-node.sh').is_file())")
    out = subprocess.run([str(installed.python), "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    site = str(installed.site_packages)
    assert out[0].startswith(site) and out[1] == f"{site}/ck8s_gpu/_charts" and out[2] == "True", out
    charts = {p.name for p in Path(out[1]).iterdir()}
    assert charts == {p.name for p in (PROJECT_DIR / "charts").iterdir()}


def test_the_addons_example_plans_from_the_wheel(installed: Installed, tmp_path: Path) -> None:
    project = example_copy(ADDONS_EXAMPLE, tmp_path, installed)
    got = plan(installed, project, {"kubeconfig": KUBECONFIG})
    assert "error" not in got, got
    assert Path(got["components"]).resolve().is_relative_to(installed.site_packages.resolve()), got["components"]
    by_type = {r["type"]: r for r in got["resources"]}
    top = by_type["ck8s-gpu:index:GpuAddons"]
    children = {r["type"] for r in got["resources"] if r["parent"] == top["urn"]}
    assert {"ck8s-gpu:index:ExistingCluster", "ck8s-gpu:index:AddonSet", "ck8s-gpu:index:SmokeTest"} <= children
    charts = [r["chart"] for r in got["resources"] if r["type"] == "kubernetes:helm.sh/v3:Release"]
    assert len(charts) >= 4, charts  # GPU Operator, DRA driver, KAI, its queues, ... and the smoke test
    # The smoke chart comes from the wheel, named relative to the consumer's project (its venv).
    assert SMOKE_CHART in charts, charts
    assert got["outputs"]["addons"] and "t0ken" not in json.dumps(got)


def test_the_own_vpc_example_plans_from_the_wheel(installed: Installed, tmp_path: Path) -> None:
    project = example_copy(CLUSTER_EXAMPLE, tmp_path, installed)
    got = plan(installed, project, {})
    assert "error" not in got, got
    types = [r["type"] for r in got["resources"]]
    assert "ck8s-gpu:index:GpuCluster" in types and "ck8s-gpu:index:AwsCluster" in types
    assert "aws:ec2/vpc:Vpc" not in types, "the example's VPC is the consumer's own"
    assert any(t == "aws:autoscaling/group:Group" for t in types)


def test_bad_args_end_in_one_message_naming_every_field(installed: Installed, tmp_path: Path) -> None:
    project = example_copy(ADDONS_EXAMPLE, tmp_path, installed)
    doc = yaml.safe_load((project / "Pulumi.example.yaml").read_text())
    doc["config"].update({"gpu-addons:nodes": "-1", "gpu-addons:smokeGpus": "0"})
    (project / "Pulumi.example.yaml").write_text(yaml.safe_dump(doc))
    got = plan(installed, project, {"kubeconfig": KUBECONFIG})
    assert got["error"].startswith("RunError: invalid settings in GpuAddonsArgs gpu"), got
    assert "settings.nodePools[0].desiredSize" in got["error"] and "settings.smokeTest.gpus" in got["error"]


@pytest.fixture(scope="module")
def local_cluster(engine_tools: EngineTools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    work = tmp_path_factory.mktemp("wheel-local")
    nodes = pool_nodes(local_settings())
    cluster = start_cluster(work / "cluster", engine_tools.bin_dir, nodes)
    try:
        publish(cluster, {n: g for n, (_, _, g) in nodes.items()}, next(iter(nodes.values()))[1])
        yield cluster
    finally:
        cluster.down()


def test_the_real_engine_deploys_the_addons_example_from_the_wheel(
    installed: Installed, local_cluster: Any, engine_tools: EngineTools, tmp_path: Path,
) -> None:
    from pulumi import automation as auto

    project = example_copy(ADDONS_EXAMPLE, tmp_path, installed)
    opts = engine_tools.workspace(tmp_path, project, PASSPHRASE, virtualenv=None, env={
        "PULUMI_PYTHON_CMD": str(installed.python),  # the dynamic providers run from the wheel too
        "CK8S_GPU_SMOKE_REPORT_DIR": str(tmp_path / "reports")})
    settings = local_settings()
    pool = settings["nodePools"][0]
    name = f"wheel-{uuid.uuid4().hex[:6]}"
    (project / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": {
        "gpu-addons:instanceType": pool["instanceType"], "gpu-addons:nodes": str(pool["desiredSize"]),
        "gpu-addons:smokeGpus": str(settings["smokeTest"]["gpus"]), "gpu-addons:scheduler": "default",
        "gpu-addons:simulatedGpus": "true"}}))
    stack = auto.create_stack(name, work_dir=str(project), opts=opts)
    try:
        stack.set_config("kubeconfig", auto.ConfigValue(inline_kubeconfig(Path(local_cluster.kubeconfig)),
                                                        secret=True))
        up = stack.up(on_output=print, color="never")
        report = up.outputs["smokeReport"].value
        assert passed(report), report["results"]["summary"]
        state = json.dumps(stack.export_stack().deployment)
        assert SMOKE_CHART in state
        assert str(PROJECT_DIR / "charts") not in state, "the checkout's charts must play no part"
        stack.destroy(on_output=print, color="never")
    finally:
        stack.workspace.remove_stack(stack.name, force=True)
    assert sys.prefix != str(installed.venv)

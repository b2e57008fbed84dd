"""A Pulumi YAML program (examples/yaml-gpu-addons) deploys `GpuAddons` onto the local control plane
with the real engine: the CLI and the YAML language host built by tools/build.sh, the component
provider `pulumi-resource-ck8s-gpu` of the wheel installed into a fresh virtualenv outside the
checkout (tests/helpers/wheel.py), the kubernetes plugin of the tools cache.

How the engine finds the provider: the example's Pulumi.yaml names `venv/bin` as a project plugin
(`plugins.providers[].path`). CLI v3.274.1 resolves it against the project folder
(pkg/resource/plugin/host.go `parsePluginOpts`), and so does the YAML host's own schema loader,
which gets the project's plugins (pulumi-yaml pkg/server/server.go `Run` -> pkg/pulumiyaml/packages.go
`NewPackageLoader`). Project plugins come before $PATH and PULUMI_HOME
(sdk/go/common/workspace/plugins.go `getPluginInfoAndPath`), so the tools' environment stays as it
is: PULUMI_IGNORE_AMBIENT_PLUGINS=true (no "using ... from $PATH" warning, the kubernetes plugin from
the cache's PULUMI_HOME), and nothing is installed into the shared cache. The two alternatives
work too but cost more: the venv's bin on PATH needs ambient plugins on (then every plugin on PATH
wins, with a warning each run); `pulumi plugin install --file` writes into a PULUMI_HOME (the shared
cache's, or a per-test copy of the kubernetes plugin).
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from components import PROJECT_DIR
from components.smoke.report import passed
from tests.helpers.local_stack import local_settings, pool_nodes, publish, start_cluster
from tests.helpers.tools import skip_or_fail
from tests.helpers.wheel import Installed, install
from tests.integration.conftest import EngineTools, inline_kubeconfig
from tests.integration.test_local_engine import PASSPHRASE
from tests.integration.test_wheel_consumer import ADDONS_EXAMPLE
from tests.integration.test_wheel_consumer import example_copy as python_example_copy
from tests.integration.test_wheel_consumer import plan as mock_plan

pytestmark = pytest.mark.integration

EXAMPLE = PROJECT_DIR / "examples" / "yaml-gpu-addons"
PROJECT = "gpu-addons-yaml"
PROVIDER = "pulumi-resource-ck8s-gpu"
YAML_HOST = "pulumi-language-yaml"
# Not a real cluster: the refusal of bad inputs happens before anything talks to it.
KUBECONFIG = ("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: c, cluster: {server: "
              "'https://127.0.0.1:6443'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
              "users: [{name: u, user: {token: t0ken-not-real}}]\n")


@pytest.fixture(scope="module")
def yaml_tools(engine_tools: EngineTools) -> EngineTools:
    if not os.access(engine_tools.bin_dir / YAML_HOST, os.X_OK):
        skip_or_fail(f"{YAML_HOST} not built in {engine_tools.bin_dir}; build it with `bash tools/build.sh`")
    return engine_tools


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    got = install(tmp_path_factory.mktemp("yaml-wheel"))
    if not os.access(got.venv / "bin" / PROVIDER, os.X_OK):
        skip_or_fail(f"the wheel has no console script {PROVIDER} (pyproject.toml [project.scripts])")
    return got


def example_copy(dest: Path, installed: Installed) -> Path:
    """The example as a consumer has it: its own folder, its `venv` the fresh virtualenv."""
    project = dest / "yaml-gpu-addons"
    shutil.copytree(EXAMPLE, project)
    (project / "venv").symlink_to(installed.venv)
    return project


def new_stack(tools: EngineTools, work: Path, project: Path, config: dict[str, str], kubeconfig: str) -> Any:
    from pulumi import automation as auto

    opts = tools.workspace(work, project, PASSPHRASE, virtualenv=None, env={
        "PULUMI_PYTHON_CMD": str(project / "venv" / "bin" / "python"),  # dynamic providers from the wheel
        "CK8S_GPU_SMOKE_REPORT_DIR": str(work / "reports")})
    name = f"yaml-{uuid.uuid4().hex[:6]}"
    (project / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(
        {"config": {f"{PROJECT}:{k}": v for k, v in config.items()}}))
    stack = auto.create_stack(name, work_dir=str(project), opts=opts)
    stack.set_config("kubeconfig", auto.ConfigValue(kubeconfig, secret=True))
    return stack


def test_the_example_is_a_yaml_program_using_the_component() -> None:
    doc = yaml.safe_load((EXAMPLE / "Pulumi.yaml").read_text())
    assert doc["name"] == PROJECT and doc["runtime"] == "yaml"
    assert doc["config"]["kubeconfig"] == {"type": "string", "secret": True}
    assert [r["type"] for r in doc["resources"].values()] == ["ck8s-gpu:index:GpuAddons"]
    assert doc["outputs"]["smokeReport"] == "${gpu.smokeReport}"
    assert doc["plugins"]["providers"] == [{"name": "ck8s-gpu", "path": "venv/bin"}]
    example = yaml.safe_load((EXAMPLE / "Pulumi.example.yaml").read_text())["config"]
    assert set(example) <= {f"{PROJECT}:{k}" for k in doc["config"]}, example


def test_bad_inputs_from_yaml_end_in_one_message_naming_every_field(
    yaml_tools: EngineTools, installed: Installed, tmp_path: Path,
) -> None:
    from pulumi import automation as auto

    project = example_copy(tmp_path, installed)
    stack = new_stack(yaml_tools, tmp_path, project, {"instanceType": "g6.xlarge", "nodes": "-1", "smokeGpus": "0",
                                                      "scheduler": "default", "simulatedGpus": "true"}, KUBECONFIG)
    try:
        with pytest.raises(auto.CommandError) as err:
            stack.preview(color="never")
        text = str(err.value)
        # The provider's one message (components/api.py via InputPropertiesError), as the engine shows it.
        assert "ck8s-gpu:index:GpuAddons resource 'gpu' has a problem: invalid settings in GpuAddonsArgs" in text, \
            text[-3000:]
        assert "property settings.nodePools[0].desiredSize has a problem" in text, text[-3000:]
        assert "property settings.smokeTest.gpus has a problem" in text, text[-3000:]
        assert "Traceback" not in text, text[-3000:]
        assert "t0ken-not-real" not in text
    finally:
        stack.workspace.remove_stack(stack.name, force=True)


def python_addons(installed: Installed, work: Path, config: dict[str, str]) -> list[str]:
    """The `addons` output of the Python example (gpu-addons-existing-cluster) given the same config,
    planned from the wheel under the mock engine."""
    project = python_example_copy(ADDONS_EXAMPLE, work / "python", installed)
    name = yaml.safe_load((project / "Pulumi.yaml").read_text())["name"]
    stack_config = {f"{name}:{k}": v for k, v in config.items()}
    (project / "Pulumi.example.yaml").write_text(yaml.safe_dump({"config": stack_config}))
    got = mock_plan(installed, project, {"kubeconfig": KUBECONFIG})
    assert "error" not in got, got
    return list(got["outputs"]["addons"])


@pytest.fixture(scope="module")
def local_cluster(yaml_tools: EngineTools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    work = tmp_path_factory.mktemp("yaml-local")
    nodes = pool_nodes(local_settings())
    cluster = start_cluster(work / "cluster", yaml_tools.bin_dir, nodes)
    try:
        publish(cluster, {n: g for n, (_, _, g) in nodes.items()}, next(iter(nodes.values()))[1])
        yield cluster
    finally:
        cluster.down()


def test_the_yaml_program_deploys_gpu_addons_and_its_smoke_report_passes(
    yaml_tools: EngineTools, installed: Installed, local_cluster: Any, tmp_path: Path,
) -> None:
    project = example_copy(tmp_path, installed)
    settings = local_settings()
    pool = settings["nodePools"][0]
    config = {"instanceType": pool["instanceType"], "nodes": str(pool["desiredSize"]),
              "smokeGpus": str(settings["smokeTest"]["gpus"]), "scheduler": "default", "simulatedGpus": "true"}
    stack = new_stack(yaml_tools, tmp_path, project, config, inline_kubeconfig(Path(local_cluster.kubeconfig)))
    try:
        up = stack.up(on_output=print, color="never")
        assert f"{PROVIDER} from $PATH" not in up.stdout, "the provider must come from the project plugin"
        report = up.outputs["smokeReport"].value
        assert passed(report), report["results"]["summary"]
        # The same add-ons as the Python example plans for the same inputs (none on simulated GPUs).
        assert up.outputs["addons"].value == python_addons(installed, tmp_path, config), up.outputs["addons"]
        deployment = stack.export_stack().deployment
        types = {r["type"] for r in deployment["resources"]}
        assert {"ck8s-gpu:index:GpuAddons", "ck8s-gpu:index:SmokeTest"} <= types, types
        assert str(PROJECT_DIR / "charts") not in json.dumps(deployment), "the checkout's charts must play no part"
        stack.destroy(on_output=print, color="never")
        left = [r["type"] for r in stack.export_stack().deployment.get("resources", [])]
        assert left == [], left
    finally:
        stack.workspace.remove_stack(stack.name, force=True)

"""The component provider as other Pulumi languages reach it (ADR 0045), with the real Pulumi CLI:

- the provider executable of the built wheel serves exactly the golden schema (`pulumi package
  get-schema`);
- `pulumi package gen-sdk` makes the TypeScript and Go SDKs from the golden schema; each compiles,
  with a small program using GpuAddons and GpuCluster (tests/sdk/), and the same program with a
  wrong type in it does not (the SDK's types are really checked);
- C#: generated and compiled where the toolchain exists; here it cannot be (the skip says why);
- bad inputs sent through the engine end in one error naming every bad field, and no traceback
  of the provider's.

Toolchains come from the registries: npm packages pinned in tests/sdk/nodejs/package-lock.json,
installed once per lockfile under $CK8S_GPU_CACHE/sdk (outside the checkout); Go modules from
the module proxy into Go's own module cache. Needs `bash tools/build.sh` (the CLI and the SDK
generators of tools/mod/sdkgen); skips naming what is missing, fails under CK8S_GPU_REQUIRE_TOOLS=1.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components import PROJECT_DIR
from tests.helpers.tools import skip_or_fail
from tests.helpers.wheel import Installed, install
from tests.integration.conftest import EngineTools, inline_kubeconfig

pytestmark = pytest.mark.integration

GOLDEN = PROJECT_DIR / "tests" / "golden" / "provider" / "schema.json"
SDK_CHECKS = PROJECT_DIR / "tests" / "sdk"
GENERATORS = ("pulumi-language-nodejs", "pulumi-language-go")  # tools/mod/sdkgen, built by tools/build.sh
CSHARP_GAP = "C# SDK: "  # the allow-listed skip's prefix (tests/helpers/tools.py ALLOWED_SKIPS)
PASSPHRASE = "provider-sdks-integration-test"


def cache_root() -> Path:
    return Path(os.environ.get("CK8S_GPU_CACHE", Path.home() / ".cache" / "ck8s-gpu")) / "sdk"


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 600,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                         timeout=timeout)
    if check and out.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} (in {cwd}) exited {out.returncode}:\n{out.stdout[-3000:]}\n"
                             f"{out.stderr[-3000:]}")
    return out


@pytest.fixture(scope="module")
def cli(engine_tools: EngineTools) -> EngineTools:
    missing = [g for g in GENERATORS if not os.access(engine_tools.bin_dir / g, os.X_OK)]
    if missing:
        skip_or_fail(f"SDK generators not built: missing {', '.join(missing)} in {engine_tools.bin_dir}; "
                     "build them with `bash tools/build.sh` (tools/mod/sdkgen)")
    return engine_tools


def gen_sdk(cli: EngineTools, language: str, out: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = cli.env(out / "state", PASSPHRASE)
    return run([str(cli.bin_dir / "pulumi"), "package", "gen-sdk", str(GOLDEN), "--language", language,
                "--out", str(out)], out, env, timeout=300, check=check)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return install(tmp_path_factory.mktemp("provider-wheel"))


def test_the_wheels_provider_serves_the_golden_schema(cli: EngineTools, installed: Installed, tmp_path: Path) -> None:
    provider = installed.venv / "bin" / "pulumi-resource-ck8s-gpu"
    assert os.access(provider, os.X_OK), f"the wheel installs no {provider.name} console script"
    out = run([str(cli.bin_dir / "pulumi"), "package", "get-schema", str(provider)], tmp_path,
              cli.env(tmp_path / "state", PASSPHRASE), timeout=120)
    assert json.loads(out.stdout) == json.loads(GOLDEN.read_text())


# --- TypeScript ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def node_modules() -> Path:
    """tests/sdk/nodejs's pinned packages (`npm ci`), once per lockfile, outside the checkout."""
    npm = shutil.which("npm")
    if npm is None:
        skip_or_fail("TypeScript SDK check needs npm (Node.js) on PATH")
    src = SDK_CHECKS / "nodejs"
    key = hashlib.sha256((src / "package-lock.json").read_bytes()).hexdigest()[:16]
    done = cache_root() / "nodejs" / key
    if not (done / "node_modules" / ".bin" / "tsc").exists():
        work = done.with_name(f"{key}.tmp-{os.getpid()}")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy2(src / name, work / name)
        run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"], work, timeout=600)
        shutil.rmtree(done, ignore_errors=True)
        work.rename(done)
    return done / "node_modules"


def node_program(app: Path, sdk_bin: Path, node_modules: Path, source: str) -> Path:
    """The program with a node_modules of the pinned packages and the SDK as `@ck8s-gpu/pulumi`."""
    app.mkdir()
    shutil.copy2(SDK_CHECKS / "nodejs" / "tsconfig.json", app / "tsconfig.json")
    (app / "index.ts").write_text(source)
    modules = app / "node_modules"
    modules.mkdir()
    for entry in node_modules.iterdir():
        (modules / entry.name).symlink_to(entry)
    package = json.loads((sdk_bin.parent / "package.json").read_text())["name"]
    scope, name = package.split("/")
    (modules / scope).mkdir()
    (modules / scope / name).symlink_to(sdk_bin)
    return app


def test_the_typescript_sdk_and_a_program_using_it_compile(cli: EngineTools, node_modules: Path,
                                                           tmp_path: Path) -> None:
    gen_sdk(cli, "nodejs", tmp_path)
    sdk = tmp_path / "nodejs"
    assert json.loads((sdk / "package.json").read_text())["name"] == "@ck8s-gpu/pulumi"
    (sdk / "node_modules").symlink_to(node_modules)
    tsc = str(node_modules / ".bin" / "tsc")
    run([tsc, "-p", str(sdk)], sdk, timeout=300)  # the SDK's own tsconfig (strict), into bin/
    shutil.copy2(sdk / "package.json", sdk / "bin" / "package.json")  # the layout `npm publish bin` ships
    source = (SDK_CHECKS / "nodejs" / "index.ts").read_text()
    run([tsc, "-p", "."], node_program(tmp_path / "app", sdk / "bin", node_modules, source), timeout=300)
    wrong = source.replace('instanceType: "g6.xlarge", nodes: 2', 'instanceType: 3, nodes: 2')
    assert wrong != source
    out = run([tsc, "-p", "."], node_program(tmp_path / "wrong", sdk / "bin", node_modules, wrong),
              timeout=300, check=False)
    assert out.returncode != 0 and "Type 'number' is not assignable to type 'string'" in out.stdout, out.stdout


# --- Go --------------------------------------------------------------------------------------

def go_build(go: str, module: Path) -> subprocess.CompletedProcess[str]:
    env = {"GOTOOLCHAIN": "local", "GOFLAGS": "-mod=readonly -buildvcs=false", "CGO_ENABLED": "0"}
    return run([go, "build", "-trimpath", "-o", os.devnull, ".", "ck8s-gpu.local/sdk/go/..."], module, env,
               timeout=600, check=False)


def go_program(dest: Path, sdk: Path, source: str) -> Path:
    dest.mkdir()
    for name in ("go.mod", "go.sum"):
        shutil.copy2(SDK_CHECKS / "go" / name, dest / name)
    (dest / "main.go").write_text(source)
    (dest / "sdk").mkdir()
    shutil.copytree(sdk, dest / "sdk" / "go")  # where go.mod's replace points
    return dest


def test_the_go_sdk_and_a_program_using_it_compile(cli: EngineTools, tmp_path: Path) -> None:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if go is None:
        skip_or_fail("Go SDK check needs the go toolchain on PATH")
    gen_sdk(cli, "go", tmp_path)
    sdk = tmp_path / "go"
    assert (sdk / "go.mod").read_text().startswith("module ck8s-gpu.local/sdk/go\n")
    assert "package ck8sgpu" in (sdk / "ck8sgpu" / "gpuAddons.go").read_text()
    source = (SDK_CHECKS / "go" / "main.go").read_text()
    out = go_build(go, go_program(tmp_path / "app", sdk, source))
    assert out.returncode == 0, out.stderr[-3000:]
    wrong = source.replace('InstanceType: "g6.xlarge", Nodes', "InstanceType: 3, Nodes")
    assert wrong != source
    out = go_build(go, go_program(tmp_path / "wrong", sdk, wrong))
    assert out.returncode != 0 and "cannot use 3 (untyped int constant) as string value" in out.stderr, out.stderr


# --- C# --------------------------------------------------------------------------------------

def test_the_csharp_sdk(cli: EngineTools, tmp_path: Path) -> None:
    out = gen_sdk(cli, "dotnet", tmp_path, check=False)
    if out.returncode != 0:
        error = " ".join((out.stderr or out.stdout).split())
        skip_or_fail(f"{CSHARP_GAP}`pulumi package gen-sdk --language dotnet` failed: {error!r}. Its generator "
                     "is the .NET language host (module github.com/pulumi/pulumi-dotnet/pulumi-language-dotnet/v3), "
                     "which the Go module proxy refuses (403 Forbidden); and nothing could compile the SDK here: "
                     "Debian bookworm packages no .NET SDK (`apt-cache policy dotnet-sdk-8.0` knows no such "
                     "package), and the .NET SDK of Pulumi it builds against is the NuGet package `Pulumi`, "
                     "from nuget.org, which this machine cannot reach")
    sdk = tmp_path / "dotnet"
    sources = "\n".join(p.read_text() for p in sdk.rglob("*.cs"))
    assert "namespace Ck8s.Gpu" in sources and "class GpuAddons" in sources and "class GpuCluster" in sources
    dotnet = shutil.which("dotnet")
    if dotnet is None:
        skip_or_fail(f"{CSHARP_GAP}generated, not compiled: no `dotnet` on PATH")
    run([dotnet, "build", str(next(sdk.glob("*.csproj")))], sdk, timeout=600)


# --- bad inputs through the engine -------------------------------------------------------------

def write_project(project: Path, name: str, installed: Installed) -> None:
    """Pulumi.yaml of a Python program run by the wheel's virtualenv, the provider from its bin/ (a
    project-local provider: `plugins.providers[].path`, as `pulumi package add` of a local one)."""
    (project / "Pulumi.yaml").write_text(json.dumps({
        "name": name, "runtime": {"name": "python", "options": {"virtualenv": str(installed.venv)}},
        "plugins": {"providers": [{"name": "ck8s-gpu", "path": str(installed.venv / "bin")}]}}))


REMOTE_PROGRAM = textwrap.dedent('''
    import pulumi

    class GpuAddons(pulumi.ComponentResource):
        """What every language's SDK does: register the component remotely, its provider builds it."""
        def __init__(self, name, props, opts=None):
            super().__init__("ck8s-gpu:index:GpuAddons", name, props, opts, remote=True)

    GpuAddons("bad", {"kubeconfig": pulumi.Output.secret("apiVersion: v1"), "driver": "bogus",
                      "pools": [{"name": "gpu", "nodes": -1}], "smokeTest": {"gpus": 0}})
''')


def test_bad_inputs_through_the_engine_end_in_one_error_naming_every_field(
    cli: EngineTools, installed: Installed, tmp_path: Path,
) -> None:
    project = tmp_path / "program"
    project.mkdir()
    (project / "__main__.py").write_text(REMOTE_PROGRAM)
    write_project(project, "remote-bad-inputs", installed)
    # A stack with config: the language host reads it (an empty one is refused).
    (project / "Pulumi.t.yaml").write_text(json.dumps({"config": {"remote-bad-inputs:note": "bad inputs"}}))
    (tmp_path / "state").mkdir()
    env = {**cli.env(tmp_path / "state", PASSPHRASE), "PULUMI_PYTHON_CMD": str(installed.python)}
    pulumi = str(cli.bin_dir / "pulumi")
    run([pulumi, "stack", "init", "t", "--non-interactive"], project, env, timeout=120)
    out = run([pulumi, "preview", "--non-interactive", "--color", "never", "--stack", "t"], project, env,
              timeout=300, check=False)
    text = out.stdout + out.stderr
    assert out.returncode != 0, text
    header = "error: ck8s-gpu:index:GpuAddons resource 'bad' has a problem: invalid settings in GpuAddonsArgs bad ("
    assert header in text, text[-4000:]
    for path in ("settings.gpuStack.driver", "settings.nodePools[0].instanceType",
                 "settings.nodePools[0].desiredSize", "settings.smokeTest.gpus"):
        assert f"- property {path} has a problem: " in text, path
    # Each problem once, and nothing of the provider's own code in a traceback.
    assert text.count("- property settings.gpuStack.driver has a problem") == 1
    assert "ck8s_gpu/" not in text and "provider/server.py" not in text


# --- a good program through the engine onto the local control plane ----------------------------

DEPLOY_PROGRAM = textwrap.dedent('''
    import json
    import pulumi

    class GpuAddons(pulumi.ComponentResource):
        """As a generated SDK registers it: the outputs are the props the provider's state fills."""
        def __init__(self, name, props, opts=None):
            props = {**props, "addons": None, "smokeReport": None}
            super().__init__("ck8s-gpu:index:GpuAddons", name, props, opts, remote=True)

    config = pulumi.Config()
    gpu = GpuAddons("gpu", {"kubeconfig": config.require_secret("kubeconfig"), "simulatedGpus": True,
                            **json.loads(config.require("inputs"))})
    pulumi.export("addons", gpu.addons)
    pulumi.export("smokeReport", gpu.smokeReport)
    pulumi.export("kubeconfig", gpu.kubeconfig)
''')


@pytest.fixture(scope="module")
def local_cluster(cli: EngineTools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.helpers.local_stack import local_settings, pool_nodes, publish, start_cluster

    nodes = pool_nodes(local_settings())
    cluster = start_cluster(tmp_path_factory.mktemp("provider-local") / "cluster", cli.bin_dir, nodes)
    try:
        publish(cluster, {n: g for n, (_, _, g) in nodes.items()}, next(iter(nodes.values()))[1])
        yield cluster
    finally:
        cluster.down()


def test_the_engine_deploys_gpu_addons_through_the_provider(
    cli: EngineTools, installed: Installed, local_cluster: Any, tmp_path: Path,
) -> None:
    """Construct under the real engine: the provider process registers the children (kubernetes
    provider, Helm releases, the dynamic providers of the readiness gate and the smoke run) and
    returns the outputs; the smoke report passes, the kubeconfig stays a secret, destroy empties it."""
    from pulumi import automation as auto

    from components.smoke.report import passed
    from tests.helpers.local_stack import local_settings

    project = tmp_path / "program"
    project.mkdir()
    (project / "__main__.py").write_text(DEPLOY_PROGRAM)
    settings = local_settings()
    pool = settings["nodePools"][0]
    inputs = {"pools": [{"name": pool["name"], "instanceType": pool["instanceType"], "nodes": pool["desiredSize"]}],
              "smokeTest": {"gpus": settings["smokeTest"]["gpus"], "scheduler": "default"}}
    write_project(project, "remote-gpu-addons", installed)
    opts = cli.workspace(tmp_path, project, PASSPHRASE, virtualenv=None, env={
        "PULUMI_PYTHON_CMD": str(installed.python),  # the dynamic providers' host runs the wheel too
        "CK8S_GPU_SMOKE_REPORT_DIR": str(tmp_path / "reports")})
    stack = auto.create_stack("t", work_dir=str(project), opts=opts)
    try:
        stack.set_config("kubeconfig", auto.ConfigValue(inline_kubeconfig(Path(local_cluster.kubeconfig)),
                                                        secret=True))
        stack.set_config("inputs", auto.ConfigValue(json.dumps(inputs)))
        up = stack.up(on_output=print, color="never")
        assert passed(up.outputs["smokeReport"].value), up.outputs["smokeReport"].value
        assert up.outputs["kubeconfig"].secret
        state = stack.export_stack().deployment
        types = {r["type"] for r in state["resources"]}
        assert {"ck8s-gpu:index:GpuAddons", "ck8s-gpu:index:LocalCluster", "ck8s-gpu:index:SmokeTest",
                "pulumi:providers:kubernetes", "kubernetes:helm.sh/v3:Release"} <= types, types
        assert any(t.startswith("pulumi-python:dynamic") for t in types), types
        stack.destroy(on_output=print, color="never")
        assert not [r for r in stack.export_stack().deployment.get("resources", [])
                    if r["type"] != "pulumi:pulumi:Stack"]
    finally:
        stack.workspace.remove_stack(stack.name, force=True)

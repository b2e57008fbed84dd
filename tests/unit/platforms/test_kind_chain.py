"""The kind stack's chain under the mock engine: kind cluster -> API gate -> add-ons -> smoke test.

Built with the real components exactly as the program wires them (make_cluster, AddonSet,
SmokeTest), so a change in any of them that breaks the chain on kind fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from components.addons.addon_set import AddonSet
from components.cli.mockengine import PlanRun, Recorded, run_program
from components.platforms import make_cluster
from components.settings.load import load_stack
from components.smoke.component import SmokeTest
from tests.unit.platforms.conftest import patch_kind_stdout

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def run() -> PlanRun:
    settings = load_stack(ROOT / "stacks" / "Pulumi.kind.yaml")

    def program() -> None:
        cluster = make_cluster("ck8s", settings)
        addons = AddonSet("addons", settings, cluster)
        SmokeTest("smoke", settings, cluster, addons.smoke_dependencies)

    with pytest.MonkeyPatch.context() as mp:  # module scope: the autouse patch is not active yet
        patch_kind_stdout(mp)
        return run_program(program, {}, stack="kind")


def named(run: PlanRun, suffix: str) -> Recorded:
    (found,) = [r for r in run.resources if r.name.endswith(suffix)]
    return found


def ancestors(run: PlanRun, res: Recorded) -> set[str]:
    """Every URN `res` waits for, directly or through its dependencies and its parents' dependencies."""
    by_urn = {r.urn: r for r in run.resources}
    seen: set[str] = set()
    todo = [*res.dependencies, res.parent]
    while todo:
        urn = todo.pop()
        if urn in seen or urn not in by_urn:
            continue
        seen.add(urn)
        todo += [*by_urn[urn].dependencies, by_urn[urn].parent]
    return seen


def test_kind_cluster_gates_every_kubernetes_resource(run: PlanRun) -> None:
    command = named(run, "ck8s-kind")
    ready = named(run, "ck8s-api-ready")
    provider = named(run, "ck8s-k8s")
    assert command.type == "command:local:Command" and command.urn in ready.dependencies
    assert ready.urn in provider.dependencies
    kube = [r for r in run.resources if r.type.startswith("kubernetes:")]
    assert kube, "no Kubernetes resources were declared"
    for r in kube:
        assert r.provider and provider.name in r.provider, (r.name, r.provider)
        assert ready.urn in ancestors(run, r), f"{r.name} does not wait for the API gate"


def test_kind_profile_then_smoke_test(run: PlanRun) -> None:
    releases = {r.name: r for r in run.resources if r.type == "kubernetes:helm.sh/v3:Release"}
    fake = releases["addons-fake-gpu-operator"]
    assert "addons-gpu-operator" not in releases and "addons-dra-driver" not in releases
    smoke_chart = releases["smoke-chart"]
    assert fake.urn in ancestors(run, smoke_chart), "the smoke test must wait for the simulated GPUs"
    smoke_run = named(run, "smoke-run")
    assert smoke_chart.urn in smoke_run.dependencies
    # The simulated GPUs are the mirrored pool's: 4 x NVIDIA L4 per worker (g6.12xlarge).
    pools = fake.raw_inputs["values"]["topology"]["nodePools"]
    assert set(pools) - {"default"} == {"gpu"}
    assert len(pools["gpu"]["gpu"]["overrides"]["devices"]) == 4
    assert pools["gpu"]["gpu"]["overrides"]["device_defaults"]["name"] == "NVIDIA L4"


def test_kubeconfig_is_secret_everywhere_it_goes(run: PlanRun) -> None:
    holders = {r.name for r in run.resources if "kubeconfig" in r.raw_inputs}
    assert {"ck8s-api-ready", "ck8s-k8s", "smoke-run"} <= holders
    for r in run.resources:
        if "kubeconfig" in r.raw_inputs:
            assert "kubeconfig" in r.secret_paths, f"{r.type} {r.name} holds a plain kubeconfig"

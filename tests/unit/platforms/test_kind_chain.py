"""`ck8s-gpu plan --stack kind`: kind cluster -> API gate -> add-ons -> smoke test, with dependencies.

The project's real program (__main__.py) on the committed kind stack under the mock engine, as the
plan command runs it, so a change in any component or in the wiring that breaks the chain fails here.
"""

from __future__ import annotations

import pytest

from components.plan.mockengine import Recorded
from components.plan.run import Plan, plan_stack
from tests.unit.platforms.conftest import patch_kind_stdout


@pytest.fixture(scope="module")
def run() -> Plan:
    with pytest.MonkeyPatch.context() as mp:  # module scope: the autouse patch is not active yet
        patch_kind_stdout(mp)
        return plan_stack("kind")


def named(run: Plan, suffix: str) -> Recorded:
    (found,) = [r for r in run.resources if r.name.endswith(suffix)]
    return found


def ancestors(run: Plan, res: Recorded) -> set[str]:
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


def test_kind_cluster_gates_every_kubernetes_resource(run: Plan) -> None:
    command = named(run, "-kind")
    ready = named(run, "-api-ready")
    provider = named(run, "-k8s")
    assert command.type == "command:local:Command" and command.urn in ready.dependencies
    assert ready.urn in provider.dependencies
    kube = [r for r in run.resources if r.type.startswith("kubernetes:")]
    assert kube, "no Kubernetes resources were declared"
    for r in kube:
        assert r.provider and provider.name in r.provider, (r.name, r.provider)
        assert ready.urn in ancestors(run, r), f"{r.name} does not wait for the API gate"


def test_kind_profile_then_smoke_test(run: Plan) -> None:
    releases = {r.name: r for r in run.resources if r.type == "kubernetes:helm.sh/v3:Release"}
    (fake,) = [r for n, r in releases.items() if n.endswith("-fake-gpu-operator")]
    assert not [n for n in releases if n.endswith(("-gpu-operator", "-dra-driver")) and "fake" not in n]
    (smoke_chart,) = [r for r in releases.values() if r.raw_inputs["chart"].endswith("gpu-smoke-test")]
    assert fake.urn in ancestors(run, smoke_chart), "the smoke test must wait for the simulated GPUs"
    (queues,) = [r for n, r in releases.items() if n.endswith("-kai-queues")]
    assert queues.urn in ancestors(run, smoke_chart), "the smoke test's KAI queue must exist first"
    (smoke_run,) = [r for r in run.resources if r.type.endswith(":SmokeRun")]
    assert smoke_chart.urn in smoke_run.dependencies
    # The simulated GPUs are the mirrored pool's: 4 x NVIDIA L4 per worker (g6.12xlarge).
    pools = fake.raw_inputs["values"]["topology"]["nodePools"]
    assert set(pools) - {"default"} == {"gpu"}
    assert len(pools["gpu"]["gpu"]["overrides"]["devices"]) == 4
    assert pools["gpu"]["gpu"]["overrides"]["device_defaults"]["name"] == "NVIDIA L4"


def test_kubeconfig_is_secret_everywhere_it_goes(run: Plan) -> None:
    holders = {r.type for r in run.resources if "kubeconfig" in r.raw_inputs}
    assert {"pulumi-python:dynamic/ck8s-gpu:ApiReady", "pulumi:providers:kubernetes",
            "pulumi-python:dynamic/ck8s-gpu:SmokeRun"} <= holders
    for r in run.resources:
        if "kubeconfig" in r.raw_inputs:
            assert "kubeconfig" in r.secret_paths, f"{r.type} {r.name} holds a plain kubeconfig"

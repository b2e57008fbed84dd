"""Every stack's offline plan (the real __main__.py under the mock engine) has the smoke test,
installed after the add-ons that publish GPUs and schedule them, and gated on its run."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.plan.run import plan_stack
from tests.unit.addons.helpers import ancestors

STACKS = sorted(p.name[len("Pulumi."):-len(".yaml")] for p in (Path(__file__).resolve().parents[3] / "stacks")
                .glob("Pulumi.*.yaml"))
GPU_PUBLISHERS = {"gpu-stack-dra-driver", "gpu-stack-fake-gpu-operator"}


@pytest.mark.parametrize("stack", STACKS)
def test_smoke_test_follows_the_addons_it_needs(stack: str) -> None:
    plan = plan_stack(stack)
    by_urn = {r.urn: r for r in plan.resources}
    [component] = [r for r in plan.resources if r.type == "ck8s-gpu:index:SmokeTest"]
    if not plan.settings.smoke_test.enabled:
        pytest.skip(f"stack {stack} disables the smoke test")
    [release] = [r for r in plan.resources if r.type == "kubernetes:helm.sh/v3:Release" and r.parent == component.urn]
    [gate] = [r for r in plan.resources if r.type == "pulumi-python:dynamic/ck8s-gpu:SmokeRun"]
    after = {by_urn[d].name for d in release.dependencies if d in by_urn}
    addons = {r.name for r in plan.resources if r.type == "kubernetes:helm.sh/v3:Release" and r is not release}
    if addons & GPU_PUBLISHERS:  # the local tier publishes slices from its test harness instead
        assert after & GPU_PUBLISHERS, (stack, sorted(after))
    if plan.settings.smoke_test.scheduler == "kai" and "gpu-stack-kai-scheduler" in addons:
        assert {"gpu-stack-kai-scheduler", "gpu-stack-kai-queues"} <= after, (stack, sorted(after))
    # the cluster's API gate (on AWS behind the node upgrades, ADR 0015)
    assert any(n.endswith("ready") for n in ancestors(plan, release.name)), (stack, sorted(after))
    assert release.urn in gate.dependencies and gate.parent == component.urn
    assert "kubeconfig" in gate.secret_paths
    assert gate.inputs["spec"]["runId"] == release.inputs["values"]["runId"]

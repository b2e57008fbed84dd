"""SmokeTest under Pulumi's mock engine, and the dynamic provider's logic called directly."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from components.facts.cluster import ClusterFacts, cluster_facts
from components.plan.mockengine import PlanRun, Recorded, run_program
from components.settings.model import Settings
from components.smoke import provider as prov
from components.smoke.component import TYPE, SmokeTest
from tests.unit.smoke import settings_fixtures as sf
from tests.unit.smoke.fake_cluster import FakeClock, FakeCluster
from tests.unit.smoke.test_run import deploy

KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://k.invalid:6443'}}]\n"
DYNAMIC = "pulumi-python:dynamic/ck8s-gpu:SmokeRun"
RELEASE = "kubernetes:helm.sh/v3:Release"


@dataclass
class Handle:
    provider: k8s.Provider
    kubeconfig: pulumi.Output[str]
    ready: pulumi.Resource
    facts: ClusterFacts


def program(settings: Settings) -> None:
    provider = k8s.Provider("k8s", kubeconfig=pulumi.Output.secret(KUBECONFIG))
    opts = pulumi.ResourceOptions(provider=provider)
    ready = k8s.core.v1.ConfigMap("api-ready", metadata={"name": "ready", "namespace": "kube-system"}, opts=opts)
    addons = [k8s.helm.v3.Release(n, chart=n, namespace="x", opts=opts) for n in ("dra-driver", "kai-scheduler")]
    handle = Handle(provider, pulumi.Output.secret(KUBECONFIG), ready, cluster_facts(settings))
    smoke = SmokeTest("smoke", settings, handle, depends_on=addons)
    pulumi.export("smokeTest", smoke.report)


def plan_of(settings: Settings) -> PlanRun:
    return run_program(lambda: program(settings), {}, stack="test")


def one(run: PlanRun, typ: str, name: str | None = None) -> Recorded:
    found = [r for r in run.resources if r.type == typ and (name is None or r.name == name)]
    assert len(found) == 1, [(r.type, r.name) for r in run.resources]
    return found[0]


def test_graph_installs_after_addons_and_gates_on_the_run() -> None:
    run = plan_of(sf.settings(sf.AWS))
    comp = one(run, TYPE)
    ns = one(run, "kubernetes:core/v1:Namespace", "smoke-namespace")
    release = one(run, RELEASE, "smoke-chart")
    gate = one(run, DYNAMIC)
    ready = one(run, "kubernetes:core/v1:ConfigMap", "api-ready")
    addons = {one(run, RELEASE, n).urn for n in ("dra-driver", "kai-scheduler")}
    assert {ns.parent, release.parent, gate.parent} == {comp.urn}
    assert ready.urn in ns.dependencies
    assert {ready.urn, ns.urn} | addons <= set(release.dependencies)
    assert release.urn in gate.dependencies
    assert release.provider and release.provider == ns.provider
    assert release.inputs["chart"] == "charts/gpu-smoke-test"
    assert release.inputs["namespace"] == ns.inputs["metadata"]["name"] == "gpu-smoke-test"
    assert ns.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_kubeconfig_reaches_the_gate_only_as_a_secret() -> None:
    run = plan_of(sf.settings(sf.AWS))
    gate = one(run, DYNAMIC)
    assert "kubeconfig" in gate.secret_paths and gate.inputs["kubeconfig"] == "[secret]"
    release = one(run, RELEASE, "smoke-chart")
    assert "k.invalid" not in json.dumps(release.inputs) and "k.invalid" not in json.dumps(gate.inputs)


def test_release_values_and_gate_spec_share_one_run_id() -> None:
    s = sf.settings(sf.AWS)
    run = plan_of(s)
    values = one(run, RELEASE, "smoke-chart").inputs["values"]
    spec = one(run, DYNAMIC).inputs["spec"]
    assert values["runId"] == spec["runId"] == spec["expectations"]["run_id"]
    assert spec["expectations"]["cases"][0]["job"] == f"gpu-smoke-test-gpus-{values['runId']}"
    assert spec["timeoutSeconds"] == s.smoke_test.timeout_seconds


def test_trigger_changes_only_the_run_id() -> None:
    a = plan_of(sf.settings(sf.AWS))
    b = plan_of(sf.settings(sf.AWS, trigger="rerun-2026-11-30"))
    va, vb = (one(r, RELEASE, "smoke-chart").inputs["values"] for r in (a, b))
    assert va["runId"] != vb["runId"]
    assert {k: v for k, v in va.items() if k != "runId"} == {k: v for k, v in vb.items() if k != "runId"}
    # Everything outside the smoke test is identical.
    def others(run: PlanRun) -> list[tuple[str, str, str]]:  # registration order is not deterministic
        return sorted((r.type, r.name, json.dumps(r.inputs, sort_keys=True)) for r in run.resources
                      if not r.parent.endswith(f"{TYPE}::smoke"))

    assert others(a) == others(b) and len(others(a)) == 5
    # ... and the gate's provider replaces the run for the new spec.
    sa, sb = (one(r, DYNAMIC).inputs["spec"] for r in (a, b))
    diff = prov.SmokeRunProvider().diff("id", {"spec": sa, "report": {}}, {"spec": sb, "kubeconfig": "k"})
    assert diff.changes and diff.replaces == ["spec"]


def test_disabled_smoke_test_creates_nothing() -> None:
    run = plan_of(sf.settings(sf.AWS, enabled=False))
    comp = one(run, TYPE)
    assert [r for r in run.resources if r.parent == comp.urn] == []
    assert run.outputs["smokeTest"]["status"] == "disabled"


# --- the dynamic provider, without Pulumi -----------------------------------------------------


def test_kubeconfig_rotation_alone_is_not_a_change() -> None:
    spec = {"runId": "abcd1234"}
    p = prov.SmokeRunProvider()
    same = p.diff("id", {"spec": spec, "report": {"x": 1}}, {"spec": spec, "kubeconfig": "new", "report": None})
    assert not same.changes and same.replaces == []
    kept = p.update("id", {"spec": spec, "report": {"x": 1}}, {"spec": spec, "kubeconfig": "new"})
    assert kept.outs == {"spec": spec, "report": {"x": 1}}


def test_outputs_never_hold_the_kubeconfig() -> None:
    outs = prov.outputs({"kubeconfig": "secret!", "spec": {"a": 1}, "report": None}, {"ok": True})
    assert outs == {"spec": {"a": 1}, "report": {"ok": True}}


def _props(plan: Any) -> dict[str, Any]:
    return {"kubeconfig": KUBECONFIG, "spec": plan.spec(), "report": None}


def test_execute_returns_the_report_when_every_hop_passes() -> None:
    cluster = FakeCluster(gpus_per_node=4)
    plan = sf.plan(sf.AWS)
    deploy(cluster, plan)
    doc = prov.execute(_props(plan), gateway=cluster, clock=FakeClock(), poll_seconds=1.0)
    assert doc["results"]["summary"]["failed"] == 0 and doc["reportFormat"] == "CTRF"
    json.dumps(doc)  # a stack output must be plain JSON


def test_execute_fails_the_update_naming_the_hop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(prov.REPORT_DIR_ENV, str(tmp_path))
    cluster = FakeCluster(gpus_per_node=4, wrong_uuid=True)
    plan = sf.plan(sf.AWS)
    deploy(cluster, plan)
    with pytest.raises(prov.SmokeTestFailed) as err:
        prov.execute(_props(plan), gateway=cluster, clock=FakeClock(), poll_seconds=1.0)
    text = str(err.value)
    # Both pods print the same foreign UUID: the container hop and the distinct-GPU hop both fail.
    assert text.startswith(f"GPU smoke test failed: 2 check(s) failed (run {plan.run_id}, namespace gpu-smoke-test)")
    assert "container-device [kubelet/CDI]:" in text and "saw GPU-00000000-1111-2222-3333-444444444444" in text
    assert "distinct-gpus [allocation]:" in text
    written = tmp_path / f"gpu-smoke-test-{plan.run_id}.json"
    assert f"Full report with diagnostics: {written}" in text
    assert json.loads(written.read_text())["results"]["extra"]["diagnostics"]["pods"]


def test_report_directory_failure_does_not_hide_the_verdict(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    doc = {"results": {"extra": {"namespace": "n", "runId": "r"}}}
    assert prov.write_report(doc, str(blocker / "sub")) == ""


def test_device_plugin_stacks_are_refused_with_the_setting_to_change() -> None:
    from components.smoke.values import SmokeConfigError

    with pytest.raises(SmokeConfigError, match=r"gpuStack\.allocation is device-plugin"):
        sf.plan({**sf.AWS, "gpuStack": {"allocation": "device-plugin"}})


def test_provider_pickles_by_reference_and_loads_in_a_fresh_process() -> None:
    """The engine runs create() in another process from the pickled provider: it must import
    components.smoke.provider there, not carry a copy of the code."""
    import base64
    import subprocess
    import sys

    from pulumi.dynamic.dynamic import serialize_provider

    blob = serialize_provider(prov.SmokeRunProvider())
    assert len(base64.b64decode(blob)) < 2000  # a reference, not the module's code
    root = Path(__file__).resolve().parents[3]
    code = ("import base64, dill, sys; p = dill.loads(base64.b64decode(sys.stdin.read())); "
            "print(type(p).__module__, type(p).__name__)")
    done = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, text=True, cwd=root,
                          env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert done.stdout.split() == ["components.smoke.provider", "SmokeRunProvider"], done.stderr


def test_a_run_that_cannot_reach_the_cluster_fails_plainly_with_the_next_step() -> None:
    from components.smoke.gateway import KubeUnreachable

    class Gone:
        def __getattr__(self, _name: str) -> Any:
            def call(*_a: Any, **_k: Any) -> Any:
                raise KubeUnreachable("MaxRetryError: connection refused")
            return call

    plan = sf.plan(sf.AWS)
    with pytest.raises(prov.SmokeTestFailed) as err:
        prov.execute(_props(plan), gateway=Gone(), clock=FakeClock(), poll_seconds=1.0)
    text = str(err.value)
    assert text.startswith("GPU smoke test could not run (namespace gpu-smoke-test): KubeUnreachable: MaxRetryError")
    assert "Next: check that the cluster answers" in text
    with pytest.raises(prov.SmokeTestFailed, match=r"could not run.*kubeconfig is not valid YAML"):
        prov.execute({**_props(plan), "kubeconfig": "{not: [yaml"})

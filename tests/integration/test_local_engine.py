"""The `local` stack through the REAL Pulumi engine onto a real control plane with KWOK GPU nodes.

Automation API, file backend and passphrase secrets in a temp dir, an ephemeral stack whose
config is stacks/Pulumi.local.yaml's settings plus the cluster's kubeconfig as a secret:
up -> the smoke report passed (class, slices, allocation by the real kube-scheduler, pod on its
claim's node, distinct devices; in-container checks skipped: no kubelet) -> a second preview
changes nothing -> one node advertises fewer GPUs and a re-run fails the update with the
verifier's message -> destroy leaves no object of the stack in the cluster.

The program runs from a copy of the project (program, `components`, `charts`) so that the stack
file and the Pulumi.yaml naming this interpreter's virtualenv land in the temp dir, never in the
checkout's lead-owned stacks/ and Pulumi.yaml (whose `.venv` need not exist on a CI machine).
Needs `bash tools/build.sh`; skips naming what is missing, fails under CK8S_GPU_REQUIRE_TOOLS=1.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.instance_types import gpu_facts
from components.smoke.expectations import NO_KUBELET, POOL_LABELS, RUN_LABEL
from components.smoke.report import passed
from tests.helpers.tools import copy_project
from tests.integration.conftest import ROOT, EngineTools, inline_kubeconfig, k8s_plugin_version, load_tool

pytestmark = pytest.mark.integration

STACK_FILE = ROOT / "stacks" / "Pulumi.local.yaml"
SETTINGS_KEY = "ck8s-gpu:settings"
PASSPHRASE = "local-engine-integration-test"
# The hops that must really have run against the real API server and scheduler.
MUST_PASS = ("device-class", "resource-slices", "claims-allocated", "scheduler", "claim-node", "distinct-gpus")
NO_KUBELET_CHECKS = ("container-device",)

lc = load_tool("localcluster")
dra = load_tool("dra_publisher")


def local_settings() -> dict[str, Any]:
    return dict(yaml.safe_load(STACK_FILE.read_text())["config"][SETTINGS_KEY])


def pool_nodes(settings: dict[str, Any]) -> dict[str, tuple[str, str, int]]:
    """node name -> (pool, instance type, GPUs): desiredSize nodes per pool, named like the cluster's."""
    out: dict[str, tuple[str, str, int]] = {}
    for pool in settings["nodePools"]:
        facts = gpu_facts(pool["instanceType"])
        assert facts is not None, pool
        for _ in range(pool["desiredSize"]):
            out[f"gpu-node-{len(out)}"] = (pool["name"], pool["instanceType"], facts.count)
    return out


def gpu_model(instance_type: str) -> Any:
    facts = gpu_facts(instance_type)
    assert facts is not None
    return dra.GpuModel(product_name=facts.product_name, architecture=facts.architecture,
                        memory=f"{facts.memory_mib}Mi")


def start_cluster(workdir: Path, bin_dir: Path, nodes: dict[str, tuple[str, str, int]]) -> Any:
    """A LocalCluster whose nodes carry the pool label the verifier maps nodes to pools with."""
    types = {t for _, t, _ in nodes.values()}
    assert len(types) == 1, "LocalCluster gives every node one instance type"
    cluster = lc.LocalCluster(workdir, nodes=len(nodes), instance_type=types.pop(), bin_dir=bin_dir,
                              name=f"ck8s-{uuid.uuid4().hex[:6]}")
    cluster.up()
    try:
        for node, (pool, _, _) in nodes.items():
            cluster.kubectl("label", "node", node, f"{POOL_LABELS[0]}={pool}", "--overwrite")
    except BaseException:
        cluster.down()
        raise
    return cluster


def publish(cluster: Any, gpus: dict[str, int], instance_type: str, generation: int = 1) -> None:
    """The DeviceClass and one slice per node, as the NVIDIA driver would (fresh generation)."""
    model = gpu_model(instance_type)
    cluster.apply([dra.device_class_manifest()] + [
        dra.resource_slice_manifest(n, c, model, generation=generation) for n, c in gpus.items()])


@dataclass
class Deployed:
    cluster: Any
    stack: Any
    project: Path
    nodes: dict[str, tuple[str, str, int]]
    up_seconds: float
    outputs: dict[str, Any]


def stack_objects(stack: Any) -> list[tuple[str, str, str]]:
    """(type, name, namespace) of every Kubernetes object in the stack's state."""
    out = []
    for r in stack.export_stack().deployment.get("resources", []):
        t = r.get("type", "")
        if not t.startswith("kubernetes:") or t.startswith("pulumi:providers"):
            continue
        meta = (r.get("outputs") or {}).get("metadata") or {}
        if t == "kubernetes:helm.sh/v3:Release":
            outs = r.get("outputs") or {}
            out.append((t, str(outs.get("name", "")), str(outs.get("namespace", ""))))
        elif meta.get("name"):
            out.append((t, str(meta["name"]), str(meta.get("namespace", ""))))
    return out


@pytest.fixture(scope="module")
def deployed(engine_tools: EngineTools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    from pulumi import automation as auto

    work = tmp_path_factory.mktemp("local-engine")
    settings = local_settings()
    nodes = pool_nodes(settings)
    itype = next(iter(nodes.values()))[1]
    t0 = time.monotonic()
    cluster = start_cluster(work / "cluster", engine_tools.bin_dir, nodes)
    print(f"\ncluster start: {time.monotonic() - t0:.1f}s ({len(nodes)} nodes)")
    stack = None
    try:
        publish(cluster, {n: g for n, (_, _, g) in nodes.items()}, itype)

        project = copy_project(work / "project")
        stack_name = f"local-it-{uuid.uuid4().hex[:6]}"
        (project / f"Pulumi.{stack_name}.yaml").write_text(
            yaml.safe_dump({"config": {SETTINGS_KEY: settings}}, sort_keys=False))
        (work / "state").mkdir()
        env = engine_tools.env(work / "state", PASSPHRASE)
        env["CK8S_GPU_SMOKE_REPORT_DIR"] = str(work / "smoke-reports")
        opts = auto.LocalWorkspaceOptions(
            work_dir=str(project),
            pulumi_command=auto.PulumiCommand(root=str(engine_tools.bin_dir.parent)),
            project_settings=auto.ProjectSettings(
                name="ck8s-gpu", runtime=auto.ProjectRuntimeInfo("python", {"virtualenv": sys.prefix})),
            env_vars=env,
        )
        stack = auto.create_stack(stack_name, work_dir=str(project), opts=opts)
        stack.set_config("ck8s-gpu:kubeconfig",
                         auto.ConfigValue(inline_kubeconfig(Path(cluster.kubeconfig)), secret=True))
        t1 = time.monotonic()
        up = stack.up(on_output=print, color="never")
        up_seconds = time.monotonic() - t1
        print(f"pulumi up: {up_seconds:.1f}s")
        yield Deployed(cluster, stack, project, nodes, up_seconds,
                       {k: (v.value, v.secret) for k, v in up.outputs.items()})
    finally:
        try:
            if stack is not None:
                try:
                    stack.destroy(on_output=print, color="never")  # no-op when the test destroyed it
                finally:
                    stack.workspace.remove_stack(stack.name, force=True)
        finally:
            cluster.down()


def test_up_deploys_and_the_smoke_test_passes_for_real(deployed: Deployed) -> None:
    outputs = deployed.outputs
    assert outputs["platform"][0] == "local"
    assert outputs["kubeconfig"][1], "the kubeconfig output must be a secret"
    report = outputs["smokeReport"][0]
    tests = {t["name"]: t for t in report["results"]["tests"]}
    assert passed(report), f"smoke test did not pass: {report['results']['summary']}"
    for check in MUST_PASS:
        assert tests[check]["status"] == "passed", (check, tests[check])
    for check in NO_KUBELET_CHECKS:
        assert tests[check]["status"] == "skipped" and NO_KUBELET in tests[check]["message"], tests[check]
    for t in tests.values():
        assert t["status"] != "skipped" or t["message"], f"{t['name']} skipped without a reason"
    # What the scheduler did, seen in the cluster: every node advertises its pool's GPU count,
    # the pods ran on GPU nodes, and the report names each GPU once.
    expected = {n: g for n, (_, _, g) in deployed.nodes.items()}
    assert tests["resource-slices"]["message"] == "; ".join(f"{n}: {g} GPU(s)" for n, g in sorted(expected.items()))
    assert "default-scheduler" in tests["scheduler"]["message"]
    run_id = report["results"]["extra"]["runId"]
    pods = deployed.cluster.get_json("pods", "-A", "-l", f"{RUN_LABEL}={run_id}")["items"]
    assert pods and {p["spec"]["nodeName"] for p in pods} <= set(expected), pods
    assert all(p["status"]["phase"] == "Succeeded" for p in pods), [p["status"] for p in pods]
    print(f"smoke report: {report['results']['summary']}; plugin v{k8s_plugin_version()}")


def test_second_preview_changes_nothing(deployed: Deployed) -> None:
    again = deployed.stack.preview(on_output=print, color="never", diff=True)
    changes = {op: n for op, n in again.change_summary.items() if op != "same" and n}
    assert changes == {}, f"a second preview wants changes: {changes}"
    assert again.change_summary.get("same", 0) > 0


def test_a_node_with_fewer_gpus_fails_the_update_naming_it(deployed: Deployed) -> None:
    from pulumi import automation as auto

    node, (pool, itype, gpus) = list(deployed.nodes.items())[-1]
    publish(deployed.cluster, {node: gpus - 2}, itype, generation=2)
    # A new trigger is a new run id: the smoke test runs again (the release is upgraded with it).
    stack_file = deployed.project / f"Pulumi.{deployed.stack.name}.yaml"
    doc = yaml.safe_load(stack_file.read_text())
    doc["config"][SETTINGS_KEY].setdefault("smokeTest", {})["trigger"] = "fewer-gpus"
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    try:
        with pytest.raises(auto.CommandError) as failed:
            deployed.stack.up(on_output=print, color="never")
        text = str(failed.value)
        assert "GPU smoke test failed" in text, text[-4000:]
        assert "resource-slices [ResourceSlice]" in text, text[-4000:]
        assert f"node {node} advertises {gpus - 2} GPU(s), expected {gpus} (pool {pool}, {itype})" in text, \
            text[-4000:]
    finally:
        publish(deployed.cluster, {node: gpus}, itype, generation=3)


def test_destroy_leaves_no_object_of_the_stack(deployed: Deployed) -> None:
    objects = stack_objects(deployed.stack)
    namespaces = sorted({ns for _, _, ns in objects if ns} | {n for t, n, _ in objects
                                                             if t == "kubernetes:core/v1:Namespace"})
    releases = sorted({n for t, n, _ in objects if t == "kubernetes:helm.sh/v3:Release"})
    assert namespaces and releases, objects
    deployed.stack.destroy(on_output=print, color="never")
    c = deployed.cluster

    def gone() -> bool:
        left = c.kubectl("get", "namespaces", *namespaces, "--ignore-not-found", "-o", "name").split()
        return not left

    c.wait_for(f"namespaces {namespaces} to be deleted", gone, timeout=120)
    for kind in ("resourceclaims", "jobs", "pods", "resourceclaimtemplates"):
        left = [f"{o['metadata']['namespace']}/{o['metadata']['name']}"
                for o in c.get_json(kind, "-A")["items"] if o["metadata"]["namespace"] in namespaces
                or RUN_LABEL in o["metadata"].get("labels", {})]
        assert not left, f"{kind} of the stack left behind: {left}"
    helm = [s["metadata"]["name"] for s in c.get_json("secrets", "-A", "-l", "owner=helm")["items"]
            if s["metadata"].get("labels", {}).get("name") in releases]
    assert not helm, f"Helm release secrets left behind: {helm}"
    for t, name, ns in objects:  # cluster-scoped objects of the stack too (e.g. the namespaces)
        kind = t.split(":")[-1]
        if t == "kubernetes:helm.sh/v3:Release":
            continue
        scope = ["-n", ns] if ns else []
        assert not c.kubectl("get", kind, name, *scope, "--ignore-not-found", "-o", "name").strip(), (t, name, ns)
    assert deployed.stack.export_stack().deployment.get("resources") in (None, [])

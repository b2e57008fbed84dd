"""The node tier: the smoke test's pods run on REAL kubelets and prove their GPU from inside.

The `local-kubelet` stack through the real Pulumi engine onto the loopback control plane of
tools/localcluster.py, with two kinds of GPU node: the `gpu` pool's KWOK nodes (slices from the
test publisher; scale, nothing runs) and the `kubelet` pool's two real nodes of tools/nodetier.py:
kubelet + containerd v2 (runc, CNI, CDI) + this project's simulated NVIDIA DRA kubelet plugin
(tools/mod/simgpu). The smoke probe image is built here (tools/probe_image.py) and imported into
each node's containerd; the stack selects it by digest (smokeTest.image).

up -> the report passed with the in-container hops run for real: pods started (claims prepared,
image present, CDI devices injected), each container's nvidia-smi listed exactly its allocated
GPU's UUID, no GPU seen by two pods, the Jobs completed -> four broken hops, each failing `up`
with the report naming it: the kubelet plugin stopped (prepare fails), a CDI spec the runtime
refuses, the plugin exposing another GPU than allocated, the probe image absent -> `up` passes
again -> destroy; the tier's processes, mounts, network namespaces, bridges and runc containers
are gone, and the tier starts and stops cleanly a second time in the same directory.

Needs root, `bash tools/build.sh` and scripts/install-debs.sh (runc, CNI plugins); skips naming
what is missing, fails under CK8S_GPU_REQUIRE_TOOLS=1 (CI).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.smoke.expectations import RUN_LABEL
from components.smoke.report import passed
from tests.helpers.node_tier import SETTINGS_KEY, kubelet_tier, stack_settings, start_kwok_pool
from tests.helpers.tools import copy_project, skip_or_fail
from tests.integration.conftest import EngineTools, inline_kubeconfig, load_tool

pytestmark = pytest.mark.integration

PASSPHRASE = "node-tier-integration-test"
# Every hop, the in-container ones included, must have run and passed (none skipped).
MUST_PASS = ("device-class", "resource-slices", "claims-allocated", "scheduler", "claim-node", "pods-started",
             "container-device", "distinct-gpus", "jobs-complete")

nt = load_tool("nodetier")


@dataclass
class Tier:
    cluster: Any
    nodes: Any  # nodetier.NodeTier
    stack: Any
    project: Path
    settings: dict[str, Any]
    kubelet_nodes: dict[str, int]  # node -> GPUs
    kwok_nodes: dict[str, int]
    outputs: dict[str, Any]
    up_seconds: float
    start_seconds: float


def set_smoke(tier: Tier, **values: Any) -> None:
    """Change smokeTest keys in the stack file (a new trigger is a new run: the test runs again)."""
    stack_file = tier.project / f"Pulumi.{tier.stack.name}.yaml"
    doc = yaml.safe_load(stack_file.read_text())
    doc["config"][SETTINGS_KEY].setdefault("smokeTest", {}).update(values)
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))


@pytest.fixture(scope="module")
def tier(engine_tools: EngineTools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tier]:
    from pulumi import automation as auto

    lacking = nt.missing(engine_tools.bin_dir)
    if lacking:
        skip_or_fail("node tier cannot run here: " + "; ".join(lacking))
    work = tmp_path_factory.mktemp("node-tier")
    settings = stack_settings()
    t0 = time.monotonic()
    cluster, kwok_nodes = start_kwok_pool(work, engine_tools.bin_dir, settings)
    nodes = stack = None
    try:
        nodes, kubelet_nodes = kubelet_tier(work, engine_tools.bin_dir, cluster, settings)
        nodes.up()
        start_seconds = time.monotonic() - t0
        print(f"\ncluster + node tier start: {start_seconds:.1f}s (node tier {nodes.start_seconds:.1f}s)")
        settings["smokeTest"] = {**settings["smokeTest"], "image": nodes.probe.reference}
        project = copy_project(work / "project")
        stack_name = f"node-tier-{uuid.uuid4().hex[:6]}"
        (project / f"Pulumi.{stack_name}.yaml").write_text(
            yaml.safe_dump({"config": {SETTINGS_KEY: settings}}, sort_keys=False))
        opts = engine_tools.workspace(work, project, PASSPHRASE)
        stack = auto.create_stack(stack_name, work_dir=str(project), opts=opts)
        stack.set_config("ck8s-gpu:kubeconfig",
                         auto.ConfigValue(inline_kubeconfig(Path(cluster.kubeconfig)), secret=True))
        t1 = time.monotonic()
        up = stack.up(on_output=print, color="never")
        up_seconds = time.monotonic() - t1
        print(f"pulumi up: {up_seconds:.1f}s")
        yield Tier(cluster, nodes, stack, project, settings, kubelet_nodes, kwok_nodes,
                   {k: v.value for k, v in up.outputs.items()}, up_seconds, start_seconds)
    finally:
        try:
            if stack is not None:
                try:
                    stack.destroy(on_output=print, color="never")
                finally:
                    stack.workspace.remove_stack(stack.name, force=True)
        finally:
            try:
                if nodes is not None:
                    nodes.down()
            finally:
                cluster.down()


def report_tests(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in report["results"]["tests"]}


def test_smoke_pods_run_on_real_kubelets_and_see_exactly_their_gpu(tier: Tier) -> None:
    report = tier.outputs["smokeReport"]
    tests = report_tests(report)
    assert passed(report), f"smoke test did not pass: {report['results']['summary']}"
    for check in MUST_PASS:
        assert tests[check]["status"] == "passed", (check, tests[check])
    gpus = tier.settings["smokeTest"]["gpus"]
    assert tests["container-device"]["message"] == f"{gpus} container(s) saw exactly their allocated device"
    assert "held at the same time" in tests["distinct-gpus"]["message"], tests["distinct-gpus"]
    # Independently of the verifier: each pod ran on a kubelet node, and its own log names the UUID
    # of the device its claim was allocated, read from the plugin's ResourceSlice.
    run_id = report["results"]["extra"]["runId"]
    c = tier.cluster
    pods = c.get_json("pods", "-A", "-l", f"{RUN_LABEL}={run_id}")["items"]
    assert len(pods) == gpus and {p["spec"]["nodeName"] for p in pods} <= set(tier.kubelet_nodes), pods
    slices = {(s["spec"]["pool"]["name"], d["name"]): d["attributes"]["uuid"]["string"]
              for s in c.get_json("resourceslices")["items"] for d in s["spec"]["devices"]}
    seen = set()
    for pod in pods:
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        log = c.kubectl("logs", "-n", ns, name, "-c", "probe")
        uuids = [line.split()[-1] for line in log.splitlines() if line.startswith("CK8S-SMOKE uuid ")]
        claim = next(s["resourceClaimName"] for s in pod["status"]["resourceClaimStatuses"])
        print(f"{name} on {pod['spec']['nodeName']}: claim {claim}, nvidia-smi saw {uuids}")
        assert len(uuids) == 1 and uuids[0].startswith("GPU-"), log
        assert uuids[0] not in seen, f"{uuids[0]} seen by two pods"
        seen.add(uuids[0])
        assert uuids[0] in {u for (p, _d), u in slices.items() if p == pod["spec"]["nodeName"]}, (uuids, slices)
    # The pods are done: the kubelet unprepared their claims and the plugin removed each claim's CDI spec.
    c.wait_for("the claims' CDI specs to be removed on unprepare",
               lambda: not [f for n in tier.nodes.nodes for f in n.paths.cdi.glob("*.yaml")], timeout=60)


def broken_up(tier: Tier, trigger: str) -> str:
    """`up` with a new run id must fail; returns the failure text (no traceback, no engine noise)."""
    from pulumi import automation as auto

    set_smoke(tier, trigger=trigger)
    t = time.monotonic()
    with pytest.raises(auto.CommandError) as failed:
        tier.stack.up(on_output=print, color="never")
    text = str(failed.value)
    print(f"failed up ({trigger}): {time.monotonic() - t:.1f}s")
    assert "GPU smoke test failed" in text, text[-4000:]
    for noise in ("Traceback", "Task was destroyed", "Resource monitor has terminated"):
        assert noise not in text, f"{noise!r} in the failure output:\n{text[-4000:]}"
    return text


def test_a_stopped_kubelet_plugin_fails_at_claim_prepare(tier: Tier) -> None:
    for node in tier.nodes.nodes:
        node.stop_plugin()
    try:
        text = broken_up(tier, "plugin-stopped")
        assert "pods-started [kubelet]" in text, text[-4000:]
        assert "claim prepare (kubelet -> DRA kubelet plugin NodePrepareResources)" in text, text[-4000:]
    finally:
        for node in tier.nodes.nodes:
            node.start_plugin()


def test_a_cdi_spec_the_runtime_refuses_fails_at_container_create(tier: Tier) -> None:
    with tier.nodes.fault("cdi-refused"):
        text = broken_up(tier, "cdi-refused")
    assert "pods-started [kubelet]" in text, text[-4000:]
    assert "container create (runtime, CDI devices): container probe CreateContainerError" in text, text[-4000:]
    assert "CDI" in text.split("CreateContainerError", 1)[1][:600], text[-4000:]


def test_a_plugin_exposing_another_gpu_fails_the_in_container_check(tier: Tier) -> None:
    with tier.nodes.fault("wrong-device"):
        text = broken_up(tier, "wrong-device")
    assert "container-device [kubelet/CDI]" in text, text[-4000:]
    assert "but its claim was allocated" in text, text[-4000:]
    assert "pods-started [kubelet]" not in text, "the pods did start: only the device identity is wrong"


def test_an_absent_probe_image_fails_at_image_pull(tier: Tier) -> None:
    tier.nodes.remove_probe_image()
    try:
        text = broken_up(tier, "image-absent")
        assert "pods-started [kubelet]" in text, text[-4000:]
        assert "image pull: container probe" in text, text[-4000:]
    finally:
        tier.nodes.restore_probe_image()


def test_up_passes_again_once_every_hop_is_mended(tier: Tier) -> None:
    set_smoke(tier, trigger="mended")
    result = tier.stack.up(on_output=print, color="never")
    report = result.outputs["smokeReport"].value
    assert passed(report), report["results"]["summary"]
    assert report_tests(report)["container-device"]["status"] == "passed"


def test_destroy_then_the_tier_leaves_nothing_and_starts_again(tier: Tier) -> None:
    # Destroy while the kubelets still run: they confirm the pods' deletion, so the namespaces go.
    tier.stack.destroy(on_output=print, color="never")
    problems = tier.nodes.down()
    assert problems == [], problems
    assert tier.nodes.leftovers() == [], tier.nodes.leftovers()
    # A second run in the same directory: up, Ready and publishing again, down, nothing left.
    t = time.monotonic()
    tier.nodes.up()
    try:
        assert all(tier.nodes.node_ready(n) for n in tier.kubelet_nodes)
        assert all(tier.nodes.slice_published(n) for n in tier.kubelet_nodes)
    finally:
        assert tier.nodes.down() == []
    print(f"node tier restart: {time.monotonic() - t:.1f}s")
    assert tier.nodes.leftovers() == [], tier.nodes.leftovers()

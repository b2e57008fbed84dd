"""The node tier: the smoke test's pods run on REAL kubelets and prove their GPU from inside.

The `local-kubelet` stack through the real Pulumi engine onto the loopback control plane of
tools/localcluster.py (with the gates components/facts/feature_gates.py gives the stack), with two kinds
of GPU node: the `gpu` pool's KWOK nodes (slices from the test publisher; scale, nothing runs) and
the kubelet pools' real nodes of tools/nodetier.py (2 x p6e-gb200.36xlarge, 1 x p5.48xlarge):
kubelet + containerd v2 (runc, CNI, CDI) + this project's simulated NVIDIA DRA kubelet plugins
(tools/mod/simgpu: GPUs with Fabric Manager partitions and health taints, and the compute-domain
driver). The smoke probe image is built here (tools/probe_image.py) and imported into each node's
containerd; the stack selects it by digest (smokeTest.image). Every DRA case is on.

up -> the report passed with the in-container hops run for real: pods started (claims prepared,
image present, CDI devices injected), each container's nvidia-smi listed exactly its allocated GPUs'
UUIDs, no GPU seen by two pods, no tainted GPU handed out, the NVLink group's 4 GPUs in one
partition, both compute-domain pods with their IMEX channel, the preferred and fallback alternatives
where they belong, the Jobs completed -> eight broken hops, each failing an `up` that runs only the
case crossing it (one base pod, plus that case) with the report naming it: the kubelet plugin
stopped (prepare fails), a CDI spec the runtime refuses, the plugin exposing another GPU than
allocated, the probe image absent, an NVLink partition split (the fabric changed under a stale
slice), a device turning unhealthy while held, a container without its IMEX channel, the fallback
taken while the preferred model was free -> `up` passes again -> a pod starts with each RuntimeClass
the GPU Operator creates, through the real NVIDIA runtimes the node script's host-toolkit chain
registered (a class without a handler does not) -> destroy; the tier's processes,
mounts, network namespaces, bridges and runc containers are gone, and the tier starts and stops
cleanly a second time in the same directory.

Needs root, `bash tools/build.sh` and scripts/install-debs.sh (runc, CNI plugins); skips naming
what is missing, fails under CK8S_GPU_REQUIRE_TOOLS=1 (CI).
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.addons.gpu_operator import ADDON as GPU_OPERATOR
from components.settings.model import Settings
from components.smoke.cases import inference
from components.smoke.expectations import CASE_LABEL, RUN_LABEL
from components.smoke.report import passed
from components.tables.labels import SIMULATED_POOL_LABEL
from tests.fakes.gpu_operator import runtime_classes
from tests.helpers import inference_stack
from tests.helpers.inference_stack import InferenceControllers
from tests.helpers.node_tier import SETTINGS_KEY, kubelet_tier, stack_settings, start_kwok_pool
from tests.helpers.tools import copy_project, skip_or_fail
from tests.integration.conftest import EngineTools, inline_kubeconfig, load_tool
from tests.unit.addons.helpers import final_values
from tests.unit.aws.conftest import settings_for

# kubelets: real kubelet nodes (tools/nodetier.py), in the lane of their own (scripts/all_tiers.sh)
pytestmark = [pytest.mark.integration, pytest.mark.kubelets]

PASSPHRASE = "node-tier-integration-test"
# Every hop, the in-container ones included, must have run and passed (none skipped).
MUST_PASS = ("device-class", "resource-slices", "claims-allocated", "scheduler", "claim-node", "pods-started",
             "container-device", "distinct-gpus", "jobs-complete", "claims-released", "case-nvlink-group",
             "case-gpu-health", "case-compute-domain", "case-first-available", "case-mig")
# Case inference (smokeTest.inference, which this test turns on: the stack file leaves it off, since
# `make up` runs no gateway, KEDA or Prometheus): every hop of a model served behind the gateway.
INFERENCE_HOPS = tuple(check for check, _hop in inference.HOPS)

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
    controllers: InferenceControllers


def set_smoke(tier: Tier, **values: Any) -> None:
    """Change smokeTest keys in the stack file (a new trigger is a new run: the test runs again)."""
    stack_file = tier.project / f"Pulumi.{tier.stack.name}.yaml"
    doc = yaml.safe_load(stack_file.read_text())
    doc["config"][SETTINGS_KEY].setdefault("smokeTest", {}).update(values)
    stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))


# The stack file's stuckSeconds: a break fails its run that many seconds after its pod is held.
STACK_STUCK_SECONDS = int(stack_settings()["smokeTest"]["stuckSeconds"])
# The stack file's optional cases, by the key that switches each.
CASES = ("nvlinkGroup", "computeDomain", "firstAvailable", "inference")


def only_cases(tier: Tier, *cases: str) -> dict[str, Any]:
    """smokeTest values running the base case with one pod and just `cases` (`gpuHealth` among them
    or not): a broken hop is shown failing by the case that crosses it, not by a whole run of every
    case (each extra case's pods are seconds of `up` that prove nothing about that hop)."""
    full = tier.settings["smokeTest"]
    unknown = set(cases) - {*CASES, "gpuHealth", "mig"}
    assert not unknown, unknown
    # mig: on by default where a pool's layout cuts its GPUs (the stack's `mig` pool), so named here.
    return {"gpus": 1, "gpuHealth": "gpuHealth" in cases, "mig": "mig" in cases, "stuckSeconds": STACK_STUCK_SECONDS,
            **{c: {**full[c], "enabled": c in cases} for c in CASES}}


def all_cases(tier: Tier, *, inference_on: bool = True) -> dict[str, Any]:
    """smokeTest values of the stack file as the tier deployed it: every case on."""
    full = tier.settings["smokeTest"]
    return {**{k: full[k] for k in ("gpus", "gpuHealth", "stuckSeconds", *CASES)},
            "mig": Settings.model_validate(tier.settings).smoke_test.mig,  # derived: the `mig` pool's layout
            "inference": {**full["inference"], "enabled": inference_on}}


@pytest.fixture(scope="module")
def tier(engine_tools: EngineTools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tier]:
    from pulumi import automation as auto

    lacking = nt.missing(engine_tools.bin_dir) + inference_stack.missing(engine_tools.bin_dir)
    if lacking:
        skip_or_fail("node tier cannot run here: " + "; ".join(lacking))
    work = tmp_path_factory.mktemp("node-tier")
    settings = stack_settings()
    t0 = time.monotonic()
    cluster, kwok_nodes = start_kwok_pool(work, engine_tools.bin_dir, settings)
    nodes = stack = controllers = None
    try:
        nodes, kubelet_nodes = kubelet_tier(work, engine_tools.bin_dir, cluster, settings)
        nodes.up()
        controllers = InferenceControllers(cluster, engine_tools.bin_dir, work / "inference",
                                           node=next(iter(kubelet_nodes)), image=nodes.pause.reference).start()
        start_seconds = time.monotonic() - t0
        print(f"\ncluster + node tier start: {start_seconds:.1f}s (node tier {nodes.start_seconds:.1f}s)")
        # The budget is an upper bound, not a wait: the inference case's autoscaling (two HPA syncs
        # each way) runs after every Job case. A whole run holds a pod at its start for longer than
        # the stack file's 15 s under CI's load (a compute-domain channel waits for the second
        # node's IMEX daemon: one clean-clone run gave up there); the breaks, one case each, keep 15 s.
        settings["smokeTest"] = {**settings["smokeTest"], "image": nodes.probe.reference, "timeoutSeconds": 420,
                                 "stuckSeconds": 30,
                                 "inference": {"enabled": True, "prometheusUrl": controllers.prometheus_url}}
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
                   {k: v.value for k, v in up.outputs.items()}, up_seconds, start_seconds, controllers)
    finally:
        try:
            if stack is not None:
                try:
                    stack.destroy(on_output=print, color="never")
                finally:
                    stack.workspace.remove_stack(stack.name, force=True)
        finally:
            try:
                if controllers is not None:
                    controllers.stop()
                if nodes is not None:
                    nodes.down()
            finally:
                cluster.down()


def report_tests(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in report["results"]["tests"]}


def run_pods(tier: Tier, report: dict[str, Any], case: str | None = None) -> list[dict[str, Any]]:
    selector = f"{RUN_LABEL}={report['results']['extra']['runId']}" + (f",{CASE_LABEL}={case}" if case else "")
    return list(tier.cluster.get_json("pods", "-A", "-l", selector)["items"])


def probe_lines(tier: Tier, pod: dict[str, Any], kind: str) -> list[str]:
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    log = tier.cluster.kubectl("logs", "-n", ns, name, "-c", "probe")
    return [line.split(" ", 2)[2] for line in log.splitlines() if line.startswith(f"CK8S-SMOKE {kind} ")]


def published(tier: Tier) -> dict[tuple[str, str], dict[str, Any]]:
    """(node, device) -> the device's attributes and taints, as the GPU plugins published them."""
    return {(s["spec"]["pool"]["name"], d["name"]): d for s in tier.cluster.get_json("resourceslices")["items"]
            if s["spec"]["driver"] == "gpu.nvidia.com" for d in s["spec"]["devices"]}


def test_smoke_pods_run_on_real_kubelets_and_see_exactly_their_gpu(tier: Tier) -> None:
    report = tier.outputs["smokeReport"]
    tests = report_tests(report)
    assert passed(report), f"smoke test did not pass: {report['results']['summary']}"
    for check in MUST_PASS:
        assert tests[check]["status"] == "passed", (check, tests[check])
    pods = run_pods(tier, report)
    assert tests["container-device"]["message"] == f"{len(pods)} container(s) saw exactly their allocated device"
    assert "held at the same time" in tests["distinct-gpus"]["message"], tests["distinct-gpus"]
    # Independently of the verifier: each pod ran on a kubelet node, and its own log names the UUID
    # of the device its claim was allocated, read from the plugin's ResourceSlice.
    assert {p["spec"]["nodeName"] for p in pods} <= set(tier.kubelet_nodes), pods
    devices = published(tier)
    uuid_of = {d["attributes"]["uuid"]["string"]: (node, name) for (node, name), d in devices.items()}
    gpus = tier.settings["smokeTest"]["gpus"]
    whole = run_pods(tier, report, "gpus")
    seen = set()
    for pod in whole:
        uuids = probe_lines(tier, pod, "uuid")
        print(f"{pod['metadata']['name']} on {pod['spec']['nodeName']}: nvidia-smi saw {uuids}")
        assert len(uuids) == 1 and uuids[0].startswith("GPU-"), uuids
        assert uuids[0] not in seen, f"{uuids[0]} seen by two pods"
        seen.add(uuids[0])
        node, device = uuid_of[uuids[0]]
        assert node == pod["spec"]["nodeName"], (uuids, node)
        # gpu-0 of every kubelet-pool node carries NVIDIA's health taint: never handed out.
        assert not devices[(node, device)].get("taints"), (node, device, devices[(node, device)])
    assert len(whole) == gpus
    # nvlinkGroup: one pod saw 4 GPUs of its node, all in one Fabric Manager partition of 4.
    (group,) = run_pods(tier, report, "nvlink-group")
    uuids = probe_lines(tier, group, "uuid")
    where = {uuid_of[u] for u in uuids}
    assert len(uuids) == 4 and {n for n, _ in where} == {group["spec"]["nodeName"]}, (uuids, where)
    assert len({devices[w]["attributes"]["partition4"]["int"] for w in where}) == 1, where
    # mig: the `mig` pool's layout (all-balanced on one H100) published as MIG devices; one pod per
    # profile, each on that pool's node, seeing the MIG device of its own profile under its GPU.
    mig_pods = [p for p in run_pods(tier, report)
                if p["metadata"].get("labels", {}).get(CASE_LABEL, "").startswith("mig")]
    profiles = set()
    for pod in mig_pods:
        uuids = probe_lines(tier, pod, "uuid")
        (mig_uuid,) = [u for u in uuids if u.startswith("MIG-")]
        node, device = uuid_of[mig_uuid]
        attrs = devices[(node, device)]["attributes"]
        assert node == pod["spec"]["nodeName"] == "mig-node-0", (node, pod["spec"]["nodeName"])
        assert set(uuids) == {mig_uuid, attrs["parentUUID"]["string"]}, uuids  # nvidia-smi -L: GPU, then MIG
        profiles.add(attrs["profile"]["string"])
    assert profiles == {"1g.10gb", "2g.20gb", "3g.40gb"}, profiles
    # computeDomain: two pods on two nodes, each with the IMEX channel in its container.
    cd_pods = run_pods(tier, report, "compute-domain")
    assert len({p["spec"]["nodeName"] for p in cd_pods}) == 2, cd_pods
    for pod in cd_pods:
        assert any("nvidia-caps-imex-channels/channel0" in line for line in probe_lines(tier, pod, "imex")), pod
    # firstAvailable: the H100 node's pod took the preferred H100, the GB200 node's the fallback.
    for case, want in (("first-available-preferred", "NVIDIA H100 80GB HBM3"),
                       ("first-available-fallback", None)):
        (pod,) = run_pods(tier, report, case)
        (u,) = probe_lines(tier, pod, "uuid")
        product = devices[uuid_of[u]]["attributes"]["productName"]["string"]
        assert (product == want) if want else (product != "NVIDIA H100 80GB HBM3"), (case, product)
    # The pods are done: the kubelet unprepared their claims and the plugins removed each claim's CDI spec.
    tier.cluster.wait_for("the claims' CDI specs to be removed on unprepare",
                          lambda: not [f for n in tier.nodes.nodes for f in n.paths.cdi.glob("*.yaml")], timeout=60)


def test_a_model_served_through_the_gateway_on_real_gpus_autoscales_on_its_queue(tier: Tier) -> None:
    """Case inference in the same `up`: every hop passed, and independently of the verifier, what the
    real Prometheus scraped through the chart's PodMonitor: each replica (both backends, and the one
    the HPA added) reported one GPU from inside, no GPU twice, each a GPU a kubelet node publishes;
    and what the real Traefik counted on the route's routers."""
    report = tier.outputs["smokeReport"]
    tests = report_tests(report)
    for check in INFERENCE_HOPS:
        assert tests[check]["status"] == "passed", (check, tests[check])
    print("\n".join(f"{c}: {tests[c]['message']}" for c in INFERENCE_HOPS))
    ns = tier.settings["smokeTest"].get("namespace", "gpu-smoke-test")
    seen = tier.controllers.prometheus.query(f'max_over_time(ck8s_model_gpu_info{{namespace="{ns}"}}[1h])')
    gpu_of = {r["metric"]["pod"]: r["metric"]["uuid"] for r in seen}
    stable_max = int(tier.settings["smokeTest"]["inference"].get("maxReplicas", 2))
    assert len(gpu_of) >= stable_max + 1, gpu_of  # the scaled-out stable replicas and the canary
    assert len(set(gpu_of.values())) == len(gpu_of), f"a GPU served two replicas: {gpu_of}"
    published_uuids = {d["attributes"]["uuid"]["string"]: node for (node, _), d in published(tier).items()}
    assert {published_uuids.get(u) for u in gpu_of.values()} <= set(tier.kubelet_nodes), gpu_of
    counted = sum(float(line.rsplit(" ", 1)[1]) for line in tier.controllers.traefik.metrics().splitlines()
                  if line.startswith("traefik_router_requests_total{") and "httproute-" in line
                  and ns in line)
    asked = inference.HEADER_REQUESTS + int(tier.settings["smokeTest"]["inference"].get("requests", 200))
    assert counted >= asked, (counted, asked)


def inference_break(tier: Tier, tamper: Any, why: str) -> dict[str, dict[str, Any]]:
    """Case inference alone (one base pod beside it), run as `ck8s-gpu smoke` runs it (render,
    install, the runner `up` runs too, clean up) with the rendered objects changed by `tamper`: the
    break a user's edit or a controller's bug would make, without an `up` per break."""
    from components.facts.cluster import cluster_facts
    from components.kube.charts import render
    from components.kube.client import api_client
    from components.smoke.gateway import KubeGateway
    from components.smoke.plan import smoke_plan
    from components.smoke.run import Ref, RunSpec, cleanup, install, namespace_labels, run_smoke
    from components.tables import pins
    from components.validate import parse

    smoke = {**tier.settings["smokeTest"], **only_cases(tier, "inference", "gpuHealth"), "namespace": "inference-break"}
    settings = parse({**tier.settings, "smokeTest": smoke}, "node tier")
    plan = smoke_plan(settings, cluster_facts(settings), pins.image("smoke-test"), nonce=why)
    objects = render("gpu-smoke-test", plan.values, release=plan.release, namespace=plan.namespace)
    tamper({(o["kind"], o["metadata"]["name"].split("-")[-2]): o for o in objects})
    gw = KubeGateway(api_client(Path(tier.cluster.kubeconfig).read_text()))
    created: list[Ref] = []
    t = time.monotonic()
    try:
        install(gw, objects, plan.namespace, created, labels=namespace_labels(plan.expectations))
        outcome = run_smoke(gw, RunSpec.from_dict(plan.spec()), progress=lambda p: print(p.hop, p.message))
        split = report_tests(outcome.report).get("case-inference-split", {})
        if "no available server" in str(split.get("message", "")) + str(split.get("extra", "")):
            # the gateway had no endpoints for a backend: what it said, and what the cluster had
            print(tier.controllers.tail())
            print(tier.cluster.kubectl("get", "endpointslices", "-n", plan.namespace, "-o", "wide", check=False))
    finally:
        left = cleanup(gw, created)
    print(f"inference break {why}: {time.monotonic() - t:.1f}s")
    assert not left, left
    assert not outcome.passed
    return report_tests(outcome.report)


def test_inference_breaks_each_fail_naming_their_hop(tier: Tier) -> None:
    """A route to a Service that does not exist; a replica without a claim; and, in one run, a wrong
    weight, a header rule that does not match and an autoscaler on a metric no server exports: each
    fails its own hop, with why; hops past a stop are not reached, never passed."""

    def missing_backend(objs: dict[tuple[str, str], Any]) -> None:
        objs[("HTTPRoute", "route")]["spec"]["rules"][1]["backendRefs"][0]["name"] = "no-such-model"

    tests = inference_break(tier, missing_backend, "missing-backend")
    assert tests["case-inference-route"]["status"] == "failed", tests["case-inference-route"]
    assert "BackendNotFound" in tests["case-inference-route"]["message"], tests["case-inference-route"]
    assert tests["case-inference-replicas"]["status"] == "passed", tests["case-inference-replicas"]
    for later in INFERENCE_HOPS[2:]:
        assert tests[later]["status"] == "skipped" and "not reached" in tests[later]["message"], tests[later]

    def no_claim(objs: dict[tuple[str, str], Any]) -> None:
        pod = objs[("Deployment", "canary")]["spec"]["template"]["spec"]
        del pod["resourceClaims"]
        del pod["containers"][0]["resources"]["claims"]

    tests = inference_break(tier, no_claim, "no-claim")
    r = tests["case-inference-replicas"]
    assert r["status"] == "failed" and "holds no ResourceClaim" in r["message"] + str(r.get("extra")), r
    for later in INFERENCE_HOPS[1:]:
        assert tests[later]["status"] == "skipped" and "not reached" in tests[later]["message"], tests[later]

    def three(objs: dict[tuple[str, str], Any]) -> None:
        rules = objs[("HTTPRoute", "route")]["spec"]["rules"]
        rules[0]["matches"][0]["headers"][0]["value"] = "a-model-nobody-asks-for"
        for ref in rules[1]["backendRefs"]:
            ref["weight"] = 50
        trigger = objs[("ScaledObject", "scaler")]["spec"]["triggers"][0]["metadata"]
        trigger["query"] = trigger["query"].replace("vllm:num_requests_waiting", "vllm:no_such_metric")

    tests = inference_break(tier, three, "three-at-once")
    for check, words in (("case-inference-split", "its weight asks 80.0%"),
                         ("case-inference-header", "the header rule did not match"),
                         ("case-inference-metrics", "ScalingActive False")):
        assert tests[check]["status"] == "failed" and words in tests[check]["message"], tests[check]
    assert tests["case-inference-route"]["status"] == tests["case-inference-replicas"]["status"] == "passed"
    assert tests["case-inference-autoscale"]["status"] == "skipped", tests["case-inference-autoscale"]


def broken_up(tier: Tier, trigger: str, *cases: str) -> str:
    """`up` with a new run id and only `cases` beside the base one must fail; returns the failure
    text (no traceback, no engine noise)."""
    from pulumi import automation as auto

    set_smoke(tier, trigger=trigger, **only_cases(tier, *cases))
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


def hgx_node(tier: Tier) -> Any:
    return next(n for n in tier.nodes.nodes if n.spec.fabric_partitions is not None)


def test_an_allocation_splitting_an_nvlink_partition_fails_at_prepare(tier: Tier) -> None:
    # The fabric changed under a stale slice: Fabric Manager's 4-GPU partitions are now other GPUs
    # than the published partition4 attribute says, so the claim's 4 GPUs are no partition and the
    # driver refuses to prepare them (FabricManagerPartitioning: device_state.go).
    node = hgx_node(tier)
    good = dict(node.spec.fabric_partitions)
    stale = {**good, 1: [1, 2, 5, 6], 2: [3, 4, 7, 8]}
    tier.nodes.republish(node.name, node.spec.devices, stale)
    try:
        text = broken_up(tier, "nvlink-split", "nvlinkGroup")
        assert "pods-started [kubelet]" in text, text[-4000:]
        assert "does not match any FM partition" in text, text[-4000:]
        assert "case-nvlink-group [NVLink group]" in text, text[-4000:]
    finally:
        tier.nodes.republish(node.name, node.spec.devices, good)


def test_a_device_turning_unhealthy_while_held_fails_the_health_hop(tier: Tier) -> None:
    # One node only (the H100 one, where nvlinkGroup holds 4 GPUs): on every node each prepare would
    # taint a device until the later cases' pods find no healthy GPU left and wait out the timeout.
    node = hgx_node(tier)
    node.set_fault("unhealthy")
    try:
        # nvlinkGroup is the case whose pod lands on the H100 node: its prepare is what taints.
        text = broken_up(tier, "unhealthy", "gpuHealth", "nvlinkGroup")
        assert "case-gpu-health [device health]" in text, text[-4000:]
        assert "turned unhealthy while" in text and "gpu.nvidia.com/xid" in text, text[-4000:]
    finally:
        node.set_fault(None)
        tier.nodes.republish(node.name, node.spec.devices)  # published again without the new taint


def test_a_container_missing_its_imex_channel_fails_the_channel_hop(tier: Tier) -> None:
    with tier.nodes.cd_fault("no-imex-channel"):
        text = broken_up(tier, "no-imex-channel", "computeDomain")
    assert "case-compute-domain [IMEX channel]" in text, text[-4000:]
    assert "pods-started [kubelet]" not in text, "the pods did start: only the channel is missing"


def test_the_fallback_taken_while_the_preferred_model_was_free_fails(tier: Tier) -> None:
    # The H100 node's driver names its GPUs otherwise than the instance table (a driver upgrade
    # renaming productName): the preferred alternative matches nothing there, the fallback is taken
    # on a node whose GPUs ARE the preferred model.
    node = hgx_node(tier)
    good = node.spec.devices
    renamed = [{**d, "attributes": {**d["attributes"], "productName": {"string": "NVIDIA H100 HBM3 (renamed)"}}}
               for d in good]
    tier.nodes.republish(node.name, renamed)
    try:
        text = broken_up(tier, "fallback-while-free", "firstAvailable")
        assert "case-first-available [prioritized list]" in text, text[-4000:]
    finally:
        tier.nodes.republish(node.name, good)


def test_up_passes_again_once_every_hop_is_mended(tier: Tier) -> None:
    # Case inference's breaks go through the runner (test_inference_breaks_...), never through `up`:
    # nothing of it needs mending, and its minute is not spent twice.
    set_smoke(tier, trigger="mended", **all_cases(tier, inference_on=False))
    result = tier.stack.up(on_output=print, color="never")
    report = result.outputs["smokeReport"].value
    assert passed(report), report["results"]["summary"]
    tests = report_tests(report)
    for check in MUST_PASS:  # every case back on, each passing
        assert tests[check]["status"] == "passed", (check, tests[check])


def test_operator_managed_dra_passes_the_smoke_test_on_real_kubelets(tier: Tier) -> None:
    """gpuStack.draManagedBy operator on local-kubelet: the GPU Operator chart's stand-in renders
    the GPUCluster, the GPUCluster controller's stand-in reconciles it beside the API server
    (tests/fakes/gpu_operator/live.py), its kubelet plugin DaemonSet runs on every GPU node (KWOK's
    and the real kubelets', where the simulated plugin itself is the host process), GpuClusterReady
    passes, and the smoke test's pod gets its GPU through DRA and CDI and proves it from inside.
    No DRA chart is installed on this stack, so no switch procedure is needed; one case keeps it short."""
    from tests.fakes import gpu_operator_chart
    from tests.fakes.gpu_operator.clusterpolicy import GPU_PCI_LABELS
    from tests.fakes.gpu_operator.live import LiveGpuCluster
    from tests.helpers import chart_repo

    stack_file = tier.project / f"Pulumi.{tier.stack.name}.yaml"
    doc = yaml.safe_load(stack_file.read_text())
    settings = doc["config"][SETTINGS_KEY]
    container = {"name": "gpus", "image": tier.nodes.probe.reference, "imagePullPolicy": "Never",
                 "command": ["sleep", "infinity"]}
    nodes = [*tier.kubelet_nodes, *tier.kwok_nodes]
    for node in nodes:  # NFD's label on a node with an NVIDIA PCI device (no NFD worker runs here)
        tier.cluster.kubectl("label", "node", node, f"{GPU_PCI_LABELS[0]}=true", "--overwrite")
    with chart_repo.serve(gpu_operator_chart.repository(tier.project.parent / "gpu-operator-mirror")) as repo, \
            LiveGpuCluster(tier.cluster, container=container) as controller:
        try:
            settings["gpuStack"] = {**settings.get("gpuStack", {}), "draManagedBy": "operator", "driver": "host",
                                    "toolkit": "host", "addons": {"gpuOperator": {"enabled": True,
                                                                                  "repository": repo}}}
            # gpuHealth stays on: gpu-0 of each kubelet node carries the health taint the tier put there
            settings["smokeTest"] = {**settings["smokeTest"], **only_cases(tier, "gpuHealth"),
                                     "trigger": "operator-mode"}
            stack_file.write_text(yaml.safe_dump(doc, sort_keys=False))
            t = time.monotonic()
            result = tier.stack.up(on_output=print, color="never")
            print(f"pulumi up (operator mode): {time.monotonic() - t:.1f}s")
            report = result.outputs["smokeReport"].value
            assert passed(report), report["results"]["summary"]
            tests = report_tests(report)
            for check in ("pods-started", "container-device", "claims-released"):
                assert tests[check]["status"] == "passed", (check, tests[check])
            gate = [r for r in tier.stack.export_stack().deployment["resources"]
                    if r["type"].endswith(":GpuClusterReady")]
            assert len(gate) == 1 and gate[0]["outputs"]["gpuNodes"] == len(nodes), gate
            plugin = tier.cluster.get_json("daemonset", "nvidia-dra-driver-kubelet-plugin", "-n", "gpu-operator")
            assert plugin["status"]["numberAvailable"] == len(nodes), plugin["status"]
            assert controller.errors == [], controller.errors
        finally:
            controller.remove()
            _restore_device_classes(tier)


def _restore_device_classes(tier: Tier) -> None:
    """The GPUCluster owned the DeviceClasses while it ran (the stand-in applies them with its owner
    reference, as the operator does): the garbage collector deletes them with it. The tests after
    this one run on the tier as it started, with the driver chart's classes: put them back once the
    owned ones are gone."""
    dra = load_tool("dra_publisher")

    def owned_gone() -> bool:
        classes = tier.cluster.get_json("deviceclasses")["items"]
        return not any(c["metadata"].get("ownerReferences") for c in classes)

    tier.cluster.wait_for("the GPUCluster's DeviceClasses deleted with it", owned_gone, timeout=60)
    tier.cluster.apply([dra.device_class_manifest(), dra.mig_device_class_manifest()])


def _runtime_class_pod(name: str, node: str, runtime_class: str, image: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "runtimeClassName": runtime_class, "restartPolicy": "Never",
                     "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "c", "image": image, "imagePullPolicy": "Never",
                                     "command": ["bash", "-c", "exit 0"]}]}}


def test_a_pod_starts_with_each_runtime_class_the_operator_creates(tier: Tier) -> None:
    """gpuStack.toolkit host: the RuntimeClasses the operator creates for the aws stacks' values
    (tests/fakes/gpu_operator/runtime_classes.py, from its source) each start a pod through the
    real nvidia-container-runtime{,.cdi,.legacy} the node script's chain registered; a class whose
    handler the node lacks (what nvidia-cdi and nvidia-legacy were before) never starts one."""
    values = final_values(GPU_OPERATOR, settings_for("aws-dev"))
    classes = runtime_classes.created(values)
    assert set(classes) == {"nvidia", "nvidia-cdi", "nvidia-legacy"}
    missing_handler = "nvidia-unregistered"
    node, image = next(iter(tier.kubelet_nodes)), tier.nodes.probe.reference
    objs = [{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": n}, "handler": h}
            for n, h in {**classes, missing_handler: missing_handler}.items()]
    pods = {c: f"runtime-class-{c}" for c in classes}
    try:
        tier.cluster.apply(objs)
        tier.cluster.create([_runtime_class_pod(pod, node, c, image) for c, pod in pods.items()]
                            + [_runtime_class_pod("runtime-class-missing", node, missing_handler, image)])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            phases = {c: tier.cluster.get_json("pod", "-n", "default", pod)["status"].get("phase")
                      for c, pod in pods.items()}
            if all(p in ("Succeeded", "Failed") for p in phases.values()):
                break
            time.sleep(1)
        why = {c: [e.get("message") for e in tier.cluster.get_json(
                   "events", "-n", "default", "--field-selector", f"involvedObject.name={pods[c]}")["items"]]
               for c, phase in phases.items() if phase != "Succeeded"}
        assert phases == {c: "Succeeded" for c in classes}, (phases, why)
        events = tier.cluster.get_json("events", "-n", "default",
                                       "--field-selector", "involvedObject.name=runtime-class-missing")["items"]
        assert any("no runtime for \"nvidia-unregistered\"" in e.get("message", "") for e in events), events
        assert tier.cluster.get_json("pod", "-n", "default", "runtime-class-missing")["status"]["phase"] == "Pending"
    finally:
        tier.cluster.kubectl("delete", "pod", "-n", "default", *pods.values(), "runtime-class-missing",
                             "--ignore-not-found", "--wait=false", check=False)
        tier.cluster.kubectl("delete", "runtimeclass", *classes, missing_handler, "--ignore-not-found", check=False)


# --- utilization: a scripted workload, the simulated DCGM exporter, `ck8s-gpu report utilization` ----
UTIL_NS = "utilization"
ACTIVITY = "ck8s-gpu.io/sim-gpu-activity"  # tools/mod/simgpu cmd/ck8s-sim-dcgm-exporter
REPORT_STEP = 5.0
QUEUE = "kai.scheduler/queue"


def _workload(name: str, pool: str, seconds: int, activity: float, queue: str, image: str,
              profile: str = "") -> list[dict[str, Any]]:
    """A claim and a pod holding it for `seconds`, doing `activity` on it (what the exporter reports)."""
    exactly: dict[str, Any] = {"deviceClassName": "mig.nvidia.com" if profile else "gpu.nvidia.com"}
    if profile:
        exactly["selectors"] = [{"cel": {"expression": f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"}}]
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": name, "namespace": UTIL_NS},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": UTIL_NS, "labels": {QUEUE: queue},
                        "annotations": {ACTIVITY: str(activity)}},
           "spec": {"restartPolicy": "Never", "nodeSelector": {SIMULATED_POOL_LABEL: pool},
                    "tolerations": [{"operator": "Exists"}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
                    "containers": [{"name": "work", "image": image, "imagePullPolicy": "Never",
                                    "command": ["sleep", str(seconds)], "resources": {"claims": [{"name": "gpu"}]}}]}}
    return [claim, pod]


def _instant(url: str, query: str) -> list[dict[str, Any]]:
    import json
    import urllib.parse
    import urllib.request

    with urllib.request.urlopen(f"{url}/api/v1/query?{urllib.parse.urlencode({'query': query})}", timeout=10) as r:
        return list(json.load(r)["data"]["result"])


def _ran(tier: Tier, name: str, until: float) -> float:
    """Seconds the pod's container ran, up to `until` while it still runs."""
    from datetime import datetime

    state = tier.cluster.get_json("pod", "-n", UTIL_NS, name)["status"]["containerStatuses"][0]["state"]
    ran = state.get("terminated") or state["running"]
    start = datetime.fromisoformat(ran["startedAt"].replace("Z", "+00:00")).timestamp()
    end = (datetime.fromisoformat(state["terminated"]["finishedAt"].replace("Z", "+00:00")).timestamp()
           if "terminated" in state else until)
    return end - start


def test_the_utilization_report_counts_a_scripted_workload(tier: Tier) -> None:
    """Three pods with known activity on known devices: a whole GPU busy 80 % (team-a), a 3g.40gb
    MIG instance busy 50 % (team-a), a whole GPU held idle (team-b, still running when the report
    runs). The simulated exporter on every kubelet node, scraped as the GPU Operator's
    ServiceMonitor scrapes it; the report through the CLI. Paid GPU-hours are exact (every node
    lived through the window); allocated within two scrapes and two steps per pod start and end;
    busy/allocated exact where one workload fills a pool."""
    import io
    import json
    from argparse import Namespace

    from components.cli import report as report_cli
    from tests.helpers import dcgm_scrape
    from tests.helpers.node_tier import STACK_FILE

    url, image = tier.controllers.prometheus_url, tier.nodes.probe.reference
    dcgm_scrape.start(tier.cluster, list(tier.kubelet_nodes), tier.nodes.pause.reference, tier.nodes.dcgm_port)
    try:
        tier.cluster.wait_for("every node's exporter scraped", lambda: len(
            [r for r in _instant(url, 'up{job="nvidia-dcgm-exporter"}') if r["value"][1] == "1"])
            == len(tier.kubelet_nodes), timeout=90)
        start = time.time() - 2 * REPORT_STEP
        tier.cluster.apply([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": UTIL_NS}}])
        tier.cluster.apply(_workload("busy", "kubelet", 30, 0.8, "team-a", image)
                           + _workload("mig", "mig", 30, 0.5, "team-a", image, profile="3g.40gb")
                           + _workload("idle", "kubelet", 600, 0.0, "team-b", image))

        def phase(name: str) -> str:
            return str(tier.cluster.get_json("pod", "-n", UTIL_NS, name)["status"].get("phase"))

        try:
            tier.cluster.wait_for("the two timed pods done", lambda: phase("busy") == phase("mig") == "Succeeded",
                                  timeout=150, interval=2)
        except TimeoutError:
            print(tier.cluster.kubectl("get", "pods,resourceclaims", "-n", UTIL_NS, "-o", "wide", check=False))
            print(tier.cluster.kubectl("get", "events", "-n", UTIL_NS, check=False))
            raise
        time.sleep(2 * dcgm_scrape.SCRAPE_SECONDS)  # their last samples scraped, and the staleness marks
        end = time.time()
        ran = {n: _ran(tier, n, end) for n in ("busy", "mig", "idle")}
        out, err = io.StringIO(), io.StringIO()
        args = Namespace(kubeconfig=Path(tier.cluster.kubeconfig), context=None, prometheus_url=url,
                         since=f"{end - start:.0f}s", until=str(end), step=f"{REPORT_STEP:g}s", idle_below=0.01,
                         stack=STACK_FILE, json=True, out=None)
        assert report_cli.execute(args, out=out, err=err) == 0, err.getvalue()
        doc = json.loads(out.getvalue())
        print(json.dumps(doc, indent=1))
    finally:
        tier.cluster.kubectl("delete", "namespace", UTIL_NS, "--ignore-not-found", "--wait=false", check=False)
        tier.cluster.kubectl("delete", "-n", dcgm_scrape.NAMESPACE, "servicemonitor,service,pod",
                             "-l", "app=nvidia-dcgm-exporter", "--ignore-not-found", "--wait=false", check=False)
    hours = float(args.since.removesuffix("s")) / 3600
    pools, queues = doc["pools"], doc["queues"]
    # Paid: every GPU node of every pool lived through the window (the stack file's GPUs per node).
    per_node = {"gpu": 4, "kubelet": 4, "hgx": 8, "mig": 1}
    counts = {"gpu": len(tier.kwok_nodes), "kubelet": 2, "hgx": 1, "mig": 1}
    for pool, gpus in per_node.items():
        assert pools[pool]["paidGpuHours"] == pytest.approx(hours * gpus * counts[pool], rel=1e-3), (pool, pools)
    slack = 2 * (dcgm_scrape.SCRAPE_SECONDS + REPORT_STEP) + 2  # per start and end of a pod, in seconds
    share = 3 / 7  # 3g.40gb: 3 of the H100's 7 compute slices
    kubelet, mig = pools["kubelet"], pools["mig"]
    assert kubelet["allocatedGpuHours"] * 3600 == pytest.approx(ran["busy"] + ran["idle"], abs=2 * slack)
    assert kubelet["idleAllocatedGpuHours"] * 3600 == pytest.approx(ran["idle"], abs=slack)
    assert mig["allocatedGpuHours"] * 3600 == pytest.approx(ran["mig"] * share, abs=slack * share)
    # Where one workload is the pool's only busy one, busy/allocated is its activity, sampling aside.
    assert mig["busyOfAllocated"] == pytest.approx(0.5, abs=1e-3)
    assert kubelet["busyGpuHours"] == pytest.approx(
        0.8 * (kubelet["allocatedGpuHours"] - kubelet["idleAllocatedGpuHours"]), abs=1e-3)
    assert queues["team-a"]["allocatedGpuHours"] * 3600 == pytest.approx(ran["busy"] + ran["mig"] * share,
                                                                          abs=2 * slack)
    assert queues["team-b"]["idleAllocatedGpuHours"] == queues["team-b"]["allocatedGpuHours"] > 0
    (idle,) = doc["idleAllocatedNow"]
    assert idle["pods"] == [f"{UTIL_NS}/idle"] and idle["queues"] == ["team-b"] and idle["pool"] == "kubelet"
    assert idle["idleMinutes"] * 60 == pytest.approx(ran["idle"], abs=slack)


def test_conformance_proves_what_the_tier_can_and_signs_it(tier: Tier, tmp_path: Path) -> None:
    """`ck8s-gpu conformance run` against the tier with the 1.35 checklist (the control plane is 1.34,
    whose checklist lacks the accelerator rows), given the stack's file: the procedures the tier can
    prove pass (the inference ones by the stack's own inference case through the real Traefik, KEDA
    and Prometheus), the bundle verifies and one changed byte does not; a plugin handing out the
    wrong GPU fails dra_support; a MIG layout the pool's node does not publish fails gpu_sharing; no
    exporter fails accelerator_metrics; a pod mounting a GPU by
    hostPath fails secure_accelerator_access;
    the HPA on a metric KEDA cannot read fails ai_service_metrics and pod_autoscaling."""
    import io
    import json
    from argparse import Namespace

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from components.cli import conformance as conformance_cli
    from tests.helpers import dcgm_scrape

    key = Ed25519PrivateKey.generate()
    (tmp_path / "key.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    (tmp_path / "pub.pem").write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))

    stack_file = tmp_path / "Pulumi.conformance.yaml"
    stack_file.write_text(yaml.safe_dump({"config": {SETTINGS_KEY: tier.settings}}, sort_keys=False))

    def run(out: Path, **kw: Any) -> tuple[int, dict[str, Any], str]:
        args = Namespace(**{"kubeconfig": Path(tier.cluster.kubeconfig), "context": None, "out": out, "only": None,
                            "image": tier.nodes.probe.reference, "timeout": 120, "sign_key": tmp_path / "key.pem",
                            "json": True, "checklist": "1.35", "stack": stack_file, "prometheus_url": None, **kw})
        o, e = io.StringIO(), io.StringIO()
        rc = conformance_cli.execute(args, out=o, err=e)
        print(o.getvalue(), e.getvalue())
        text = o.getvalue()
        return rc, json.loads(text[text.index("{\n"):]), e.getvalue()

    dcgm_scrape.start(tier.cluster, list(tier.kubelet_nodes), tier.nodes.pause.reference, tier.nodes.dcgm_port)
    try:
        rc, doc, err = run(tmp_path / "evidence")
    finally:
        tier.cluster.kubectl("delete", "-n", dcgm_scrape.NAMESPACE, "service,pod", "-l", "app=nvidia-dcgm-exporter",
                             "--ignore-not-found", "--wait=false", check=False)
    rows = {r["id"]: r for r in doc["results"]}
    assert rc == 0, (err, doc)
    for rid, status in (("dra_support", "Implemented"), ("driver_runtime_management", "Implemented"),
                        ("gpu_sharing", "Implemented"), ("accelerator_metrics", "Implemented"),
                        ("secure_accelerator_access", "Partially Implemented"), ("ai_inference", "Implemented"),
                        ("pod_autoscaling", "Implemented"), ("ai_service_metrics", "Implemented")):
        assert (rows[rid]["status"], rows[rid]["outcome"]) == (status, "passed"), rows[rid]
    assert not tier.cluster.get_json("namespaces")["items"] or all(
        not n["metadata"]["name"].startswith("ck8s-gpu-conformance-") or n["status"]["phase"] == "Terminating"
        for n in tier.cluster.get_json("namespaces")["items"])
    verify = Namespace(bundle=tmp_path / "evidence", public_key=tmp_path / "pub.pem")
    assert conformance_cli.verify(verify, out=io.StringIO(), err=io.StringIO()) == 0
    product = tmp_path / "evidence" / "PRODUCT.yaml"
    product.write_bytes(product.read_bytes().replace(b"Implemented", b"Implementee", 1))
    assert conformance_cli.verify(verify, out=io.StringIO(), err=io.StringIO()) == 1
    # A plugin that hands a container the node's next GPU: the claim's pod sees another device.
    for node in tier.kubelet_nodes:
        tier.nodes.node(node).set_fault("wrong-device")
    try:
        rc, doc, _ = run(tmp_path / "broken", only="dra_support")
    finally:
        for node in tier.kubelet_nodes:
            tier.nodes.node(node).set_fault(None)
    (row,) = doc["results"]
    assert rc == 1 and (row["status"], row["outcome"]) == ("Not Implemented", "failed"), row
    # The stack's `mig` pool said to be cut 7g.80gb while its node publishes the all-balanced layout.
    recut = copy.deepcopy(tier.settings)
    next(p for p in recut["nodePools"] if p["name"] == "mig")["mig"] = {"devices": {"7g.80gb": 1}}
    (tmp_path / "Pulumi.recut.yaml").write_text(yaml.safe_dump({"config": {SETTINGS_KEY: recut}}, sort_keys=False))
    rc, doc, _ = run(tmp_path / "recut", only="gpu_sharing", stack=tmp_path / "Pulumi.recut.yaml")
    (row,) = doc["results"]
    assert rc == 0 and row["outcome"] == "failed" and "publishes no 7g.80gb instance" in row["notes"], row  # SHOULD
    # The exporter gone (its Service and pods deleted above): no utilization to read.
    rc, doc, _ = run(tmp_path / "no-exporter", only="accelerator_metrics")
    (row,) = doc["results"]
    assert rc == 1 and row["outcome"] == "failed" and "no DCGM exporter Service" in row["notes"], row
    # A pod handed a GPU by hostPath (on a simulated node: it need not run to hold the mount).
    tier.cluster.apply([{"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": "gpu-by-hostpath", "namespace": "default"},
                         "spec": {"nodeName": next(iter(tier.kwok_nodes)), "tolerations": [{"operator": "Exists"}],
                                  "volumes": [{"name": "nv", "hostPath": {"path": "/dev//nvidia0"}}],
                                  "containers": [{"name": "c", "image": tier.nodes.pause.reference,
                                                  "volumeMounts": [{"name": "nv", "mountPath": "/dev/nvidia0"}]}]}}])
    try:
        rc, doc, _ = run(tmp_path / "hostpath", only="secure_accelerator_access")
    finally:
        tier.cluster.kubectl("delete", "pod", "gpu-by-hostpath", "-n", "default", "--wait=false", check=False)
    (row,) = doc["results"]
    assert rc == 1 and row["outcome"] == "failed" and "default/gpu-by-hostpath" in row["notes"], row
    # KEDA's trigger on a Prometheus nobody runs: the HPA never reads the servers' metric.
    rc, doc, _ = run(tmp_path / "no-metric", only="ai_service_metrics,pod_autoscaling",
                     prometheus_url="http://127.0.0.1:9")
    rows = {r["id"]: r for r in doc["results"]}
    assert rc == 1 and {(r["status"], r["outcome"]) for r in rows.values()} == {("Not Implemented", "failed")}, rows
    assert "workload metrics" in rows["ai_service_metrics"]["notes"], rows


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

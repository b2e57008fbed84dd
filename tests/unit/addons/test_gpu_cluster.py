"""gpuStack.draManagedBy operator: the GPU Operator's GPUCluster runs the DRA driver (docs/adr/0048).

Values against gpu-operator v26.7.0 (templates/gpucluster.yaml, templates/validations.yaml), the add-on
set (no standalone DRA chart), what the mode refuses (each field path), and the GpuClusterReady gate
the program registers, run against a stand-in of the GPUCluster controller's status writes
(tests/fakes/gpu_operator/gpucluster.py, from its source at the pin).
"""

from __future__ import annotations

import importlib
import time
from typing import Any

import pytest

from components.addons.addon_set import AddonSet
from components.addons.gpu_operator import ADDON as GPU_OPERATOR
from components.addons.image_catalog import chart_images
from components.addons.selected import installed
from components.kube import wait
from components.plan.mockengine import run_program
from components.settings import Settings
from components.validate import parse
from tests.fakes.gpu_operator.clusterpolicy import GPU_PCI_LABELS
from tests.fakes.gpu_operator.gpucluster import KUBELET_PLUGIN, GpuClusterStandIn, Store, routes
from tests.fakes.gpu_operator.runner import Clock, Reconciler
from tests.unit.addons.helpers import POOL_AMI, StandInCluster, by_name, final_values, settings
from tests.unit.helpers import joined_by_path, raised_problems, settings_problems
from tests.unit.platforms.fake_api import FakeApi

pytestmark = pytest.mark.usefixtures("quick_backoff")  # tests/unit/conftest.py

OPERATOR_MODE = {"draManagedBy": "operator", "driver": "host", "toolkit": "host"}
HOST_POOL = {"name": "gpu", "ami": POOL_AMI}
NFD_GPU = {GPU_PCI_LABELS[0]: "true"}
GATE = "gpu-gpu-operator-gpu-cluster-ready"


def operator_mode(**raw: Any) -> Settings:
    gpu_stack = {**OPERATOR_MODE, **raw.pop("gpuStack", {})}
    raw.setdefault("nodePools", [HOST_POOL])
    return settings("aws", gpuStack=gpu_stack, **raw)


def raw_operator_mode(**gpu_stack: Any) -> dict[str, Any]:
    return {"platform": "aws", "region": "eu-north-1", "nodePools": [HOST_POOL],
            "gpuStack": {**OPERATOR_MODE, **gpu_stack}}


# ------------------------------------------------------------------------------- values and set


def test_the_chart_renders_a_gpu_cluster_instead_of_a_cluster_policy() -> None:
    values = final_values(GPU_OPERATOR, operator_mode(gpuStack={"gpuHealth": True}))
    assert values["clusterPolicy"] == {"deployCR": False} and values["gpuCluster"] == {"deployCR": True}
    # The knobs the standalone chart takes: the health gate, ComputeDomains (off: no multi-node NVLink pool).
    assert values["draDriver"] == {"computeDomains": {"enabled": False},
                                   "featureGates": {"NVMLDeviceHealthCheck": True}}
    assert values["hostPaths"] == {"driverInstallDir": "/"}  # the host's driver, not /run/nvidia/driver
    assert values["driver"]["enabled"] is False and values["toolkit"] == {"enabled": False}


def test_chart_mode_values_are_unchanged_by_the_setting() -> None:
    values = final_values(GPU_OPERATOR, settings("aws"))
    assert not {"clusterPolicy", "gpuCluster", "draDriver", "hostPaths"} & set(values)


def test_the_standalone_dra_chart_is_not_installed_and_the_operator_provides_the_gpus() -> None:
    s = operator_mode()
    assert "gpu-operator" in installed(s) and "dra-driver" not in installed(s)
    assert "dra-gpus" in GPU_OPERATOR.provides(s)
    assert "dra-driver" in installed(settings("aws"))  # chart mode: as before


def test_the_images_that_run_are_the_gpu_clusters() -> None:
    """A GPUCluster deploys the DRA driver and no device plugin, toolkit, GFD or MIG manager
    (internal/state/manager.go at v26.7.0): the image list (node images, offline preflight) follows."""
    running = {r.repository.rsplit("/", 1)[1] for r in chart_images("gpu-operator", operator_mode())}
    assert "dra-driver-nvidia-gpu" in running
    assert not running & {"k8s-device-plugin", "container-toolkit", "k8s-mig-manager"}
    chart = {r.repository.rsplit("/", 1)[1] for r in chart_images("gpu-operator", settings("aws"))}
    assert "dra-driver-nvidia-gpu" not in chart and "k8s-device-plugin" in chart  # GFD under a ClusterPolicy


# ------------------------------------------------------------------------------- refusals


def test_what_a_gpu_cluster_cannot_do_is_refused_naming_each_field() -> None:
    raw = raw_operator_mode(allocation="device-plugin", toolkit="operator", migStrategy="single",
                            driver="operator")
    raw["nodePools"] = [{"name": "gpu", "instanceType": "p5.48xlarge"}]
    raw["kubernetes"] = {"track": "1.33-classic", "featureGates": ["DynamicResourceAllocation=true"]}
    problems = joined_by_path(raised_problems(parse, raw), " | ")
    assert "needs the device plugin, which only the ClusterPolicy deploys" in problems["settings.gpuStack.allocation"]
    assert "installs no container toolkit" in problems["settings.gpuStack.toolkit"]
    assert "deploys no MIG manager" in problems["settings.gpuStack.migStrategy"]
    assert "adminAccess" in problems["settings.kubernetes.track"]


@pytest.mark.parametrize("track", ["1.32-classic", "1.33-classic"])
def test_tracks_where_admin_access_is_off_are_refused(track: str) -> None:
    raw = raw_operator_mode()
    raw["kubernetes"] = {"track": track, "featureGates": ["DynamicResourceAllocation=true"]}
    every = joined_by_path(raised_problems(parse, raw), " | ")  # 1.32 also fails the smoke test's rule
    assert "DRAAdminAccess is alpha and off before 1.34" in every["settings.kubernetes.track"]


@pytest.mark.parametrize("track", ["1.34-classic", "1.35-classic", "1.36-classic"])
def test_tracks_with_admin_access_on_are_accepted(track: str) -> None:
    operator_mode(kubernetes={"track": track})


def test_a_second_dra_driver_or_no_operator_is_refused() -> None:
    on = raw_operator_mode(addons={"draDriver": {"enabled": True}})
    reason = settings_problems(on)["settings.gpuStack.addons.draDriver.enabled"]
    assert "a second one would publish the same GPUs" in reason
    # One fact, one message: the graph's summary of the same two drivers is not said again.
    assert "two DRA drivers" not in " ".join(why for _, why in raised_problems(parse, on))
    off = raw_operator_mode(addons={"gpuOperator": {"enabled": False}})
    assert "it is switched off" in settings_problems(off)["settings.gpuStack.addons.gpuOperator.enabled"]
    local = {"platform": "local", "gpuStack": {**OPERATOR_MODE}, "smokeTest": {"scheduler": "default"},
             "nodePools": [{"name": "gpu", "instanceType": "g6.12xlarge"}]}
    assert "platform local does not install it" in settings_problems(local)["settings.gpuStack.draManagedBy"]


def test_a_gpu_cluster_switched_on_by_values_beside_the_chart_is_two_dra_drivers() -> None:
    """The class, not the setting: a values override that deploys the GPUCluster in chart mode."""
    raw = {"platform": "aws", "region": "eu-north-1",
           "gpuStack": {"addons": {"gpuOperator": {"values": {"gpuCluster": {"deployCR": True}}}}}}
    reasons = " ".join(settings_problems(raw).values())
    assert "two DRA drivers would publish the same GPUs as gpu.nvidia.com" in reasons


# ------------------------------------------------------------------------------- the gate


def Controller(store: Store) -> Reconciler:
    return Reconciler(GpuClusterStandIn(store, Clock()))


def registered_gate(s: Settings) -> tuple[Any, dict[str, Any]]:
    def program() -> None:
        AddonSet("gpu", s, StandInCluster(s))

    gate = by_name(run_program(program, {}, stack="test"))[GATE]
    assert gate.type == "pulumi-python:dynamic/ck8s-gpu:GpuClusterReady"
    provider = importlib.import_module("components.addons.gpu_cluster_ready")._GpuClusterReadyProvider()
    return provider, dict(gate.inputs)


def run_gate(s: Settings, store: Store, *, timeout: float = 1.5, settle: float = 0.3) -> dict[str, Any]:
    provider, inputs = registered_gate(s)
    with FakeApi(routes(store)) as api:  # type: ignore[arg-type]
        props = {**inputs, "kubeconfig": api.kubeconfig(), "timeoutSeconds": timeout, "settleSeconds": settle}
        return dict(provider.create(props).outs)


def deployed(nodes: dict[str, dict[str, str]], **store: Any) -> Store:
    s = Store(**store)
    s.put_cluster({"draDriver": {"computeDomains": {"enabled": False}}})
    for name, labels in nodes.items():
        s.node(name, labels)
    return s


def test_the_program_gates_on_the_gpu_cluster_not_a_cluster_policy() -> None:
    _, inputs = registered_gate(operator_mode())
    assert inputs["objectName"] == "gpu-cluster" and inputs["operatorNamespace"] == "gpu-operator"
    assert inputs["minGpuNodes"] == 1


def test_reconciled_with_the_plugin_on_every_gpu_node_passes() -> None:
    store = deployed({"gpu-0": NFD_GPU})
    with Controller(store):
        outs = run_gate(operator_mode(), store)
    assert outs["gpuNodes"] == 1 and "DRA kubelet plugin" in outs["observed"]


def test_a_cluster_policy_beside_it_fails_with_the_operators_own_words() -> None:
    store = deployed({"gpu-0": NFD_GPU}, cluster_policy="cluster-policy")
    with Controller(store), pytest.raises(wait.WaitTimeout) as exc:
        run_gate(operator_mode(), store)
    assert ('PrerequisiteNotMet: A ClusterPolicy CR "cluster-policy" exists; a ClusterPolicy CR and GPUCluster '
            "CR may not exist at the same time") in str(exc.value)


def test_ready_with_the_plugin_on_no_node_is_not_ready() -> None:
    """No GPU node labelled: the plugin's DaemonSet targets 0 nodes, which the operator counts as
    ready (state_skel.go) and writes Reconciled; the gate counts the nodes itself."""
    store = deployed({"gpu-0": {}})
    with Controller(store), pytest.raises(wait.WaitTimeout) as exc:
        run_gate(operator_mode(), store)
    assert store.cluster and store.cluster["status"]["state"] == "ready"  # the stand-in said ready
    text = str(exc.value)
    assert "0 GPU node(s) labelled nvidia.com/gpu.present=true, expected at least 1" in text
    assert f"DaemonSet {KUBELET_PLUGIN} is scheduled on 0 node(s)" in text


def test_the_plugin_not_rolled_out_holds_the_gate() -> None:
    store = deployed({"gpu-0": NFD_GPU}, rolled_out=False)
    with Controller(store), pytest.raises(wait.WaitTimeout) as exc:
        run_gate(operator_mode(), store)
    text = str(exc.value)
    assert "OperandNotReady: Waiting for operand pods to be ready" in text
    assert f"DaemonSet {KUBELET_PLUGIN}: 1 of 1 pod(s) unavailable" in text


def test_a_stale_ready_waits_for_the_settle_window() -> None:
    """No observedGeneration in a GPUCluster's status: a spec change that moves nothing is judged
    as with the ClusterPolicy (docs/adr/0026), only after the verdict held for the settle window."""
    store = deployed({"gpu-0": NFD_GPU})
    GpuClusterStandIn(store, Clock()).reconcile()
    writes = store.status_writes
    store.put_cluster({"draDriver": {"computeDomains": {"enabled": False}, "featureGates": {"MPSSupport": True}}})
    with Controller(store):
        t0 = time.monotonic()
        outs = run_gate(operator_mode(), store, timeout=5, settle=0.5)
    assert time.monotonic() - t0 >= 0.5 and store.status_writes == writes
    assert "unchanged for" in outs["observed"]


def test_the_switch_procedures_middle_step_is_a_stack_the_program_accepts() -> None:
    """docs/components.md "Switching who manages DRA", step 2: mode chart, both drivers and the smoke
    test out for one `up`: the one gate accepts it and nothing of either driver is installed."""
    raw = raw_operator_mode(draManagedBy="chart", addons={"gpuOperator": {"enabled": False},
                                                          "draDriver": {"enabled": False}})
    s = parse({**raw, "smokeTest": {"enabled": False}})
    assert not {"gpu-operator", "dra-driver"} & installed(s)


@pytest.mark.slow  # a whole aws stack under the mock engine and every policy over it: ~10 s
def test_aws_dev_in_operator_mode_plans_and_passes_the_policy_pack() -> None:
    """The committed aws-dev stack (driver and toolkit on the host) with draManagedBy operator."""
    from components.plan.run import plan_config, stack_file
    from components.policies.offline import evaluate_plan
    from components.settings.load import SETTINGS_KEY, read_stack_file

    config = read_stack_file(stack_file("aws-dev"))
    settings = dict(config[SETTINGS_KEY])
    settings["gpuStack"] = {**settings.get("gpuStack", {}), "draManagedBy": "operator"}
    plan = plan_config({**config, SETTINGS_KEY: settings}, "aws-dev-operator-dra", "test")
    result = evaluate_plan(plan)
    assert result.mandatory == [], result.mandatory
    types = {r.type for r in plan.resources}
    assert "pulumi-python:dynamic/ck8s-gpu:GpuClusterReady" in types
    assert "pulumi-python:dynamic/ck8s-gpu:ClusterPolicyReady" not in types
    releases = {r.name: r for r in plan.resources if r.type == "kubernetes:helm.sh/v3:Release"}
    assert not any(name.endswith("-dra-driver") for name in releases), sorted(releases)
    (operator,) = [r for n, r in releases.items() if n.endswith("-gpu-operator")]
    assert operator.inputs["values"]["gpuCluster"] == {"deployCR": True}


# ------------------------------------------------------------------------------- the switch guard


def test_a_switch_is_refused_by_the_guards_check_and_nothing_else_is() -> None:
    from components.addons.dra_mode_guard import _DraModeGuardProvider

    guard = _DraModeGuardProvider()
    for before, after in (("chart", "operator"), ("operator", "chart")):
        (failure,) = guard.check({"mode": before}, {"mode": after}).failures
        assert failure.property == "mode" and f"changes from {before} to {after}" in failure.reason
        assert "Switching who manages DRA" in failure.reason
    assert guard.check({}, {"mode": "operator"}).failures == []  # created: no state yet
    assert guard.check({"mode": "chart"}, {"mode": "chart"}).failures == []


def test_the_dra_releases_wait_for_the_guard_and_only_gpu_operator_stacks_have_one() -> None:
    def program(s: Settings) -> Any:
        def run() -> None:
            AddonSet("gpu", s, StandInCluster(s))
        return by_name(run_program(run, {}, stack="test"))

    for s in (settings("aws"), operator_mode()):
        res = program(s)
        guard = res["gpu-dra-mode"]
        assert guard.inputs["mode"] == s.gpu_stack.dra_managed_by
        for release in ("gpu-gpu-operator", "gpu-dra-driver"):
            if release in res:
                assert guard.urn in res[release].dependencies, release
    assert "gpu-dra-mode" not in program(settings("kind"))  # no GPU Operator there


# ------------------------------------------------------------------------------- mirrored images


def test_under_a_mirror_every_image_the_chart_renders_is_rewritten_or_blanked() -> None:
    """The class, not vgpuManager alone: each image-bearing key of the chart's values
    (gpu_operator.CHART_IMAGE_KEYS, read at the pin) is under the mirror or blanked, in both modes."""
    from components.addons.gpu_operator import CHART_IMAGE_KEYS, UNPUBLISHED_IMAGES
    from components.settings.facts import nested

    mirror = "registry.example.internal:5000/mirror"
    for s in (settings("aws", images={"mirror": mirror}), operator_mode(images={"mirror": mirror})):
        values = final_values(GPU_OPERATOR, s)
        for key in CHART_IMAGE_KEYS:
            repository, image = nested(values, f"{key}.repository"), nested(values, f"{key}.image")
            if key in UNPUBLISHED_IMAGES:
                assert image == "" and not repository, (key, image, repository)  # the template writes none
            else:
                assert str(repository).startswith(f"{mirror}/"), (key, repository)

"""Values functions across tracks 1.32-1.36 x driver modes x allocation modes."""

from __future__ import annotations

import itertools

import pytest

from components.addons import dra_driver, fake_gpu_operator, gpu_operator, kai_queues, kai_scheduler
from components.facts.nodes import gpu_node_labels
from components.tables import pins
from components.tables.labels import DRA_NODE_LABEL, GPU_CLIENT_LABEL, SIMULATED_POOL_LABEL
from tests.unit.addons.helpers import DRIVER_MODES, TRACKS, final_values, settings, stack

CELLS = list(itertools.product(TRACKS, DRIVER_MODES, ("dra", "device-plugin")))


def _env(values: dict, *path: str) -> dict[str, str]:
    node = values
    for p in path:
        node = node[p]
    return {e["name"]: e["value"] for e in node}


@pytest.mark.parametrize(("track", "driver", "allocation"), CELLS)
def test_gpu_operator_values(track: str, driver: str, allocation: str) -> None:
    v = final_values(gpu_operator.ADDON, stack(track, driver, allocation))
    assert _env(v, "toolkit", "env") == {
        "CONTAINERD_CONFIG": "/etc/containerd/config.toml",
        "CONTAINERD_SOCKET": "/run/containerd/containerd.sock",
        "RUNTIME_DROP_IN_CONFIG": "/etc/containerd/conf.d/99-nvidia.toml",
        "RUNTIME_CONFIG_SOURCE": "file",
    }
    assert v["cdi"]["enabled"] is (track != "1.32-classic")  # containerd 1.6 has no CDI
    assert v["driver"]["enabled"] is (driver != "host")
    if driver == "precompiled":
        # The operator tags the image <version>-<kernel>-<os>: the version is a branch.
        assert v["driver"]["usePrecompiled"] is True
        assert v["driver"]["version"] == pins.GPU_OPERATOR_PRECOMPILED_DRIVER_BRANCH == "595"
    else:  # the chart's defaults: compiled driver at the chart's version (operator), none (host)
        assert "usePrecompiled" not in v["driver"] and "version" not in v["driver"]
    assert v["devicePlugin"]["enabled"] is (allocation == "device-plugin")
    manager_env = v["driver"].get("manager", {}).get("env", [])
    if allocation == "dra":
        assert {"name": "NODE_LABEL_FOR_GPU_POD_EVICTION", "value": DRA_NODE_LABEL} in manager_env
    else:
        assert manager_env == []
    assert v["dcgmExporter"]["enabled"] is True
    # aws default installs kube-prometheus-stack: the CRDs are there, so the ServiceMonitor too.
    assert v["dcgmExporter"]["serviceMonitor"]["enabled"] is True


@pytest.mark.parametrize(("track", "driver", "allocation"), CELLS)
def test_dra_driver_values(track: str, driver: str, allocation: str) -> None:
    s = stack(track, driver, allocation, gpuStack={"computeDomains": True})
    v = final_values(dra_driver.ADDON, s)
    minor = int(track.split(".")[1].split("-")[0])
    assert v["resourceApiVersion"] == ("resource.k8s.io/v1" if minor >= 34 else "resource.k8s.io/v1beta1")
    # The operator's driver container (compiled or precompiled) mounts the driver at /run/nvidia/driver.
    assert v["nvidiaDriverRoot"] == {"operator": "/run/nvidia/driver", "precompiled": "/run/nvidia/driver",
                                     "host": "/"}[driver]
    gpus = allocation == "dra"
    assert v["gpuResourcesEnabledOverride"] is gpus
    assert v["resources"]["gpus"]["enabled"] is gpus
    assert v["resources"]["computeDomains"]["enabled"] is True
    # aws installs the GPU Operator (a ClusterPolicy): its GPU-client label too, which its MIG
    # manager pauses before a MIG change (tests/integration/test_nfd_tolerations.py runs the pause)
    want = {DRA_NODE_LABEL: "true", GPU_CLIENT_LABEL: "true"}
    assert (v["kubeletPlugin"].get("nodeSelector") == want) is gpus


def test_without_the_gpu_operator_the_plugin_waits_on_no_label_only_it_sets() -> None:
    """Nothing but the operator sets nvidia.com/gpu.deploy.client: without it (its add-on off, or
    kind's simulator) the plugin selects on the project's own label alone, or it would never run."""
    own_driver = settings("aws", gpuStack={"addons": {"gpuOperator": {"enabled": False}},
                                           "clusterProvides": ["gpu-driver"]})
    for s in (own_driver, settings("existing", gpuStack={"addons": {"gpuOperator": {"enabled": False}},
                                                         "clusterProvides": ["gpu-driver"]})):
        v = final_values(dra_driver.ADDON, s)
        assert v["kubeletPlugin"]["nodeSelector"] == {DRA_NODE_LABEL: "true"}, s.platform


def test_service_monitor_only_with_monitoring_crds() -> None:
    without = settings("existing")  # no kube-prometheus-stack, nothing declared
    declared = settings("existing", gpuStack={"clusterProvides": ["monitoring-crds"]})
    assert final_values(gpu_operator.ADDON, without)["dcgmExporter"]["serviceMonitor"]["enabled"] is False
    assert final_values(gpu_operator.ADDON, declared)["dcgmExporter"]["serviceMonitor"]["enabled"] is True


@pytest.mark.parametrize("strategy", ["none", "single", "mixed"])
def test_mig_strategy_from_settings(strategy: str) -> None:
    s = settings(nodePools=[{"name": "gpu", "instanceType": "p4d.24xlarge"}], gpuStack={"migStrategy": strategy})
    v = final_values(gpu_operator.ADDON, s)
    assert v["mig"]["strategy"] == strategy
    assert v["migManager"]["enabled"] is (strategy != "none")


def test_tolerations_follow_pool_taints() -> None:
    s = settings(nodePools=[
        {"name": "a", "instanceType": "g6.xlarge"},
        {"name": "b", "instanceType": "g5.xlarge", "taints": [{"key": "team", "value": "ml", "effect": "NoExecute"}]},
    ])
    tolerations = final_values(gpu_operator.ADDON, s)["daemonsets"]["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations
    assert {"key": "team", "operator": "Exists", "effect": "NoExecute"} in tolerations
    assert final_values(dra_driver.ADDON, s)["kubeletPlugin"]["tolerations"] == tolerations


def test_user_values_merge_over_computed_ones() -> None:
    s = settings(gpuStack={"addons": {"gpuOperator": {"values": {"driver": {"version": "580.95.05"}}}}})
    v = final_values(gpu_operator.ADDON, s)
    assert v["driver"]["version"] == "580.95.05"
    assert v["driver"]["enabled"] is True  # siblings of an overridden key survive


@pytest.mark.parametrize(("version", "inline"), [("v0.17.0", True), ("v0.18.2", True), ("v0.16.8", False)])
def test_kai_config_inline_from_v0_17(version: str, inline: bool) -> None:
    s = settings(gpuStack={"addons": {"kaiScheduler": {"version": version}}})
    v = final_values(kai_scheduler.ADDON, s)
    assert v["defaultQueue"]["createDefaultQueue"] is False
    if inline:
        assert v["kaiConfig"] == {"render": True}
        assert v["kaiConfigDeployer"] == {"enabled": False}
    else:  # older charts know neither key: the post-install hook creates kai-config
        assert "kaiConfig" not in v and "kaiConfigDeployer" not in v


def test_queues_parents_first_with_all_fields() -> None:
    s = settings(queues=[
        {"name": "team-b", "parent": "org", "gpu": {"quota": 2, "limit": 4, "overQuotaWeight": 2}},
        {"name": "org", "gpu": {"quota": 8}, "priority": 10, "displayName": "Org"},
        {"name": "team-a", "parent": "org", "gpu": {"quota": 5}},
        {"name": "smoke-test", "parent": "org", "gpu": {"quota": 1}},  # fits the non-preemptible run
    ])
    queues = final_values(kai_queues.ADDON, s)["queues"]
    # KAI's fallback leaf (components/addons/kai_scheduler.py FALLBACK_QUEUE) joins under the root.
    assert [q["name"] for q in queues] == ["org", "default-queue", "smoke-test", "team-a", "team-b"]
    assert queues[0] == {
        "name": "org", "displayName": "Org", "priority": 10,
        "resources": {"gpu": {"quota": 8, "limit": -1, "overQuotaWeight": 1},
                      "cpu": {"quota": -1, "limit": -1, "overQuotaWeight": 1},
                      "memory": {"quota": -1, "limit": -1, "overQuotaWeight": 1}},
    }
    assert queues[4]["parent"] == "org"
    assert queues[4]["resources"]["gpu"] == {"quota": 2, "limit": 4, "overQuotaWeight": 2}
    assert queues[1]["parent"] == "org" and queues[1]["resources"]["gpu"]["quota"] == 0


def test_a_defined_fallback_queue_is_kept_and_must_be_a_leaf() -> None:
    """Pods without a kai.scheduler/queue label go to `default-queue` (KAI's podgrouper): the tree
    keeps a stack's own definition of it, and refuses one that has children."""
    own = [{"name": "org", "gpu": {"quota": 8}}, {"name": "smoke-test", "parent": "org", "gpu": {"quota": 1}},
           {"name": "default-queue", "parent": "org", "gpu": {"quota": 2}}]
    queues = final_values(kai_queues.ADDON, settings(queues=own))["queues"]
    assert [q["name"] for q in queues].count("default-queue") == 1
    assert next(q for q in queues if q["name"] == "default-queue")["resources"]["gpu"]["quota"] == 2
    from components.settings.load import SettingsError
    from components.validate import parse

    with pytest.raises(SettingsError) as err:  # the one gate (components/validate.py) refuses it
        parse({"platform": "kind", "queues": [*own, {"name": "team", "parent": "default-queue"}]})
    assert "settings.queues[2].name" in err.value.message and "must be a leaf" in err.value.message


@pytest.mark.parametrize("allocation", ["dra", "device-plugin"])
def test_fake_gpu_operator_mirrors_the_pools(allocation: str) -> None:
    s = settings("kind", nodePools=[{"name": "gpu", "instanceType": "g6.12xlarge", "minSize": 2,
                                     "desiredSize": 2, "maxSize": 2}],
                 gpuStack={"allocation": allocation}, kind={"mirrorPool": "gpu"})
    v = final_values(fake_gpu_operator.ADDON, s)
    pool = v["topology"]["nodePools"]["gpu"]["gpu"]
    assert v["topology"]["nodePoolLabelKey"] == SIMULATED_POOL_LABEL
    assert v["topology"]["nodePools"]["default"] is None  # the chart's own pool is removed
    assert pool["overrides"]["device_defaults"]["name"] == "NVIDIA L4"
    assert pool["overrides"]["device_defaults"]["memory"]["total_bytes"] == 23034 * 1024 * 1024
    assert len(pool["overrides"]["devices"]) == 4
    assert v["draPlugin"]["enabled"] is (allocation == "dra")
    assert v["devicePlugin"]["enabled"] is (allocation != "dra")
    assert v["kwokGpuDevicePlugin"]["enabled"] is False


def test_gpu_node_labels_per_platform() -> None:
    assert gpu_node_labels(settings("aws"), "gpu") == {DRA_NODE_LABEL: "true"}
    assert gpu_node_labels(settings("aws", gpuStack={"allocation": "device-plugin"}), "gpu") == {}
    assert gpu_node_labels(settings("kind"), "gpu") == {SIMULATED_POOL_LABEL: "gpu"}

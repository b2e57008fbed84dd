"""MIG layouts per pool (issue 43): the profile table's fit rules against what NVIDIA documents and
the MIG manager's own configs, the settings refusals (every one named at its field), the label a
pool's nodes join with, and the MIG manager's ConfigMap the GPU Operator's chart creates."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from components.addons import gpu_operator
from components.addons.graph import final_values, install_graph
from components.facts import mig
from components.facts.nodes import pool_node_labels
from components.settings import SettingsError
from components.tables import mig_profiles as mp
from components.tables.labels import MIG_CONFIG_LABEL
from components.validate import parse

A100_40, H100 = "NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3"
AWS: dict[str, Any] = {"platform": "aws", "environment": "dev", "region": "eu-west-1",
                       "network": {"availabilityZones": ["eu-west-1a", "eu-west-1b"]}}


def stack(*pools: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {**copy.deepcopy(AWS), "nodePools": list(pools), **extra}


def pool(name: str = "h100", instance_type: str = "p5.48xlarge", **mig_layout: Any) -> dict[str, Any]:
    return {"name": name, "instanceType": instance_type, "minSize": 1, "desiredSize": 1, "maxSize": 1,
            "mig": mig_layout}


def problems(raw: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SettingsError) as e:
        parse(raw, "test")
    return dict(e.value.problems)


# --- the table -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("gpu", "devices"), [
    (H100, {"1g.10gb": 7}), (H100, {"1g.20gb": 4}), (H100, {"2g.20gb": 3}), (H100, {"3g.40gb": 2}),
    (H100, {"4g.40gb": 1, "3g.40gb": 1}),  # the chart's own example (deployments/gpu-operator/values.yaml)
    (H100, {"2g.20gb": 2, "3g.40gb": 1}),  # the chart's own example
    (H100, {"4g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}), (H100, {"7g.80gb": 1}),
    (H100, {"1g.10gb+me": 1, "1g.10gb": 6}), (A100_40, {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}),
    *((gpu, layout) for gpu, layout in mp.BALANCED.items()),
])
def test_layouts_nvidia_documents_fit(gpu: str, devices: dict[str, int]) -> None:
    assert mp.layout_problem(gpu, devices) is None


@pytest.mark.parametrize(("devices", "why"), [
    ({"3g.40gb": 2, "1g.10gb": 1}, "cannot be placed side by side"),  # 7 compute slices, no memory left
    ({"4g.40gb": 2}, "holds at most 1"),
    ({"1g.10gb": 8}, "holds at most 7"),
    ({"4g.40gb": 1, "2g.20gb": 2}, "8 compute slices"),
    ({"1g.10gb+me": 2}, "holds at most 1"),
    ({"1g.5gb": 1}, "not a MIG profile of the NVIDIA H100 80GB HBM3"),
    ({"1g.10gb": 0}, "leave a profile out"),
])
def test_layouts_that_do_not_fit_say_why(devices: dict[str, int], why: str) -> None:
    got = mp.layout_problem(H100, devices)
    assert got is not None and why in got, got


def test_named_configs_are_the_mig_managers() -> None:
    # gpu-operator v26.7.0 assets/state-mig-manager/0400_configmap.yaml: all-1g.10gb is 7 on the
    # 80GB parts and 4 (the double-memory 1g) on the 40GB ones; +me spelt .me in the name.
    assert mp.named_layout(H100, "all-1g.10gb") == {"1g.10gb": 7}
    assert mp.named_layout(A100_40, "all-1g.10gb") == {"1g.10gb": 4}
    assert mp.named_layout(H100, "all-1g.10gb.me") == {"1g.10gb+me": 1}
    assert mp.named_layout(H100, "all-balanced") == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert mp.named_layout(H100, "all-disabled") == {}
    assert mp.named_layout(H100, "all-1g.5gb") is None


# --- the settings ----------------------------------------------------------------------------------


def test_a_named_layout_plans_and_its_nodes_join_with_the_label() -> None:
    s = parse(stack(pool(config="all-1g.10gb")), "test")
    p = s.node_pools[0]
    name = mig.config_name(p)
    assert pool_node_labels(s, p)[MIG_CONFIG_LABEL] == name and name.startswith("ck8s-h100-")
    assert mig.pool_mig_devices(p) == {"1g.10gb": 7}


def test_the_config_name_changes_with_the_layout_and_only_with_it() -> None:
    def name(**layout: Any) -> str:
        s = parse(stack(pool(**layout)), "test")
        return mig.config_name(s.node_pools[0])

    assert name(config="all-1g.10gb") == name(devices={"1g.10gb": 7})  # the same cut, however spelt
    assert name(config="all-1g.10gb") != name(config="all-balanced")
    long = parse(stack(pool("p" * 63, config="all-balanced")), "test").node_pools[0]
    assert len(mig.config_name(long)) <= 63


def test_the_mig_managers_configmap_holds_every_pools_config() -> None:
    s = parse(stack(pool(config="all-balanced"), pool("a100", "p4d.24xlarge", devices={"3g.20gb": 2})), "test")
    values = final_values(install_graph(s), s)[gpu_operator.ADDON.name]
    manager = values["migManager"]
    assert manager["enabled"] is True
    cfg = manager["config"]
    assert (cfg["name"], cfg["create"], cfg["default"]) == (mig.CONFIG_MAP, True, "all-disabled")
    parted = yaml.safe_load(cfg["data"]["config.yaml"])
    h100, a100 = (mig.config_name(p) for p in s.node_pools)
    assert parted == {"version": "v1", "mig-configs": {
        "all-disabled": [{"devices": "all", "mig-enabled": False}],
        h100: [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}}],
        a100: [{"devices": "all", "mig-enabled": True, "mig-devices": {"3g.20gb": 2}}]}}


def test_without_layouts_the_values_stay_what_they_were() -> None:
    s = parse(stack({"name": "h100", "instanceType": "p5.48xlarge"}), "test")
    assert final_values(install_graph(s), s)[gpu_operator.ADDON.name]["migManager"] == {"enabled": False}
    assert MIG_CONFIG_LABEL not in pool_node_labels(s, s.node_pools[0])


@pytest.mark.parametrize(("p", "extra", "where", "words"), [
    (pool(config="all-1g.10gb", devices={"1g.10gb": 7}), {}, "mig", "exactly one of config"),
    (pool(), {}, "mig", "exactly one of config"),
    (pool(instance_type="g6.12xlarge", config="all-1g.10gb"), {}, "mig", "NVIDIA L4 of 'g6.12xlarge' has no MIG"),
    (pool(config="all-enabled"), {}, "mig.config", "creates no instance"),
    (pool(config="all-1g.5gb"), {}, "mig.config", "not a MIG manager config for the NVIDIA H100 80GB HBM3: "
                                                  "all-disabled, all-balanced, all-1g.10gb"),
    (pool(devices={"3g.40gb": 2, "1g.10gb": 1}), {}, "mig.devices", "cannot be placed side by side"),
    (pool(config="all-1g.10gb"), {"gpuStack": {"draManagedBy": "operator", "toolkit": "host"}}, "mig",
     "a GPUCluster deploys no MIG manager"),
    (pool(config="all-1g.10gb"), {"gpuStack": {"addons": {"gpuOperator": {"enabled": False}}}}, "mig",
     "needs the GPU Operator's MIG manager"),
    ({**pool(config="all-1g.10gb"), "labels": {MIG_CONFIG_LABEL: "all-1g.10gb"}}, {}, "labels",
     "is this program's to set"),
])
def test_layouts_that_cannot_be_applied_are_named(p: dict[str, Any], extra: dict[str, Any], where: str,
                                                  words: str) -> None:
    if not p["mig"]:
        p = {**p, "mig": {}}
    found = problems(stack(p, **extra))
    assert words in found.get(f"settings.nodePools[0].{where}", ""), found


def test_an_autoscaled_pool_cannot_be_cut() -> None:
    p = {"name": "h100", "instanceType": "p5.48xlarge", "autoscaling": {"maxSize": 2},
         "mig": {"config": "all-1g.10gb"}}
    found = problems(stack(p))
    assert "the autoscaler models whole GPUs only" in found["settings.nodePools[0].mig"], found


@pytest.mark.parametrize(("platform", "why"), [
    ("existing", "on existing this program makes no node"),
    ("local", "'h100' is a KWOK pool"),  # only local.kubeletPools run the simulated driver
    ("kind", "fake-gpu-operator publishes whole GPUs only"),
])
def test_where_nothing_would_cut_the_gpus_the_layout_is_refused(platform: str, why: str) -> None:
    raw = {"platform": platform, "environment": "dev",
           "nodePools": [{"name": "h100", "instanceType": "p5.48xlarge", "mig": {"config": "all-1g.10gb"}}]}
    found = problems(raw)
    assert why in found["settings.nodePools[0].mig"], found


def test_a_stack_of_cut_pools_proves_the_path_with_the_mig_case_alone() -> None:
    s = parse(stack(pool(config="all-1g.10gb")), "test")  # no cluster-wide migStrategy needed
    assert (s.smoke_test.mig, s.smoke_test.whole_gpu) == (True, False)
    # A whole-GPU pool beside it keeps the whole-GPU case; all-disabled cuts nothing.
    s = parse(stack(pool(config="all-balanced"), pool("whole", "p5.48xlarge", config="all-disabled")), "test")
    assert (s.smoke_test.mig, s.smoke_test.whole_gpu) == (True, True)
    assert not parse(stack(pool("whole", "p5.48xlarge", config="all-disabled")), "test").smoke_test.mig


def test_whole_gpu_work_pinned_to_a_cut_pool_is_refused_at_its_field() -> None:
    whole = {**pool("whole"), "mig": None}
    found = problems(stack(pool("a100", "p4d.24xlarge", config="all-1g.5gb"), whole, smokeTest={
        "pool": "a100", "wholeGpu": True,
        "nvlinkGroup": {"enabled": True, "pool": "a100"},
        "firstAvailable": {"enabled": True, "preferredPool": "whole", "fallbackPool": "a100"}}))
    assert "cuts every GPU into MIG devices" in found["settings.smokeTest.gpus"], found
    for key in ("nvlinkGroup.pool", "firstAvailable.fallbackPool"):
        assert "never hands out" in found[f"settings.smokeTest.{key}"], found
    assert "settings.smokeTest.firstAvailable.preferredPool" not in found


def test_a_cluster_wide_profile_beside_pool_layouts_is_refused() -> None:
    found = problems(stack(pool(config="all-1g.10gb"), smokeTest={"migProfile": "1g.10gb"}))
    assert "leave migProfile out" in found["settings.smokeTest.migProfile"], found


# --- the DRA driver's dynamic MIG (opt-in) ------------------------------------------------------------


def dynamic(*pools: dict[str, Any], **extra: Any) -> dict[str, Any]:
    raw = stack(*pools, **extra)
    raw.setdefault("gpuStack", {}).setdefault("addons", {})["draDriver"] = {
        "values": {"featureGates": {"DynamicMIG": True}}}
    raw["gpuStack"]["gpuHealth"] = False  # NVMLDeviceHealthCheck: exclusive with DynamicMIG (the driver's gate rule)
    return raw


def test_dynamic_mig_turns_on_partitionable_devices_where_kubernetes_has_it_off() -> None:
    from components.facts.feature_gates import required

    whole = {**pool(), "mig": None}
    s = parse({**dynamic(whole), "kubernetes": {"track": "1.35-classic"}}, "test")
    gates = required(s)
    assert gates.of("kube-apiserver")["DRAPartitionableDevices"] is True
    assert gates.of("kube-scheduler")["DRAPartitionableDevices"] is True
    assert "DRAPartitionableDevices" not in gates.of("kubelet")
    assert "DRAPartitionableDevices" not in required(parse({**dynamic(whole),
                                                             "kubernetes": {"track": "1.36-classic"}}, "test")).of(
        "kube-apiserver")  # on by default from 1.36


def test_dynamic_mig_beside_a_mig_manager_is_refused_at_each_field() -> None:
    found = problems({**dynamic(pool(config="all-balanced")), "gpuStack": {
        **dynamic(pool(config="all-balanced"))["gpuStack"], "migStrategy": "mixed"}})
    assert "destroys instances it did not create" in found["settings.nodePools[0].mig"], found
    assert "runs the MIG manager" in found["settings.gpuStack.migStrategy"], found


@pytest.mark.parametrize("layout", [{"1g.10gb": 7}, {"1g.10gb+me": 1, "1g.10gb": 6}, {"4g.40gb": 1, "3g.40gb": 1},
                                    {"2g.20gb": 2, "3g.40gb": 1}, {"7g.80gb": 1}, dict(mp.BALANCED[H100])])
def test_placements_put_every_instance_at_one_of_its_starts_without_overlap(layout: dict[str, int]) -> None:
    placed = mp.placements(H100, layout)
    taken: list[int] = []
    for m in placed:
        shape = mp.MIG_PROFILES[H100][m.profile]
        assert m.start in shape.starts and m.size == shape.memory and m.profile_id == shape.profile_id
        taken += list(range(m.start, m.start + m.size))
    assert len(taken) == len(set(taken)) and max(taken) < mp.MEMORY_SLICES
    assert sorted(m.profile for m in placed) == sorted(p for p, n in layout.items() for _ in range(n))
    with pytest.raises(ValueError):
        mp.placements(H100, {"3g.40gb": 2, "1g.10gb": 1})  # the layout_problem refusal, not a placement

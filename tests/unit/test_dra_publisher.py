"""tools/dra_publisher.py's NVLink partition attributes, health taints and per-node models, and how
tools/nodetier.py hands the GPU plugin its gates and Fabric Manager table (tools/mod/simgpu)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from components.tables.instance_types import GPU_INSTANCE_TYPES
from tests.helpers.tools import load_tool

dra = load_tool("dra_publisher")
nt = load_tool("nodetier")
SIMGPU = Path(__file__).resolve().parents[2] / "tools" / "mod" / "simgpu"


def attrs(device: dict[str, Any]) -> dict[str, Any]:
    return {k: next(iter(v.values())) for k, v in device["attributes"].items()}


def test_hgx_table_has_one_partition_per_size_for_every_module() -> None:
    table = dra.hgx_8gpu_partitions()
    assert sorted(table) == list(range(15))
    assert Counter(len(m) for m in table.values()) == {8: 1, 4: 2, 2: 4, 1: 8}
    for size in (1, 2, 4, 8):
        members = sorted(m for mods in table.values() if len(mods) == size for m in mods)
        assert members == list(range(1, 9)), size  # each module in exactly one partition of each size
    table[0].append(9)
    assert dra.hgx_8gpu_partitions()[0] == list(range(1, 9))  # a copy: callers cannot change the table


def test_devices_carry_module_id_and_the_partition_of_each_size() -> None:
    devs = dra.resource_slice_manifest("n", 8, partitions=dra.hgx_8gpu_partitions())["spec"]["devices"]
    a0, a5 = attrs(devs[0]), attrs(devs[5])
    assert {k: a0[k] for k in a0 if k.startswith(("gpuModuleID", "partition"))} == {
        "gpuModuleID": 1, "partition8": 0, "partition4": 1, "partition2": 3, "partition1": 7}
    assert (a5["gpuModuleID"], a5["partition4"], a5["partition2"], a5["partition1"]) == (6, 2, 6, 12)
    # The GPUs a matchAttribute on partition2 groups are exactly an FM partition's members.
    pairs: dict[int, list[int]] = {}
    for d in devs:
        pairs.setdefault(attrs(d)["partition2"], []).append(attrs(d)["gpuModuleID"])
    assert pairs == {pid: mods for pid, mods in dra.hgx_8gpu_partitions().items() if len(mods) == 2}
    # Without the option nothing of it is published (the driver publishes them only with its gate on).
    plain = dra.resource_slice_manifest("n", 8)["spec"]["devices"][0]
    assert not any(k.startswith(("gpuModuleID", "partition")) for k in plain["attributes"])


def test_partitions_must_fit_the_node() -> None:
    with pytest.raises(ValueError, match="the node has 4 GPUs"):
        dra.resource_slice_manifest("n", 4, partitions=dra.hgx_8gpu_partitions())
    bad = {0: [1, 2], 1: [2, 3], 2: [1], 3: [2], 4: [3]}  # module 2 in two pairs
    with pytest.raises(ValueError, match="gpuModuleID 2 appears in two partitions of size 2"):
        dra.resource_slice_manifest("n", 3, partitions=bad)


def test_unhealthy_devices_carry_the_drivers_xid_taint() -> None:
    devs = dra.resource_slice_manifest("n", 4, unhealthy=[1, 3])["spec"]["devices"]
    assert [d.get("taints") for d in devs] == [
        None, [{"key": "gpu.nvidia.com/xid", "value": "48", "effect": "NoSchedule"}],
        None, [{"key": "gpu.nvidia.com/xid", "value": "48", "effect": "NoSchedule"}]]
    with pytest.raises(ValueError, match=r"\[4\] not on a node of 4 GPUs"):
        dra.resource_slice_manifest("n", 4, unhealthy=[4])


def test_the_health_taint_is_the_plugins() -> None:
    """The plugin's unhealthy fault applies the same taint (cmd/ck8s-gpu-kubelet-plugin/health.go)."""
    go = (SIMGPU / "cmd" / "ck8s-gpu-kubelet-plugin" / "health.go").read_text()
    assert re.search(r'taintKeyXID\s*=\s*driverName \+ "/xid"', go) and dra.HEALTH_TAINT_KEY == "gpu.nvidia.com/xid"
    assert re.search(rf'simulatedXID\s*=\s*"{dra.HEALTH_TAINT_XID}"', go)


def test_mixed_models_per_node() -> None:
    h100 = dra.GpuModel.of("NVIDIA H100 80GB HBM3", "Hopper", 81559)
    objs = dra.manifests({"big": 8, "small": 4}, {"big": h100, "small": dra.GpuModel()})
    slices = {o["spec"]["nodeName"]: o["spec"]["devices"] for o in objs[1:]}
    assert {attrs(d)["productName"] for d in slices["big"]} == {"NVIDIA H100 80GB HBM3"}
    assert attrs(slices["big"][0])["cudaComputeCapability"] == "9.0.0"
    assert slices["big"][0]["capacity"]["memory"]["value"] == "81559Mi"
    assert (len(slices["big"]), len(slices["small"])) == (8, 4)
    assert {attrs(d)["productName"] for d in slices["small"]} == {"NVIDIA L4"}
    with pytest.raises(ValueError, match=r"no GpuModel for nodes \['small'\]"):
        dra.manifests({"big": 8, "small": 4}, {"big": h100})
    with pytest.raises(ValueError, match="no compute capability known"):
        dra.GpuModel.of("NVIDIA H100", "Hopper", 81559)


def test_every_instance_type_product_has_a_model() -> None:
    """Product names are NVML's (the driver's productName), as components/tables/instance_types.py spells them."""
    for itype, facts in GPU_INSTANCE_TYPES.items():
        model = dra.GpuModel.of(facts.product_name, facts.architecture, facts.memory_mib)
        assert (model.product_name, model.memory) == (facts.product_name, f"{facts.memory_mib}Mi"), itype
    g6 = GPU_INSTANCE_TYPES["g6.xlarge"]
    assert dra.GpuModel().memory == f"{g6.memory_mib}Mi" and dra.GpuModel().product_name == g6.product_name


def started_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: Any) -> list[str]:
    seen: list[list[str]] = []
    monkeypatch.setattr(nt, "_start", lambda cmd, log, env=None: seen.append(list(cmd)))
    node = nt.KubeletNode(spec, 0, nt.NodePaths(tmp_path, tmp_path / "logs"), tmp_path, tmp_path / "kubeconfig")
    (tmp_path / "gpu").mkdir(exist_ok=True)
    node.start_plugin()
    return seen[0]


def test_the_plugin_gets_its_gates_and_fabric_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = nt.NodeSpec("n", [], gpu_plugin_gates={"NVMLDeviceHealthCheck": True, "FabricManagerPartitioning": True},
                       fabric_partitions=dra.hgx_8gpu_partitions())
    cmd = started_plugin(tmp_path, monkeypatch, spec)
    assert "--feature-gates=FabricManagerPartitioning=true,NVMLDeviceHealthCheck=true" in cmd
    path = tmp_path / "gpu" / "fabric-partitions.json"
    assert f"--fabric-partitions-file={path}" in cmd
    table = json.loads(path.read_text())["partitions"]
    assert {p["id"]: p["gpuModuleIDs"] for p in table} == dra.hgx_8gpu_partitions()
    # The field names are the plugin's (internal/fabric Table, decoded strictly).
    go = (SIMGPU / "internal" / "fabric" / "fabric.go").read_text()
    assert all(f'json:"{k}"' in go for k in ("partitions", "id", "gpuModuleIDs"))

    # A node without a fabric: no flag, and no table left from an earlier start.
    cmd = started_plugin(tmp_path, monkeypatch, nt.NodeSpec("n", []))
    assert "--feature-gates=" in cmd and not any(a.startswith("--fabric-partitions-file") for a in cmd)
    assert not path.exists()


def test_faults_are_the_plugins() -> None:
    go = (SIMGPU / "internal" / "claimspec" / "claimspec.go").read_text()
    assert set(nt.FAULTS) == set(re.findall(r'^\s*\w+\s+Fault = "([a-z-]+)"', go, re.M))


# --- MIG: a GPU in MIG mode published as its instances --------------------------------------------


def mig_node_spec() -> Any:
    from tests.helpers.node_tier import node_specs, stack_settings

    return next(s for s in node_specs(stack_settings()) if s.name == "mig-node-0")


def test_a_mig_pool_publishes_its_layout_as_the_driver_names_and_describes_instances() -> None:
    spec = mig_node_spec()
    names = [d["name"] for d in spec.devices]
    # mig.go ToCanonicalName: gpu-<minor>-mig-<profile without dots>-<GI profile ID>-<placement start>
    assert all(re.fullmatch(r"gpu-0-mig-[0-9a-z-]+-(19|20|15|14|9|5|0)-[0-7]", n) for n in names), names
    got = sorted(attrs(d)["profile"] for d in spec.devices)
    assert got == ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]  # all-balanced on an H100 80GB
    slices: list[int] = []
    for d in spec.devices:
        a = attrs(d)
        assert a["type"] == "mig" and a["uuid"].startswith("MIG-") and a["parentUUID"] == spec.mig_parents[0]["uuid"]
        assert "index" not in a and "minor" not in a  # deviceinfo.go MigDeviceInfo.GetDevice: the parent's
        slices += [int(k.removeprefix("memorySlice")) for k in d["capacity"] if k.startswith("memorySlice")]
    assert sorted(slices) == list(range(8)), slices  # the four instances tile the 8 memory slices
    assert spec.labels["nvidia.com/mig.config"].startswith("ck8s-mig-")
    assert spec.gpus == 1 and json.loads(spec.devices_file())["migParents"] == spec.mig_parents


def test_a_mig_layout_goes_without_partitions_and_taints() -> None:
    slot = dra.MigSlot("1g.10gb", 19, 0, 1, "mig-1g10gb-19-0")
    with pytest.raises(ValueError, match="MIG layout"):
        dra.resource_slice_manifest("n", 1, mig=[slot], unhealthy=[0])
    with pytest.raises(ValueError, match="MIG layout"):
        dra.resource_slice_manifest("n", 8, mig=[slot], partitions=dra.hgx_8gpu_partitions())

#!/usr/bin/env python3
"""Test-only stand-in for the NVIDIA DRA driver's kubelet plugin: publishes GPUs via DRA.

Writes the DeviceClass ``gpu.nvidia.com`` and one ResourceSlice per simulated node, shaped like
the slices the NVIDIA DRA driver (driver name ``gpu.nvidia.com``) publishes: pool = node name,
``nodeName`` set, devices ``gpu-0..gpu-(n-1)`` with the driver's main attributes and a
``memory`` capacity. The device count is per node, so a negative test can make one node
advertise fewer GPUs than the others; the model is per node too (:func:`manifests`).

A ``mig`` layout publishes every GPU of the node as its MIG devices instead (type ``mig``), as the
driver does for a GPU in MIG mode; :func:`mig_parents` are those GPUs, which the kubelet tier's
plugin needs to hand a MIG device's container its parent's device node.

Options the kubelet tier's plugin (tools/mod/simgpu) acts on: ``partitions`` gives each GPU the
Fabric Manager attributes ``gpuModuleID`` and ``partitionN`` (:func:`hgx_8gpu_partitions` is
the table tools/nodetier.py NodeSpec.fabric_partitions hands the plugin), ``unhealthy`` taints
devices the way the driver's health monitor does (:func:`health_taint`).

The manifest builders are pure functions; :func:`publish` applies them with kubectl.

    python tools/dra_publisher.py --kubeconfig KCFG gpu-node-0=2 gpu-node-1=1
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DRIVER = "gpu.nvidia.com"
DEVICE_CLASS = "gpu.nvidia.com"
DEVICE_CLASS_SELECTOR = (
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
)
# dra-driver-nvidia-gpu 95932046 deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-mig.yaml
MIG_DEVICE_CLASS = "mig.nvidia.com"
MIG_DEVICE_CLASS_SELECTOR = (
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"
)
MEMORY_SLICES = 8  # every MIG GPU (components/tables/mig_profiles.py)
RESOURCE_API = "resource.k8s.io/v1"
# Fixed namespace so the simulated GPU UUIDs are stable across runs.
_UUID_NS = uuid.UUID("6f1b7c1e-3a55-4d0c-9a43-1c2d7f0e8b21")


@dataclass(frozen=True)
class GpuModel:
    """What each simulated device reports (defaults: an NVIDIA L4, as on g6.* instances)."""

    product_name: str = "NVIDIA L4"
    brand: str = "Nvidia"
    architecture: str = "Ada Lovelace"
    driver_version: str = "580.95.5"  # semver: no leading zeros
    cuda_driver_version: str = "13.0.0"
    cuda_compute_capability: str = "8.9.0"
    memory: str = "23034Mi"  # components/tables/instance_types.py g6 (NVML's framebuffer, not the marketed 24 GB)

    @classmethod
    def of(cls, product_name: str, architecture: str, memory_mib: int) -> GpuModel:
        """A model as the driver reports it (productName from NVML, as components/tables/instance_types.py
        spells it), with the CUDA compute capability of that product."""
        if product_name not in COMPUTE_CAPABILITY:
            raise ValueError(f"no compute capability known for {product_name!r}; known: {sorted(COMPUTE_CAPABILITY)}")
        return cls(product_name=product_name, architecture=architecture,
                   cuda_compute_capability=COMPUTE_CAPABILITY[product_name], memory=f"{memory_mib}Mi")


# cudaComputeCapability the driver publishes (deviceinfo.go, from NVML's GetCudaComputeCapability), as
# semver; values from NVIDIA's CUDA GPU list (developer.nvidia.com/cuda-gpus) for the products of
# components/tables/instance_types.py.
COMPUTE_CAPABILITY: dict[str, str] = {
    "Tesla T4": "7.5.0",  # NVML still names the T4 "Tesla"
    "NVIDIA A10G": "8.6.0",
    "NVIDIA L4": "8.9.0",
    "NVIDIA L40S": "8.9.0",
    "NVIDIA A100-SXM4-40GB": "8.0.0",
    "NVIDIA A100-SXM4-80GB": "8.0.0",
    "NVIDIA H100 80GB HBM3": "9.0.0",
    "NVIDIA H200": "9.0.0",
    "NVIDIA B200": "10.0.0",
    "NVIDIA GB200": "10.0.0",
}


# NVIDIA Fabric Manager user guide ("GPU Partitions", default Shared NVSwitch / vGPU partitions of
# DGX/HGX H100 8-GPU; H200 and B200 HGX baseboards share the 8-GPU layout):
# https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html
# Partition id -> GPU module ids: 0 = all eight, 1-2 = the two halves, 3-6 = pairs, 7-14 = singles.
_HGX_8GPU_PARTITIONS: dict[int, tuple[int, ...]] = {
    0: (1, 2, 3, 4, 5, 6, 7, 8),
    1: (1, 2, 3, 4), 2: (5, 6, 7, 8),
    3: (1, 3), 4: (2, 4), 5: (5, 7), 6: (6, 8),
    **{7 + i: (1 + i,) for i in range(8)},
}

# The driver's health taint for a fatal XID (dra-driver-nvidia-gpu 0.5 cmd/gpu-kubelet-plugin/
# device_health.go: TaintKeyXID, healthEventToTaint: value = the XID, effect NoSchedule; XID 48 is
# a double-bit ECC error, not in xidsToSkip). The plugin's `unhealthy` fault applies the same one.
HEALTH_TAINT_KEY = f"{DRIVER}/xid"
HEALTH_TAINT_XID = "48"


def hgx_8gpu_partitions() -> dict[int, list[int]]:
    """Fabric Manager's default partitions of an HGX 8-GPU baseboard: partition id -> GPU module ids."""
    return {pid: list(mods) for pid, mods in _HGX_8GPU_PARTITIONS.items()}


def module_id(index: int) -> int:
    """GPU module id of GPU `index`: index + 1 (module ids count from 1 on the baseboard; the real
    mapping comes from NVML and follows the board's slots, which a simulated node does not have)."""
    return index + 1


def partition_attributes(module: int, partitions: Mapping[int, Sequence[int]]) -> dict[str, dict[str, int]]:
    """``gpuModuleID`` and ``partition<size>`` = id of the partition of that size holding `module`
    (deviceinfo.go addFabricManagerAttributes; manager.go GetPartitionsBySizeByModuleID refuses a
    module in two partitions of one size)."""
    by_size: dict[int, int] = {}
    for pid, mods in sorted(partitions.items()):
        if module in mods:
            size = len(mods)
            if size in by_size:
                raise ValueError(f"gpuModuleID {module} appears in two partitions of size {size} "
                                 f"({by_size[size]} and {pid})")
            by_size[size] = pid
    return {"gpuModuleID": {"int": module}, **{f"partition{n}": {"int": pid} for n, pid in sorted(by_size.items())}}


def health_taint() -> dict[str, str]:
    return {"key": HEALTH_TAINT_KEY, "value": HEALTH_TAINT_XID, "effect": "NoSchedule"}


def gpu_uuid(node: str, index: int) -> str:
    """Deterministic ``GPU-<uuid>`` for device ``index`` of ``node``."""
    return f"GPU-{uuid.uuid5(_UUID_NS, f'{node}/gpu-{index}')}"


def device_class_manifest(name: str = DEVICE_CLASS, selector: str = DEVICE_CLASS_SELECTOR) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": selector}}]},
    }


def mig_device_class_manifest() -> dict[str, Any]:
    return device_class_manifest(MIG_DEVICE_CLASS, MIG_DEVICE_CLASS_SELECTOR)


@dataclass(frozen=True)
class MigSlot:
    """One MIG instance of a GPU's layout (components/tables/mig_profiles.py placements gives them)."""

    profile: str  # e.g. 1g.10gb
    profile_id: int  # GPU instance profile ID
    start: int  # first memory slice
    size: int  # memory slices
    device_suffix: str  # mig-<profile slug>-<profile ID>-<start>


def mig_uuid(node: str, index: int, slot: MigSlot) -> str:
    """Deterministic ``MIG-<uuid>`` of one instance of GPU ``index`` of ``node``."""
    return f"MIG-{uuid.uuid5(_UUID_NS, f'{node}/gpu-{index}/{slot.device_suffix}')}"


def _model_attributes(m: GpuModel) -> dict[str, dict[str, str]]:
    """What a GPU and its MIG instances both report of the model (deviceinfo.go GPU attributes;
    mig.go CommonAttributesMig copies the parent's)."""
    return {
        "productName": {"string": m.product_name},
        "brand": {"string": m.brand},
        "architecture": {"string": m.architecture},
        "driverVersion": {"version": m.driver_version},
        "cudaDriverVersion": {"version": m.cuda_driver_version},
        "cudaComputeCapability": {"version": m.cuda_compute_capability},
    }


def _mig_device(node: str, index: int, slot: MigSlot, m: GpuModel) -> dict[str, Any]:
    """A static MIG device as the driver publishes it (deviceinfo.go MigDeviceInfo.GetDevice:
    mig.go CommonAttributesMig plus uuid; CommonCapacitiesMig's memory, and memorySlice<i> = 1 for
    each memory slice it holds). No index or minor: those are its parent's. The memory is the
    parent's framebuffer by the share of memory slices; NVML's per-profile figure is a little
    lower (9.75 GiB for an H100's 1g.10gb), which no check here depends on."""
    total = int(m.memory.removesuffix("Mi"))
    return {
        "name": f"gpu-{index}-{slot.device_suffix}",  # the parent's minor, which is its index here
        "attributes": {
            "type": {"string": "mig"},
            "uuid": {"string": mig_uuid(node, index, slot)},
            "parentUUID": {"string": gpu_uuid(node, index)},
            "profile": {"string": slot.profile},
            **_model_attributes(m),
        },
        "capacity": {
            "memory": {"value": f"{total * slot.size // MEMORY_SLICES}Mi"},
            **{f"memorySlice{i}": {"value": "1"} for i in range(slot.start, slot.start + slot.size)},
        },
    }


def mig_parents(node: str, gpus: int, model: GpuModel = GpuModel()) -> list[dict[str, Any]]:
    """The node's GPUs in MIG mode as the kubelet tier's plugin reads them (its devices file's
    `migParents`, rows of tools/mod/simgpu internal/gputable GPU)."""
    return [{"index": i, "minor": i, "uuid": gpu_uuid(node, i), "productName": model.product_name,
             "memoryMiB": int(model.memory.removesuffix("Mi"))} for i in range(gpus)]


def resource_slice_manifest(
    node: str, gpus: int, model: GpuModel = GpuModel(), generation: int = 1, *,
    partitions: Mapping[int, Sequence[int]] | None = None, unhealthy: Iterable[int] = (),
    mig: Sequence[MigSlot] = (),
) -> dict[str, Any]:
    """The node's slice. `partitions` (e.g. hgx_8gpu_partitions()) adds the Fabric Manager
    attributes and must cover exactly the node's module ids; `unhealthy` device indexes carry
    health_taint(); `mig` cuts every GPU into these instances, published instead of the GPU."""
    if gpus < 0:
        raise ValueError(f"gpus must be >= 0, got {gpus}")
    unhealthy = tuple(unhealthy)
    if mig:
        if partitions is not None or unhealthy:
            raise ValueError("a MIG layout goes without Fabric Manager partitions and health taints here")
        return _slice(node, generation, [_mig_device(node, i, slot, model) for i in range(gpus) for slot in mig])
    tainted = set(unhealthy)
    if bad := sorted(i for i in tainted if not 0 <= i < gpus):
        raise ValueError(f"unhealthy device indexes {bad} not on a node of {gpus} GPUs")
    if partitions is not None:
        covered = {m for mods in partitions.values() for m in mods}
        if covered != {module_id(i) for i in range(gpus)}:
            raise ValueError(f"partitions cover GPU modules {sorted(covered)}, the node has {gpus} GPUs "
                             f"(modules 1..{gpus})")
    m = model
    devices: list[dict[str, Any]] = [
        {
            "name": f"gpu-{i}",
            "attributes": {
                "type": {"string": "gpu"},
                "uuid": {"string": gpu_uuid(node, i)},
                "index": {"int": i},
                "minor": {"int": i},
                **_model_attributes(m),
            },
            "capacity": {"memory": {"value": m.memory}},
        }
        for i in range(gpus)
    ]
    for i, dev in enumerate(devices):
        if partitions is not None:
            dev["attributes"].update(partition_attributes(module_id(i), partitions))
        if i in tainted:
            dev["taints"] = [health_taint()]
    return _slice(node, generation, devices)


def _slice(node: str, generation: int, devices: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def manifests(
    nodes: Mapping[str, int], model: GpuModel | Mapping[str, GpuModel] = GpuModel()
) -> list[dict[str, Any]]:
    """DeviceClass + one ResourceSlice per ``{node: gpu_count}``; `model` is one for all nodes or
    one per node (mixed models: every node needs its own)."""
    if not isinstance(model, GpuModel) and (missing := sorted(set(nodes) - set(model))):
        raise ValueError(f"no GpuModel for nodes {missing}")
    return [device_class_manifest()] + [
        resource_slice_manifest(n, count, model if isinstance(model, GpuModel) else model[n])
        for n, count in nodes.items()
    ]


def publish(
    kubeconfig: str,
    nodes: Mapping[str, int],
    *,
    kubectl: str = "kubectl",
    model: GpuModel | Mapping[str, GpuModel] = GpuModel(),
) -> list[dict[str, Any]]:
    """Server-side apply the DeviceClass and the slices; returns what was applied."""
    objs = manifests(nodes, model)
    doc = {"apiVersion": "v1", "kind": "List", "items": objs}
    subprocess.run(
        [kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side",
         "--field-manager=ck8s-gpu-dra-publisher", "-f", "-"],
        input=json.dumps(doc), check=True, capture_output=True, text=True,
    )
    return objs


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Publish simulated NVIDIA DRA ResourceSlices.")
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--kubectl", default="kubectl")
    p.add_argument("--print", action="store_true", help="print the manifests, apply nothing")
    p.add_argument("nodes", nargs="+", metavar="NODE=GPUS")
    a = p.parse_args(argv)
    nodes = {n: int(c) for n, c in (x.split("=", 1) for x in a.nodes)}
    if a.print:
        json.dump({"apiVersion": "v1", "kind": "List", "items": manifests(nodes)}, sys.stdout,
                  indent=2)
        print()
    else:
        publish(a.kubeconfig, nodes, kubectl=a.kubectl)
    return 0


if __name__ == "__main__":
    sys.exit(main())

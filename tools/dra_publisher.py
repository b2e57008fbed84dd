#!/usr/bin/env python3
"""Test-only stand-in for the NVIDIA DRA driver's kubelet plugin: publishes GPUs via DRA.

Writes the DeviceClass ``gpu.nvidia.com`` and one ResourceSlice per simulated node, shaped like
the slices the NVIDIA DRA driver (driver name ``gpu.nvidia.com``) publishes: pool = node name,
``nodeName`` set, devices ``gpu-0..gpu-(n-1)`` with the driver's main attributes and a
``memory`` capacity. The device count is per node, so a negative test can make one node
advertise fewer GPUs than the others.

The manifest builders are pure functions; :func:`publish` applies them with kubectl.

    python tools/dra_publisher.py --kubeconfig KCFG gpu-node-0=2 gpu-node-1=1
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DRIVER = "gpu.nvidia.com"
DEVICE_CLASS = "gpu.nvidia.com"
DEVICE_CLASS_SELECTOR = (
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"
)
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
    memory: str = "23028Mi"


def gpu_uuid(node: str, index: int) -> str:
    """Deterministic ``GPU-<uuid>`` for device ``index`` of ``node``."""
    return f"GPU-{uuid.uuid5(_UUID_NS, f'{node}/gpu-{index}')}"


def device_class_manifest() -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": DEVICE_CLASS_SELECTOR}}]},
    }


def resource_slice_manifest(
    node: str, gpus: int, model: GpuModel = GpuModel(), generation: int = 1
) -> dict[str, Any]:
    if gpus < 0:
        raise ValueError(f"gpus must be >= 0, got {gpus}")
    m = model
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {
                "type": {"string": "gpu"},
                "uuid": {"string": gpu_uuid(node, i)},
                "index": {"int": i},
                "minor": {"int": i},
                "productName": {"string": m.product_name},
                "brand": {"string": m.brand},
                "architecture": {"string": m.architecture},
                "driverVersion": {"version": m.driver_version},
                "cudaDriverVersion": {"version": m.cuda_driver_version},
                "cudaComputeCapability": {"version": m.cuda_compute_capability},
            },
            "capacity": {"memory": {"value": m.memory}},
        }
        for i in range(gpus)
    ]
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


def manifests(nodes: Mapping[str, int], model: GpuModel = GpuModel()) -> list[dict[str, Any]]:
    """DeviceClass + one ResourceSlice per ``{node: gpu_count}``."""
    return [device_class_manifest()] + [
        resource_slice_manifest(n, count, model) for n, count in nodes.items()
    ]


def publish(
    kubeconfig: str,
    nodes: Mapping[str, int],
    *,
    kubectl: str = "kubectl",
    model: GpuModel = GpuModel(),
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

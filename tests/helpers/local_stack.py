"""The `local` stack's settings and a loopback control plane for it (tools/localcluster.py) with KWOK
GPU nodes whose ResourceSlices a test publisher writes: what every real-engine test of the stack
starts from, in one place."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import yaml

from components.tables.instance_types import gpu_facts
from components.tables.labels import POOL_LABELS
from tests.helpers.node_tier import gpu_model
from tests.helpers.tools import TOOLS_DIR, load_tool

STACK_FILE = TOOLS_DIR.parent / "stacks" / "Pulumi.local.yaml"
SETTINGS_KEY = "ck8s-gpu:settings"

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


def start_cluster(workdir: Path, bin_dir: Path, nodes: dict[str, tuple[str, str, int]],
                  gates: dict[str, Any] | None = None) -> Any:
    """A LocalCluster whose nodes carry the pool label the verifier maps nodes to pools with."""
    types = {t for _, t, _ in nodes.values()}
    assert len(types) == 1, "LocalCluster gives every node one instance type"
    cluster = lc.LocalCluster(workdir, nodes=len(nodes), instance_type=types.pop(), bin_dir=bin_dir,
                              name=f"ck8s-{uuid.uuid4().hex[:6]}", **(gates or {}))
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

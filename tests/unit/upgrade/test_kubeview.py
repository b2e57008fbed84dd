"""The on-node projections of NodeList/PodList, run by a real python3 on real-shaped objects."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from components.upgrade import kubeview


def node(name: str, version: str, *, ready: bool = True, cp: bool = False, cordoned: bool = False,
         held: bool = False, images: int = 0) -> dict[str, Any]:
    labels = {"kubernetes.io/hostname": name, "node-role.kubernetes.io/worker": ""}
    if cp:
        labels["node-role.kubernetes.io/control-plane"] = ""
    if held:
        labels[kubeview.UPGRADE_LABEL] = "cordoned"
    spec: dict[str, Any] = {"unschedulable": True} if cordoned else {}
    return {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec,
        "status": {
            "conditions": [{"type": "MemoryPressure", "status": "False"},
                           {"type": "Ready", "status": "True" if ready else "False"}],
            "nodeInfo": {"kubeletVersion": version, "containerRuntimeVersion": "containerd://1.7.28"},
            "images": [{"names": [f"registry.example/image-{i}@sha256:{'0' * 64}"], "sizeBytes": 1}
                       for i in range(images)],
        },
    }


def project(script: str, doc: dict[str, Any], *args: str) -> str:
    out = subprocess.run([sys.executable, "-c", script, *args], input=json.dumps(doc), capture_output=True,
                         text=True, check=True)
    return out.stdout


def test_nodes_projection_keeps_control_planes_and_the_asked_node_only() -> None:
    doc = {"kind": "NodeList", "items": [
        node("cp-0", "v1.34.11", cp=True, images=200), node("cp-1", "v1.35.7", cp=True, ready=False),
        node("w-1", "v1.34.11", cordoned=True, held=True, images=200), node("w-2", "v1.34.11", images=200),
    ]}
    text = project(kubeview.NODES_PY, doc, "w-1")
    views = kubeview.nodes(text)
    assert sorted(views) == ["cp-0", "cp-1", "w-1"]
    assert views["cp-1"].control_plane and not views["cp-1"].ready and views["cp-1"].minor == 35
    assert views["w-1"].unschedulable and views["w-1"].held_by_upgrade and not views["w-1"].control_plane
    assert len(text) < 1000, "the projection must stay far below SSM's 24,000-character output limit"
    assert len(json.dumps(doc)) > 24000, "the fixture must be large enough to need the projection"


def test_no_names_means_every_node() -> None:
    doc = {"kind": "NodeList", "items": [node("cp-0", "v1.34.11", cp=True), node("w-2", "v1.34.11")]}
    assert sorted(kubeview.nodes(project(kubeview.NODES_PY, doc))) == ["cp-0", "w-2"]


def pod(name: str, owner: str | None, phase: str = "Running", gpus: int = 0, claims: int = 0) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml"}
    if owner:
        meta["ownerReferences"] = [{"kind": owner, "name": f"{name}-owner", "controller": True}]
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    spec = {"containers": [{"name": "c", "resources": {"limits": limits}}],
            "resourceClaims": [{"name": f"gpu-{i}", "resourceClaimName": f"c-{i}"} for i in range(claims)]}
    return {"metadata": meta, "spec": spec, "status": {"phase": phase}}


def test_gpu_job_pods_are_running_job_pods_holding_gpus() -> None:
    doc = {"kind": "PodList", "items": [
        pod("train", "Job", gpus=1), pod("dra-train", "Job", claims=1), pod("done", "Job", "Succeeded", gpus=1),
        pod("cpu-job", "Job"), pod("serve", "ReplicaSet", gpus=1), pod("bare", None, gpus=1),
    ]}
    assert kubeview.gpu_job_pods(project(kubeview.GPU_JOB_PODS_PY, doc)) == ["ml/train", "ml/dra-train"]


@pytest.mark.parametrize("line", ['{"name": "x"}', "not json", '{"name": "x", "version": "garbage", "ready": true, '
                                  '"unschedulable": false, "controlPlane": false, "held": false}'])
def test_unreadable_lines_are_an_error_not_a_crash(line: str) -> None:
    with pytest.raises(kubeview.ViewError, match="unreadable node line"):
        kubeview.nodes(line)


def test_a_failed_projection_names_the_kubectl_command_not_the_script() -> None:
    from components.upgrade.executor import NodeRef, Operator, Result, UpgradeStopped

    class Refusing:
        def run(self, instance_id: str, argv: list[str], timeout: float) -> Result:
            return Result(1, "", "error: You must be logged in to the server (Unauthorized)")

    cp = NodeRef("i-1", "cp-0", "control-plane")
    with pytest.raises(UpgradeStopped) as stopped:
        Operator(Refusing(), [cp]).nodes(cp, "w-1")
    message = str(stopped.value)
    assert "`k8s kubectl get nodes -o json` on cp-0 exited 1: error: You must be logged in" in message
    assert "import json" not in message

"""Kubernetes objects reach the policies however the program registered them: typed, in a yaml/v2
component's inputs (offline, where no provider expands it), or as that component's children (the
real engine), never twice."""

from pathlib import Path
from typing import Any

import pulumi_kubernetes as k8s
import pytest

from components.plan.mockengine import run_program
from components.policies.k8s_objects import MAX_DEPTH, inline_documents, kind_of, objects
from components.policies.offline import evaluate, from_records
from components.tables import pins
from tests.unit.policies.helpers import facts, res

PLUGIN = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "dp", "namespace": "kube-system"},
          "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
              "containers": [{"name": "dp", "image": "nvcr.io/nvidia/k8s-device-plugin:latest"}]}}}}


def program() -> None:
    dra = pins.chart("dra-driver-nvidia-gpu")
    k8s.helm.v3.Release("dra", chart=f"{dra.repo}/{dra.name}", version=dra.version, namespace="dra",
                        values={"gpuResourcesEnabledOverride": True})
    k8s.yaml.v2.ConfigGroup("raw", objs=[PLUGIN])
    k8s.rbac.v1.ClusterRoleBinding(
        "everyone", role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        subjects=[{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:authenticated"}])
    k8s.core.v1.ConfigMap("settings", data={"DB_PASSWORD": "hunter2"})


def test_raw_objects_of_a_recorded_program_are_judged() -> None:
    run = run_program(program, {}, stack="objects-test", region="eu-north-1")
    result = evaluate(from_records(run.resources, run.outputs, "objects-test"), facts())
    seen = {(f.policy, f.urn.rsplit("::", 1)[-1]) for f in result.mandatory}
    assert {
        ("one-gpu-advertiser", "raw"), ("one-gpu-advertiser", "dra"),  # the ConfigGroup's DaemonSet vs DRA
        ("workload-images-pinned", "raw"),
        ("secret-readers-least-privilege", "everyone"),
        ("secrets-only-in-secret-objects", "settings"),
        ("no-plaintext-secrets", "settings"),
    } <= seen
    assert result.not_applicable == ()


def test_a_component_with_children_is_read_through_them_only() -> None:
    parent = res("kubernetes:yaml/v2:ConfigGroup", {"objs": [PLUGIN]}, name="g")
    assert [o.urn for o in objects([parent])[0]] == [parent.urn]
    child = res("kubernetes:apps/v1:DaemonSet", {k: v for k, v in PLUGIN.items() if k not in ("apiVersion", "kind")},
                urn="urn:pulumi:t::ck8s-gpu::kubernetes:yaml/v2:ConfigGroup$kubernetes:apps/v1:DaemonSet::dp")
    child.parent = parent
    assert [o.urn for o in objects([parent, child])[0]] == [child.urn]


@pytest.mark.parametrize(("rtype", "kind"), [
    ("kubernetes:apps/v1:DaemonSet", "DaemonSet"), ("kubernetes:apps/v1:DaemonSetPatch", "DaemonSet"),
    ("kubernetes:nvidia.com/v1:ClusterPolicy", "ClusterPolicy"), ("kubernetes:core/v1:Pod", "Pod"),
    ("kubernetes:yaml/v2:ConfigGroup", None), ("kubernetes:yaml:ConfigFile", None),
    ("kubernetes:helm.sh/v3:Release", None), ("pulumi:providers:kubernetes", None), ("aws:ec2/vpc:Vpc", None),
])
def test_kinds_of_resource_types(rtype: str, kind: str | None) -> None:
    assert kind_of(rtype) == kind


def test_manifest_files_are_read_from_the_project(tmp_path: Path) -> None:
    manifest = tmp_path / "plugin.yaml"
    manifest.write_text("apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: dp}\n---\n# empty\n")
    docs, problems = inline_documents({"files": [str(manifest), str(tmp_path / "*.yaml")]})
    assert [d["kind"] for d in docs] == ["DaemonSet", "DaemonSet"] and problems == []
    docs, problems = inline_documents({"file": str(manifest)})
    assert len(docs) == 1 and problems == []


def nested(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {}
    for _ in range(depth):
        node = {"a": node}
    return {"kind": "ConfigMap", "data": node}


@pytest.mark.parametrize(("props", "why"), [
    ({"yaml": "a: &x [1, 2]\nb: [*x, *x]\nkind: ConfigMap\n"}, "aliases"),
    ({"yaml": "kind: ConfigMap\ndata: " + "[" * 20_000}, "yaml"),
    ({"yaml": "x" * (2 << 20)}, "over"),
    ({"objs": [nested(MAX_DEPTH + 5)]}, "deeper"),
    ({"files": ["https://raw.example.com/manifest.yaml"]}, "deploy time"),
])
def test_hostile_or_unreachable_manifests_are_reported_not_followed(props: dict[str, Any], why: str) -> None:
    docs, problems = inline_documents(props)
    assert docs == [] and len(problems) == 1 and why in problems[0].lower(), problems

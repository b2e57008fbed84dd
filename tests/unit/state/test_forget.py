"""forget-cluster's state edit: exactly the cluster's resources go, and no reference to them stays
(`pulumi stack import` refuses a snapshot that names a missing resource)."""

from __future__ import annotations

from typing import Any

from components.state.forget import cluster_resources, without

STACK = "urn:pulumi:s::ck8s-gpu::pulumi:pulumi:Stack::ck8s-gpu-s"
COMP = "urn:pulumi:s::ck8s-gpu::ck8s-gpu:index:LocalCluster::ck8s-ci"
PROV = "urn:pulumi:s::ck8s-gpu::ck8s-gpu:index:LocalCluster$pulumi:providers:kubernetes::ck8s-ci-k8s"
READY = "urn:pulumi:s::ck8s-gpu::ck8s-gpu:index:LocalCluster$pulumi-python:dynamic:Resource::api-ready"
NS = "urn:pulumi:s::ck8s-gpu::kubernetes:core/v1:Namespace::smoke"
REL = "urn:pulumi:s::ck8s-gpu::kubernetes:helm.sh/v3:Release::smoke-chart"
CHILD = "urn:pulumi:s::ck8s-gpu::kubernetes:helm.sh/v3:Release$kubernetes:core/v1:ConfigMap::child"
VIEW = "urn:pulumi:s::ck8s-gpu::kubernetes:core/v1:Namespace$kubernetes:core/v1:Pod::view"
RUN = "urn:pulumi:s::ck8s-gpu::pulumi-python:dynamic:Resource::smoke-run"
AWS = "urn:pulumi:s::ck8s-gpu::pulumi:providers:aws::default_7"
BUCKET = "urn:pulumi:s::ck8s-gpu::aws:s3/bucket:Bucket::logs"
PY = "urn:pulumi:s::ck8s-gpu::pulumi:providers:pulumi-python::default"


def deployment() -> dict[str, Any]:
    r = [
        {"urn": STACK, "type": "pulumi:pulumi:Stack", "custom": False},
        {"urn": COMP, "type": "ck8s-gpu:index:LocalCluster", "parent": STACK},
        {"urn": PY, "type": "pulumi:providers:pulumi-python", "custom": True, "id": "p1"},
        {"urn": READY, "type": "pulumi-python:dynamic:Resource", "parent": COMP, "provider": f"{PY}::p1"},
        {"urn": PROV, "type": "pulumi:providers:kubernetes", "parent": COMP, "id": "k1", "dependencies": [READY]},
        {"urn": NS, "type": "kubernetes:core/v1:Namespace", "provider": f"{PROV}::k1", "parent": STACK},
        {"urn": REL, "type": "kubernetes:helm.sh/v3:Release", "provider": f"{PROV}::k1", "dependencies": [NS],
         "propertyDependencies": {"namespace": [NS]}},
        {"urn": CHILD, "type": "kubernetes:core/v1:ConfigMap", "parent": REL},
        {"urn": VIEW, "type": "kubernetes:core/v1:Pod", "viewOf": NS},
        {"urn": RUN, "type": "pulumi-python:dynamic:Resource", "provider": f"{PY}::p1",
         "dependencies": [REL, READY], "propertyDependencies": {"spec": [REL], "kubeconfig": [READY]},
         "deletedWith": REL, "replaceWith": [NS, READY]},
        {"urn": AWS, "type": "pulumi:providers:aws", "id": "a1"},
        {"urn": BUCKET, "type": "aws:s3/bucket:Bucket", "provider": f"{AWS}::a1", "dependencies": [READY]},
    ]
    pending = [{"type": "deleting", "resource": {"urn": REL}}, {"type": "creating", "resource": {"urn": BUCKET}}]
    return {"manifest": {"time": "t"}, "resources": r, "pending_operations": pending}


def test_the_providers_what_they_created_their_children_and_views_are_the_cluster() -> None:
    found = cluster_resources(deployment())
    assert [f.urn for f in found] == [PROV, NS, REL, CHILD, VIEW]
    assert [f.name for f in found][:3] == ["ck8s-ci-k8s", "smoke", "smoke-chart"]


def test_what_is_kept_names_nothing_that_was_forgotten() -> None:
    before = deployment()
    after = without(before, cluster_resources(before))
    urns = [r["urn"] for r in after["resources"]]
    assert urns == [STACK, COMP, PY, READY, RUN, AWS, BUCKET]
    run = next(r for r in after["resources"] if r["urn"] == RUN)
    assert run["dependencies"] == [READY]
    assert run["propertyDependencies"] == {"spec": [], "kubeconfig": [READY]}
    assert "deletedWith" not in run and run["replaceWith"] == [READY]
    assert [op["resource"]["urn"] for op in after["pending_operations"]] == [BUCKET]
    gone = {PROV, NS, REL, CHILD, VIEW}
    assert not gone & set(str(after).split("'")), "a reference to a forgotten resource survived"
    assert before == deployment(), "the input must not be changed"


def test_a_stack_without_kubernetes_forgets_nothing() -> None:
    d = {"resources": [{"urn": AWS, "type": "pulumi:providers:aws"}, {"urn": BUCKET, "type": "aws:s3/bucket:Bucket",
                                                                       "provider": f"{AWS}::a1"}]}
    assert cluster_resources(d) == []
    assert without(d, []) == d

"""The one table of step durations: every row sourced, ranges sane, estimates few and known."""

from __future__ import annotations

from components.plan.durations import DURATIONS, Duration, table_problems
from components.plan.mockengine import Recorded
from components.plan.timeline import DRIVER_MODES, step_key

# Rows that rest (partly) on an estimate. Adding one is a decision: find a source first.
KNOWN_ESTIMATES = {"aws-kms-key", "snap-install", "gpu-toolkit", "dra-plugin-start", "kind-create", "unmapped",
                   # node images that carry the snap and every image (issue 29): no pull-free numbers
                   # published (pod-start-preloaded is measured on the local-kubelet tier)
                   "snap-install-local", "containerd-sideload", "node-ready-cni-preloaded",
                   "helm-gpu-operator-preloaded", "helm-remote-preloaded", "helm-kube-prometheus-stack-preloaded",
                   "smoke-run-preloaded",
                   # the validator's chain is code; the pull of its image on nodes that pull is not
                   "gpu-operator-validation"}


def _resource(typ: str, name: str = "r", **inputs: object) -> Recorded:
    return Recorded(urn=f"urn:pulumi:s::p::{typ}::{name}", type=typ, name=name, parent="", custom=True,
                    inputs=dict(inputs), secret_paths=[], dependencies=[])


def test_every_row_has_a_source_and_a_sane_range() -> None:
    assert table_problems() == []


def test_table_problems_names_bad_rows() -> None:
    bad = {"a": Duration(5, 1, "x", "https://example.org: y"), "b": Duration(0, 1, "x", "a guess"),
           "c": Duration(0, 1, "x", "zero: nothing"), "d": Duration(0, 1, "x", "measured: here")}
    problems = table_problems(bad)
    assert sorted({p.split(":")[0] for p in problems}) == ["a", "b", "c"]


def test_estimates_are_the_known_few() -> None:
    assert {k for k, d in DURATIONS.items() if d.kind == "estimate"} == KNOWN_ESTIMATES


def test_upstream_rows_cite_urls_and_kinds_follow_the_prefix() -> None:
    for key, d in DURATIONS.items():
        assert d.kind in ("upstream", "measured", "code", "zero", "estimate"), key
        if d.kind == "upstream":
            assert d.source.startswith("https://"), key


def test_every_key_the_mapping_can_return_is_a_row() -> None:
    types = ["aws:ec2/vpc:Vpc", "aws:ec2/natGateway:NatGateway", "aws:lb/loadBalancer:LoadBalancer",
             "aws:ec2/instance:Instance", "aws:autoscaling/group:Group", "aws:iam/role:Role",
             "aws:secretsmanager/secret:Secret", "kubernetes:core/v1:Namespace", "tls:index/privateKey:PrivateKey",
             "pulumi:providers:aws", "pulumi-python:dynamic/ck8s-gpu:ApiReady",
             "pulumi-python:dynamic/ck8s-gpu:WaitFor", "pulumi-python:dynamic/ck8s-gpu:ClusterPolicyReady",
             "pulumi-python:dynamic/ck8s-gpu:SmokeRun", "pulumi-python:dynamic/ck8s-gpu:NodeUpgrade",
             "command:local:Command", "something:else:Entirely"]
    for platform in ("aws", "kind", "local", "existing"):
        for typ in types:
            assert step_key(_resource(typ), platform) in DURATIONS
    for mode in DRIVER_MODES:
        assert f"gpu-driver-{mode}" in DURATIONS
    for key in ("node-boot", "snap-install", "k8s-bootstrap", "k8s-join-control-plane", "k8s-join-worker",
                "node-ready-cni", "nlb-target-registration", "nlb-health-checks", "gpu-toolkit",
                "snap-install-local", "containerd-sideload", "node-ready-cni-preloaded", "pod-start-preloaded"):
        assert key in DURATIONS


def test_helm_releases_map_by_chart() -> None:
    release = "kubernetes:helm.sh/v3:Release"
    assert step_key(_resource(release, chart="gpu-operator")) == "helm-gpu-operator"
    assert step_key(_resource(release, chart="kube-prometheus-stack")) == "helm-kube-prometheus-stack"
    kai = "oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"
    assert step_key(_resource(release, chart=kai)) == "helm-remote"
    assert step_key(_resource(release, chart="charts/kai-queues")) == "helm-local"


def test_driver_rows_order_compiled_precompiled_host() -> None:
    compiled, pre, host = (DURATIONS[f"gpu-driver-{m}"] for m in ("compiled", "precompiled", "host"))
    assert compiled.low > pre.low > host.low == 0 and compiled.high > pre.high > host.high == 0


def test_the_estimates_of_the_node_image_rows_say_why() -> None:
    """Each new row argues its range: what it rests on upstream, and where the estimate starts."""
    for key, cites in (("snap-install-local", ("k8s-snap", "snapd", "ebs-initialize")),
                       ("containerd-sideload", ("0001-side-load-images-plugin.patch", "gp3", "ebs-initialize")),
                       ("node-ready-cni-preloaded", ("k8s-snap/pull/1742", "cilium/issues/34990")),
                       ("helm-gpu-operator-preloaded", ("gpu-operator/blob/v26.7.0", "initialDelaySeconds 5"))):
        source = DURATIONS[key].source
        assert "estimate: " in source and all(c in source for c in cites), key
    # the pod start they build on is measured (scripts/bench_pod_start.py), its high the SLO's p99
    pod = DURATIONS["pod-start-preloaded"]
    assert pod.kind == "measured" and "local-kubelet tier" in pod.source and "pod_startup_latency.md" in pod.source

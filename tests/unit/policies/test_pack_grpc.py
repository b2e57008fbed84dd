"""The real policy pack process, driven over its gRPC analyzer interface as the Pulumi engine
drives it (no CLI needed): it starts, lists the catalog's policies with their levels, reads the
stack settings from PULUMI_CONFIG, and reports violations per resource and per stack."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from components import policies

PACK_DIR = Path(__file__).resolve().parents[3] / "policy"
SECRET_SIG = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"}
SETTINGS = {"platform": "aws", "region": "eu-north-1", "environment": "prod", "production": True,
            "network": {"apiAllowList": ["0.0.0.0/0"]}}


@pytest.fixture(scope="module")
def analyzer() -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    env = {**os.environ, "PULUMI_CONFIG": json.dumps({"ck8s-gpu:settings": json.dumps(SETTINGS)})}
    proc = subprocess.Popen([sys.executable, "__main__.py"], cwd=PACK_DIR, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        port = proc.stdout.readline().strip() if proc.stdout else ""
        assert port.isdigit(), f"the pack did not start: {proc.stderr.read() if proc.stderr else ''}"
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        grpc.channel_ready_future(channel).result(timeout=30)
        yield analyzer_pb2_grpc.AnalyzerStub(channel)
        channel.close()
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _struct(props: dict[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(props)
    return s


def analyze(stub: analyzer_pb2_grpc.AnalyzerStub, rtype: str, props: dict[str, Any]) -> Any:
    return stub.Analyze(analyzer_pb2.AnalyzeRequest(
        type=rtype, properties=_struct(props), urn=f"urn:pulumi:prod::ck8s-gpu::{rtype}::r", name="r",
        options=analyzer_pb2.AnalyzerResourceOptions()))


def test_the_pack_lists_the_catalog(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == policies.PACK_NAME
    levels = {p.name: p.enforcementLevel for p in info.policies}
    assert {n for n, lvl in levels.items() if lvl == analyzer_pb2.MANDATORY} == policies.MANDATORY
    assert {n for n, lvl in levels.items() if lvl == analyzer_pb2.ADVISORY} == policies.ADVISORY


def test_resource_violations_use_the_stack_settings(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    # Declared in apiAllowList, but the settings say prod: refused.
    world_api = {"ipProtocol": "tcp", "fromPort": 6443, "toPort": 6443, "cidrIpv4": "0.0.0.0/0"}
    response = analyze(analyzer, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", world_api)
    [diag] = [d for d in response.diagnostics if d.policyName == "no-world-ingress"]
    assert diag.enforcementLevel == analyzer_pb2.MANDATORY and "in prod" in diag.message
    private = {**world_api, "cidrIpv4": "10.0.0.0/8"}
    assert not analyze(analyzer, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", private).diagnostics


def test_lists_arrive_as_proxies_and_are_still_read(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    sg = {"ingress": [{"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["10.0.0.0/8", "0.0.0.0/0"]}]}
    failed = {d.policyName for d in analyze(analyzer, "aws:ec2/securityGroup:SecurityGroup", sg).diagnostics}
    assert {"no-world-ingress", "no-world-ssh"} <= failed
    lt = {"metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1},
          "blockDeviceMappings": [{"deviceName": "/dev/sda1", "ebs": {"encrypted": "false"}}]}
    failed = {d.policyName for d in analyze(analyzer, "aws:ec2/launchTemplate:LaunchTemplate", lt).diagnostics}
    assert failed == {"encrypted-volumes"}


def test_secrets_arrive_unwrapped_so_that_policy_stands_aside(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    kubeconfig = "apiVersion: v1\nkind: Config\nusers:\n- name: a\n  user:\n    token: c2VjcmV0LXRva2Vu\n"
    response = analyze(analyzer, "pulumi:providers:kubernetes", {"kubeconfig": {**SECRET_SIG, "value": kubeconfig}})
    assert "no-plaintext-secrets" in {n.policy_name for n in response.not_applicable}
    assert not [d for d in response.diagnostics if d.policyName == "no-plaintext-secrets"]


def test_stack_policies_run_over_all_resources(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    response = analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=[
        analyzer_pb2.AnalyzerResource(type="kubernetes:core/v1:Namespace", urn="urn:pulumi:prod::p::ns::ns", name="ns",
                                      properties=_struct({"metadata": {"name": "apps"}}),
                                      options=analyzer_pb2.AnalyzerResourceOptions()),
    ]))
    failed = {d.policyName for d in response.diagnostics}
    assert "smoke-test-isolated" in failed  # no NetworkPolicy anywhere
    # No smoke test, unlabeled namespace, prod without protection/backup, one control plane (advisory).
    assert {"smoke-test-required", "gpu-namespace-pod-security", "prod-protects-dr-state",
            "prod-single-control-plane"} <= failed


def test_local_charts_render_inside_the_pack(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    """The smoke chart's own NetworkPolicy, rendered inside the pack from proxied values: the
    smoke-test release exactly as the program registers it for the committed `local` stack."""
    from components.plan.run import plan_stack

    [smoke] = [r for r in plan_stack("local").resources
               if r.type == "kubernetes:helm.sh/v3:Release" and str(r.raw_inputs.get("chart", "")).endswith(
                   "gpu-smoke-test")]
    release = analyzer_pb2.AnalyzerResource(
        type=smoke.type, urn=smoke.urn, name=smoke.name, properties=_struct(json.loads(json.dumps(smoke.raw_inputs))),
        options=analyzer_pb2.AnalyzerResourceOptions())
    response = analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=[release]))
    failed = {d.policyName for d in response.diagnostics}
    assert "smoke-test-isolated" not in failed and "helm-release-pinned" not in failed


def test_objects_of_raw_manifests_are_judged_inside_the_pack(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    """What the engine sends for a yaml/v2 ConfigGroup: the component and its typed children
    (proxied lists and mappings), read through the children only."""
    group_urn = "urn:pulumi:prod::ck8s-gpu::kubernetes:yaml/v2:ConfigGroup::raw"

    def child(rtype: str, name: str, props: dict[str, Any]) -> Any:
        return analyzer_pb2.AnalyzerResource(
            type=rtype, urn=f"urn:pulumi:prod::ck8s-gpu::kubernetes:yaml/v2:ConfigGroup${rtype}::{name}", name=name,
            parent=group_urn, properties=_struct(props), options=analyzer_pb2.AnalyzerResourceOptions())

    plugin = {"metadata": {"name": "dp", "namespace": "kube-system"}, "spec": {"template": {"spec": {
        "containers": [{"name": "dp", "image": "nvcr.io/nvidia/k8s-device-plugin"}]}}}}
    crb = {"metadata": {"name": "oops"}, "subjects": [{"kind": "Group", "name": "system:serviceaccounts"}],
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}}
    slice_ = {"metadata": {"name": "gpus"}, "spec": {"driver": "gpu.nvidia.com", "nodeName": "n"}}
    response = analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=[
        analyzer_pb2.AnalyzerResource(type="kubernetes:yaml/v2:ConfigGroup", urn=group_urn, name="raw",
                                      properties=_struct({"yaml": "not: [read"}),
                                      options=analyzer_pb2.AnalyzerResourceOptions()),
        child("kubernetes:apps/v1:DaemonSet", "dp", plugin),
        child("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding", "oops", crb),
        child("kubernetes:resource.k8s.io/v1:ResourceSlice", "gpus", slice_),
    ]))
    by_policy: dict[str, set[str]] = {}
    for d in response.diagnostics:
        by_policy.setdefault(d.policyName, set()).add(d.urn.rsplit("::", 1)[-1])
    assert by_policy["workload-images-pinned"] == {"dp"}  # the component's own (broken) text is not read
    assert by_policy["secret-readers-least-privilege"] == {"oops"}
    assert by_policy["one-gpu-advertiser"] == {"dp", "gpus"}


def test_node_role_attachments_are_linked_by_property_dependencies(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    """A preview of a new stack: the attachment's role is unknown (the engine's sentinel), only its
    property dependency says which role it names."""
    unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
    role_urn = "urn:pulumi:prod::ck8s-gpu::aws:iam/role:Role::worker-role"
    trust = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]})

    def attachment(name: str, arn: str) -> Any:
        return analyzer_pb2.AnalyzerResource(
            type="aws:iam/rolePolicyAttachment:RolePolicyAttachment", name=name,
            urn=f"urn:pulumi:prod::ck8s-gpu::aws:iam/rolePolicyAttachment:RolePolicyAttachment::{name}",
            properties=_struct({"role": unknown, "policyArn": arn}), dependencies=[role_urn],
            propertyDependencies={"role": analyzer_pb2.AnalyzerPropertyDependencies(urns=[role_urn])},
            options=analyzer_pb2.AnalyzerResourceOptions())

    response = analyzer.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=[
        analyzer_pb2.AnalyzerResource(type="aws:iam/role:Role", urn=role_urn, name="worker-role",
                                      properties=_struct({"assumeRolePolicy": trust}),
                                      options=analyzer_pb2.AnalyzerResourceOptions()),
        attachment("ssm", "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"),
        attachment("s3", "arn:aws:iam::aws:policy/AmazonS3FullAccess"),
    ]))
    flagged = {d.urn.rsplit("::", 1)[-1] for d in response.diagnostics if d.policyName == "node-role-managed-policies"}
    assert flagged == {"s3"}, [d.message for d in response.diagnostics]

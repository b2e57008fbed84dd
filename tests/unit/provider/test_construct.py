"""The provider's construct under the SDK's mock engine: the Python API's components, wired from
the engine's inputs; bad inputs end in one input error naming every bad field, nothing registered."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest
from pulumi.errors import InputPropertiesError

from components.plan.mockengine import MASK, PlanRun, run_program
from components.provider.resources import GpuAddons, GpuCluster
from components.provider.schema import schema
from components.provider.server import Ck8sGpuProvider, construct_component, output_names

KUBECONFIG = ("apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters: [{name: c, cluster: {server: "
              "'https://127.0.0.1:6443'}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
              "users: [{name: u, user: {token: t0ken-not-real}}]\n")
ADDONS = "ck8s-gpu:index:GpuAddons"


def construct(token: str, inputs: dict[str, Any], *, secret_kubeconfig: bool = False) -> PlanRun:
    def program() -> None:
        wire = {**inputs, "kubeconfig": pulumi.Output.secret(inputs["kubeconfig"])} if secret_kubeconfig else inputs
        result = construct_component("demo", token, wire, None)
        for key, value in result.state.items():
            pulumi.export(key, value)
    return run_program(program, {}, stack="t", project="consumer")


def refused(token: str, inputs: dict[str, Any]) -> InputPropertiesError:
    """The error construct raised, having checked that nothing was registered before it."""
    caught: list[InputPropertiesError] = []

    def program() -> None:
        try:
            construct_component("demo", token, inputs, None)
        except InputPropertiesError as exc:
            caught.append(exc)
    run = run_program(program, {}, stack="t", project="consumer")
    assert caught, "construct accepted the inputs"
    assert [r.type for r in run.resources] == [], "registered before validating"
    return caught[0]


def test_construct_wires_the_python_apis_component_and_returns_its_outputs() -> None:
    run = construct(ADDONS, {"kubeconfig": KUBECONFIG,
                             "pools": [{"name": "gpu", "instanceType": "g6.xlarge", "nodes": 2.0}],
                             "smokeTest": {"gpus": 2.0, "scheduler": "default"}}, secret_kubeconfig=True)
    by_type = {r.type: r for r in run.resources}
    top = by_type[ADDONS]
    assert top.name == "demo" and not top.custom
    children = {r.type for r in run.resources if r.parent == top.urn}
    assert {"ck8s-gpu:index:ExistingCluster", "ck8s-gpu:index:AddonSet", "ck8s-gpu:index:SmokeTest"} <= children
    assert set(run.outputs) == {"kubeconfig", "addons", "smokeReport"}
    assert run.outputs["kubeconfig"] == MASK
    assert "gpu-operator" in run.outputs["addons"]
    assert "t0ken" not in json.dumps([r.to_json() for r in run.resources])


def test_simulated_gpus_get_the_local_cluster() -> None:
    run = construct(ADDONS, {"kubeconfig": KUBECONFIG, "simulatedGpus": True,
                             "pools": [{"name": "gpu", "instanceType": "g6.xlarge"}],
                             "smokeTest": {"scheduler": "default"}})
    assert "ck8s-gpu:index:LocalCluster" in {r.type for r in run.resources}


def test_gpu_cluster_builds_an_aws_cluster() -> None:
    run = construct("ck8s-gpu:index:GpuCluster", {
        "region": "eu-north-1", "controlPlanes": 3.0, "pools": [{"name": "gpu", "instanceType": "g6.xlarge"}]})
    types = [r.type for r in run.resources]
    assert "ck8s-gpu:index:AwsCluster" in types and "aws:autoscaling/group:Group" in types


def test_bad_inputs_end_in_one_error_naming_every_field_and_nothing_registered() -> None:
    exc = refused(ADDONS, {"pools": [{"name": "gpu", "nodes": -1.0}], "driver": "bogus", "simulatedGpus": "yes",
                           "smokeTest": {"gpus": 0.0}})
    paths = [e["property_path"] for e in exc.errors or []]
    assert exc.message == f"invalid settings in GpuAddonsArgs demo ({len(paths)} problems)"
    assert paths == sorted(paths) and {"kubeconfig", "simulatedGpus", "settings.gpuStack.driver",
                                       "settings.nodePools[0].instanceType", "settings.nodePools[0].desiredSize",
                                       "settings.smokeTest.gpus"} <= set(paths)
    assert all(e["reason"] for e in exc.errors or [])


def test_missing_pools_and_region_are_named() -> None:
    exc = refused("ck8s-gpu:index:GpuCluster", {"controlPlanes": 2.0})
    paths = {e["property_path"] for e in exc.errors or []}
    assert {"pools", "settings.region", "settings.controlPlane.count"} <= paths


def test_an_unknown_type_is_an_input_error() -> None:
    with pytest.raises(InputPropertiesError, match="unknown resource type ck8s-gpu:index:Nope; this provider has"):
        construct_component("x", "ck8s-gpu:index:Nope", {}, None)


def test_outputs_are_the_annotated_outputs() -> None:
    assert output_names(GpuAddons) == output_names(GpuCluster) == ["kubeconfig", "addons", "smoke_report"]


def test_the_provider_serves_the_schema() -> None:
    provider = Ck8sGpuProvider()
    assert json.loads(provider.schema) == schema() and provider.version == schema()["version"]

"""The engine's inputs (schema names, numbers as floats) -> the Python API's dataclass args."""

from __future__ import annotations

from components import api
from components.provider import args
from components.provider.mapping import addons_args, cluster_args, python_names

WIRE = {"kubeconfig": "kc", "pools": [{"name": "gpu", "instanceType": "g6.xlarge", "nodes": 2.0, "minNodes": 1.0,
                                       "labels": {"team": "ml"}}],
        "kubernetesTrack": "1.33-classic", "driver": "host", "smokeTest": {"gpus": 2.0, "timeoutSeconds": 60.0,
                                                                            "scheduler": "default"},
        "simulatedGpus": True, "settings": {"smokeTest": {"namespace": "x", "gpus": 2.0}}, "unknownInput": 1}


def test_schema_names_become_python_names_and_whole_floats_ints() -> None:
    got = python_names(WIRE, args.GpuAddonsArgs)
    assert got == {"kubeconfig": "kc", "pools": [{"name": "gpu", "instance_type": "g6.xlarge", "nodes": 2,
                                                  "min_nodes": 1, "labels": {"team": "ml"}}],
                   "kubernetes_track": "1.33-classic", "driver": "host",
                   "smoke_test": {"gpus": 2, "timeout_seconds": 60, "scheduler": "default"},
                   "simulated_gpus": True, "settings": {"smokeTest": {"namespace": "x", "gpus": 2}}}
    assert type(got["pools"][0]["nodes"]) is int
    assert python_names({"nodes": 2.5}, args.GpuPool) == {"nodes": 2.5}  # the settings name it, not dropped


def test_the_python_apis_args_with_its_defaults_for_what_is_unset() -> None:
    got = addons_args(python_names(WIRE, args.GpuAddonsArgs))
    assert got == api.GpuAddonsArgs(
        kubeconfig="kc", pools=[api.GpuPool("gpu", "g6.xlarge", nodes=2, min_nodes=1, labels={"team": "ml"})],
        kubernetes_track="1.33-classic", driver="host",
        smoke_test=api.SmokeTestArgs(gpus=2, scheduler="default", timeout_seconds=60), simulated_gpus=True,
        settings={"smokeTest": {"namespace": "x", "gpus": 2}})
    bare = addons_args({"kubeconfig": "kc", "pools": []})
    assert bare == api.GpuAddonsArgs(kubeconfig="kc", pools=[])  # every default the Python API's own


def test_enum_members_and_their_values_map_alike() -> None:
    by_member = cluster_args({"region": "eu-west-1", "pools": [], "control_planes": args.ControlPlaneCount.Three,
                              "driver": args.Driver.Precompiled})
    by_value = cluster_args(python_names({"region": "eu-west-1", "pools": [], "controlPlanes": 3.0,
                                          "driver": "precompiled"}, args.GpuClusterArgs))
    assert by_member == by_value
    assert by_member.control_planes == 3 and by_member.driver == "precompiled"


def test_cluster_args_carry_the_vpc_and_tags() -> None:
    got = cluster_args(python_names({"region": "eu-west-1", "pools": [{"name": "a", "instanceType": "g6.xlarge"}],
                                     "vpcId": "vpc-1", "privateSubnetIds": ["s-1", "s-2"], "production": True,
                                     "tags": {"cost": "ml"}, "apiAllowList": ["10.0.0.0/8"]}, args.GpuClusterArgs))
    assert got == api.GpuClusterArgs(region="eu-west-1", pools=[api.GpuPool("a", "g6.xlarge")], vpc_id="vpc-1",
                                     private_subnet_ids=["s-1", "s-2"], production=True, tags={"cost": "ml"},
                                     api_allow_list=["10.0.0.0/8"])


def test_missing_required_inputs_reach_the_validation_as_missing() -> None:
    got = addons_args({"pools": [{"nodes": 1}, "not-a-pool"]})
    assert got.kubeconfig is None
    assert [(p.name, p.instance_type) for p in got.pools] == [(None, None), (None, None)]
    assert addons_args({}).pools is None and cluster_args({}).region is None


def test_smoke_test_off() -> None:
    got = addons_args({"kubeconfig": "kc", "pools": [], "smoke_test": {"enabled": False}})
    assert got.smoke_test == api.SmokeTestArgs(enabled=False)
    assert got.smoke_test is not None and got.smoke_test.raw()["enabled"] is False

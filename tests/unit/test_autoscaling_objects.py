"""What the autoscaler is given for autoscaled pools (ADR 0049): the NodePool from the settings
(components/facts/autoscaling.py), the EC2NodeClass and the controller's IAM policy from the aws
platform (components/aws/karpenter.py), the controller's values (components/addons/karpenter.py),
and what the offline plan and its timeline make of a stack with such pools. The objects' fit with
the pinned CRDs is judged by a real API server in tests/integration/test_karpenter_local.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.addons import karpenter, karpenter_nodepools
from components.addons.graph import final_values, install_graph
from components.aws.iam import Scope
from components.aws.karpenter import (
    controller_policy,
    ec2_node_class_manifest,
    existing_controller_policy,
)
from components.facts.autoscaling import ec2_node_class_ref, existing_node_class_manifest, nodepool_manifest
from components.plan.artifacts import write
from components.plan.run import plan_stack
from components.plan.timeline import build_steps, make_timeline
from components.settings import parse_settings
from components.settings.model import Settings
from components.tables.labels import POOL_TAG
from components.validate import parse

BASE: dict[str, Any] = {"platform": "aws", "environment": "dev", "region": "eu-west-1",
                        "network": {"availabilityZones": ["eu-west-1a", "eu-west-1b"]}}
SCOPE = Scope("aws", "eu-west-1", "123456789012", "ck8s-dev-eu-west-1")


def stack(*pools: dict[str, Any], **extra: Any) -> Settings:
    return parse_settings({**BASE, "nodePools": list(pools), **extra})


def nodepool(s: Settings, i: int = 0) -> dict[str, Any]:
    return nodepool_manifest(s, s.node_pools[i], ec2_node_class_ref(s.node_pools[i]))


def test_the_nodepool_bounds_karpenters_own_nodes_by_the_pools_range() -> None:
    s = stack({"name": "l4", "instanceType": "g6.xlarge",
               "autoscaling": {"minSize": 2, "maxSize": 5, "scaleDownAfter": "30m", "disruptionBudget": "20%"}})
    spec = nodepool(s)["spec"]
    assert spec["limits"] == {"nodes": "3"}  # the group keeps 2; Karpenter adds at most 3
    assert spec["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30m",
                                  "budgets": [{"nodes": "20%"}]}
    reqs = {r["key"]: r["values"] for r in spec["template"]["spec"]["requirements"]}
    assert reqs == {"node.kubernetes.io/instance-type": ["g6.xlarge"], "karpenter.sh/capacity-type": ["on-demand"]}
    assert spec["template"]["spec"]["expireAfter"] == "Never"
    assert spec["template"]["metadata"]["labels"][POOL_TAG] == "l4"


@pytest.mark.parametrize(("pool", "capacity"), [
    ({"capacityType": "spot"}, ["spot"]),
    ({"availabilityZone": "eu-west-1a", "capacityReservation": {"id": "cr-0123456789abcdef0"}}, ["reserved"]),
])
def test_spot_and_reservations_are_the_nodepools_capacity_types(pool: dict[str, Any], capacity: list[str]) -> None:
    s = stack({"name": "h100", "instanceType": "p5.48xlarge", "autoscaling": {"maxSize": 2}, **pool})
    reqs = {r["key"]: r["values"] for r in nodepool(s)["spec"]["template"]["spec"]["requirements"]}
    assert reqs["karpenter.sh/capacity-type"] == capacity


def node_class(s: Settings, **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"ami": "/ck8s-gpu/images/gpu", "user_data": "#cloud-config\n", "instance_profile": "p",
                            "subnet_ids": ["subnet-1"], "security_group_ids": ["sg-1"], "placement_group": None, **kw}
    return ec2_node_class_manifest(s, s.node_pools[0], **args)["spec"]


def test_the_node_class_is_the_launch_templates_twin() -> None:
    s = stack({"name": "h100", "instanceType": "p5.48xlarge", "availabilityZone": "eu-west-1a",
               "capacityReservation": {"id": "cr-0123456789abcdef0"}, "autoscaling": {"maxSize": 2}})
    spec = node_class(s, placement_group="pg-name")
    assert spec["amiFamily"] == "Custom" and spec["amiSelectorTerms"] == [{"ssmParameter": "/ck8s-gpu/images/gpu"}]
    imds = spec["metadataOptions"]
    assert imds["httpTokens"] == "required" and imds["httpPutResponseHopLimit"] == 1
    assert spec["blockDeviceMappings"][0]["ebs"]["encrypted"] is True
    assert sum(i["interfaceType"] == "efa-only" for i in spec["networkInterfaces"]) == 32  # p5: 32 EFA
    assert spec["placementGroupSelector"] == {"name": "pg-name"}
    assert spec["capacityReservationSelectorTerms"] == [{"id": "cr-0123456789abcdef0"}]
    # Karpenter owns these tag keys (the CRD refuses them); the pool's join tags stay
    assert not any(k.startswith(("kubernetes.io/cluster/", "karpenter.")) for k in spec["tags"])
    assert spec["tags"][POOL_TAG] == "h100"
    assert node_class(s, ami="ami-0123456789abcdef0")["amiSelectorTerms"] == [{"id": "ami-0123456789abcdef0"}]


def _statements(policy: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {st["Sid"]: st for st in policy["Statement"]}


def test_the_controller_may_launch_and_end_only_this_clusters_tagged_instances() -> None:
    role = "arn:aws:iam::123456789012:role/worker"
    st = _statements(controller_policy(SCOPE, worker_role_arn=role, ssm_parameters=["/ck8s-gpu/images/gpu"],
                                       pricing=True))
    owned = "aws:ResourceTag/kubernetes.io/cluster/ck8s-dev-eu-west-1"
    assert st["DeleteOnlyItsOwn"]["Condition"]["StringEquals"] == {owned: "owned"}
    assert st["CreateOnlyTaggedAsThisCluster"]["Condition"]["StringEquals"] == {
        "aws:RequestTag/kubernetes.io/cluster/ck8s-dev-eu-west-1": "owned"}
    assert st["PassOnlyTheWorkerRole"]["Resource"] == [role]
    assert st["ReadThePoolImages"]["Resource"] == ["arn:aws:ssm:eu-west-1:123456789012:parameter/ck8s-gpu/images/gpu"]
    actions = {a for s in st.values() for a in s["Action"]}
    # no IAM write, no EKS, no SQS: the classes name an existing profile, the endpoint is set
    assert not {a for a in actions if a.startswith(("iam:Create", "iam:Delete", "iam:Add", "iam:Remove",
                                                    "iam:Tag", "eks:", "sqs:"))}
    # "*" only where AWS has no resource-level scoping
    assert {sid for sid, s in st.items() if s["Resource"] == "*"} == {"ReadTheRegion", "ReadPrices"}


def test_an_offline_stack_reads_no_prices_and_public_parameters_have_no_account() -> None:
    st = _statements(controller_policy(SCOPE, worker_role_arn="r", pricing=False, ssm_parameters=[
        "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"]))
    assert "ReadPrices" not in st
    assert st["ReadThePoolImages"]["Resource"][0].startswith("arn:aws:ssm:eu-west-1::parameter/aws/service/")


def test_the_controller_models_gpu_claims_and_runs_on_the_control_planes() -> None:
    s = stack({"name": "l4", "instanceType": "g6.xlarge", "autoscaling": {"maxSize": 2}})
    values = final_values(install_graph(s), s)[karpenter.NAME]
    assert values["settings"]["awsFeatureGates"] == {"draNVIDIAGPU": True}  # else DRA claims are ignored
    assert values["settings"]["isolatedVPC"] is False and values["hostNetwork"] is True
    assert values["controller"]["image"]["tag"] == "1.15.0"  # the release CI runs, not the chart's default
    assert "node-role.kubernetes.io/control-plane" in values["nodeSelector"]


def test_no_autoscaled_pool_installs_no_autoscaler() -> None:
    s = stack({"name": "l4", "instanceType": "g6.xlarge"})
    assert not {"karpenter", "karpenter-nodepools"} & set(install_graph(s).names)
    assert "Karpenter would launch nothing" in karpenter.ADDON.check(s)[0]


def test_the_elastic_stack_plans_its_autoscaler_objects_and_models_scale_from_zero() -> None:
    plan = plan_stack("aws-elastic")
    values = next(r.inputs["values"] for r in plan.resources if r.name.endswith("-karpenter-nodepools"))
    assert [c["kind"] for c in values["nodeClasses"]] == ["EC2NodeClass", "EC2NodeClass"]
    assert [p["metadata"]["name"] for p in values["nodePools"]] == ["h100", "l4"]
    groups = {r.name: r.inputs for r in plan.resources if r.type == "aws:autoscaling/group:Group"}
    assert {g["desiredCapacity"] for g in groups.values()} == {0}  # no GPU node until a job asks
    steps = build_steps(plan.resources, platform="aws", driver_mode="host", prefix="ck8s-elastic-eu-west-1-")
    tl = make_timeline("aws-elastic", steps, "host")
    scaled = dict(tl.scale_from_zero())
    assert set(scaled) == {"h100", "l4"}
    low, high = scaled["l4"]
    assert 30 < low < high < tl.total[1]


EXISTING_AWS: dict[str, Any] = {
    "clusterEndpoint": "https://10.0.0.10:6443",
    "nodeRoleArn": "arn:aws-us-gov:iam::210987654321:role/site/gpu-node",
    "instanceProfile": "gpu-node",
    "amiSelectorTerms": [{"ssmParameter": "/site/images/gpu"}, {"tags": {"site/image": "gpu", "site/ok": "*"}}],
    "subnetSelectorTerms": [{"tags": {"site/tier": "private"}}, {"id": "subnet-0123456789abcdef0"}],
    "securityGroupSelectorTerms": [{"id": "sg-0123456789abcdef0"}],
    "userData": "#!/bin/bash\n/opt/site/join.sh\n",
    "tags": {"team": "ml"},
}


def existing_stack() -> Settings:
    return parse({"platform": "existing", "environment": "lab", "region": "us-gov-west-1", "existingAws": EXISTING_AWS,
                  "nodePools": [{"name": "l4", "instanceType": "g6.xlarge", "autoscaling": {"maxSize": 3}},
                                {"name": "fixed", "instanceType": "g6.xlarge"}]})


def test_an_existing_cluster_on_aws_gets_a_nodepool_and_exactly_the_users_node_class() -> None:
    s = existing_stack()
    graph = install_graph(s)
    assert {"karpenter", "karpenter-nodepools"} <= set(graph.names)  # on by default: autoscaled + existingAws
    values = final_values(graph, s)
    pools, classes = values["karpenter-nodepools"]["nodePools"], values["karpenter-nodepools"]["nodeClasses"]
    # the fixed pool has none
    assert pools == [nodepool_manifest(s, s.node_pools[0], ec2_node_class_ref(s.node_pools[0]))]
    assert classes == [existing_node_class_manifest(s, s.node_pools[0])]
    assert classes[0]["metadata"] == {"name": "l4"} and classes[0]["kind"] == "EC2NodeClass"
    assert classes[0]["spec"] == {
        "amiFamily": "Custom",
        "amiSelectorTerms": [{"ssmParameter": "/site/images/gpu"}, {"tags": {"site/image": "gpu", "site/ok": "*"}}],
        "userData": "#!/bin/bash\n/opt/site/join.sh\n",
        "instanceProfile": "gpu-node",
        "subnetSelectorTerms": [{"tags": {"site/tier": "private"}}, {"id": "subnet-0123456789abcdef0"}],
        "securityGroupSelectorTerms": [{"id": "sg-0123456789abcdef0"}],
        "tags": {"team": "ml"},
    }
    assert karpenter_nodepools.ADDON.wired_values_problem is not None
    assert karpenter_nodepools.ADDON.wired_values_problem(s) is None  # nothing to wire: the settings hold it
    settings = values[karpenter.NAME]["settings"]
    assert settings["clusterEndpoint"] == "https://10.0.0.10:6443"  # the user's, not the in-cluster API
    assert settings["clusterName"] == "ck8s-lab-us-gov-west-1"
    assert values[karpenter.NAME]["hostNetwork"] is True  # the control planes' instance role, over IMDS


def test_an_existing_stack_without_an_autoscaled_pool_installs_no_autoscaler() -> None:
    s = parse({"platform": "existing", "nodePools": [{"name": "l4", "instanceType": "g6.xlarge"}]})
    assert not {"karpenter", "karpenter-nodepools"} & set(install_graph(s).names)


def test_the_policy_for_an_existing_cluster_is_scoped_by_the_users_own_arns(tmp_path: Path) -> None:
    s = existing_stack()
    st = _statements(existing_controller_policy(s))
    role = EXISTING_AWS["nodeRoleArn"]
    assert st["PassOnlyTheWorkerRole"]["Resource"] == [role]
    assert st["ReadThePoolImages"]["Resource"] == [
        "arn:aws-us-gov:ssm:us-gov-west-1:210987654321:parameter/site/images/gpu"]
    assert st["DeleteOnlyItsOwn"]["Condition"]["StringEquals"] == {
        "aws:ResourceTag/kubernetes.io/cluster/ck8s-lab-us-gov-west-1": "owned"}
    launch = st["LaunchFromTheseResources"]["Resource"]
    assert all(a.startswith("arn:aws-us-gov:ec2:us-gov-west-1:") for a in launch)
    # `ck8s-gpu plan` writes it for the user to attach to their control planes' role
    settings = {"platform": "existing", "environment": "lab", "region": "us-gov-west-1", "existingAws": EXISTING_AWS,
                "nodePools": [{"name": "l4", "instanceType": "g6.xlarge", "autoscaling": {"maxSize": 3}}]}
    (tmp_path / "Pulumi.lab.yaml").write_text(yaml.safe_dump({"config": {"ck8s-gpu:settings": settings}}))
    plan = plan_stack("lab", tmp_path)
    written = write(plan, tmp_path / "out")
    policy = tmp_path / "out" / "iam" / "karpenter-controller-policy.json"
    assert policy in written and json.loads(policy.read_text()) == existing_controller_policy(plan.settings)
    [rendered] = (tmp_path / "out" / "manifests").glob("*karpenter-nodepools.yaml")  # the chart, rendered
    objects = [o for o in yaml.safe_load_all(rendered.read_text()) if o]
    assert sorted(o["kind"] for o in objects) == ["EC2NodeClass", "NodePool"]
    assert next(o for o in objects if o["kind"] == "EC2NodeClass") == existing_node_class_manifest(
        plan.settings, plan.settings.node_pools[0])

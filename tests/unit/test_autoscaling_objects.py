"""What the autoscaler is given for autoscaled pools (ADR 0049): the NodePool from the settings
(components/facts/autoscaling.py), the EC2NodeClass and the controller's IAM policy from the aws
platform (components/aws/karpenter.py), the controller's values (components/addons/karpenter.py),
and what the offline plan and its timeline make of a stack with such pools. The objects' fit with
the pinned CRDs is judged by a real API server in tests/integration/test_karpenter_local.py."""

from __future__ import annotations

from typing import Any

import pytest

from components.addons import karpenter
from components.addons.graph import final_values, install_graph
from components.aws.iam import Scope
from components.aws.karpenter import controller_policy, ec2_node_class_manifest, node_class_ref
from components.facts.autoscaling import nodepool_manifest
from components.plan.run import plan_stack
from components.plan.timeline import build_steps, make_timeline
from components.settings import parse_settings
from components.settings.model import Settings
from components.tables.labels import POOL_TAG

BASE: dict[str, Any] = {"platform": "aws", "environment": "dev", "region": "eu-west-1",
                        "network": {"availabilityZones": ["eu-west-1a", "eu-west-1b"]}}
SCOPE = Scope("aws", "eu-west-1", "123456789012", "ck8s-dev-eu-west-1")


def stack(*pools: dict[str, Any], **extra: Any) -> Settings:
    return parse_settings({**BASE, "nodePools": list(pools), **extra})


def nodepool(s: Settings, i: int = 0) -> dict[str, Any]:
    return nodepool_manifest(s, s.node_pools[i], node_class_ref(s.node_pools[i]))


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

"""The EFA device plugin add-on: when it installs, where its pods land, what its namespace admits."""

from __future__ import annotations

from typing import Any

import pytest

from components.addons import efa_device_plugin
from components.addons.catalog import BY_NAME
from components.addons.graph import final_values, install_graph
from components.plan.run import Recorded
from components.policies.namespaces import ENFORCE, PRIVILEGED_CHARTS
from components.tables.labels import EFA_NODE_LABEL
from tests.unit.addons.helpers import settings
from tests.unit.policies.test_stacks import committed

NAME = efa_device_plugin.NAME
P5 = {"name": "h100", "instanceType": "p5.48xlarge", "maxSize": 4, "availabilityZone": "eu-west-1a"}
# Top-level keys of the chart's values.yaml (aws/eks-charts stable/aws-efa-k8s-device-plugin, chart
# v0.5.30, commit 5239609): a key outside them is ignored by Helm, so the plugin would silently
# run with the chart's default instead.
CHART_KEYS = {"image", "securityContext", "supportedInstanceLabels", "resources", "nodeSelector",
              "updateStrategy", "tolerations", "additionalPodAnnotations", "additionalPodLabels",
              "nameOverride", "fullnameOverride", "imagePullSecrets"}


def _values(**raw: Any) -> dict[str, Any]:
    s = settings(**raw)
    return final_values(install_graph(s), s)[NAME]


@pytest.mark.parametrize(("platform", "pools", "on"), [
    ("aws", [P5], True),  # p5: EFA with NVSwitch, > 1 node, one zone: EFA on by default
    ("aws", [{**P5, "efa": False}], False),
    ("aws", [{**P5, "maxSize": 1}], False),  # one node: no traffic between nodes, EFA off
    ("aws", [{"name": "l4", "instanceType": "g6.xlarge"}], False),
    ("aws", [{"name": "l4", "instanceType": "g6.xlarge"}, P5], True),
    ("existing", [P5], False),  # another cluster's nodes may not carry the label: enabled by hand
])
def test_installs_exactly_where_a_pool_has_efa(platform: str, pools: list[dict[str, Any]], on: bool) -> None:
    assert (NAME in install_graph(settings(platform, nodePools=pools)).names) is on


def test_an_existing_cluster_may_enable_it() -> None:
    s = settings("existing", nodePools=[P5], gpuStack={"addons": {"efaDevicePlugin": {"enabled": True}}})
    assert NAME in install_graph(s).names
    assert efa_device_plugin.ADDON.check(s) == ()


def test_enabled_without_an_efa_pool_is_a_problem() -> None:
    s = settings("aws", nodePools=[{"name": "l4", "instanceType": "g6.xlarge"}])
    assert "no node pool has EFA" in efa_device_plugin.ADDON.check(s)[0]


def test_tolerates_every_taint_of_every_efa_pool_and_only_those() -> None:
    pools = [
        {**P5, "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                          {"key": "training", "value": "only", "effect": "NoExecute"}]},
        {**P5, "name": "h100b", "taints": [{"key": "reserved", "value": "x", "effect": "NoSchedule"}]},
        {"name": "l4", "instanceType": "g6.xlarge", "taints": [{"key": "inference", "effect": "NoSchedule"}]},
    ]
    assert _values(nodePools=pools)["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "training", "operator": "Exists", "effect": "NoExecute"},
        {"key": "reserved", "operator": "Exists", "effect": "NoSchedule"},
    ]


def test_runs_only_on_efa_nodes_of_the_pools_types() -> None:
    v = _values(nodePools=[P5, {**P5, "name": "h200", "instanceType": "p5en.48xlarge"},
                           {"name": "l4", "instanceType": "g6.xlarge"}])
    assert v["nodeSelector"] == {EFA_NODE_LABEL: "true"}
    assert v["supportedInstanceLabels"] == {"keys": ["node.kubernetes.io/instance-type"],
                                            "values": ["p5.48xlarge", "p5en.48xlarge"]}
    assert set(v) <= CHART_KEYS
    # Not EKS' ECR account: Canonical Kubernetes nodes hold no ECR credentials to pull from it.
    assert v["image"] == {"repository": "public.ecr.aws/eks/aws-efa-k8s-device-plugin"}
    assert "tag" not in v["image"]  # the chart's appVersion: the pin decides the image


def test_namespace_is_privileged_and_the_pack_knows_why() -> None:
    addon = BY_NAME[NAME]
    assert (addon.namespace, addon.pod_security) == ("aws-efa", "privileged")
    assert PRIVILEGED_CHARTS[addon.chart_name][1] is None  # whatever its values: the template is fixed


def _one(resources: list[Recorded], rtype: str, pred: Any) -> Recorded:
    found = [r for r in resources if r.type == rtype and pred(r)]
    assert len(found) == 1, [r.name for r in found]
    return found[0]


def test_aws_prod_installs_it_and_passes_the_policy_pack() -> None:
    plan, result = committed("aws-prod")
    release = _one(plan.resources, "kubernetes:helm.sh/v3:Release", lambda r: r.inputs.get("chart") == NAME)
    assert release.inputs["namespace"] == "aws-efa"
    assert release.inputs["version"] == "v0.5.30"
    assert release.inputs["repositoryOpts"]["repo"] == "https://aws.github.io/eks-charts"
    ns = _one(plan.resources, "kubernetes:core/v1:Namespace",
              lambda r: r.inputs.get("metadata", {}).get("name") == "aws-efa")
    assert ns.inputs["metadata"]["labels"][ENFORCE] == "privileged"
    assert result.mandatory == [], "\n".join(str(f) for f in result.mandatory)
    assert result.advisory == [], "\n".join(str(f) for f in result.advisory)

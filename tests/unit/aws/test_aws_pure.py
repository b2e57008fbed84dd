"""Pure decisions of the AWS platform: subnet plan, CPU architecture, security-group table, IAM
policies, kubeconfig, CCM values, tags."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from components.aws import ami, iam, kubeconfig, network, security_groups, tags
from components.aws.control_plane import placement
from components.settings.model import Settings
from components.tables import instance_types
from tests.unit.aws.conftest import settings_for

# -- network -----------------------------------------------------------------------------------


@given(prefix=st.integers(min_value=8, max_value=24), azs=st.integers(min_value=2, max_value=3),
       base=st.integers(min_value=0, max_value=2**32 - 1))
def test_subnets_are_disjoint_inside_the_vpc_and_one_per_az(prefix: int, azs: int, base: int) -> None:
    vpc = ipaddress.ip_network(f"{ipaddress.IPv4Address(base)}/{prefix}", strict=False)
    plan = network.plan_subnets(str(vpc), azs)
    nets = [ipaddress.ip_network(c) for c in (*plan.private, *plan.public)]
    assert len(plan.private) == len(plan.public) == azs
    assert all(n.subnet_of(vpc) for n in nets)  # type: ignore[arg-type]
    assert all(not a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1:])
    assert all(ipaddress.ip_network(p).num_addresses >= 4 * ipaddress.ip_network(q).num_addresses
               for p, q in zip(plan.private, plan.public, strict=True))


def test_subnet_plan_of_a_16() -> None:
    plan = network.plan_subnets("10.40.0.0/16", 3)
    assert plan.private == ("10.40.0.0/18", "10.40.64.0/18", "10.40.128.0/18")
    assert plan.public == ("10.40.192.0/20", "10.40.208.0/20", "10.40.224.0/20")


@pytest.mark.parametrize("cidr,azs", [("10.0.0.0/25", 2), ("10.0.0.0/16", 4), ("10.0.0.0/16", 1), ("fd00::/48", 2)])
def test_subnet_plan_rejects_what_cannot_work(cidr: str, azs: int) -> None:
    with pytest.raises(ValueError):
        network.plan_subnets(cidr, azs)


def test_control_planes_round_robin_over_subnets() -> None:
    assert placement(3, 3) == [0, 1, 2]
    assert placement(3, 2) == [0, 1, 0]
    assert placement(1, 3) == [0]
    with pytest.raises(ValueError):
        placement(1, 0)


# -- AMI ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("itype,arch", [
    ("g6.xlarge", "amd64"), ("g6e.12xlarge", "amd64"), ("p5.48xlarge", "amd64"), ("p5en.48xlarge", "amd64"),
    ("p6-b200.48xlarge", "amd64"), ("m7i.xlarge", "amd64"), ("g4dn.xlarge", "amd64"), ("m7a.large", "amd64"),
    ("g5g.xlarge", "arm64"), ("m7g.large", "arm64"), ("c7gn.large", "arm64"), ("x2gd.large", "arm64"),
    ("a1.large", "arm64"), ("im4gn.large", "arm64"), ("r8g.large", "arm64"),
    # NVIDIA Grace (AWS's accelerated computing specifications: "NVIDIA Grace (arm64)")
    ("p6e-gb200.36xlarge", "arm64"), ("p6e-gb300.36xlarge", "arm64"),
])
def test_architecture_of_instance_types(itype: str, arch: str) -> None:
    assert instance_types.arch_for_instance_type(itype) == arch


def test_ami_comes_from_canonicals_ssm_parameter() -> None:
    expected = "/aws/service/canonical/ubuntu/server/24.04/stable/current/arm64/hvm/ebs-gp3/ami-id"
    assert ami.ssm_parameter("arm64") == expected
    with pytest.raises(ValueError):
        instance_types.arch_for_instance_type("not a type")


# -- security groups ---------------------------------------------------------------------------


def _table(rules: list[security_groups.Rule]) -> set[tuple[str, str, str, int, int, str]]:
    return {(r.group, r.direction, r.protocol, r.from_port, r.to_port, r.peer) for r in rules}


def test_exactly_the_canonical_kubernetes_ports() -> None:
    assert _table(security_groups.cluster_rules(["192.0.2.0/24"])) == {
        ("nodes", "ingress", "tcp", 6400, 6400, "sg:nodes"),
        ("nodes", "ingress", "tcp", 10250, 10250, "sg:nodes"),
        ("nodes", "ingress", "udp", 8472, 8472, "sg:nodes"),
        ("nodes", "ingress", "tcp", 4240, 4240, "sg:nodes"),
        ("nodes", "egress", "-1", -1, -1, "0.0.0.0/0"),
        ("control-plane", "ingress", "tcp", 6443, 6443, "sg:api-lb"),
        ("control-plane", "ingress", "tcp", 6443, 6443, "sg:nodes"),
        ("control-plane", "ingress", "tcp", 2379, 2380, "sg:control-plane"),
        ("api-lb", "egress", "tcp", 6443, 6443, "sg:control-plane"),
        ("api-lb", "ingress", "tcp", 6443, 6443, "192.0.2.0/24"),
    }


def test_rule_keys_are_unique_names() -> None:
    rules = security_groups.cluster_rules(["192.0.2.0/24", "2001:db8::/32", security_groups.VPC])
    assert len({r.key for r in rules}) == len(rules)


@pytest.mark.parametrize("lb,allow,expected", [
    ("internal", [], (security_groups.VPC,)),
    # internet-facing with an empty allow-list is refused by the settings rules (nobody could connect)
    ("internal", ["10.0.0.0/8"], ("10.0.0.0/8",)),
    ("internet-facing", ["203.0.113.0/24"], ("203.0.113.0/24",)),
])
def test_api_sources(lb: str, allow: list[str], expected: tuple[str, ...]) -> None:
    def change(raw: dict[str, Any]) -> None:
        raw["controlPlane"]["apiLoadBalancer"] = lb
        raw["network"]["apiAllowList"] = allow

    assert security_groups.api_sources(settings_for("aws-dev", change)) == expected


# -- IAM ---------------------------------------------------------------------------------------


def test_control_planes_get_the_ccm_policy_only_with_the_ccm() -> None:
    with_ccm = {s["Sid"]: s for s in iam.control_plane_policy(["b", "a"], ccm=True)["Statement"]}
    assert with_ccm["ReadClusterSecrets"]["Resource"] == ["a", "b"]
    assert "elasticloadbalancing:CreateLoadBalancer" in with_ccm["CloudControllerManager"]["Action"]
    without = iam.control_plane_policy(["a"], False)["Statement"]
    assert "CloudControllerManager" not in {s["Sid"] for s in without}


def test_nothing_may_write_secrets_or_assume_roles() -> None:
    scope = iam.Scope("aws", "eu-west-1", "123456789012", "c")
    docs = [iam.control_plane_policy(["a"], True), iam.worker_policy(scope, "c-mint-worker-token")]
    actions = [a for d in docs for s in d["Statement"] for a in s["Action"]]
    assert not [a for a in actions if a.startswith(("secretsmanager:Put", "secretsmanager:Create", "sts:", "iam:Pass"))]


# -- kubeconfig --------------------------------------------------------------------------------


def test_kubeconfig_loads_in_the_kubernetes_client() -> None:
    from components.kube.client import api_client

    pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    text = kubeconfig.render_kubeconfig("ck8s-dev-eu-west-1", kubeconfig.api_server_url("api.example.com"), pem, pem,
                                        "-----BEGIN RSA PRIVATE KEY-----\nx\n-----END RSA PRIVATE KEY-----\n")
    doc = yaml.safe_load(text)
    assert doc["current-context"] == "ck8s-dev-eu-west-1"
    assert doc["clusters"][0]["cluster"]["server"] == "https://api.example.com:6443"
    client = api_client(text)
    assert client.configuration.host == "https://api.example.com:6443"
    client.close()


# -- CCM ---------------------------------------------------------------------------------------


def test_ccm_is_an_addon_with_its_values_overrides_and_version() -> None:
    from components.addons import aws_cloud_controller_manager as ccm_addon
    from components.addons.addon_set import release_args
    from components.addons.graph import contexts, install_graph

    def override(raw: dict[str, Any]) -> None:
        raw.setdefault("gpuStack", {})["addons"] = {
            "awsCloudControllerManager": {"version": "0.0.11", "values": {"resources": {"requests": {"cpu": "50m"}}}}
        }

    def args(s: Settings) -> dict[str, Any]:
        graph = install_graph(s)
        return release_args(ccm_addon.ADDON, contexts(graph, s)[ccm_addon.NAME])

    plain = args(settings_for("aws-prod"))
    assert (plain["name"], plain["namespace"], plain["version"]) == ("aws-cloud-controller-manager", "kube-system",
                                                                      "0.0.10")
    values = plain["values"]
    assert values["hostNetworking"] is True
    assert "--cluster-name=ck8s-prod-us-east-1" in values["args"] and "--cloud-provider=aws" in values["args"]
    assert values["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
    assert any(t["key"] == "node.cloudprovider.kubernetes.io/uninitialized" for t in values["tolerations"])
    # The add-on machinery's release settings, which the old hand-made release lacked.
    assert plain["atomic"] and plain["cleanup_on_fail"] and plain["max_history"] == 10
    over = args(settings_for("aws-prod", override))
    assert over["values"]["resources"] == {"requests": {"cpu": "50m"}} and over["values"]["hostNetworking"] is True
    assert over["version"] == "0.0.11"


# -- tags --------------------------------------------------------------------------------------


def test_ownership_tag_is_never_a_default_tag() -> None:
    s = settings_for("aws-prod")
    assert not any(k.startswith("kubernetes.io/") for k in tags.default_tags(s))
    node = tags.node_tags(s, "worker", "n", pool="h100")
    assert node["kubernetes.io/cluster/ck8s-prod-us-east-1"] == "owned"
    assert node[tags.ROLE_TAG] == "worker" and node[tags.POOL_TAG] == "h100" and node["team"] == "ml-platform"

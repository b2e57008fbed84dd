"""VPC endpoints for clusters in subnets without NAT (issue 27, docs/adr/0041): the service table
against what the boot script calls, service names per partition, the settings that are refused,
and the NAT-less plan (endpoints made, no NAT, the policy pack passes)."""

from __future__ import annotations

import copy
import re
from functools import cache
from typing import Any

import pytest

from components.addons.selected import addon_facts
from components.aws import endpoints
from components.aws.endpoints import BY_SERVICE, ENDPOINTS, partition_of, service_name
from components.aws.inventory import planned_names
from components.aws.security_groups import groups_for, rules_for
from components.plan.run import PROJECT_DIR, Plan, plan_config
from components.policies.offline import evaluate_plan
from components.settings.load import read_stack_file
from tests.unit.aws.conftest import of_type, run_cluster, settings_for
from tests.unit.helpers import raised_problems

ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
# The endpoints every NAT-less stack gets; the ECR ones only come with an ECR mirror (images.mirror).
GENERAL = tuple(e for e in ENDPOINTS if not e.ecr_mirror_only)
SCRIPT = PROJECT_DIR / "components" / "aws" / "scripts" / "ck8s-node.sh"
# `aws <service> <operation>` in the script, not in comments (`aws ec2 get-console-output` is prose).
AWS_CALL = re.compile(r"^[^#]*?\baws ([a-z0-9-]+) ([a-z0-9-]+)", re.MULTILINE)


# The committed NAT-less stack: offline, since a VPC without NAT reaches nothing but AWS's
# endpoints and only an offline stack boots without the rest (endpoints.endpoint_problems).
NATLESS = "aws-airgap"


def _natless(raw: dict[str, Any]) -> None:
    """aws-dev without NAT, made offline as a NAT-less stack must be: its images and snap pin are
    already the image program's; a mirror that is not ECR keeps the endpoints the general ones."""
    raw["network"].update(natGateways="none", endpoints="create")
    raw["offline"] = True
    raw["images"]["mirror"] = "registry.example.internal:5000"


def test_every_service_the_boot_script_calls_has_a_required_endpoint() -> None:
    """If ck8s-node.sh gains an AWS call, a cluster without NAT needs its endpoint: this fails until
    ENDPOINTS has it (elbv2 is the CLI's name for elasticloadbalancing)."""
    calls = {m.group(1) for m in AWS_CALL.finditer(SCRIPT.read_text())}
    assert {"ssm", "secretsmanager", "ec2", "elbv2"} <= calls  # the parse finds the known ones
    by_cli = {e.cli or e.service: e for e in ENDPOINTS}
    # `aws ecr` runs only on nodes whose images.mirror is an ECR registry: those stacks get its endpoint.
    missing = sorted(c for c in calls if c not in by_cli or not (by_cli[c].required or by_cli[c].ecr_mirror_only))
    assert missing == [], f"ck8s-node.sh calls {missing} with no required VPC endpoint (components/aws/endpoints.py)"


def test_the_ssm_agent_channels_and_the_ccm_apis_are_in_the_table() -> None:
    # The mint runs as Run Command on a control plane: its agent needs ssm, ec2messages, ssmmessages.
    # The cloud controller manager calls ec2 and elasticloadbalancing.
    for service in ("ssm", "ssmmessages", "ec2messages", "ec2", "elasticloadbalancing", "secretsmanager"):
        assert BY_SERVICE[service].required and BY_SERVICE[service].kind == "Interface"
    assert BY_SERVICE["s3"].kind == "Gateway" and not BY_SERVICE["s3"].required


@pytest.mark.parametrize(("region", "partition"), [
    ("us-east-1", "aws"), ("il-central-1", "aws"), ("us-gov-west-1", "aws-us-gov"), ("cn-north-1", "aws-cn"),
    ("cn-northwest-1", "aws-cn"), ("us-iso-east-1", "aws-iso"), ("us-isob-east-1", "aws-iso-b"),
])
def test_partition_of_a_region(region: str, partition: str) -> None:
    assert partition_of(region) == partition


def test_service_names_per_partition() -> None:
    assert service_name("us-east-1", BY_SERVICE["ssm"]) == "com.amazonaws.us-east-1.ssm"
    assert service_name("us-gov-west-1", BY_SERVICE["ec2"]) == "com.amazonaws.us-gov-west-1.ec2"
    # aws-cn: ec2 takes the cn. prefix, the SSM family, Secrets Manager and S3 do not.
    assert service_name("cn-north-1", BY_SERVICE["ec2"]) == "cn.com.amazonaws.cn-north-1.ec2"
    assert service_name("cn-north-1", BY_SERVICE["ssmmessages"]) == "com.amazonaws.cn-north-1.ssmmessages"
    assert service_name("cn-north-1", BY_SERVICE["secretsmanager"]) == "com.amazonaws.cn-north-1.secretsmanager"
    assert service_name("cn-north-1", BY_SERVICE["s3"]) == "com.amazonaws.cn-north-1.s3"
    # Not confirmed: never guessed.
    assert service_name("cn-north-1", BY_SERVICE["elasticloadbalancing"]) is None
    assert service_name("us-iso-east-1", BY_SERVICE["ssm"]) is None


def _problems(change: Any, stack: str = "aws-dev") -> list[tuple[str, str]]:
    return raised_problems(settings_for, stack, change)


@pytest.mark.parametrize(("stack", "change", "path", "says"), [
    (NATLESS, lambda r: r["network"].update(endpoints="off"), "settings.network.endpoints",
     "natGateways: none leaves the private subnets no other way"),
    (NATLESS, lambda r: r["network"].update(endpoints="expect"), "settings.network.endpoints",
     "the VPC this project makes has none: set endpoints: create"),
    ("aws-dev", lambda r: r["network"].update(endpoints="expect"), "settings.network.endpoints",
     "expect relies on endpoints an existing VPC already has"),
    ("aws-dev", lambda r: r.update(region="cn-north-1") or r["network"].update(endpoints="create"),
     "settings.network.endpoints", "elasticloadbalancing in cn-north-1 (partition aws-cn) are not known"),
    ("aws-dev", lambda r: r["network"].update(natGateways="none", endpoints="create", existing={
        "vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": ["subnet-0a1b2c3d4e5f60718", "subnet-0a1b2c3d4e5f60719"],
        "publicSubnetIds": ["subnet-0a1b2c3d4e5f60720"]}),
     "settings.network.natGateways", "none applies to the VPC this project makes"),
    # No NAT and not offline: nothing beyond AWS's endpoints, so no snap and no public image.
    ("aws-dev", lambda r: r["network"].update(natGateways="none", endpoints="create"),
     "settings.network.natGateways", "none leaves the nodes no route beyond AWS's endpoints"),
    ("aws-prod", lambda r: r["network"].update(natGateways="none", endpoints="create"),
     "settings.network.natGateways", "Set offline: true"),
    (NATLESS, lambda r: r.pop("offline"), "settings.network.natGateways", "or natGateways: single"),
    (NATLESS, lambda r: r.update(offline=False), "settings.network.natGateways", "could not install the k8s snap"),
])
def test_endpoint_settings_that_cannot_work_are_refused_with_their_path(stack: str, change: Any, path: str,
                                                                        says: str) -> None:
    problems = [(p, why) for p, why in _problems(change, stack) if p.startswith("settings.network.")]
    assert len(problems) == 1 and problems[0][0] == path and says in problems[0][1], problems


def test_the_natless_offline_stacks_and_every_nat_choice_are_accepted() -> None:
    """settings_for raises SettingsError on any problem: these load."""
    assert settings_for(NATLESS).network.nat_gateways == "none"
    assert settings_for("aws-dev", _natless).offline
    for nat in ("single", "per-az"):
        s = settings_for("aws-dev", lambda r, n=nat: r["network"].update(natGateways=n, endpoints="create"))
        assert s.network.nat_gateways == nat and not s.offline


def test_a_bad_value_names_the_field() -> None:
    problems = _problems(lambda r: r["network"].update(natGateways="off"))
    assert [p for p, _ in problems] == ["settings.network.natGateways"]


def test_the_endpoints_group_admits_443_from_the_vpc_only_and_is_named_like_its_siblings() -> None:
    s = settings_for(NATLESS)
    assert groups_for(s)[-1] == "endpoints" and "endpoints" not in groups_for(settings_for("aws-dev"))
    assert [(r.direction, r.protocol, r.from_port, r.to_port, r.peer) for r in rules_for(s)
            if r.group == "endpoints"] == [("ingress", "tcp", 443, 443, "vpc")]
    # The group takes a name (auto-named from its logical name): the naming inventory carries it.
    assert f"{s.cluster_name}-sg-endpoints" in {p.logical for p in planned_names(s, addon_facts(s))}


@cache
def _cluster_run(stack: str, existing: bool = False) -> Any:
    def change(raw: dict[str, Any]) -> None:
        if existing:
            raw["network"] = {"endpoints": "create", "apiAllowList": raw["network"]["apiAllowList"], "existing": {
                "vpcId": "vpc-0123456789abcdef0",
                "privateSubnetIds": ["subnet-0a1b2c3d4e5f60718", "subnet-0a1b2c3d4e5f60719"],
                "publicSubnetIds": ["subnet-0a1b2c3d4e5f60720", "subnet-0a1b2c3d4e5f60721"]}}
        else:
            _natless(raw)
    return run_cluster(settings_for(stack, change), stack)


def test_the_natless_vpc_has_no_nat_and_no_default_route_from_its_private_subnets() -> None:
    run = _cluster_run("aws-dev")
    assert of_type(run, "aws:ec2/natGateway:NatGateway") == [] and of_type(run, "aws:ec2/eip:Eip") == []
    routes = of_type(run, "aws:ec2/route:Route")
    assert [r.name for r in routes] == ["ck8s-dev-us-east-1-network-public-default"]  # the public subnets' IGW
    # With NAT (the committed stack) every private route table has its default route.
    with_nat = run_cluster(settings_for("aws-dev"), "aws-dev")
    assert len(of_type(with_nat, "aws:ec2/route:Route")) == 1 + 2


def test_the_natless_vpc_gets_every_endpoint_in_its_private_subnets_with_private_dns() -> None:
    run = _cluster_run("aws-dev")
    made = {r.inputs["serviceName"]: r for r in of_type(run, ENDPOINT)}
    assert sorted(made) == sorted(f"com.amazonaws.us-east-1.{e.service}" for e in GENERAL)
    private = sorted(r.urn for r in of_type(run, "aws:ec2/subnet:Subnet") if "-private-" in r.name)
    tables = sorted(r.urn for r in of_type(run, "aws:ec2/routeTable:RouteTable") if "-private-" in r.name)
    groups = {r.name: r.urn for r in of_type(run, "aws:ec2/securityGroup:SecurityGroup")}
    for name, r in made.items():
        if name.endswith(".s3"):
            assert r.inputs["vpcEndpointType"] == "Gateway"
            assert sorted(r.dependencies) and set(tables) <= set(r.dependencies)  # on each private route table
            assert "subnetIds" not in r.inputs or not r.inputs["subnetIds"]
        else:
            assert r.inputs["vpcEndpointType"] == "Interface" and r.inputs["privateDnsEnabled"] is True
            assert len(r.inputs["subnetIds"]) == 2 and set(private) <= set(r.dependencies)  # one per AZ
            assert groups["ck8s-dev-us-east-1-sg-endpoints"] in r.dependencies
            assert len(r.inputs["securityGroupIds"]) == 1
    (ingress,) = [r for r in of_type(run, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
                  if r.name.startswith("ck8s-dev-us-east-1-sg-endpoints-")]
    assert (ingress.inputs["fromPort"], ingress.inputs["toPort"], ingress.inputs["ipProtocol"]) == (443, 443, "tcp")
    assert ingress.inputs["cidrIpv4"] not in ("0.0.0.0/0",)
    vpc = next(r for r in of_type(run, "aws:ec2/vpc:Vpc"))
    assert ingress.inputs["cidrIpv4"] == vpc.inputs["cidrBlock"] == "10.20.0.0/16"
    assert of_type(run, "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule") and not [
        r for r in of_type(run, "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
        if r.name.startswith("ck8s-dev-us-east-1-sg-endpoints-")]


def test_an_existing_vpc_gets_interface_endpoints_but_no_gateway_on_route_tables_it_does_not_own() -> None:
    run = _cluster_run("aws-dev", existing=True)
    made = {r.inputs["serviceName"]: r for r in of_type(run, ENDPOINT)}
    assert "com.amazonaws.us-east-1.s3" not in made
    assert sorted(made) == sorted(f"com.amazonaws.us-east-1.{e.service}" for e in GENERAL if e.kind == "Interface")
    for r in made.values():
        assert r.inputs["subnetIds"] == ["subnet-0a1b2c3d4e5f60718", "subnet-0a1b2c3d4e5f60719"]
        assert r.inputs["vpcId"] == "vpc-0123456789abcdef0"


def test_without_endpoints_nothing_changes() -> None:
    run = run_cluster(settings_for("aws-dev"), "aws-dev")
    assert of_type(run, ENDPOINT) == []
    assert "endpoints" not in {r.name.rsplit("-", 1)[-1] for r in of_type(run, "aws:ec2/securityGroup:SecurityGroup")}


@cache
def _natless_plan() -> Plan:
    config = copy.deepcopy(read_stack_file(PROJECT_DIR / "stacks" / "Pulumi.aws-dev.yaml"))
    _natless(config["ck8s-gpu:settings"])
    return plan_config(config, "aws-dev-natless", "aws-dev (natGateways: none)")


def test_the_natless_stack_plans_offline_and_passes_the_policy_pack() -> None:
    plan = _natless_plan()
    assert len(of_type(plan, ENDPOINT)) == len(GENERAL)  # type: ignore[arg-type]
    result = evaluate_plan(plan)
    assert result.mandatory == [], [str(f) for f in result.mandatory]


def test_the_natless_stack_registers_exactly_the_names_the_inventory_plans() -> None:
    """VPC endpoints take no name (tags only); the endpoints' security group does, and the naming
    inventory (components/aws/inventory.py) has it: the same proof test_naming makes per stack."""
    from tests.unit.aws.test_naming import recorded_names

    plan = _natless_plan()
    recorded = recorded_names(plan.resources)
    assert ENDPOINT not in {t for t, _, _ in recorded}
    planned = planned_names(plan.settings, addon_facts(plan.settings))
    assert sorted(recorded, key=str) == sorted(((p.token, p.logical, p.explicit) for p in planned), key=str)


def test_endpoints_module_is_pure_where_it_decides() -> None:
    """The rule and the table need no Pulumi engine (the component is the only Pulumi code)."""
    assert endpoints.planned_endpoints(settings_for("aws-dev"), existing_vpc=False) == []
    planned = endpoints.planned_endpoints(settings_for("aws-dev", _natless), existing_vpc=False)
    assert [e.service for e, _ in planned] == [e.service for e in GENERAL]


def test_an_ecr_mirror_in_the_region_adds_the_registry_and_token_endpoints() -> None:
    """Amazon ECR User Guide, vpc-endpoints.html: a pull needs ecr.dkr, ecr.api and the S3 gateway."""
    def mirrored(raw: dict[str, Any]) -> None:
        _natless(raw)
        raw["images"]["mirror"] = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
    planned = [e.service for e, _ in endpoints.planned_endpoints(settings_for("aws-dev", mirrored), existing_vpc=False)]
    assert {"ecr.api", "ecr.dkr", "s3"} <= set(planned)

    def elsewhere(raw: dict[str, Any]) -> None:  # another Region's ECR is not reached through this VPC's endpoints
        _natless(raw)
        raw["images"]["mirror"] = "123456789012.dkr.ecr.eu-north-1.amazonaws.com"
    elsewhere_settings = settings_for("aws-dev", elsewhere)
    planned = [e.service for e, _ in endpoints.planned_endpoints(elsewhere_settings, existing_vpc=False)]
    assert "ecr.dkr" not in planned and "ecr.api" not in planned

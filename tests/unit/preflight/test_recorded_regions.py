"""Pre-flight over recorded AWS answers (real boto3 clients, answers replayed and validated against
botocore's service model): one scenario per failure kind, each message saying what to change."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.preflight.aws import AwsRegion, collect
from components.preflight.checks import Finding, check, failed
from components.preflight.run import preflight
from components.settings.load import read_stack_file
from components.settings.model import Settings
from components.validate import from_config as settings_from_config
from tests.unit.preflight.recorded import RecordedSession

TEMPLATE = Path(__file__).resolve().parents[2] / "data" / "stamping" / "Pulumi.gpu-prod.yaml"


def _settings(region: str, **network: object) -> Settings:
    config = read_stack_file(TEMPLATE)
    s = settings_from_config(config, "gpu-prod", offline=True)
    s = s.model_copy(update={"region": region})
    if network:
        s = s.model_copy(update={"network": s.network.model_copy(update=network)})
    return s


def _run(scenario: str, **network: object) -> tuple[list[Finding], RecordedSession]:
    session = RecordedSession(scenario)
    return preflight(_settings(session.region, **network), session), session


def test_a_region_that_fits_passes_with_no_findings() -> None:
    findings, session = _run("us-east-1-ok.json")
    assert findings == [] and not failed(findings)
    # The offerings question covers the stack's types and their same-GPU alternatives, per AZ.
    [asked] = session.called("ec2.DescribeInstanceTypeOfferings")
    assert asked["LocationType"] == "availability-zone"
    assert asked["Filters"][0]["Values"] == ["g6e.12xlarge", "g6e.24xlarge", "g6e.48xlarge", "m7i.2xlarge",
                                             "p5.48xlarge"]
    # vCPUs come from the GPU table; only the control plane's type is asked.
    assert session.called("ec2.DescribeInstanceTypes") == [{"InstanceTypes": ["m7i.2xlarge"]}]
    assert session.called("ec2.DescribeSubnets") == []
    assert sorted(p["QuotaCode"] for p in session.called("service-quotas.GetServiceQuota")) == [
        "L-1216C47A", "L-417A185B", "L-DB2E81BA"]


def test_instance_type_not_offered_in_the_chosen_azs_names_alternatives() -> None:
    findings, _ = _run("not-offered.json")
    assert [(f.kind, f.subject) for f in findings] == [
        ("not-offered", "settings.nodePools[0].instanceType"),
        ("not-offered", "settings.nodePools[1].instanceType"),
    ]
    assert "not offered in us-east-1b, us-east-1c" in findings[0].message
    assert "use g6e.24xlarge (same GPU" in findings[0].message  # offered in a, b, c
    assert "g6e.48xlarge" not in findings[0].message  # offered in us-east-1a only
    assert "p5.48xlarge is not offered in this region" in findings[1].message


def test_ami_parameter_missing() -> None:
    findings, _ = _run("ami-missing.json")
    assert [f.kind for f in findings] == ["ami-missing"]
    assert "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id" in findings[0].message


def test_pool_images_are_resolved_where_the_pools_name_them() -> None:
    """nodePools[].ami (docs/adr/0018): an `ami-` id is looked up with DescribeImages, a path with
    GetParameter; Canonical's parameter is then asked for the control plane only."""
    session = RecordedSession("pool-images.json")
    s = _settings(session.region)
    pools = [s.node_pools[0].model_copy(update={"ami": "ami-0123456789abcdef0"}),
             s.node_pools[1].model_copy(update={"ami": "/images/gpu-host-driver/amd64/latest"})]
    findings = preflight(s.model_copy(update={"node_pools": tuple(pools)}), session)
    assert [(f.kind, f.subject) for f in findings] == [
        ("ami-missing", "settings.nodePools[0].ami"), ("ami-missing", "settings.nodePools[1].ami")]
    assert "image ami-0123456789abcdef0 does not exist in us-east-1" in findings[0].message
    assert "SSM parameter /images/gpu-host-driver/amd64/latest does not exist in us-east-1" in findings[1].message
    assert session.called("ec2.DescribeImages") == [{"ImageIds": ["ami-0123456789abcdef0"]}]
    assert sorted(p["Name"] for p in session.called("ssm.GetParameter")) == [
        "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id",
        "/images/gpu-host-driver/amd64/latest"]


def test_an_image_program_path_that_is_not_built_here_says_to_build_it() -> None:
    session = RecordedSession("pool-images.json")
    s = _settings(session.region)
    path = "/ck8s-gpu/images/gpu-node/ubuntu-24.04/amd64/nvidia-595-server-open"
    pools = [p.model_copy(update={"ami": path}) for p in s.node_pools if p.instance_type.startswith("g")][:1]
    findings = preflight(s.model_copy(update={"node_pools": tuple(pools)}), session)
    assert [(f.kind, f.subject) for f in findings] == [("ami-missing", "settings.nodePools[0].ami")]
    assert f"SSM parameter {path} does not exist in us-east-1: build the image there first" in findings[0].message
    assert "`pulumi up -C images`" in findings[0].message


def test_quota_too_low_uses_the_default_when_none_is_applied_and_says_how_to_raise_it() -> None:
    findings, session = _run("quota-too-low.json")
    assert [(f.kind, f.subject.split()[0]) for f in findings] == [("quota-too-low", "L-DB2E81BA"),
                                                                   ("quota-too-low", "L-417A185B")]
    assert session.called("service-quotas.GetAWSDefaultServiceQuota") == [{"ServiceCode": "ec2",
                                                                             "QuotaCode": "L-DB2E81BA"}]
    g, p = findings
    assert "needs 384 vCPUs (8 x g6e.12xlarge (pool l40s at maxSize)) but the quota is 64" in g.message
    assert "needs 768 vCPUs" in p.message and "quota is 192" in p.message
    assert ("aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-417A185B "
            "--desired-value 768 --region us-east-1") in p.message


def test_quotas_that_cannot_be_read_fail_closed() -> None:
    findings, _ = _run("quotas-access-denied.json")
    assert {f.kind for f in findings} == {"could-not-check"} and len(findings) == 3
    assert failed(findings)
    assert all("servicequotas:GetServiceQuota" in f.message for f in findings)


def test_region_not_enabled_stops_after_one_call() -> None:
    findings, session = _run("region-not-enabled.json")
    assert [f.kind for f in findings] == ["region-unavailable"]
    assert "AuthFailure" in findings[0].message and "Enable the region" in findings[0].message
    assert [k for k, _ in session.calls] == ["ec2.DescribeAvailabilityZones"]


def test_too_few_zones() -> None:
    findings, _ = _run("too-few-zones.json")
    assert [f.kind for f in findings] == ["too-few-zones"]
    assert "us-west-1 has 2 available AZ(s)" in findings[0].message


def test_existing_subnets_decide_the_zones_checked() -> None:
    from components.settings.model import ExistingNetwork

    existing = ExistingNetwork(vpc_id="vpc-0123456789abcdef0",
                               private_subnet_ids=("subnet-0a1b2c3d4e5f60718", "subnet-0a1b2c3d4e5f60719"))
    findings, session = _run("existing-subnets.json", existing=existing)
    assert session.called("ec2.DescribeSubnets") == [{"SubnetIds": list(existing.private_subnet_ids)}]
    # us-east-1e offers none of the GPU types in the recorded offerings.
    assert {f.subject for f in findings if f.kind == "not-offered"} == {
        "settings.controlPlane.instanceType", "settings.nodePools[0].instanceType",
        "settings.nodePools[1].instanceType"}
    assert all("us-east-1e" in f.message for f in findings)


def test_no_credentials_is_could_not_check_never_a_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import boto3

    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    findings = preflight(_settings("us-east-1"), lambda: boto3.Session())
    assert [f.kind for f in findings] == ["could-not-check"] and "NoCredentialsError" in findings[0].message


def test_collect_and_check_are_separable() -> None:
    """The boundary gathers plain facts; the same facts always give the same verdict."""
    session = RecordedSession("quota-too-low.json")
    settings = _settings(session.region)
    facts = collect(settings, AwsRegion(session, session.region))
    assert facts.quotas == {"L-1216C47A": 640.0, "L-DB2E81BA": 64.0, "L-417A185B": 192.0}
    assert check(settings, facts) == check(settings, facts)


# Private subnets without NAT (issue 27, docs/adr/0041): recorded DescribeRouteTables and
# DescribeVpcEndpoints answers of an existing VPC, DescribeVpcEndpointServices for endpoints: create.

def _existing() -> object:
    from components.settings.model import ExistingNetwork

    return ExistingNetwork(vpc_id="vpc-0123456789abcdef0",
                           private_subnet_ids=("subnet-0a1b2c3d4e5f60718", "subnet-0a1b2c3d4e5f60719"))


def _network(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.kind not in ("not-offered",)]  # us-east-1e lacks the GPU types


def test_existing_subnets_with_a_nat_route_need_no_endpoint() -> None:
    """...718 by its own table, ...719 by the main table (no explicit association): both NAT."""
    findings, session = _run("existing-subnets.json", existing=_existing())
    assert _network(findings) == []
    assert session.called("ec2.DescribeRouteTables") == [{"Filters": [{"Name": "vpc-id",
                                                                        "Values": ["vpc-0123456789abcdef0"]}]}]
    assert session.called("ec2.DescribeVpcEndpoints") == [{"Filters": [{"Name": "vpc-id",
                                                                         "Values": ["vpc-0123456789abcdef0"]}]}]
    assert session.called("ec2.DescribeVpcEndpointServices") == []  # endpoints: off creates none


def test_a_subnet_with_neither_nat_nor_endpoints_is_an_error_naming_it_and_the_missing_services() -> None:
    findings, _ = _run("existing-no-egress.json", existing=_existing())
    net = _network(findings)
    assert [(f.kind, f.severity, f.subject) for f in net] == [
        ("no-aws-route", "error", "settings.network.existing.privateSubnetIds[0]"),
        ("no-aws-route", "error", "settings.network.existing.privateSubnetIds[1]"),
    ]
    first, second = net
    assert "subnet-0a1b2c3d4e5f60718 (us-east-1d, route table rtb-0a1b2c3d4e5f60718)" in first.message
    assert "default route to nat-0a1b2c3d4e5f60001 in state blackhole" in first.message
    assert "subnet-0a1b2c3d4e5f60719 (us-east-1e, route table rtb-0a1b2c3d4e5f60001) has no default route" in (
        second.message)
    for f in net:
        assert ("no usable endpoint for ssmmessages, ec2messages, secretsmanager (vpce-0a1b2c3d4e5f60003 has "
                "private DNS off") in f.message
        assert "ec2 (vpce-0a1b2c3d4e5f60002 is pending, not available)" in f.message
        assert f.message.rstrip().endswith("(or create them and set expect)")
        assert "elasticloadbalancing" in f.message
        assert "ssm," not in f.message.split("endpoint for")[1].split(":")[0]  # ssm's endpoint is fine
        assert "s3" not in f.message  # not on the boot path
    assert failed(findings)


def test_endpoints_without_egress_reach_aws_but_warn_about_everything_outside_it() -> None:
    findings, _ = _run("existing-endpoints-only.json", existing=_existing(), endpoints="expect")
    net = _network(findings)
    assert [(f.kind, f.severity) for f in net] == [("no-egress", "warning"), ("no-egress", "warning")]
    assert "Snap Store (the k8s and aws-cli snaps)" in net[0].message and "settings.offline" in net[0].message


def test_endpoints_create_in_an_existing_vpc_counts_the_ones_it_will_make() -> None:
    """The boot path's endpoints are made by the stack: no error for their absence, and the
    region's endpoint services are asked about (the S3 gateway is not made in a VPC it does not own)."""
    session = RecordedSession("existing-no-egress.json")
    session.doc["responses"]["ec2.DescribeVpcEndpointServices"] = RecordedSession(
        "endpoint-services.json").doc["responses"]["ec2.DescribeVpcEndpointServices"]
    s = _settings(session.region, existing=_existing(), endpoints="create")
    net = _network(preflight(s, session))
    [asked] = session.called("ec2.DescribeVpcEndpointServices")
    assert asked["Filters"][0]["Values"] == [f"com.amazonaws.us-east-1.{n}" for n in (
        "ec2", "ec2messages", "elasticloadbalancing", "secretsmanager", "ssm", "ssmmessages")]
    # The VPC's own ssm and ec2 endpoints have private DNS on: a second one of each cannot be made.
    assert [(f.kind, f.severity) for f in net] == [("endpoint-conflict", "error"), ("endpoint-conflict", "error"),
                                                   ("no-egress", "warning"), ("no-egress", "warning")]
    assert "vpce-0a1b2c3d4e5f60001 for com.amazonaws.us-east-1.ssm with private DNS on" in net[0].message
    assert "vpce-0a1b2c3d4e5f60002 for com.amazonaws.us-east-1.ec2" in net[1].message  # pending counts too
    assert "set endpoints: expect" in net[0].message


def test_natless_new_vpc_with_endpoints_passes() -> None:
    """NAT-less means offline (the settings refuse the rest: components/aws/endpoints.py), so
    nothing beyond AWS's endpoints is needed and there is nothing to warn of."""
    session = RecordedSession("endpoint-services.json")
    s = _settings(session.region, nat_gateways="none", endpoints="create").model_copy(update={"offline": True})
    findings = preflight(s, session)
    # (Offline, pre-flight also judges the node images, which this recording does not hold.)
    assert [f for f in findings if f.subject.startswith("settings.network")] == []
    [asked] = session.called("ec2.DescribeVpcEndpointServices")
    assert "com.amazonaws.us-east-1.s3" in asked["Filters"][0]["Values"]  # the gateway, in the VPC it makes
    assert session.called("ec2.DescribeRouteTables") == []  # a new VPC has none yet: settings decide


def test_an_endpoint_service_missing_in_the_region_or_a_zone_fails_create() -> None:
    findings, _ = _run("endpoint-services-partial.json", nat_gateways="none", endpoints="create")
    errors = [f for f in findings if f.severity == "error"]
    assert [(f.kind, f.subject) for f in errors] == [
        ("endpoint-service-missing", "settings.network.endpoints"),
        ("endpoint-service-missing", "settings.network.endpoints")]
    # In ENDPOINTS' order: ssmmessages before elasticloadbalancing.
    assert "com.amazonaws.us-east-1.ssmmessages is not an endpoint service in us-east-1" in errors[0].message
    assert ("com.amazonaws.us-east-1.elasticloadbalancing is not offered in us-east-1c (offered in us-east-1a, "
            "us-east-1b, us-east-1d)") in errors[1].message


def test_route_tables_that_cannot_be_read_fail_closed() -> None:
    session = RecordedSession("existing-subnets.json")
    session.doc["responses"]["ec2.DescribeRouteTables"] = {
        "Error": {"Code": "UnauthorizedOperation", "Message": "You are not authorized to perform this operation."}}
    findings = _network(preflight(_settings(session.region, existing=_existing()), session))
    assert [(f.kind, f.subject) for f in findings] == [
        ("could-not-check", "settings.network.existing.privateSubnetIds")]
    assert "UnauthorizedOperation" in findings[0].message and "ec2:DescribeRouteTables" in findings[0].message

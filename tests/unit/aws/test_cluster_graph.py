"""AwsCluster's resource graph under the mock engine: security, secrets, placement, sizes, ordering."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from components.addons.selected import addon_facts
from components.plan.mockengine import MASK, PlanRun, Recorded
from components.settings.load import SettingsError
from tests.unit.addons.helpers import ancestors
from tests.unit.aws.conftest import AWS_STACKS, of_type, run_cluster, settings_for, user_data_by_name

INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
INSTANCE = "aws:ec2/instance:Instance"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
ASG = "aws:autoscaling/group:Group"
GATE = "pulumi-python:dynamic/ck8s-gpu:ApiReady"
WORLD = ("0.0.0.0/0", "::/0")


def _at(value: Any, path: str) -> Any:
    """The value at a recorder secret path such as `a.b[0].c` ("$" = the whole value)."""
    if path == "$":
        return value
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        value = value[int(part[1:-1])] if part.startswith("[") else value[part]
    return value


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def secret_values(run: PlanRun) -> set[str]:
    out = set()
    for r in run.resources:
        for path in r.secret_paths:
            if path == "__provider":  # the dynamic provider's pickle, not a cluster secret
                continue
            out.update(s for s in _strings(_at(r.raw_inputs, path)) if len(s) >= 8)
    return out


def by_name(run: PlanRun, name: str) -> Recorded:
    (r,) = [r for r in run.resources if r.name == name]
    return r


def gates(run: PlanRun) -> list[Recorded]:
    return sorted(of_type(run, GATE), key=lambda r: r.name)


@pytest.fixture(params=AWS_STACKS)
def run(request: pytest.FixtureRequest, stack_run: Callable[[str], PlanRun]) -> PlanRun:
    result: PlanRun = stack_run(request.param)
    return result


# -- network security --------------------------------------------------------------------------


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_nothing_but_the_api_allow_list_reaches_in_from_outside(
    stack: str, stack_run: Callable[[str], PlanRun]
) -> None:
    allow = set(settings_for(stack).network.api_allow_list)
    for rule in of_type(stack_run(stack), INGRESS):
        cidr = rule.inputs.get("cidrIpv4") or rule.inputs.get("cidrIpv6")
        if cidr is None:
            assert rule.inputs.get("referencedSecurityGroupId"), rule.name
            continue
        assert cidr in allow, f"{rule.name} admits {cidr}, not in the allow-list"
        assert "-api-lb-" in rule.name and rule.inputs["fromPort"] == rule.inputs["toPort"] == 6443


def test_the_world_gets_in_only_when_the_allow_list_says_so() -> None:
    def open_api(raw: dict[str, Any]) -> None:
        raw["network"]["apiAllowList"] = ["0.0.0.0/0"]

    world = [r for r in of_type(run_cluster(settings_for("aws-dev", open_api)), INGRESS)
             if r.inputs.get("cidrIpv4") in WORLD]
    assert [(r.inputs["fromPort"], "-api-lb-" in r.name) for r in world] == [(6443, True)]


def test_an_internal_api_without_allow_list_serves_the_vpc_only() -> None:
    def internal(raw: dict[str, Any]) -> None:
        raw["controlPlane"]["apiLoadBalancer"] = "internal"
        raw["network"]["apiAllowList"] = []

    cidrs = [r.inputs.get("cidrIpv4") for r in of_type(run_cluster(settings_for("aws-dev", internal)), INGRESS)]
    assert [c for c in cidrs if c] == ["10.20.0.0/16"]


def test_no_ssh(run: PlanRun) -> None:
    for rule in of_type(run, INGRESS):
        if rule.inputs["ipProtocol"] == "-1":
            # All traffic only inside the EFA group, from itself (EFA requires it: efa-start.html).
            assert rule.name.endswith("-sg-efa-in-all--1-efa"), rule.name
            assert rule.inputs["referencedSecurityGroupId"] == rule.inputs["securityGroupId"]
            continue
        assert not rule.inputs["fromPort"] <= 22 <= rule.inputs["toPort"]
    for r in of_type(run, INSTANCE) + of_type(run, LAUNCH_TEMPLATE):
        assert "keyName" not in r.inputs


def test_control_planes_get_exactly_one_ccm_tagged_security_group(run: PlanRun) -> None:
    groups = of_type(run, "aws:ec2/securityGroup:SecurityGroup")
    tagged = [
        g.inputs["tags"]["Name"].rsplit("-", 1)[-1]
        for g in groups
        if any(k.startswith("kubernetes.io/cluster/") for k in g.inputs["tags"])
    ]
    assert tagged == ["nodes"]  # the CCM refuses instances with several tagged groups


# -- instance hardening ------------------------------------------------------------------------


def test_imdsv2_and_encrypted_gp3_root_volumes_everywhere(run: PlanRun) -> None:
    for r in of_type(run, INSTANCE):
        assert r.inputs["metadataOptions"]["httpTokens"] == "required", r.name
        assert r.inputs["metadataOptions"]["httpPutResponseHopLimit"] == 1
        assert r.inputs["rootBlockDevice"]["encrypted"] is True and r.inputs["rootBlockDevice"]["volumeType"] == "gp3"
    for r in of_type(run, LAUNCH_TEMPLATE):
        assert r.inputs["metadataOptions"]["httpTokens"] == "required", r.name
        (root,) = r.inputs["blockDeviceMappings"]
        assert root["deviceName"] == "/dev/sda1"
        assert root["ebs"]["encrypted"] is True and root["ebs"]["volumeType"] == "gp3"
    assert of_type(run, INSTANCE) and of_type(run, LAUNCH_TEMPLATE)


def test_nodes_use_canonicals_ami_from_ssm_and_an_ssm_instance_profile(run: PlanRun) -> None:
    for r in of_type(run, INSTANCE) + of_type(run, LAUNCH_TEMPLATE):
        ami = r.inputs.get("ami") or r.inputs.get("imageId")
        assert re.fullmatch(r"ami-[0-9a-f]{17}", ami), r.name  # the mock's answer to the SSM parameter
    attached = [r.inputs["policyArn"] for r in of_type(run, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")]
    assert attached == ["arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"] * 2


# -- secrets -----------------------------------------------------------------------------------


def test_keys_kubeconfig_and_join_auth_are_pulumi_secrets(run: PlanRun) -> None:
    signed = of_type(run, "tls:index/locallySignedCert:LocallySignedCert")[0]
    assert "caPrivateKeyPem" in signed.secret_paths
    for ca in of_type(run, "tls:index/selfSignedCert:SelfSignedCert"):
        assert "privateKeyPem" in ca.secret_paths
    assert all("secretString" in v.secret_paths for v in of_type(run, "aws:secretsmanager/secretVersion:SecretVersion"))
    (provider,) = of_type(run, "pulumi:providers:kubernetes")
    assert "kubeconfig" in provider.secret_paths
    assert all("kubeconfig" in g.secret_paths for g in gates(run))
    versions = {v.name.rsplit("-", 2)[-2] + "-" + v.name.rsplit("-", 1)[-1]: v for v in
                of_type(run, "aws:secretsmanager/secretVersion:SecretVersion")}
    assert set(versions) == {"join-auth", "ca-keys"}


def test_the_ca_keys_secret_holds_both_certificate_authorities(run: PlanRun) -> None:
    version = next(v for v in of_type(run, "aws:secretsmanager/secretVersion:SecretVersion") if "ca-keys" in v.name)
    doc = yaml.safe_load(version.raw_inputs["secretString"])
    keys = {r.name.removesuffix("-key"): r for r in of_type(run, "tls:index/privateKey:PrivateKey")}
    assert set(doc) == {"ca-crt", "ca-key", "client-ca-crt", "client-ca-key"}
    assert doc["ca-key"] != doc["client-ca-key"] and doc["ca-crt"] != doc["client-ca-crt"]
    assert doc["ca-crt"].startswith("-----BEGIN CERTIFICATE-----")
    assert len(keys) == 3  # ca, client-ca, admin


def test_no_secret_value_appears_in_any_user_data(run: PlanRun) -> None:
    secrets = secret_values(run)
    assert len(secrets) >= 4  # keys, auth token, CA-key document, kubeconfig
    for name, text in user_data_by_name(run).items():
        for secret in secrets:
            assert secret not in text, f"{name}: contains a secret value"
        assert "PRIVATE KEY" not in text


def test_workers_read_no_secret_and_control_planes_read_both(run: PlanRun) -> None:
    policies = {r.name.split("-")[-2]: yaml.safe_load(r.raw_inputs["policy"]) for r in
                of_type(run, "aws:iam/rolePolicy:RolePolicy")}
    secrets = [f"secret/{v.name}" for v in of_type(run, "aws:secretsmanager/secret:Secret")]
    assert len(secrets) == 2
    readable = next(s for s in policies["plane"]["Statement"] if s["Sid"] == "ReadClusterSecrets")["Resource"]
    assert all(any(name in arn for arn in readable) for name in secrets)
    worker_actions = [a for s in policies["worker"]["Statement"] for a in s["Action"]]
    assert not [a for a in worker_actions if a.lower().startswith("secretsmanager:")]
    # the worker's one minting path: the SSM document this program made, sent to control planes only
    (document,) = of_type(run, "aws:ssm/document:Document")
    send = [s for s in policies["worker"]["Statement"] if "ssm:SendCommand" in s["Action"]]
    assert {r for s in send for r in s["Resource"]} >= {
        f"arn:aws:ssm:{run_region(run)}:123456789012:document/{document.inputs['name']}"}
    content = json.loads(document.inputs["content"])
    commands = content["mainSteps"][0]["inputs"]["runCommand"]
    assert commands[-1] == "/snap/bin/k8s get-join-token '{{ NodeName }}' --worker --expires-in 15m"
    assert commands[0] == "set -eu" and "{{ KubeletMinor }}" in commands[1]  # the skew guard runs first
    plane = {a for s in policies["plane"]["Statement"] for a in s["Action"]}
    assert "elasticloadbalancing:DescribeLoadBalancers" in plane  # the API NLB's DNS name, looked up at boot


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_a_failed_worker_ends_itself_and_its_role_touches_no_instance(
        stack: str, stack_run: Callable[[str], PlanRun]) -> None:
    """docs/adr/0040: the node script powers a failed worker off; its launch template terminates
    it and its group's EC2 health check replaces it. The role it runs with names no Auto Scaling
    action and no EC2 action but DescribeInstances; control planes keep EC2's default (stop)."""
    run = stack_run(stack)
    assert {lt.inputs.get("instanceInitiatedShutdownBehavior") for lt in of_type(run, LAUNCH_TEMPLATE)} == {
        "terminate"}
    assert {g.inputs["healthCheckType"] for g in of_type(run, ASG)} == {"EC2"}
    assert all("instanceInitiatedShutdownBehavior" not in i.inputs for i in of_type(run, INSTANCE))
    (worker,) = [yaml.safe_load(r.raw_inputs["policy"]) for r in of_type(run, "aws:iam/rolePolicy:RolePolicy")
                 if r.name.split("-")[-2] == "worker"]
    actions = {a for s in worker["Statement"] for a in s["Action"]}
    assert not [a for a in actions if a.startswith("autoscaling:") or (a.startswith("ec2:") and
                                                                        a != "ec2:DescribeInstances")]


def run_region(run: PlanRun) -> str:
    (provider,) = of_type(run, "pulumi:providers:aws")
    return str(provider.inputs["region"])


def test_kubeconfig_is_built_from_state(run: PlanRun) -> None:
    (lb,) = of_type(run, "aws:lb/loadBalancer:LoadBalancer")
    (provider,) = of_type(run, "pulumi:providers:kubernetes")
    doc = yaml.safe_load(provider.raw_inputs["kubeconfig"])
    cluster = doc["clusters"][0]["cluster"]
    # The mock engine names the load balancer `<name>-<id>.elb.<region>.amazonaws.com`.
    assert re.fullmatch(rf"https://{lb.name}-[0-9a-f]{{8}}\.elb\.[a-z0-9-]+\.amazonaws\.com:6443", cluster["server"])
    assert base64.b64decode(cluster["certificate-authority-data"]).decode().startswith("-----BEGIN")
    assert provider.raw_inputs["clusterIdentifier"] == doc["current-context"]


# -- placement and sizes -----------------------------------------------------------------------


def test_control_planes_spread_over_availability_zones(run: PlanRun) -> None:
    zone_of = {s.name: s.inputs["availabilityZone"] for s in of_type(run, "aws:ec2/subnet:Subnet")}
    instances = of_type(run, INSTANCE)
    zones = [next(z for name, z in zone_of.items() if i.inputs["subnetId"].startswith(f"{name}-")) for i in instances]
    assert len(zones) == len(set(zones)) == len(instances)
    assert all("private" in i.inputs["subnetId"] for i in instances)


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_pools_match_settings(stack: str, stack_run: Callable[[str], PlanRun]) -> None:
    settings = settings_for(stack)
    run = stack_run(stack)
    for pool in settings.node_pools:
        asg = by_name(run, f"{settings.cluster_name}-pool-{pool.name}-asg")
        lt = by_name(run, f"{settings.cluster_name}-pool-{pool.name}-lt")
        assert (asg.inputs["minSize"], asg.inputs["desiredCapacity"], asg.inputs["maxSize"]) == (
            pool.min_size, pool.desired_size, pool.max_size)
        assert lt.inputs["instanceType"] == pool.instance_type
        assert lt.inputs["blockDeviceMappings"][0]["ebs"]["volumeSize"] == pool.root_volume_gib
        # A pool in one zone (EFA, a reservation) launches in that zone's subnet only.
        assert len(asg.inputs["vpcZoneIdentifiers"]) == (1 if pool.availability_zone else settings.network.az_count)
        kinds = {t["resourceType"] for t in lt.inputs["tagSpecifications"]}
        assert kinds == {"instance", "volume", "network-interface"}
        tags = lt.inputs["tagSpecifications"][0]["tags"]
        assert tags[f"kubernetes.io/cluster/{settings.cluster_name}"] == "owned"
        assert tags["ck8s-gpu/pool"] == pool.name
    instances = of_type(run, INSTANCE)
    assert len(instances) == settings.control_plane.count
    assert {i.inputs["instanceType"] for i in instances} == {settings.control_plane.instance_type}


def test_spot_pools_use_a_mixed_instances_policy() -> None:
    def spot(raw: dict[str, Any]) -> None:
        raw["nodePools"][0]["capacityType"] = "spot"

    settings = settings_for("aws-dev", spot)
    asg = by_name(run_cluster(settings), f"{settings.cluster_name}-pool-l4-asg")
    policy = asg.inputs["mixedInstancesPolicy"]
    assert "launchTemplate" not in asg.inputs
    assert policy["instancesDistribution"]["onDemandPercentageAboveBaseCapacity"] == 0
    assert policy["launchTemplate"]["overrides"] == [{"instanceType": "g6.xlarge"}]
    assert asg.inputs["capacityRebalance"] is True


# -- ordering ----------------------------------------------------------------------------------


def test_control_planes_launch_after_the_first_and_gates_count_them_in_order(run: PlanRun) -> None:
    instances = sorted(of_type(run, INSTANCE), key=lambda r: r.name)
    gate_list = gates(run)
    assert len(gate_list) == len(instances)
    for i, (instance, gate) in enumerate(zip(instances, gate_list, strict=True)):
        assert instance.urn in gate.dependencies
        assert gate.inputs["minReadyNodes"] == i + 1
        if i > 0:  # launched once control plane 0 runs (docs/adr/0019); the gates still count up in order
            assert instances[0].urn in instance.dependencies, f"{instance.name} must launch after {instances[0].name}"
            assert not {g.name for g in gate_list} & ancestors(run, instance.name)
            assert gate_list[i - 1].urn in gate.dependencies
    assert "userData" in instances[0].inputs and "ignoreChanges" not in instances[0].inputs


def test_every_kubernetes_resource_waits_for_the_readiness_gate_and_no_node_for_the_api(run: PlanRun) -> None:
    ready = gates(run)[-1].urn
    kube = [r for r in run.resources if r.type.startswith(("kubernetes:", "pulumi:providers:kubernetes"))]
    assert kube, "expected the Kubernetes provider and the CCM release"
    for r in kube:
        assert ready in r.dependencies, f"{r.type} {r.name} does not depend on the readiness gate"
    # docs/adr/0019: pools launch with the control planes and no instance waits for the NLB (the
    # first API answer needs it; a node's boot does not)
    (nlb,) = of_type(run, "aws:lb/loadBalancer:LoadBalancer")
    for r in [*of_type(run, ASG), *of_type(run, LAUNCH_TEMPLATE), *of_type(run, INSTANCE)]:
        assert not {g.name for g in gates(run)} & ancestors(run, r.name), f"{r.name} waits for a control plane"
        assert nlb.name not in ancestors(run, r.name), f"{r.name} waits for the API load balancer"
    for gate in gates(run):
        assert gate.inputs["nodeSelector"] == "node-role.kubernetes.io/control-plane"  # workers join beside


def test_every_aws_resource_uses_the_explicit_regional_provider(run: PlanRun) -> None:
    (provider,) = of_type(run, "pulumi:providers:aws")
    assert provider.inputs["region"] in ("eu-north-1", "us-east-1")
    tags = json.loads(provider.inputs["defaultTags"])["tags"]  # provider config arrives as JSON text
    assert tags["ck8s-gpu/cluster"] == provider.name.removesuffix("-aws")
    assert tags["team"] == "ml-platform"
    # The CCM's ownership tag goes on chosen resources only, never on everything.
    assert not any(k.startswith("kubernetes.io/cluster/") for k in tags)
    aws = [r for r in run.resources if r.custom and r.type.startswith("aws:")]
    assert aws and all(r.provider.startswith(f"{provider.name}-") for r in aws)


# -- protection and options --------------------------------------------------------------------


def test_state_bearing_resources_are_protected_in_prod(stack_run: Callable[[str], PlanRun]) -> None:
    run = stack_run("aws-prod")
    kinds = ("tls:index/privateKey", "tls:index/selfSignedCert", "aws:secretsmanager/secret:",
             "aws:secretsmanager/secretVersion", INSTANCE, "aws:lb/loadBalancer:", "aws:ec2/vpc:",
             "random:index/randomPassword")
    protected = [r for r in run.resources if r.type.startswith(kinds) and "admin" not in r.name]
    assert len(protected) >= 2 + 2 + 2 + 2 + 3 + 1 + 1 + 1
    for r in protected:
        assert r.protect and r.retain_on_delete, r.name
    assert by_name(run, "ck8s-prod-us-east-1-api-nlb").inputs["enableDeletionProtection"] is True
    assert all(i.inputs["disableApiTermination"] is True for i in of_type(run, INSTANCE))
    # The admin certificate is re-issued on schedule: never protected.
    assert not by_name(run, "ck8s-prod-us-east-1-pki-admin-key").protect


def test_nothing_is_protected_in_dev(stack_run: Callable[[str], PlanRun]) -> None:
    assert not any(r.protect or r.retain_on_delete for r in stack_run("aws-dev").resources)


def test_the_ccm_policy_and_external_cloud_provider_come_with_the_ccm() -> None:
    """The CCM is always on with platform aws (settings rules/cluster.py): its policy is on the
    control planes' role and every control plane runs with an external cloud provider."""
    run = run_cluster(settings_for("aws-dev"))
    policies = of_type(run, "aws:iam/rolePolicy:RolePolicy")
    assert any("CloudControllerManager" in p.raw_inputs["policy"] for p in policies)
    assert "cloud-provider: external" in user_data_by_name(run)["ck8s-dev-us-east-1-cp-0"]


def test_the_cluster_makes_no_release_of_its_own(stack_run: Callable[[str], PlanRun]) -> None:
    """The cloud controller manager is an add-on now (tests/unit/aws/test_aws_pure.py): the cluster
    component registers no Helm release outside the add-on machinery."""
    assert of_type(stack_run("aws-prod"), "kubernetes:helm.sh/v3:Release") == []


def test_an_existing_vpc_is_used_as_is() -> None:
    def existing(raw: dict[str, Any]) -> None:
        raw["controlPlane"]["apiLoadBalancer"] = "internal"
        raw["network"] = {"existing": {"vpcId": "vpc-0123456789abcdef0",
                                       "privateSubnetIds": ["subnet-aaaa", "subnet-bbbb", "subnet-cccc"]},
                          "apiAllowList": ["10.0.0.0/8"]}

    run = run_cluster(settings_for("aws-prod", existing))
    assert not of_type(run, "aws:ec2/vpc:Vpc") and not of_type(run, "aws:ec2/subnet:Subnet")
    assert [i.inputs["subnetId"] for i in sorted(of_type(run, INSTANCE), key=lambda r: r.name)] == [
        "subnet-aaaa", "subnet-bbbb", "subnet-cccc"]
    groups = of_type(run, "aws:ec2/securityGroup:SecurityGroup")
    assert all(g.inputs["vpcId"] == "vpc-0123456789abcdef0" for g in groups)


def test_an_internet_facing_api_on_an_existing_vpc_needs_public_subnets() -> None:
    def existing(raw: dict[str, Any]) -> None:
        raw["network"]["existing"] = {"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": ["subnet-a", "subnet-b"]}

    # Refused at the settings boundary, before any resource (the component keeps its own guard).
    with pytest.raises(SettingsError, match=r"settings\.network\.existing\.publicSubnetIds"):
        run_cluster(settings_for("aws-dev", existing))


def test_names_derive_from_the_cluster_so_regions_never_collide(stack_run: Callable[[str], PlanRun]) -> None:
    def west(raw: dict[str, Any]) -> None:
        raw["region"] = "us-west-2"
        raw["backup"] = {"region": "us-east-2"}
        raw["network"]["availabilityZones"] = ["us-west-2a", "us-west-2b", "us-west-2c"]
        for pool in raw["nodePools"]:
            if "availabilityZone" in pool:
                pool["availabilityZone"] = "us-west-2a"
                pool.pop("capacityReservation")
                pool.pop("placement")

    east = {r.name for r in stack_run("aws-prod").resources}
    west_names = {r.name for r in run_cluster(settings_for("aws-prod", west)).resources}
    assert not east & west_names
    assert all(n.startswith("ck8s-prod-us-west-2") for n in west_names)


def test_kubeconfig_export_is_masked() -> None:
    import pulumi

    from components.aws import AwsCluster
    from components.plan.mockengine import run_program

    settings = settings_for("aws-dev")

    def program() -> None:
        cluster = AwsCluster(settings.cluster_name, settings, addon_facts(settings))
        pulumi.export("kubeconfig", cluster.kubeconfig)

    assert run_program(program, {}, stack="t", region="eu-north-1").outputs["kubeconfig"] == MASK


def test_each_control_plane_gate_names_its_node_and_where_its_boot_log_is(run: PlanRun) -> None:
    cp_gates = [g for g in gates(run) if "-cp-" in g.name]
    assert cp_gates
    for gate in cp_gates:
        text = gate.inputs["waitingFor"]
        assert text.startswith(f"control plane {gate.name.removesuffix('-ready')} (instance ")
        assert "node ip-10-0-0-10." in text and "get-console-output" in text and "CK8S-GPU-BOOT-FAILED" in text


def test_a_gate_timeout_message_says_what_it_waited_for() -> None:
    from components.k8s_ready import Observation, api_timeout_message

    last = Observation(False, "1/2 nodes Ready; need 2")
    message = api_timeout_message("https://api:6443", 1500, 40, last, "control plane c-cp-1 (instance i-1, node n)")
    assert message.endswith("waiting for: control plane c-cp-1 (instance i-1, node n)")
    assert "waiting for" not in api_timeout_message("https://api:6443", 1, 1, last)


# -- upgrades (ADR 0015) -----------------------------------------------------------------------

NODE_UPGRADE = "pulumi-python:dynamic/ck8s-gpu:NodeUpgrade"
POOL_UPGRADE = "pulumi-python:dynamic/ck8s-gpu:PoolUpgrade"


def test_control_plane_upgrades_are_chained_after_the_last_join(run: PlanRun) -> None:
    ups = sorted(of_type(run, NODE_UPGRADE), key=lambda r: r.name)
    instances = sorted(of_type(run, INSTANCE), key=lambda r: r.name)
    assert len(ups) == len(instances)
    assert gates(run)[-1].urn in ups[0].dependencies
    for i, up in enumerate(ups):
        assert up.inputs["instanceId"].startswith(instances[i].name), "the mock engine ids an instance <name>-<hex>"
        assert up.inputs["track"] == "1.34-classic"
        if i > 0:
            assert ups[i - 1].urn in up.dependencies, f"{up.name} must wait for {ups[i - 1].name}"


def test_pool_upgrades_wait_for_every_control_plane_upgrade_launch_templates_do_not(run: PlanRun) -> None:
    """A launch template changes with the track before the control planes are upgraded; the mint
    document, not the graph, keeps a worker launched meanwhile from joining (docs/adr/0019)."""
    last = sorted(of_type(run, NODE_UPGRADE), key=lambda r: r.name)[-1]
    templates = of_type(run, LAUNCH_TEMPLATE)
    pools = of_type(run, POOL_UPGRADE)
    assert templates and len(pools) == len(templates)
    for r in pools:
        assert last.urn in r.dependencies, f"{r.name} could put a newer kubelet beside older API servers"
    for r in templates:
        assert last.name not in ancestors(run, r.name), f"{r.name} waits for the control planes' upgrade"
    for pool in pools:
        assert any(t.urn in pool.dependencies for t in templates)
        assert pool.inputs["policy"] == {"maxUnavailable": 1, "jobGraceSeconds": 1800, "drainTimeoutSeconds": 900,
                                         "onDrainFailure": "stop", "nodeReadyTimeoutSeconds": 900}


def test_the_kubernetes_provider_waits_for_the_api_not_for_upgrades(run: PlanRun) -> None:
    (provider,) = of_type(run, "pulumi:providers:kubernetes")
    assert gates(run)[-1].urn in provider.dependencies
    assert not any(u.urn in provider.dependencies for u in of_type(run, POOL_UPGRADE))

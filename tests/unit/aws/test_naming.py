"""AWS names: the inventory is exactly what the program registers, every committed and stamped stack
passes pulumi-aws's auto-naming and AWS's rules, and bad names fail settings, plan and program."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import subprocess
import sys
from functools import cache
from typing import Any

import pytest

from components.addons.selected import addon_facts
from components.addons.velero_values import velero_values
from components.aws.inventory import (
    BACKUP,
    api_lb_name,
    launch_template_name,
    mint_document_name,
    node_role_name,
    planned_names,
)
from components.aws.naming import NAME_RULES, name_problems, physical_name, tag_problems
from components.dr.policies import velero_policy
from components.plan import run as plan_run
from components.plan.artifacts import user_data
from components.plan.mockengine import PlanRun, Recorded, RecordingMonitor
from components.plan.names import has_name_input, recorded_problems
from components.settings.load import SETTINGS_KEY, SettingsError, read_stack_file
from components.settings.model import RestoreSource, Settings
from components.stamping.derive import derive_all
from components.stamping.overrides import load_overrides
from components.tables.backup_names import ALIAS_MAX, BUCKET_MAX, USER_MAX, bucket_name, key_alias, user_name
from components.tables.hashed_names import digest, fit, hashed_stems
from components.validate import parse as parse_settings
from tests.unit.aws.conftest import run_cluster, settings_for, stack_raw
from tests.unit.stamping.helpers import DATA, template

LT_TOKEN = "aws:ec2/launchTemplate:LaunchTemplate"
PROGRAM_TOKENS = {
    "aws:lb/loadBalancer:LoadBalancer", "aws:lb/targetGroup:TargetGroup", "aws:iam/role:Role",
    "aws:iam/rolePolicy:RolePolicy", "aws:iam/instanceProfile:InstanceProfile", "aws:iam/user:User",
    "aws:iam/userPolicy:UserPolicy", "aws:ec2/launchTemplate:LaunchTemplate", "aws:ec2/securityGroup:SecurityGroup",
    "aws:autoscaling/group:Group", "aws:secretsmanager/secret:Secret", "aws:s3/bucket:Bucket",
    "aws:kms/alias:Alias", "aws:ssm/document:Document",
}


# Every committed AWS stack and every stack `ck8s-gpu stamp` derives from the region files.
def _stamped(template_name: str, config: dict[str, Any], regions: list[str], overrides: str | None) -> list[Any]:
    loaded = load_overrides(DATA / overrides) if overrides else {}
    return [(s.stack, s.config) for s in derive_all(template_name, config, regions, loaded)]


@cache
def _cases() -> dict[str, dict[str, Any]]:
    cases = {name: template(name)[0] for name in ("aws-dev", "aws-prod")}
    prod_regions = sorted(load_overrides(DATA / "aws-prod.regions.yaml"))
    gpu_regions = sorted(load_overrides(DATA / "gpu-prod.regions.yaml"))
    stamped = [
        *_stamped("aws-prod", cases["aws-prod"], prod_regions, "aws-prod.regions.yaml"),
        *_stamped("gpu-prod", read_stack_file(DATA / "Pulumi.gpu-prod.yaml"), gpu_regions, "gpu-prod.regions.yaml"),
        # aws-dev as tests/unit/stamping/test_runner.py stamps it, plus the longest region name shape.
        *_stamped("aws-dev", cases["aws-dev"], ["us-east-2", "ap-south-1", "ap-southeast-4"], None),
    ]
    cases.update(dict(stamped))
    return cases


STACKS = ["aws-dev", "aws-prod", "aws-prod-us-east-2", "aws-prod-eu-central-1", "gpu-prod-us-east-2",
          "gpu-prod-eu-central-1", "aws-dev-us-east-2", "aws-dev-ap-south-1", "aws-dev-ap-southeast-4"]


def test_the_case_list_covers_every_derived_stack() -> None:
    assert set(_cases()) == set(STACKS)


def recorded_names(resources: list[Recorded]) -> list[tuple[str, str, str | None]]:
    """(token, logical, explicit name) of every AWS resource pulumi-aws names."""
    out = []
    for r in resources:
        if not r.type.startswith("aws:"):
            continue
        rule = NAME_RULES.get(r.type)
        if rule is None and not has_name_input(r.type):
            continue
        out.append((r.type, r.name, r.inputs.get(rule.prop if rule else "name")))
    return out


@pytest.mark.parametrize("stack", STACKS)
def test_inventory_is_exactly_what_the_program_registers_and_every_name_passes(stack: str) -> None:
    config = _cases()[stack]
    plan = plan_run.plan_config(config, stack, stack)  # raises on a recorded name or tag problem
    planned = planned_names(plan.settings, addon_facts(plan.settings))
    recorded = recorded_names(plan.resources)
    assert len(recorded) == len(set(recorded))
    assert sorted(recorded, key=str) == sorted(((p.token, p.logical, p.explicit) for p in planned), key=str)
    assert [(p.logical, p.problems()) for p in planned if p.problems()] == []
    assert recorded_problems(plan.resources) == []
    assert {t for t, _, _ in recorded} <= set(NAME_RULES)


def test_prod_covers_every_token_the_program_names() -> None:
    prod = planned_names(prod_s := parse_settings(stack_raw("aws-prod"), "aws-prod"), addon_facts(prod_s))
    assert {p.token for p in prod} == PROGRAM_TOKENS


def test_non_aws_platforms_plan_no_aws_names() -> None:
    for name in ("kind", "existing", "local"):
        assert planned_names(template(name)[1], addon_facts(template(name)[1])) == []


def test_every_rule_names_its_source_and_matches_the_sdk_input() -> None:
    import importlib

    assert set(NAME_RULES) >= PROGRAM_TOKENS
    for token, rule in NAME_RULES.items():
        assert rule.source.strip(), token
        module, cls = token.split(":")[1].split("/")[0], token.split(":")[2]
        args = getattr(importlib.import_module(f"pulumi_aws.{module}"), f"{cls}Args")
        assert isinstance(getattr(args, rule.prop, None), property), f"{token} has no input {rule.prop}"
    assert has_name_input("aws:lb/loadBalancer:LoadBalancer") and not has_name_input("aws:ec2/vpc:Vpc")


LONG = "a" * 200
# (token, logical, explicit, fragment of the expected problem)
IMAGE_LINE = "ck8s-gpu-node-noble-amd64-nvidia-595-open"  # images/: every Image Builder name
BAD = [
    ("aws:lb/loadBalancer:LoadBalancer", "x", "a" * 33, "cannot be longer than 32"),
    ("aws:lb/loadBalancer:LoadBalancer", "a" * 25, None, "cannot be longer than 32"),  # autoname max is 255
    ("aws:lb/loadBalancer:LoadBalancer", "x", "api_lb", "only alphanumerics and hyphens"),
    ("aws:lb/loadBalancer:LoadBalancer", "x", "-api", "cannot begin with a hyphen"),
    ("aws:lb/loadBalancer:LoadBalancer", "x", "api-", "cannot end with a hyphen"),
    ("aws:lb/loadBalancer:LoadBalancer", "x", "internal-api", 'cannot begin with "internal-"'),
    ("aws:lb/loadBalancer:LoadBalancer", "-api", None, "cannot begin with a hyphen"),
    ("aws:lb/targetGroup:TargetGroup", "a" * 25, None, "plus 7 random chars is longer than maximum length 32"),
    ("aws:lb/targetGroup:TargetGroup", "x", "api.tg", "only alphanumerics and hyphens"),
    ("aws:lb/targetGroup:TargetGroup", "x", "-tg", "cannot begin with a hyphen"),
    ("aws:iam/role:Role", "a" * 57, None, "plus 7 random chars is longer than maximum length 64"),
    ("aws:iam/role:Role", "x", "role name", "only alphanumerics and +=,.@_-"),
    ("aws:iam/rolePolicy:RolePolicy", "a" * 121, None, "cannot be longer than 128"),
    ("aws:iam/rolePolicy:RolePolicy", "x", "policy/1", "only alphanumerics"),
    ("aws:iam/instanceProfile:InstanceProfile", "x", "a" * 129, "cannot be longer than 128"),
    ("aws:iam/instanceProfile:InstanceProfile", "x", "", "cannot be shorter than 1"),
    ("aws:iam/user:User", "x", "a" * 65, "cannot be longer than 64"),
    ("aws:iam/user:User", "x", "velero/user", "only alphanumerics"),
    ("aws:iam/userPolicy:UserPolicy", "x", "a:b", "only alphanumerics"),
    ("aws:iam/userPolicy:UserPolicy", LONG, None, "cannot be longer than 128"),
    ("aws:ec2/launchTemplate:LaunchTemplate", "x", "lt", "cannot be shorter than 3"),
    ("aws:ec2/launchTemplate:LaunchTemplate", "x", "lt#1", "only alphanumerics and ()./_-"),
    ("aws:ec2/launchTemplate:LaunchTemplate", "a" * 118, None, "cannot be longer than 125"),
    ("aws:ec2/securityGroup:SecurityGroup", "x", "sg-nodes", 'cannot begin with "sg-"'),
    ("aws:ec2/securityGroup:SecurityGroup", "sg-nodes", None, 'cannot begin with "sg-"'),
    ("aws:ec2/securityGroup:SecurityGroup", "x", "nodes%", "only alphanumerics, spaces"),
    ("aws:ec2/securityGroup:SecurityGroup", "a" * 248, None, "maximum length 255"),
    ("aws:autoscaling/group:Group", "x", "a" * 256, "cannot be longer than 255"),
    ("aws:ec2/placementGroup:PlacementGroup", "a" * 248, None, "maximum length 255"),
    ("aws:ec2/placementGroup:PlacementGroup", "x", "h100 pg \u00e9", "only printable ASCII characters"),
    ("aws:autoscaling/group:Group", "x", "", "cannot be shorter than 1"),
    ("aws:secretsmanager/secret:Secret", "x", "join auth", "only alphanumerics and /_+=.@-"),
    ("aws:s3/bucket:Bucket", "x", "Ck8s-Velero", "only lowercase alphanumerics"),
    ("aws:s3/bucket:Bucket", "x", "192.168.1.10", "must not be formatted as an IP address"),
    ("aws:s3/bucket:Bucket", "x", "ab", "cannot be shorter than 3"),
    ("aws:s3/bucket:Bucket", "x", "a..b", "only one period between labels"),
    ("aws:s3/bucket:Bucket", "x", ".abc", "must begin and end with a letter or digit"),
    ("aws:s3/bucket:Bucket", "x", "my_bucket", "only lowercase alphanumerics"),
    ("aws:s3/bucket:Bucket", "x", "xn--bucket", 'cannot begin with "xn--"'),
    ("aws:s3/bucket:Bucket", "x", "sthree-bucket", 'cannot begin with "sthree-"'),
    ("aws:s3/bucket:Bucket", "x", "bucket-s3alias", 'cannot end with "-s3alias"'),
    ("aws:s3/bucket:Bucket", "x", "bucket--x-s3", 'cannot end with "--x-s3"'),
    ("aws:s3/bucket:Bucket", "a" * 56, None, "plus 7 random chars is longer than maximum length 63"),
    ("aws:s3/bucket:Bucket", "backup_bucket", None, "only lowercase alphanumerics"),
    ("aws:kms/alias:Alias", "x", "alias/aws/velero", 'cannot begin with "alias/aws/"'),
    ("aws:kms/alias:Alias", "x", "velero", "'alias/' followed by"),
    ("aws:kms/alias:Alias", "a" * 231, None, "maximum length 238"),
    ("aws:ssm/document:Document", "x", "aws-mint", 'cannot begin with "aws" (any case)'),
    ("aws:ssm/document:Document", "x", "Amazon-mint", 'cannot begin with "amazon" (any case)'),
    ("aws:ssm/document:Document", "x", "AMZN-mint", 'cannot begin with "amzn" (any case)'),
    ("aws:ssm/document:Document", "x", "ab", "cannot be shorter than 3"),
    ("aws:ssm/document:Document", "x", "mint token", "only alphanumerics and _-."),
    ("aws:ssm/document:Document", "x", "a" * 129, "cannot be longer than 128"),
    ("aws:ssm/document:Document", "aws-mint", None, 'cannot begin with "aws"'),
    # Image Builder (images/): ^[-_A-Za-z-0-9][-_A-Za-z0-9 ]{1,126}[-_A-Za-z-0-9]$
    ("aws:imagebuilder/component:Component", "x", "ck8s-gpu-node-noble-24.04", "only alphanumerics, hyphens"),
    ("aws:imagebuilder/imageRecipe:ImageRecipe", "x", "a" * 129, "cannot be longer than 128"),
    ("aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration", "x", "ab", "shorter than 3"),
    ("aws:imagebuilder/distributionConfiguration:DistributionConfiguration", "x", " leading-space", "inner spaces"),
    ("aws:imagebuilder/imagePipeline:ImagePipeline", "x", "gpu/node", "only alphanumerics, hyphens"),
    ("aws:imagebuilder/imagePipeline:ImagePipeline", "a" * 200, None, "cannot be longer than 128"),  # autonamed
    ("aws:imagebuilder/lifecyclePolicy:LifecyclePolicy", "x", "keep.8", "only alphanumerics, hyphens"),
]
GOOD = [
    ("aws:lb/loadBalancer:LoadBalancer", "x", "ck8s-prod-ap-southeast-4-api"),
    ("aws:lb/loadBalancer:LoadBalancer", "a" * 24, None),
    ("aws:lb/targetGroup:TargetGroup", "a" * 24, None),
    ("aws:iam/role:Role", "a" * 56, None),
    ("aws:iam/rolePolicy:RolePolicy", "a" * 120, None),
    ("aws:iam/instanceProfile:InstanceProfile", "ck8s-dev-worker-profile", None),
    ("aws:iam/user:User", "x", "a" * 64),
    ("aws:iam/userPolicy:UserPolicy", "backup-user-policy", None),
    ("aws:ec2/launchTemplate:LaunchTemplate", "a" * 117, None),
    ("aws:ec2/securityGroup:SecurityGroup", "a" * 247, None),
    ("aws:autoscaling/group:Group", "a" * 247, None),
    ("aws:ec2/placementGroup:PlacementGroup", "ck8s-prod-us-east-1-pool-h100-pg", None),
    ("aws:secretsmanager/secret:Secret", "ck8s/dev+join=auth@x", None),
    ("aws:s3/bucket:Bucket", "Backup-Bucket", None),  # autoname lowercases (PA ToLower transform)
    ("aws:s3/bucket:Bucket", "x", "ck8s-prod-us-east-1-velero"),
    ("aws:kms/alias:Alias", "backup-key-alias", None),  # autoname adds alias/ (PA PostTransform)
    ("aws:kms/alias:Alias", "x", "alias/ck8s-prod-velero"),
    ("aws:ssm/document:Document", "x", "ck8s-prod-us-east-1-mint-worker-token"),
    ("aws:imagebuilder/component:Component", "x", IMAGE_LINE),
    ("aws:imagebuilder/imageRecipe:ImageRecipe", "x", IMAGE_LINE),
    ("aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration", "x", IMAGE_LINE),
    ("aws:imagebuilder/distributionConfiguration:DistributionConfiguration", "x", IMAGE_LINE),
    ("aws:imagebuilder/imagePipeline:ImagePipeline", "x", IMAGE_LINE),
    ("aws:imagebuilder/lifecyclePolicy:LifecyclePolicy", "x", IMAGE_LINE),
]


@pytest.mark.parametrize(("token", "logical", "explicit", "fragment"), BAD)
def test_bad_names_fail_with_the_rule(token: str, logical: str, explicit: str | None, fragment: str) -> None:
    problems = name_problems(token, logical, explicit)
    assert any(fragment in p for p in problems), problems


@pytest.mark.parametrize(("token", "logical", "explicit"), GOOD)
def test_good_names_pass(token: str, logical: str, explicit: str | None) -> None:
    assert name_problems(token, logical, explicit) == []


def test_every_token_has_a_failing_and_a_passing_case() -> None:
    assert {c[0] for c in BAD} == {c[0] for c in GOOD} == set(NAME_RULES)


def test_physical_names_follow_pulumi_aws_autonaming() -> None:
    assert physical_name("aws:iam/role:Role", "r", None) == "r-abcdef0"
    assert physical_name("aws:iam/role:Role", "r", "explicit") == "explicit"
    assert physical_name("aws:s3/bucket:Bucket", "Backup", None) == "backup-abcdef0"
    assert physical_name("aws:kms/alias:Alias", "k", None) == "alias/k-abcdef0"
    assert physical_name("aws:kms/alias:Alias", "alias/k", None) == "alias/k-abcdef0"
    overflow = name_problems("aws:lb/targetGroup:TargetGroup", "a" * 25, None)
    assert overflow == [f"could not make instance of 'aws:lb/targetGroup:TargetGroup': name '{'a' * 25}-' "
                        "plus 7 random chars is longer than maximum length 32"]


def test_tag_rules() -> None:
    ok = {f"k{i}": "v" for i in range(50)}
    assert tag_problems(ok) == []
    reserved = tag_problems({**ok, "aws:cloudformation:stack-name": "x"})  # refused, but not counted
    assert reserved and not any("tags on one resource" in p for p in reserved)
    assert any("51 tags" in p for p in tag_problems({**ok, "k50": "v"}))
    assert any("reserved" in p for p in tag_problems({"AWS:Team": "x"}))
    assert any("reserved" in p for p in tag_problems({"team": "aws:x"}))
    assert any("1-128" in p for p in tag_problems({"k" * 129: "v"}))
    assert any("1-128" in p for p in tag_problems({"": "v"}))
    assert any("at most 256" in p for p in tag_problems({"k": "v" * 257}))
    assert any("may contain only" in p for p in tag_problems({"cost#center": "v"}))
    assert any("may contain only" in p for p in tag_problems({"team": "ml,platform"}))
    assert tag_problems({"kubernetes.io/cluster/ck8s-dev": "owned", "Owner": "a.b@example.com", "x y": "1+1=2"}) == []


def _with(**changes: Any) -> Any:
    def change(raw: dict[str, Any]) -> None:
        raw.update(changes)

    return change


def test_too_long_environment_is_one_clean_settings_error() -> None:
    long = "a-very-long-environment-name-that-no-cluster-name-fits"  # 54: a DNS label, too long a cluster name
    with pytest.raises(SettingsError) as err:
        settings_for("aws-dev", _with(environment=long))
    assert err.value.problems == [("settings.environment", (
        f"'{long}' is 54 characters; at most 48 fit in us-east-1: the cluster name ck8s-<environment>-<region> "
        "must be at most 63 characters (a DNS label, as a rebuild's backup.restoreFrom.clusterName must be); "
        "AWS names too long for their limit get a hashed form (docs/adr/0042)"))]


# The new maximum: the cluster name is a DNS label (63) = 5 ("ck8s-") + environment + 1 + region.
@pytest.mark.parametrize(("region", "longest"), [("eu-north-1", 47), ("us-east-1", 48), ("ap-southeast-4", 43)])
def test_longest_environment_that_fits_is_accepted(region: str, longest: int) -> None:
    settings = settings_for("aws-dev", _with(environment="e" * longest, region=region))
    assert len(settings.cluster_name) == 63
    with pytest.raises(SettingsError, match=f"at most {longest} fit in {region}: the cluster name") as err:
        settings_for("aws-dev", _with(environment="e" * (longest + 1), region=region))
    assert [p for p, _ in err.value.problems] == ["settings.environment"]


def test_pool_derived_names_are_reported_under_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    # A 63-char DNS-label pool name still fits every rule today (launch template: 108 of 125), so a
    # tighter rule stands in to prove where pool-derived problems are reported.
    lt = "aws:ec2/launchTemplate:LaunchTemplate"
    monkeypatch.setitem(NAME_RULES, lt, dataclasses.replace(NAME_RULES[lt], max_len=40))

    def change(raw: dict[str, Any]) -> None:
        raw["nodePools"][0]["name"] = "p" * 20

    with pytest.raises(SettingsError) as err:
        settings_for("aws-dev", change)
    assert {p for p, _ in err.value.problems} == {"settings.nodePools[0].name"}
    assert f"{lt} 'ck8s-dev-us-east-1-pool-{'p' * 20}-lt'" in err.value.message


def test_tags_count_as_merged_onto_a_node() -> None:
    # A pool node's tags are the stack's plus 5 (cluster, ownership, Name, role, pool): 45 + 5 = 50.
    settings_for("aws-dev", _with(tags={f"t{i}": "v" for i in range(45)}))
    with pytest.raises(SettingsError) as err:
        settings_for("aws-dev", _with(tags={f"t{i}": "v" for i in range(46)}))
    assert err.value.problems == [("settings.tags", "51 tags on one resource; AWS allows at most 50")]


def test_names_are_not_checked_off_aws() -> None:
    raw = copy.deepcopy(template("kind")[0][SETTINGS_KEY])
    raw["environment"] = "a-very-long-environment-name"  # no AWS resource carries it on kind
    assert isinstance(parse_settings(raw, "kind"), Settings)


def _recorded(token: str, name: str, inputs: dict[str, Any] | None = None, provider: str = "") -> Recorded:
    return Recorded(urn=f"urn:pulumi:s::p::{token}::{name}", type=token, name=name, parent="", custom=True,
                    inputs=inputs or {}, secret_paths=[], dependencies=[], provider=provider)


def test_backstop_reports_what_the_inventory_misses() -> None:
    resources = [
        _recorded("aws:lb/targetGroup:TargetGroup", "ck8s-dev-us-east-1-extra-tg"),  # autonamed, 27 > 24
        _recorded("aws:s3/bucket:Bucket", "b", {"bucket": "Bad_Bucket"}),
        _recorded("aws:cloudwatch/logGroup:LogGroup", "logs"),  # named, but no rule: must be added
        _recorded("aws:iam/role:Role", "r", {"name": "<computed>"}),  # unknown: not judged
        _recorded("aws:ec2/vpc:Vpc", "vpc", {"tags": {"Name": "v"}}),  # no name at all
    ]
    problems = recorded_problems(resources)
    paths = [p for p, _ in problems]
    assert paths == ["resource aws:lb/targetGroup:TargetGroup 'ck8s-dev-us-east-1-extra-tg'",
                     "resource aws:s3/bucket:Bucket 'b'", "resource aws:cloudwatch/logGroup:LogGroup 'logs'"]
    assert "plus 7 random chars is longer than maximum length 32" in problems[0][1]
    assert "NAME_RULES" in problems[2][1]


def test_backstop_merges_provider_default_tags() -> None:
    defaults = {f"d{i}": "v" for i in range(48)}
    provider = _recorded("pulumi:providers:aws", "cluster-aws", {"defaultTags": {"tags": defaults}})
    three = {"a": "1", "b": "2", "c": "3"}
    resources = [
        provider,
        _recorded("aws:ec2/vpc:Vpc", "vpc", {"tags": three}, provider="cluster-aws-05571b83"),
        # Launch-template tag specifications and ASG tag blocks get no default tags.
        _recorded("aws:ec2/launchTemplate:LaunchTemplate", "lt", {"tags": {}, "tagSpecifications": [
            {"resourceType": "instance", "tags": {"aws:x": "1"}}]}, provider="other-1"),
        _recorded("aws:autoscaling/group:Group", "asg", {"tags": [{"key": "k", "value": "v#"}]}),
    ]
    problems = recorded_problems(resources)
    assert problems == [
        ("resource aws:ec2/vpc:Vpc 'vpc'", "tags: 51 tags on one resource; AWS allows at most 50"),
        ("resource aws:ec2/launchTemplate:LaunchTemplate 'lt'",
         "tagSpecifications[0]: tag key 'aws:x': the prefix 'aws:' is reserved for AWS (any case)"),
        ("resource aws:autoscaling/group:Group 'asg'",
         "tags: tag value 'v#' may contain only letters, digits, spaces and _ . : / = + - @"),
    ]


def test_plan_fails_on_a_recorded_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    """The backstop is wired into the offline plan: a resource the inventory does not know fails it."""
    extra = _recorded("aws:lb/targetGroup:TargetGroup", "ck8s-dev-us-east-1-extra-tg")
    monkeypatch.setattr(plan_run, "run_program", lambda *a, **k: PlanRun(resources=[extra], outputs={}))
    config, _ = template("aws-dev")
    with pytest.raises(SettingsError) as err:
        plan_run.plan_config(config, "aws-dev", "stacks/Pulumi.aws-dev.yaml")
    assert err.value.source == "stacks/Pulumi.aws-dev.yaml"
    assert err.value.problems[0][0] == "resource aws:lb/targetGroup:TargetGroup 'ck8s-dev-us-east-1-extra-tg'"


def test_api_load_balancer_names_are_explicit_and_deleted_before_replace(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, bool] = {}
    original = RecordingMonitor.RegisterResource

    def spy(self: RecordingMonitor, request: Any) -> Any:
        seen[request.type] = bool(request.deleteBeforeReplace) or seen.get(request.type, False)
        return original(self, request)

    monkeypatch.setattr(RecordingMonitor, "RegisterResource", spy)
    settings = settings_for("aws-dev")
    run = run_cluster(settings)
    names = {r.type: r.inputs.get("name") for r in run.resources}
    cluster = settings.cluster_name
    assert names["aws:lb/loadBalancer:LoadBalancer"] == names["aws:lb/targetGroup:TargetGroup"] == api_lb_name(cluster)
    assert names["aws:ssm/document:Document"] == mint_document_name(cluster)
    assert seen["aws:lb/loadBalancer:LoadBalancer"] and seen["aws:lb/targetGroup:TargetGroup"]


def test_plan_cli_refuses_a_too_long_environment_before_registering(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from components.cli.main import main

    registered: list[Any] = []
    original = RecordingMonitor.RegisterResource
    monkeypatch.setattr(RecordingMonitor, "RegisterResource",
                        lambda self, request: registered.append(request) or original(self, request))
    bad = DATA.parent / "bad_stacks"
    assert main(["plan", "--stack", "aws-name-too-long", "--stacks-dir", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("invalid settings in") == 1 and "Traceback" not in err
    assert "settings.environment: 'a-very-long-environment-name-that-no-cluster-name-fits' is 54 characters" in err
    assert "at most 63 characters" in err
    assert registered == []


# Long environments (ADR 0042): every name fits by a stable hashed form, only where a limit needs it.
TIGHTEST = "ap-southeast-4"  # the longest region name: the least room for the environment
LONG_ENV = "ml-platform-research-and-inference-team-eu"  # 42 of the 43 that fit in ap-southeast-4


def _long(stack: str, environment: str = LONG_ENV, region: str = TIGHTEST, pool: str | None = None) -> Any:
    def change(raw: dict[str, Any]) -> None:
        raw.update(environment=environment, region=region)
        if stack == "aws-dev":
            raw["backup"] = {"region": "ap-southeast-2"}  # the Velero bucket, key alias and user too
        if pool is not None:
            raw["nodePools"][0]["name"] = pool
    raw = stack_raw(stack)
    change(raw)
    return {SETTINGS_KEY: raw}


LONG_CASES = {
    "dev-tightest": _long("aws-dev"),
    "dev-tightest-63-char-pool": _long("aws-dev", pool="p" * 63),
    "dev-longest-env": _long("aws-dev", environment="e" * 43),
    "prod-us-east-1": _long("aws-prod", environment="prod-" + "x" * 43, region="us-east-1"),
}


@cache
def _long_plan(case: str) -> plan_run.Plan:
    return plan_run.plan_config(LONG_CASES[case], case, case)  # raises on any recorded name or tag problem


@pytest.mark.parametrize("case", LONG_CASES)
def test_long_environment_plans_with_every_name_passing_every_rule(case: str) -> None:
    plan = _long_plan(case)
    planned = planned_names(plan.settings, addon_facts(plan.settings))
    recorded = recorded_names(plan.resources)
    assert sorted(recorded, key=str) == sorted(((p.token, p.logical, p.explicit) for p in planned), key=str)
    assert [(p.logical, p.physical, p.problems()) for p in planned if p.problems()] == []
    assert recorded_problems(plan.resources) == []
    cluster = plan.settings.cluster_name
    assert len(cluster) <= 63
    mark = f"-{digest(cluster)}"
    hashed = [p for p in planned if mark in p.physical]
    assert {p.token for p in hashed} >= {"aws:lb/loadBalancer:LoadBalancer", "aws:lb/targetGroup:TargetGroup",
                                         "aws:iam/role:Role"}
    for p in hashed:  # every hashed name of the cluster: a readable head of it, its digest, what it is
        head, _, rest = p.physical.removeprefix("alias/").partition(mark)
        assert rest and cluster.startswith(head) and len(head) >= 10, p.physical
    # The rest carry the full cluster name, or none (the Velero user's policy: `backup-user-policy`).
    assert all(cluster in p.physical or p.logical.startswith(BACKUP) for p in planned if p not in hashed)
    # Where the full name fits, it stays readable: instance profiles, secrets, groups, the SSM document.
    readable = {p.token for p in planned if cluster in p.physical}
    assert {"aws:iam/instanceProfile:InstanceProfile", "aws:secretsmanager/secret:Secret",
            "aws:ec2/securityGroup:SecurityGroup", "aws:ssm/document:Document"} <= readable


def test_names_a_limit_needs_are_hashed_and_the_others_stay_readable() -> None:
    cluster = "ck8s-" + LONG_ENV + "-" + TIGHTEST  # 62
    d = digest(cluster)
    assert api_lb_name(cluster) == f"ck8s-ml-platform-re-{d}-api"  # 32: ELBv2's limit
    assert node_role_name(cluster, "control-plane") == f"ck8s-ml-platform-research-an-{d}-control-plane-role"
    assert len(node_role_name(cluster, "control-plane")) + 8 == 64  # IAM's 64 with the 7-char autoname
    assert bucket_name(cluster) == f"ck8s-ml-platform-research-and-inference-team-eu-{d}-velero"  # 63
    assert user_name(cluster) == bucket_name(cluster)  # 64, but the head never ends in "-"
    assert key_alias(cluster) == f"alias/{cluster}-velero"  # 256: fits
    assert mint_document_name(cluster) == f"{cluster}-mint-worker-token"  # 128: fits
    assert launch_template_name(cluster, "h100") == f"{cluster}-pool-h100-lt"  # 125: fits


def test_hashed_names_are_stable_across_runs_and_python_processes() -> None:
    """Literal expectations: a name must never change once a stack has it (SHA-256, not hash())."""
    cluster = "ck8s-" + "e" * 43 + "-" + TIGHTEST
    assert digest(cluster) == "e77a7309"
    assert api_lb_name(cluster) == "ck8s-eeeeeeeeeeeeee-e77a7309-api"
    assert bucket_name(cluster) == "ck8s-" + "e" * 42 + "-e77a7309-velero"
    code = ("from components.aws.inventory import api_lb_name; "
            f"print(api_lb_name('{cluster}'))")
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}, cwd=plan_run.PROJECT_DIR)
        assert out.stdout.strip() == "ck8s-eeeeeeeeeeeeee-e77a7309-api"


def test_distinct_environments_give_distinct_names() -> None:
    """Environments sharing every readable character of the hashed head still differ by the digest."""
    envs = [f"research-inference-platform-{i:04d}" for i in range(500)]
    for region in ("us-east-1", TIGHTEST):
        clusters = [f"ck8s-{e}-{region}" for e in envs]
        for name in (api_lb_name, bucket_name, user_name, lambda c: node_role_name(c, "worker")):
            names = [name(c) for c in clusters]
            assert len(set(names)) == len(names)
        assert len({api_lb_name(c).rsplit("-", 2)[0] for c in clusters}) == 1  # same head: digest decides


def test_short_names_are_unchanged() -> None:
    """Every name that fits is exactly what it was before hashing existed (the readable f-string)."""
    for env, region in (("dev", "eu-north-1"), ("e" * 13, "us-east-1"), ("e" * 8, TIGHTEST)):
        cluster = f"ck8s-{env}-{region}"
        assert api_lb_name(cluster) == f"{cluster}-api"
        assert mint_document_name(cluster) == f"{cluster}-mint-worker-token"
        assert node_role_name(cluster, "control-plane") == f"{cluster}-control-plane-role"
        assert launch_template_name(cluster, "p" * 63) == f"{cluster}-pool-{'p' * 63}-lt"
        assert (bucket_name(cluster), user_name(cluster), key_alias(cluster)) == (
            f"{cluster}-velero", f"{cluster}-velero", f"alias/{cluster}-velero")


def test_fit_never_exceeds_its_limit_and_falls_back_when_the_suffix_leaves_no_room() -> None:
    stem = "ck8s-" + "a-" * 30 + "b"
    for limit in range(14, 80):  # from 14, "-api" leaves a head of at least one character
        name = fit(stem, "-api", limit)
        assert len(name) <= limit and name.endswith("-api")
        head = name.removesuffix("-api").removesuffix(f"-{digest(stem)}")
        assert name == stem + "-api" or (not head.endswith(("-", ".")) and stem.startswith(head))
        assert name == stem + "-api" or name.removesuffix("-api") in hashed_stems(stem)
    assert fit(stem, "-" + "s" * 40, 45) == stem + "-" + "s" * 40  # no room: the name rules report it


def test_backup_limits_are_the_name_rules() -> None:
    assert NAME_RULES["aws:s3/bucket:Bucket"].max_len == BUCKET_MAX
    assert NAME_RULES["aws:kms/alias:Alias"].max_len == ALIAS_MAX
    assert NAME_RULES["aws:iam/user:User"].max_len == USER_MAX


def _alias_names(monkeypatch: pytest.MonkeyPatch, settings: Settings) -> dict[str, list[str]]:
    """logical name -> the names of its aliases, as the program sends them (alias specs)."""
    seen: dict[str, list[str]] = {}
    original = RecordingMonitor.RegisterResource

    def spy(self: RecordingMonitor, request: Any) -> Any:
        seen[request.name] = [a.spec.name for a in request.aliases if a.WhichOneof("alias") == "spec"]
        return original(self, request)

    monkeypatch.setattr(RecordingMonitor, "RegisterResource", spy)
    run_cluster(settings)
    return seen


def test_hashed_logical_names_keep_the_readable_one_as_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = parse_settings(LONG_CASES["dev-tightest-63-char-pool"][SETTINGS_KEY], "long")
    cluster, pool = settings.cluster_name, "p" * 63
    aliases = _alias_names(monkeypatch, settings)
    for role in ("control-plane", "worker"):
        assert node_role_name(cluster, role) != f"{cluster}-{role}-role"
        assert aliases[node_role_name(cluster, role)] == [f"{cluster}-{role}-role"]
    assert launch_template_name(cluster, pool) != f"{cluster}-pool-{pool}-lt"
    assert aliases[launch_template_name(cluster, pool)] == [f"{cluster}-pool-{pool}-lt"]
    dev = settings_for("aws-dev")
    short = _alias_names(monkeypatch, dev)  # readable names: registered as before, no alias added
    c = dev.cluster_name
    assert [short[n] for n in (f"{c}-control-plane-role", f"{c}-worker-role", f"{c}-pool-l4-lt")] == [[], [], []]


def test_every_consumer_of_a_hashed_name_reads_the_same_name() -> None:
    """Nodes, IAM policies, Velero and the DR tools derive names through the same functions."""
    plan = _long_plan("dev-tightest")
    cluster = plan.settings.cluster_name
    of = {r.type: r for r in plan.resources}
    lb_name = of["aws:lb/loadBalancer:LoadBalancer"].inputs["name"]
    doc_name = of["aws:ssm/document:Document"].inputs["name"]
    assert lb_name == api_lb_name(cluster) != f"{cluster}-api"
    boot = {line.strip() for r in plan.resources if (text := user_data(r)) for line in text.splitlines()}
    assert f"CK8S_API_LB_NAME={lb_name}" in boot and f"CK8S_MINT_DOCUMENT={doc_name}" in boot
    assert f"CK8S_CLUSTER={cluster}" in boot  # control planes are found by the full-name tag
    worker = json.loads(next(r.inputs["policy"] for r in plan.resources
                             if r.name == f"{cluster}-worker-node"))  # the worker role's inline policy
    sends = [st["Resource"] for st in worker["Statement"] if st.get("Sid") == "SendMintDocument"]
    assert sends == [[f"arn:aws:ssm:{TIGHTEST}:123456789012:document/{doc_name}"]]
    bucket = of["aws:s3/bucket:Bucket"].inputs["bucket"]
    assert bucket == bucket_name(cluster) != f"{cluster}-velero"
    assert of["aws:iam/user:User"].inputs["name"] == user_name(cluster)
    assert velero_values(plan.settings)["configuration"]["backupStorageLocation"][0]["bucket"] == bucket
    # Tags and Kubernetes-facing names keep the full, readable cluster name (tag values allow 256).
    tags = of["aws:ec2/instance:Instance"].inputs["tags"]
    assert tags["ck8s-gpu/cluster"] == cluster and tags[f"kubernetes.io/cluster/{cluster}"] == "owned"
    assert plan.outputs["clusterName"] == cluster
    # A rebuild finds the lost cluster's backups from its name alone: its bucket and key alias.
    restore = RestoreSource(cluster_name=cluster, region="ap-southeast-2")
    grants = velero_policy(partition="aws", bucket_arn="arn:aws:s3:::new", key_arn="k", restore_from=restore)
    by_sid = {st["Sid"]: st for st in grants["Statement"]}
    assert by_sid["RestoreBucket"]["Resource"] == f"arn:aws:s3:::{bucket}"
    alias = of["aws:kms/alias:Alias"].inputs["name"]
    assert by_sid["RestoreKey"]["Condition"]["ForAnyValue:StringEquals"]["kms:ResourceAliases"] == alias

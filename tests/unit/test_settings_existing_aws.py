"""Autoscaled pools on an existing cluster whose nodes are EC2 instances (`settings.existingAws`):
what the settings refuse, each at its path and all in one message (components/settings/rules/
existing_aws.py, rules/autoscaling.py), and what they accept (docs/autoscaling.md, "On an existing
cluster"). The EC2NodeClass and Karpenter values they render: tests/unit/test_autoscaling_objects.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.settings import parse_settings
from components.validate import parse
from tests.unit.helpers import listed_by_path, model_problems, raised_problems

HERE = "settings.existingAws"
POOL = "settings.nodePools[0]"
SECTION: dict[str, Any] = {
    "clusterEndpoint": "https://10.0.0.10:6443",
    "nodeRoleArn": "arn:aws:iam::123456789012:role/gpu-node",
    "instanceProfile": "gpu-node",
    "amiSelectorTerms": [{"ssmParameter": "/site/images/gpu"}],
    "subnetSelectorTerms": [{"tags": {"site/tier": "private"}}],
    "securityGroupSelectorTerms": [{"id": "sg-0123456789abcdef0"}],
    "userData": ("#!/bin/bash\nk8s join-cluster \"$(aws ssm get-parameter --name /site/join --with-decryption "
                 "--query Parameter.Value --output text)\"\n"),
}


def existing(section: dict[str, Any] | None = SECTION, **extra: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {"platform": "existing", "environment": "lab", "region": "eu-north-1", "nodePools": [
        {"name": "l4", "instanceType": "g6.xlarge", "autoscaling": {"maxSize": 3}}], **extra}
    if section is not None:
        raw["existingAws"] = copy.deepcopy(section)
    return raw


def with_fields(**fields: Any) -> dict[str, Any]:
    return existing({**SECTION, **fields})


def test_an_existing_stack_with_the_section_autoscales() -> None:
    s = parse(existing())  # the one gate: settings, add-on graph, platform, smoke plan
    assert s.existing_aws is not None and s.existing_aws.instance_profile == "gpu-node"
    assert s.node_pools[0].max_nodes == 3


# (case, raw settings, every path the one refusal must name, words of a reason at one of them)
CASES: list[tuple[str, dict[str, Any], set[str], str]] = [
    ("autoscaling on existing without the section", existing(None), {f"{POOL}.autoscaling"},
     "Set settings.existingAws"),
    ("the section on aws", {"platform": "aws", "environment": "dev", "region": "eu-north-1",
                            "existingAws": SECTION}, {HERE}, "only for platform existing"),
    ("the section on kind", {"platform": "kind", "existingAws": SECTION}, {HERE}, "launches no EC2 instances"),
    ("the section with no autoscaled pool",
     {"platform": "existing", "region": "eu-north-1", "existingAws": SECTION}, {HERE}, "nothing would read it"),
    ("no region", {**existing(), "region": None}, {"settings.region"}, "required with existingAws"),
    ("empty selector lists", with_fields(amiSelectorTerms=[], subnetSelectorTerms=[], securityGroupSelectorTerms=[]),
     {f"{HERE}.amiSelectorTerms", f"{HERE}.subnetSelectorTerms", f"{HERE}.securityGroupSelectorTerms"},
     "cannot be empty"),
    ("terms with two selectors, none, bad ids and empty tags", with_fields(
        amiSelectorTerms=[{"id": "ami-0123456789abcdef0", "tags": {"a": "b"}}, {"ssmParameter": "no-slash"}],
        subnetSelectorTerms=[{"id": "subnet-0123abcd", "tags": {"x": "y"}}, {}, {"id": "sub-1"}],
        securityGroupSelectorTerms=[{"tags": {}}, {"tags": {"k": ""}}, {"id": "sg-UPPER"}]),
     {f"{HERE}.amiSelectorTerms[0]", f"{HERE}.amiSelectorTerms[1].ssmParameter",
      f"{HERE}.subnetSelectorTerms[0]", f"{HERE}.subnetSelectorTerms[1]", f"{HERE}.subnetSelectorTerms[2].id",
      f"{HERE}.securityGroupSelectorTerms[0].tags", f"{HERE}.securityGroupSelectorTerms[1].tags.k",
      f"{HERE}.securityGroupSelectorTerms[2].id"}, "mutually exclusive"),
    ("too many terms and term tags", with_fields(
        subnetSelectorTerms=[{"id": f"subnet-{i:08x}"} for i in range(31)],
        securityGroupSelectorTerms=[{"tags": {f"k{i}": "v" for i in range(21)}}]),
     {f"{HERE}.subnetSelectorTerms", f"{HERE}.securityGroupSelectorTerms[0].tags"}, "at most 30"),
    ("endpoint, role, profile", with_fields(clusterEndpoint="http://10.0.0.10:6443", nodeRoleArn="gpu-node",
                                            instanceProfile="a profile"),
     {f"{HERE}.clusterEndpoint", f"{HERE}.nodeRoleArn", f"{HERE}.instanceProfile"}, "not an https URL"),
    ("tags Karpenter writes itself", with_fields(tags={"karpenter.sh/nodepool": "x", "kubernetes.io/cluster/c": "owned",
                                                       "team": "ml"}),
     {f"{HERE}.tags.karpenter.sh/nodepool", f"{HERE}.tags.kubernetes.io/cluster/c"}, "Karpenter writes itself"),
    ("a literal password fed to docker login", with_fields(
        userData="#!/bin/bash\necho 'hunter2' | docker login -u me --password-stdin registry.example\n"),
     {f"{HERE}.userData"}, "--password-stdin"),
    ("empty user data", with_fields(userData="  \n"), {f"{HERE}.userData"}, "never join"),
    ("a reserved autoscaled pool on existing", existing(nodePools=[
        {"name": "h100", "instanceType": "p5.48xlarge", "availabilityZone": "eu-north-1a",
         "capacityReservation": {"id": "cr-0123456789abcdef0"}, "autoscaling": {"maxSize": 2}}]),
     {f"{POOL}.capacityReservation"}, "names no reservation"),
]


@pytest.mark.parametrize(("raw", "paths", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_refusal_names_every_bad_path_in_one_message(raw: dict[str, Any], paths: set[str], words: str) -> None:
    problems = listed_by_path(raised_problems(parse_settings, raw))
    assert paths <= set(problems), sorted(problems)
    assert any(words in reason for p in paths for reason in problems[p]), problems


def test_the_autoscaling_refusal_on_existing_says_what_to_set_and_why() -> None:
    why = model_problems(existing(None))[f"{POOL}.autoscaling"]
    assert "launches EC2 instances" in why and "did not make your cluster" in why
    assert "userData" in why and "docs/autoscaling.md" in why


@pytest.mark.parametrize("user_data", [
    "#!/bin/bash\ndocker login -u me --password-stdin registry.example < /run/token\n",
    "#!/bin/bash\necho \"$(cat /run/token)\" | docker login -u me --password-stdin registry.example\n",
    "#!/bin/bash\naws ssm get-parameter --name /site/join --with-decryption > /run/join-token\n",
])
def test_user_data_reading_its_credential_at_boot_stays_quiet(user_data: str) -> None:
    assert parse_settings(with_fields(userData=user_data)).existing_aws is not None


@pytest.mark.parametrize("platform", ["kind", "local"])
def test_kind_and_local_still_refuse_autoscaling_with_their_reason(platform: str) -> None:
    raw: dict[str, Any] = {"platform": platform, "nodePools": [
        {"name": "gpu", "instanceType": "g6.xlarge", "autoscaling": {"maxSize": 2}}]}
    why = model_problems(raw)[f"{POOL}.autoscaling"]
    assert f"the {platform} platform cannot autoscale" in why and "launches EC2 instances" in why

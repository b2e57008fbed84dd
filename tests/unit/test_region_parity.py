"""Region parity: the committed dev and prod stacks, stamped into other regions, plan the same
resources with the same inputs except region-scoped values (names, AZs, AMI ids, CIDRs when
configured per region). Two programs are planned under the mock engine: the project's real
`__main__.py`, and the DR backup target on its own (proven before __main__ wires it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.dr.backup_target import BackupTarget
from components.plan.artifacts import resources_document
from components.plan.diff import diff_resources, format_diff
from components.plan.mockengine import run_program
from components.plan.run import PROJECT_DIR, offline_config, plan_config, stack_file
from components.settings.load import SETTINGS_KEY, read_stack_file
from components.settings.model import Settings
from components.stamping.derive import derive
from components.stamping.parity import RegionScope, format_violations, normalise, violations
from components.validate import from_config as settings_from_config

STACKS = PROJECT_DIR / "stacks"



def _zones(region: str, **extra: Any) -> dict[str, Any]:
    """aws-prod's zone-scoped fields for `region`: its zones, the same zone letter, its own
    reservation (an id, normalised like every hash) and placement group (named after the cluster)."""
    network = {"availabilityZones": [f"{region}{z}" for z in "abc"], **extra.pop("network", {})}
    pool = {"name": "h100", "availabilityZone": f"{region}a", "capacityReservation": {"id": "cr-0f1e2d3c4b5a69788"},
            "placement": {"groupName": f"ck8s-prod-{region}-h100"}}
    return {"network": network, "nodePools": [pool], **extra}


# (template, target region, overrides for that region)
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("aws-dev", "us-east-2", {}),  # same VPC CIDR: every CIDR must be identical
    ("aws-dev", "ap-northeast-1", {"network": {"vpcCidr": "10.21.0.0/16"}}),
    ("aws-prod", "us-east-2", _zones("us-east-2", network={"vpcCidr": "10.41.0.0/16"})),  # backups stay in us-west-2
    ("aws-prod", "eu-central-1", _zones("eu-central-1", network={"vpcCidr": "10.42.0.0/16"},
                                        backup={"region": "eu-north-1"})),
]


def _template(name: str) -> tuple[dict[str, Any], Settings]:
    config = read_stack_file(stack_file(name))
    return config, settings_from_config(config, name, offline=True)


def _stamped(template: str, region: str, override: dict[str, Any]) -> tuple[dict[str, Any], Settings]:
    config, settings = _template(template)
    s = derive(template, config, settings, region, override)
    return s.config, s.settings


def _real(config: dict[str, Any], stack: str) -> list[dict[str, Any]]:
    resources: list[dict[str, Any]] = resources_document(plan_config(config, stack, stack))["resources"]
    return resources


def _backup_target(config: dict[str, Any], stack: str) -> list[dict[str, Any]]:
    settings = settings_from_config(config, stack, offline=True)
    wire, secret_keys = offline_config(config, settings)

    def program() -> None:
        if settings.backup is not None:
            BackupTarget("backup", settings)

    run = run_program(program, wire, stack=stack, region=settings.region or "", secret_keys=secret_keys)
    return [r.to_json() for r in run.resources]


PROGRAMS = {"real-program": _real, "backup-target": _backup_target}


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize(("template", "region", "override"), CASES, ids=[f"{t}->{r}" for t, r, _ in CASES])
def test_stamped_region_differs_only_in_region_scoped_values(
    program: str, template: str, region: str, override: dict[str, Any]
) -> None:
    plan = PROGRAMS[program]
    base_config, base_settings = _template(template)
    new_config, new_settings = _stamped(template, region, override)
    before = plan(base_config, template)
    after = plan(new_config, f"{template}-{region}")
    diff = violations(before, base_settings, after, new_settings)
    assert diff.empty, "parity violated:\n" + "\n".join(format_violations(diff))
    if program == "real-program":
        # Not vacuous: the raw plans differ, in region-scoped values the normalisation had to absorb.
        assert not diff_resources(before, after).empty
        assert f'"availabilityZone": "{base_settings.region}a"' in json.dumps(before)
        assert f'"availabilityZone": "{region}a"' in json.dumps(after)
        assert len(before) > 50


def test_a_non_regional_difference_is_a_violation() -> None:
    """An instance type changed in one region is exactly what parity must catch."""
    base_config, base_settings = _template("aws-prod")
    override = _zones("us-east-2")
    override["nodePools"].append({"name": "l40s", "instanceType": "g6e.24xlarge"})
    new_config, new_settings = _stamped("aws-prod", "us-east-2", override)
    diff = violations(_real(base_config, "aws-prod"), base_settings,
                      _real(new_config, "aws-prod-us-east-2"), new_settings)
    assert not diff.empty
    assert any("g6e.24xlarge" in repr(c.fields) for c in diff.changed), format_diff(diff)


def test_a_region_hard_coded_in_a_component_is_a_violation() -> None:
    """A literal region (instead of settings.region) leaks into the other region's plan."""
    resource = {"urn": "urn:pulumi:s::p::aws:s3/bucket:Bucket::logs", "name": "logs",
                "inputs": {"region": "us-east-1", "arn": "arn:aws:s3:us-east-1:1:x"}}
    a_settings = _template("aws-dev")[1]
    b_settings = _stamped("aws-dev", "us-east-2", {})[1]
    diff = violations([resource], a_settings, [resource], b_settings)
    assert [c.key for c in diff.changed] == ["aws:s3/bucket:Bucket::logs"]


def test_cidrs_compare_as_offsets_only_when_configured_per_region() -> None:
    dev = _template("aws-dev")[1]
    same = _stamped("aws-dev", "us-east-2", {})[1]
    moved = _stamped("aws-dev", "us-east-2", {"network": {"vpcCidr": "10.21.0.0/16"}})[1]
    subnet = {"urn": "urn:pulumi:s::p::aws:ec2/subnet:Subnet::a", "name": "a", "inputs": {"cidrBlock": "10.20.64.0/18"}}
    scope_dev, scope_moved = RegionScope.pair(dev, moved)
    assert normalise([subnet], scope_dev)[0]["inputs"]["cidrBlock"] == "<vpc>+16384/18"
    assert RegionScope.pair(dev, same)[0].vpc_cidr is None  # same VPC CIDR: CIDRs must match as written
    assert scope_moved.vpc_cidr == "10.21.0.0/16"


def test_plan_keys_ignore_stack_and_project(tmp_path: Path) -> None:
    """Sanity of the building block the parity relies on: same resource, two stacks, one key."""
    from components.plan.diff import resource_key

    assert resource_key("urn:pulumi:a::ck8s-gpu::aws:s3/bucket:Bucket::x") == resource_key(
        "urn:pulumi:b::ck8s-gpu::aws:s3/bucket:Bucket::x")
    assert SETTINGS_KEY == "ck8s-gpu:settings"


def test_written_plans_of_two_regions_compare_without_their_settings() -> None:
    """What `plan --diff` across regions needs: parity from two resources.json documents alone."""
    from components.plan.artifacts import resources_document
    from components.stamping.parity import document_violations, scope_of

    base_config, _ = _template("aws-prod")
    new_config, _ = _stamped("aws-prod", "eu-central-1", _zones("eu-central-1", network={"vpcCidr": "10.42.0.0/16"},
                                                                backup={"region": "eu-north-1"}))
    old = resources_document(plan_config(base_config, "aws-prod", "aws-prod"))
    new = resources_document(plan_config(new_config, "aws-prod-eu-central-1", "stamped"))
    assert scope_of(old).region == "us-east-1" and scope_of(new).vpc_cidr == "10.42.0.0/16"
    diff = document_violations(old, new)
    assert diff.empty, "\n".join(format_violations(diff))
    changed = resources_document(plan_config(_stamped("aws-prod", "eu-central-1", _zones(
        "eu-central-1", network={"vpcCidr": "10.42.0.0/16"}, controlPlane={"instanceType": "m7i.4xlarge"},
        backup={"region": "eu-north-1"}))[0],
        "aws-prod-eu-central-1", "stamped"))
    assert not document_violations(old, changed).empty  # a bigger control plane is not a regional difference

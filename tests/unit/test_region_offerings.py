"""An instance type the Region does not offer is refused at its field path, before anything is made
(components/settings/limits.py `offering_problem`): AWS's own price list of 2026-09-17
(components/tables/ec2_regional_prices.py) has no On-Demand price for it there, though it covers the
Region and the type's family. The class is "a type this stack has EC2 launch, in a Region without it":
aws pools and control planes, autoscaled pools on an existing cluster on AWS, an image line's build
instance, and every stamped region; a family or Region the table does not cover is not judged
(pre-flight asks EC2's DescribeInstanceTypeOfferings)."""

from __future__ import annotations

from typing import Any

import pytest

from components.images.settings import parse_image_settings
from components.settings.limits import offering_problem
from components.settings.load import SettingsError
from components.settings.rules.cluster import known_regions, region_problem
from components.stamping.derive import derive
from components.tables import ec2_regional_prices as regional
from components.validate import parse
from tests.unit.helpers import raised_problems, settings_problems
from tests.unit.stamping.helpers import template, zoned
from tests.unit.test_settings_existing_aws import existing

POOL0 = "settings.nodePools[0].instanceType"
PIN = {"kubernetes": {"track": "1.34-classic", "snap": {"version": "v1.34.4", "revision": 5325}}}


def aws(region: str, *types: str) -> dict[str, Any]:
    return {"platform": "aws", "environment": "dev", "region": region,
            "nodePools": [{"name": f"p{i}", "instanceType": t} for i, t in enumerate(types)]}


# (region, type): every size of the table's gaps, as AWS's list had them on its date
UNLISTED = [(region, t) for region, types in sorted(regional.NOT_LISTED.items()) for t in types]


def test_the_table_has_gaps_to_judge() -> None:
    # eu-west-1 has no g6/g6e, eu-west-2 no g6e, ap-southeast-1 no g5/g6/g6e (the extract's rows)
    assert {r for r, _ in UNLISTED} == {"eu-west-1", "eu-west-2", "ap-southeast-1"} and len(UNLISTED) == 48


@pytest.mark.parametrize(("region", "itype"), UNLISTED)
def test_every_unlisted_size_is_refused_in_its_region(region: str, itype: str) -> None:
    why = settings_problems(aws(region, itype))[POOL0]
    assert why.startswith(f"{itype} is not offered in {region}: AWS's price list of 2026-09-17")
    assert "giantswarm/cluster-manager@435775f" in why and regional.LOCATIONS[region] in why


@pytest.mark.parametrize(("region", "itype"), [
    ("eu-west-1", "g5.xlarge"), ("eu-west-1", "g4dn.12xlarge"), ("eu-west-2", "g6.xlarge"),
    ("ap-southeast-1", "g4dn.xlarge"), ("eu-central-1", "g6e.12xlarge"), ("us-east-1", "g6.xlarge"),
    # not judged: a family the table does not cover, a Region it does not cover
    ("eu-west-1", "p5.48xlarge"), ("us-east-2", "g6.xlarge"), ("ap-southeast-7", "g6e.xlarge"),
])
def test_what_the_region_lists_or_the_table_cannot_tell_is_accepted(region: str, itype: str) -> None:
    assert offering_problem(itype, region) is None


def test_the_message_names_where_it_is_offered_and_what_the_region_has_instead() -> None:
    why = offering_problem("g6.xlarge", "eu-west-1")
    assert why is not None
    assert "Regions that list it: eu-central-1, eu-north-1, eu-west-2, us-east-1, us-west-2" in why
    assert "sizes eu-west-1 lists in other families: g4dn.xlarge, g5.xlarge" in why
    assert "update components/tables/ec2_regional_prices.py" in why


def test_every_pool_is_named_in_one_message_and_the_offered_one_is_not() -> None:
    problems = settings_problems(aws("eu-west-1", "g6.xlarge", "g5.xlarge", "g6e.12xlarge"))
    assert {p for p in problems if p.endswith("instanceType")} == {POOL0, "settings.nodePools[2].instanceType"}


def test_a_misspelt_type_is_named_once_as_a_misspelling() -> None:
    why = settings_problems(aws("eu-west-1", "g6.xlarg"))[POOL0]
    assert "is not an EC2 instance type" in why and "not offered" not in why


def test_an_autoscaled_pool_on_an_existing_cluster_on_aws_is_judged_and_a_pool_it_does_not_launch_is_not() -> None:
    raw = existing(region="eu-west-1")
    assert "not offered in eu-west-1" in settings_problems(raw)[POOL0]
    raw["nodePools"].append({"name": "site", "instanceType": "g6.xlarge"})  # the site's own nodes: not launched here
    assert {p for p in settings_problems(raw) if p.endswith("instanceType")} == {POOL0}
    raw["region"] = "eu-west-2"  # lists g6
    assert parse(raw).region == "eu-west-2"


@pytest.mark.parametrize(("raw", "why"), [
    ({"region": "eu-west-1", **PIN}, "g6.xlarge is not offered in eu-west-1"),  # the default gpu-node build type
    ({"region": "eu-west-2", "buildInstanceType": "g6e.xlarge", **PIN}, "g6e.xlarge is not offered in eu-west-2"),
])
def test_an_image_line_cannot_build_on_a_type_its_region_lacks(raw: dict[str, Any], why: str) -> None:
    problems = dict(raised_problems(parse_image_settings, raw, "t"))
    assert why in problems["image.buildInstanceType"]


def test_an_image_line_builds_where_its_type_is_offered() -> None:
    assert parse_image_settings({"region": "eu-west-1", "buildInstanceType": "g5.xlarge", **PIN}, "t").region == (
        "eu-west-1")


def test_stamping_a_template_into_a_region_without_its_types_is_refused_naming_the_pool() -> None:
    config, settings = template("aws-prod")  # its l40s pool is g6e.12xlarge
    with pytest.raises(SettingsError) as err:
        derive("aws-prod", config, settings, "eu-west-2", zoned("eu-west-2", {"backup": {"region": "eu-central-1"}}))
    assert any(path.endswith("instanceType") and "g6e.12xlarge is not offered in eu-west-2" in reason
               for path, reason in err.value.problems)
    assert derive("aws-prod", config, settings, "eu-central-1",
                  zoned("eu-central-1", {"backup": {"region": "eu-west-2"}})).settings.region == (
        "eu-central-1")


@pytest.mark.parametrize("region", sorted(known_regions()))
def test_every_region_botocore_knows_is_a_region(region: str) -> None:
    assert region_problem(region) is None  # eusc-de-east-1 included: its prefix has four letters


@pytest.mark.parametrize(("region", "words"), [
    ("eu-west-9", "no AWS region botocore"), ("EU-WEST-1", "not an AWS region name"),
    ("us-east-1a", "not an AWS region name"), ("eusc-de-east-9", "not an AWS region name"),
])
def test_a_region_botocore_does_not_know_is_refused(region: str, words: str) -> None:
    assert words in (region_problem(region) or "")

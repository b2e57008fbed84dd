"""components/tables/ec2_regional_prices.py: EC2 On-Demand prices outside us-east-1, copied from
giantswarm/cluster-manager internal/compose/prices_table.go at 435775f (AWS's price list of
2026-09-17). Its us-east-1 rows must equal the pinned Karpenter table's (components/tables/
ec2_prices.py), row for row: two independent extracts of AWS's list agreeing is the evidence that
the copy is faithful. The counts below are written down from the source file."""

from __future__ import annotations

import pytest

from components.tables import ec2_prices
from components.tables import ec2_regional_prices as regional
from components.tables.instance_types import GPU_INSTANCE_TYPES

US_EAST_1 = sorted(regional.ON_DEMAND["us-east-1"])


def test_the_source_is_named_with_its_commit_date_and_aws_price_list() -> None:
    assert regional.SOURCE_REPOSITORY == "github.com/giantswarm/cluster-manager"
    assert regional.SOURCE_FILE == "internal/compose/prices_table.go"
    assert regional.SOURCE_COMMIT.startswith("435775f") and len(regional.SOURCE_COMMIT) == 40
    assert regional.PRICE_AS_OF == "2026-09-17"
    assert regional.AWS_PRICE_LIST == ("https://b0.p.awsstatic.com/pricing/2.0/meteredUnitMaps/ec2/USD/current/"
                                       "ec2-ondemand-without-sec-sel/<location>/Linux/index.json")
    doc = regional.__doc__ or ""
    for fact in ("435775f02cf9e366ea7f4f037f23d25c0c5b872c", "2026-09-17", "internal/compose/prices_table.go",
                 "hack/aws-on-demand-prices.py", "ec2-ondemand-without-sec-sel"):
        assert fact in doc.replace("\n  ", "")


@pytest.mark.parametrize("instance_type", US_EAST_1)
def test_us_east_1_agrees_with_the_karpenter_table(instance_type: str) -> None:
    assert regional.ON_DEMAND["us-east-1"][instance_type] == ec2_prices.ON_DEMAND["us-east-1"][instance_type]


def test_every_row_is_a_type_of_the_gpu_table_in_the_source_families() -> None:
    assert len(US_EAST_1) == 31  # g4dn 7, g5 8, g6 8, g6e 8
    assert set(regional.LOCATIONS) == set(regional.ON_DEMAND)
    for region, rows in regional.ON_DEMAND.items():
        for t, usd in rows.items():
            assert t in GPU_INSTANCE_TYPES and t.split(".")[0] in regional.FAMILIES, (region, t)
            assert usd > 0, (region, t)


@pytest.mark.parametrize(("region", "rows", "not_listed_families"), [
    # written down from prices_table.go (435775f): rows per region, families with no row
    ("eu-central-1", 31, set()),
    ("eu-west-1", 15, {"g6", "g6e"}),
    ("eu-west-2", 23, {"g6e"}),
    ("eu-north-1", 31, set()),
    ("us-east-1", 31, set()),
    ("us-west-2", 31, set()),
    ("ap-southeast-1", 7, {"g5", "g6", "g6e"}),
])
def test_each_region_prices_or_lists_as_absent_every_size_of_the_families(
        region: str, rows: int, not_listed_families: set[str]) -> None:
    priced = set(regional.ON_DEMAND[region])
    absent = set(regional.NOT_LISTED.get(region, ()))
    assert len(priced) == rows and not priced & absent
    assert priced | absent == set(US_EAST_1)  # every size the source lists anywhere
    assert {t.split(".")[0] for t in absent} == not_listed_families
    assert len(absent) == len(regional.NOT_LISTED.get(region, ()))  # no duplicates


def test_the_source_tests_own_absence_claim() -> None:
    # prices_test.go: "AWS lists no on-demand g6.xlarge in EU (Ireland) (eu-west-1)"
    assert "g6.xlarge" in regional.NOT_LISTED["eu-west-1"] and "g6.xlarge" not in regional.ON_DEMAND["eu-west-1"]
    assert regional.LOCATIONS["eu-west-1"] == "EU (Ireland)"
    # prices_test.go: g6.xlarge 1.0064 and g6.2xlarge 1.22249 in Frankfurt, 0.8048 in Virginia
    assert regional.ON_DEMAND["eu-central-1"]["g6.xlarge"] == 1.0064
    assert regional.ON_DEMAND["eu-central-1"]["g6.2xlarge"] == 1.22249
    assert regional.ON_DEMAND["us-east-1"]["g6.xlarge"] == 0.8048

"""What a stack costs (components/plan/cost.py, docs/cost.md): every expected number here is worked out
from the price TABLES (components/tables/ec2_prices.py, ec2_regional_prices.py, prices.py) and counts
written down from the committed stack files, never read back from the code that computes them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from components.cli.main import main
from components.plan.cost import (
    CAPACITY_BLOCK,
    IMAGE_BUILD_HOURS,
    SPOT,
    ClusterCost,
    cluster_cost,
    document,
    image_line_cost,
    summary_line,
    table_lines,
    total_line,
)
from components.settings.model import Settings
from components.tables.ec2_prices import GENERATED_AT, ON_DEMAND
from components.tables.ec2_regional_prices import ON_DEMAND as REGIONAL
from components.tables.ec2_regional_prices import PRICE_AS_OF
from components.tables.paths import PROJECT_DIR
from components.tables.prices import PRICES, READ_ON
from components.validate import load_stack

STACKS = PROJECT_DIR / "stacks"
EC2 = ON_DEMAND["us-east-1"]
US = {k: p.usd for k, p in PRICES["us-east-1"].items()}
GB_HOUR = US["ebs-gp3-gb-month"] / 730  # one GiB of gp3 an hour
DATES = f"prices of {GENERATED_AT[:10]} and {READ_ON}"
# eu-west-1: EC2 from the regional table (g4dn/g5 only: AWS's price list of PRICE_AS_OF has no On-Demand
# g6 or g6e there), nothing else (prices.py is us-east-1 only).
NO_EU_G6 = (f"g6.xlarge has no On-Demand price in eu-west-1 in AWS's price list of {PRICE_AS_OF} "
            "(giantswarm/cluster-manager@435775f)")
NO_EU_M7I = "no price for m7i.xlarge in eu-west-1 in the table"
LIST_HINT = "(`ck8s-gpu plan --cost` lists the line items)"


def _settings(**raw: Any) -> Settings:
    base: dict[str, Any] = {"platform": "aws", "environment": "dev", "region": "us-east-1"}
    return Settings.model_validate({**base, **raw})


def _items(cost: ClusterCost) -> dict[str, Any]:
    return {i.what: i for i in cost.items}


def _money(x: float) -> str:
    return f"${x:,.2f}"


# --- the committed stacks, against the table --------------------------------------------------------

@dataclass(frozen=True)
class StackFacts:
    """What a committed stack file says it creates, written down by reading it (never from the code)."""
    nodes: tuple[tuple[str, int, int, int, int], ...]  # (instance type, count at min, desired, max, root GiB)
    nats: int  # NAT gateways, one Elastic IP each
    nlb_addresses: int  # public IPv4 addresses of an internet-facing API load balancer (one a zone)
    endpoint_zones: int  # interface endpoints x private subnets
    region: str = "us-east-1"
    # (index in `nodes`, the pool's capacityReservation.instanceCount): an On-Demand Capacity Reservation
    # bills every reserved instance, so those the pool does not run at a size are billed beside it.
    reserved: tuple[tuple[int, int], ...] = ()


STACK_FACTS = {
    # controlPlane: count 3 (rootVolumeGiB: the default, 100); pool l40s (root: the default, 200); pool h100,
    # rootVolumeGiB 500, on an On-Demand Capacity Reservation of instanceCount 4; natGateways per-az over
    # azCount 3; apiLoadBalancer internal.
    "aws-prod": StackFacts((("m7i.2xlarge", 3, 3, 3, 100), ("g6e.12xlarge", 2, 2, 8, 200),
                            ("p5.48xlarge", 2, 2, 4, 500)), nats=3, nlb_addresses=0, endpoint_zones=0,
                           reserved=((2, 4),)),
    # one control plane; pool l4 1/1/3; natGateways: the default, single; internet-facing over the default 2 zones.
    "aws-dev": StackFacts((("m7i.xlarge", 1, 1, 1, 100), ("g6.xlarge", 1, 1, 3, 200)),
                          nats=1, nlb_addresses=2, endpoint_zones=0),
    # autoscaled from zero to autoscaling.maxSize (h100 4, l4 6); apiLoadBalancer: the default, internal.
    "aws-elastic": StackFacts((("m7i.xlarge", 1, 1, 1, 100), ("p5.48xlarge", 0, 0, 4, 200),
                               ("g6.xlarge", 0, 0, 6, 200)), nats=1, nlb_addresses=0, endpoint_zones=0),
    # natGateways none, endpoints create: 8 interface services (ssm, ssmmessages, ec2messages, secretsmanager,
    # ec2, elasticloadbalancing; ecr.api and ecr.dkr for its ECR mirror: docs/offline.md) in each of the 2
    # zones; internal API.
    "aws-airgap": StackFacts((("m7i.xlarge", 1, 1, 1, 100), ("g6.xlarge", 1, 1, 3, 200)),
                             nats=0, nlb_addresses=0, endpoint_zones=16),
}


def _expected(facts: StackFacts) -> tuple[float, float, float]:
    out = []
    for at in (1, 2, 3):
        nodes = sum(n[at] * (EC2[n[0]] + n[4] * GB_HOUR) for n in facts.nodes)
        nodes += sum(max(0, count - facts.nodes[i][at]) * EC2[facts.nodes[i][0]] for i, count in facts.reserved)
        out.append(nodes + facts.nats * (US["nat-gateway-hour"] + US["public-ipv4-hour"]) + US["nlb-hour"]
                   + facts.nlb_addresses * US["public-ipv4-hour"] + facts.endpoint_zones * US["vpc-endpoint-az-hour"])
    return out[0], out[1], out[2]


def _prod_expected() -> tuple[float, float, float]:
    return _expected(STACK_FACTS["aws-prod"])


def test_every_committed_aws_stack_is_written_down() -> None:
    aws = {p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in STACKS.glob("Pulumi.*.yaml")
           if load_stack(p).platform == "aws"}
    assert aws == set(STACK_FACTS)


@pytest.mark.parametrize("stack", sorted(STACK_FACTS))
def test_the_stack_file_says_what_the_expected_numbers_count(stack: str) -> None:
    facts, s = STACK_FACTS[stack], load_stack(STACKS / f"Pulumi.{stack}.yaml")
    cp = s.control_plane
    nodes = [(cp.instance_type, cp.count, cp.count, cp.count, cp.root_volume_gib)] + [
        (p.instance_type, *((p.autoscaling.min_size,) * 2 if p.autoscaling else (p.min_size, p.desired_size)),
         p.autoscaling.max_size if p.autoscaling else p.max_size, p.root_volume_gib) for p in s.node_pools]
    assert tuple(nodes) == facts.nodes
    assert tuple((i + 1, p.capacity_reservation.instance_count) for i, p in enumerate(s.node_pools)
                 if p.capacity_reservation is not None and p.capacity_reservation.instance_count is not None
                 ) == facts.reserved
    assert s.region == facts.region
    assert {"single": 1, "per-az": s.network.az_count, "none": 0}[s.network.nat_gateways] == facts.nats
    assert (s.network.az_count if cp.api_load_balancer == "internet-facing" else 0) == facts.nlb_addresses
    assert (s.network.endpoints == "create") == (facts.endpoint_zones > 0)


@pytest.mark.parametrize("stack", sorted(STACK_FACTS))
def test_every_committed_stack_costs_what_the_table_says(stack: str) -> None:
    lo, mid, hi = _expected(STACK_FACTS[stack])
    cost = cluster_cost(load_stack(STACKS / f"Pulumi.{stack}.yaml"), stack)
    assert cost.complete, [i.unpriced for i in cost.unpriced]
    assert cost.hourly == pytest.approx((lo, mid, hi))
    assert summary_line(cost) == (f"cost: {_money(lo)}/h min, {_money(mid)}/h desired, {_money(hi)}/h max "
                                  f"(On-Demand, us-east-1, {DATES})")
    assert cost.monthly == pytest.approx((lo * 730, mid * 730, hi * 730))


def test_prod_costs_what_it_cost_when_the_table_was_read() -> None:
    # $242.71/h at the minimum and desired sizes, $305.91/h at the maximum (EC2 prices of 2026-07-20): the
    # $132.63/h the nodes and network cost, plus the 2 of the h100 pool's 4 reserved p5.48xlarge it does not
    # run at 2 nodes (2 x $55.04); at maxSize 4 it runs all of them.
    assert [round(x, 2) for x in _prod_expected()] == [242.71, 242.71, 305.91]
    assert round(2 * EC2["p5.48xlarge"], 2) == 110.08


@pytest.mark.parametrize("stack", sorted(STACK_FACTS))
def test_docs_cost_md_shows_what_the_plan_prints(stack: str) -> None:
    """docs/cost.md's table of the committed stacks is the plan's own numbers: it fails when they part."""
    lo, mid, hi = cluster_cost(load_stack(STACKS / f"Pulumi.{stack}.yaml"), stack).hourly
    rows = [line for line in (PROJECT_DIR / "docs" / "cost.md").read_text().splitlines()
            if line.startswith(f"| `{stack}` |")]
    assert rows == [f"| `{stack}` | us-east-1 | {_money(lo)} | {_money(mid)} | {_money(hi)} | {_money(mid * 730)} |"]


def test_an_eu_west_1_pool_is_priced_from_the_regional_table_with_its_source_and_date() -> None:
    g5 = REGIONAL["eu-west-1"]["g5.xlarge"]  # 1.123 in prices_table.go of 435775f
    pool = {"name": "a10g", "instanceType": "g5.xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 2}
    cost = cluster_cost(_settings(region="eu-west-1", nodePools=[pool]), "eu")
    item = _items(cost)["pool a10g (g5.xlarge, on-demand)"]
    assert item.unit == g5 and item.hourly == pytest.approx((g5, g5, 2 * g5))
    assert cost.hourly == pytest.approx((g5, g5, 2 * g5))  # nothing else has a eu-west-1 price
    assert summary_line(cost).startswith(
        f"cost: at least {_money(g5)}/h min, {_money(g5)}/h desired, {_money(2 * g5)}/h max "
        f"(On-Demand, eu-west-1, prices of {PRICE_AS_OF}); not priced: control planes (m7i.xlarge) ({NO_EU_M7I})")
    assert cost.sources == (
        "EC2 On-Demand, eu-west-1: AWS's price list of 2026-09-17 (https://b0.p.awsstatic.com/pricing/2.0/"
        "meteredUnitMaps/ec2/USD/current/ec2-ondemand-without-sec-sel/<location>/Linux/index.json, location "
        "\"EU (Ireland)\"), as extracted to github.com/giantswarm/cluster-manager internal/compose/prices_table.go "
        "at 435775f (PriceAsOf 2026-09-17; families g4dn, g5, g6, g6e)",)
    row = next(line for line in table_lines(cost) if line.startswith("pool a10g (g5.xlarge, on-demand)"))
    assert row.split()[-5:] == [f"{g5:.4f}", f"{g5:,.2f}", f"{g5:,.2f}", f"{2 * g5:,.2f}", f"{g5 * 730:,.2f}"]


def test_a_size_aws_lists_no_on_demand_price_for_says_so() -> None:
    cost = cluster_cost(_settings(region="eu-west-1", nodePools=[{"name": "l4", "instanceType": "g6.xlarge"}]))
    item = _items(cost)["pool l4 (g6.xlarge, on-demand)"]
    assert (item.unit, item.unpriced) == (None, NO_EU_G6)
    assert NO_EU_G6 in summary_line(cost)
    spot = cluster_cost(_settings(region="eu-west-1", nodePools=[
        {"name": "l4", "instanceType": "g6.xlarge", "capacityType": "spot"}]))
    assert _items(spot)["pool l4 (g6.xlarge, spot)"].note == ""  # no On-Demand ceiling to show


def test_us_east_1_keeps_the_karpenter_table() -> None:
    cost = cluster_cost(_settings(nodePools=[{"name": "l4", "instanceType": "g6.xlarge"}]))
    assert _items(cost)["pool l4 (g6.xlarge, on-demand)"].unit == EC2["g6.xlarge"]
    assert any("karpenter-provider-aws v1.15.0" in s for s in cost.sources)
    assert not any("cluster-manager" in s for s in cost.sources) and DATES in summary_line(cost)


# --- line items --------------------------------------------------------------------------------------

def test_control_planes_and_their_volumes() -> None:
    items = _items(cluster_cost(_settings(controlPlane={"count": 3, "instanceType": "m7i.xlarge",
                                                         "rootVolumeGiB": 50})))
    cp = items["control planes (m7i.xlarge)"]
    assert (cp.counts, cp.unit) == ((3, 3, 3), EC2["m7i.xlarge"])
    vol = items["control-plane root volumes (50 GiB gp3)"]
    assert vol.counts == (3, 3, 3) and vol.unit == pytest.approx(50 * GB_HOUR)


def test_a_fixed_pool_counts_its_min_desired_and_max_sizes() -> None:
    pool = {"name": "l4", "instanceType": "g6.xlarge", "minSize": 1, "desiredSize": 2, "maxSize": 5,
            "rootVolumeGiB": 300}
    items = _items(cluster_cost(_settings(nodePools=[pool])))
    nodes = items["pool l4 (g6.xlarge, on-demand)"]
    assert nodes.counts == (1, 2, 5) and nodes.hourly == pytest.approx(
        (EC2["g6.xlarge"], 2 * EC2["g6.xlarge"], 5 * EC2["g6.xlarge"]))
    assert items["pool l4 root volumes (300 GiB gp3)"].hourly == pytest.approx(
        (300 * GB_HOUR, 600 * GB_HOUR, 1500 * GB_HOUR))


def test_an_autoscaled_pool_starts_from_its_autoscaling_min_size() -> None:
    pools = [{"name": "h100", "instanceType": "p5.48xlarge", "autoscaling": {"maxSize": 4}},
             {"name": "warm", "instanceType": "g6.xlarge", "autoscaling": {"minSize": 1, "maxSize": 3}}]
    items = _items(cluster_cost(_settings(nodePools=pools)))
    assert items["pool h100 (p5.48xlarge, autoscaled, on-demand)"].hourly == pytest.approx(
        (0, 0, 4 * EC2["p5.48xlarge"]))
    assert items["pool warm (g6.xlarge, autoscaled, on-demand)"].counts == (1, 1, 3)


def test_spot_is_variable_and_left_out_of_the_totals() -> None:
    cost = cluster_cost(_settings(nodePools=[{"name": "s", "instanceType": "g6.xlarge", "capacityType": "spot"}]))
    spot = _items(cost)["pool s (g6.xlarge, spot)"]
    assert (spot.unit, spot.unpriced) == (None, SPOT)
    assert spot.note == f"at most the On-Demand ${EC2['g6.xlarge']:g}/h"
    assert not cost.complete
    assert summary_line(cost).startswith("cost: at least ")
    assert "not priced: pool s (g6.xlarge, spot) (variable (spot))" in summary_line(cost)
    assert any("Spot Instance prices are set by Amazon EC2" in s for s in cost.sources)


def test_a_capacity_block_is_priced_at_purchase() -> None:
    pool = {"name": "b", "instanceType": "p5.48xlarge", "availabilityZone": "us-east-1a",
            "capacityReservation": {"id": "cr-0123456789abcdef0", "marketType": "capacity-block"}}
    cost = cluster_cost(_settings(nodePools=[pool]))
    block = _items(cost)["pool b (p5.48xlarge, on-demand)"]
    assert (block.unit, block.unpriced) == (None, "Capacity Block: priced at purchase, not in the table")
    assert block.unpriced == CAPACITY_BLOCK
    assert _items(cost)["pool b root volumes (200 GiB gp3)"].unit is not None  # its volumes are EBS as ever


def test_an_on_demand_capacity_reservation_bills_the_on_demand_rate_and_says_so() -> None:
    pool = {"name": "r", "instanceType": "p5.48xlarge", "availabilityZone": "us-east-1a",
            "capacityReservation": {"id": "cr-0123456789abcdef0"}}
    cost = cluster_cost(_settings(nodePools=[pool]))
    item = _items(cost)["pool r (p5.48xlarge, on-demand)"]
    assert item.unit == EC2["p5.48xlarge"]
    assert "cr-0123456789abcdef0" in item.note and "running or not" in item.note
    assert any("charged at the equivalent On-Demand rate whether you run instances" in s for s in cost.sources)


@pytest.mark.parametrize(("network", "nats"), [
    ({"natGateways": "single"}, 1),
    ({"natGateways": "per-az", "azCount": 3}, 3),
    ({"natGateways": "none", "endpoints": "create"}, 0),
    ({"existing": {"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": ["subnet-1", "subnet-2"]}}, 0),
])
def test_nat_gateways_per_zone_as_the_network_makes_them(network: dict[str, Any], nats: int) -> None:
    items = _items(cluster_cost(_settings(network=network)))
    gateways = [i for w, i in items.items() if w.startswith("NAT gateways (")]
    if not nats:
        assert gateways == [] and "NAT gateways' public IPv4 addresses" not in items
        return
    assert [(g.counts, g.unit) for g in gateways] == [((nats,) * 3, US["nat-gateway-hour"])]
    assert items["NAT gateways' public IPv4 addresses"].hourly == pytest.approx((nats * US["public-ipv4-hour"],) * 3)


def test_the_api_load_balancer_and_its_public_addresses() -> None:
    internal = _items(cluster_cost(_settings()))
    assert internal["API load balancer (NLB, internal)"].unit == US["nlb-hour"]
    assert not any("load balancer's public" in w for w in internal)
    public = _items(cluster_cost(_settings(controlPlane={"apiLoadBalancer": "internet-facing"},
                                           network={"azCount": 3})))
    assert public["API load balancer (NLB, internet-facing)"].counts == (1, 1, 1)
    assert public["API load balancer's public IPv4 addresses (one a zone)"].hourly == pytest.approx(
        (3 * US["public-ipv4-hour"],) * 3)


def test_interface_endpoints_are_priced_per_zone() -> None:
    cost = cluster_cost(_settings(network={"natGateways": "none", "endpoints": "create"}))
    [endpoints] = [i for i in cost.items if i.what.startswith("VPC interface endpoints")]
    services = int(endpoints.what.split("(")[1].split()[0])
    assert endpoints.counts == (services * 2,) * 3  # one per service in each of the 2 zones' private subnets
    assert endpoints.unit == US["vpc-endpoint-az-hour"] == 0.01
    assert cost.complete and any("privatelink" in s for s in cost.sources)
    assert "interface endpoints also bill per GB they process (not in the totals: it follows the traffic)" in cost.notes
    eu = cluster_cost(_settings(region="eu-west-1", network={"natGateways": "none", "endpoints": "create"}))
    assert _items(eu)[endpoints.what].unpriced == "no price for eu-west-1 in the table"


def test_a_type_missing_from_a_known_region_is_named() -> None:
    assert "p5e.48xlarge" not in EC2
    cost = cluster_cost(_settings(nodePools=[{"name": "h200", "instanceType": "p5e.48xlarge"}]))
    assert _items(cost)["pool h200 (p5e.48xlarge, on-demand)"].unpriced == (
        "no price for p5e.48xlarge in us-east-1 in the table")


def test_an_unknown_region_prices_nothing_and_guesses_nothing() -> None:
    cost = cluster_cost(_settings(region="ap-southeast-7"), "far")
    assert summary_line(cost) == ("cost: no price for ap-southeast-7 in the table "
                                  "(`ck8s-gpu plan --cost` lists the line items)")
    assert {i.unpriced for i in cost.items} == {"no price for ap-southeast-7 in the table"}
    assert cost.sources == () and document(cost)["complete"] is False


@pytest.mark.parametrize("platform", ["kind", "local", "existing"])
def test_other_platforms_create_nothing_to_price(platform: str) -> None:
    cost = cluster_cost(Settings.model_validate({"platform": platform}), "x")
    assert cost.items == ()
    assert summary_line(cost) == f"cost: not priced: platform {platform} creates no AWS resources"


def test_the_sum_over_stamped_stacks_says_what_it_left_out() -> None:
    a = cluster_cost(_settings(), "a")
    b = cluster_cost(_settings(region="us-east-2"), "b")  # in no table
    assert total_line([a, a]) == (f"total: {_money(2 * a.hourly[0])}/h min, {_money(2 * a.hourly[1])}/h desired, "
                                  f"{_money(2 * a.hourly[2])}/h max")
    assert total_line([a, b]).startswith("total: at least ") and total_line([a, b]).endswith("(not priced in full: b)")
    assert total_line([b, b]) == "total: not priced (b, b)"


# --- the image pipeline --------------------------------------------------------------------------------

def test_an_image_line_per_build_and_per_month_from_the_table() -> None:
    line = image_line_cost("img", "us-east-1", ["us-east-1"], "g6.xlarge", 60, "weekly", 8)
    per_build = (EC2["g6.xlarge"] + 60 * GB_HOUR) * 0.5  # half an hour a build (components/images/settings.py)
    assert IMAGE_BUILD_HOURS == 0.5
    assert line.per_build == pytest.approx(per_build)
    snapshots = 8 * 60 * US["ebs-snapshot-gb-month"]  # the last 8 AMIs, each at most its 60 GiB volume
    assert line.storage == (("us-east-1", pytest.approx(snapshots)),)
    assert line.monthly == pytest.approx(730 / 168 * per_build + snapshots)
    text = "\n".join(line.lines())
    assert "weekly: 4.35 builds a month" in text and f"at most {_money(snapshots)} a month" in text


def test_an_image_line_without_a_lifecycle_policy_grows_and_a_manual_one_builds_on_demand() -> None:
    grows = image_line_cost("img", "us-east-1", ["us-east-1"], "g6.xlarge", 60, "weekly", None)
    assert grows.monthly is None and "unbounded: no lifecycle policy" in "\n".join(grows.lines())
    manual = image_line_cost("img", "us-east-1", ["us-east-1"], "m7i.large", 40, "manual", 4)
    assert manual.builds_per_month == 0
    assert manual.monthly == pytest.approx(4 * 40 * US["ebs-snapshot-gb-month"])


def test_an_image_line_built_in_a_region_without_prices_prices_what_it_can() -> None:
    line = image_line_cost("eu", "eu-west-1", ["eu-west-1", "us-east-1"], "g6.xlarge", 60, "weekly", 8)
    assert line.per_build is None and line.per_build_unpriced == NO_EU_G6
    assert line.storage == (("eu-west-1", None), ("us-east-1", pytest.approx(8 * 60 * US["ebs-snapshot-gb-month"])))
    assert line.monthly is None


# --- the commands ---------------------------------------------------------------------------------------

def test_plan_cost_prints_the_table_the_sources_and_the_image_lines(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "aws-prod", "--quiet", "--cost", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    lo, mid, hi = _prod_expected()
    summary = (f"cost: {_money(lo)}/h min, {_money(mid)}/h desired, {_money(hi)}/h max "
               f"(On-Demand, us-east-1, {DATES})")
    assert summary in out.splitlines()
    table = out.split("Cost of aws-prod (us-east-1), On-Demand USD; a month is 730 hours:\n")[1]
    row = next(line for line in table.splitlines() if line.startswith("pool h100 (p5.48xlarge, on-demand)"))
    assert row.split()[-5:] == ["55.0400", "110.08", "110.08", "220.16", "80,358.40"]
    assert row.split()[4] == "2/2/4"
    total = next(line for line in table.splitlines() if line.startswith("total"))
    assert total.split()[1:] == [f"{lo:,.2f}", f"{mid:,.2f}", f"{hi:,.2f}", f"{mid * 730:,.2f}"]
    assert f"a month (730 h): {_money(lo * 730)} min, {_money(mid * 730)} desired, {_money(hi * 730)} max" in table
    assert "https://aws.amazon.com/vpc/pricing/" in table and "karpenter-provider-aws v1.15.0" in table
    images = out.split("Node image lines this stack boots")[1]
    per_build = (EC2["g6.xlarge"] + 60 * GB_HOUR) * IMAGE_BUILD_HOURS
    assert f"us-east-1: builds on g6.xlarge in us-east-1 ({_money(per_build)} a build)" in images
    assert f"us-east-1: at most {_money(8 * 60 * US['ebs-snapshot-gb-month'])} a month" in images
    doc = json.loads((tmp_path / "cost.json").read_text())
    assert doc["hourly"] == pytest.approx({"min": lo, "desired": mid, "max": hi})
    assert doc["summary"] == summary and doc["complete"] is True and doc["hoursPerMonth"] == 730


def test_every_plan_ends_with_its_cost_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--stack", "aws-dev", "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    lo, mid, hi = _expected(STACK_FACTS["aws-dev"])
    assert lines[-1] == (f"cost: {_money(lo)}/h min, {_money(mid)}/h desired, {_money(hi)}/h max "
                         f"(On-Demand, us-east-1, {DATES})")
    assert lines[-2].split()[0] == "total"

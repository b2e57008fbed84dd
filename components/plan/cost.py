"""What a stack costs an hour, from the price tables (pure): components/tables/ec2_prices.py (EC2
On-Demand in us-east-1, generated from the pinned Karpenter provider),
components/tables/ec2_regional_prices.py (EC2 On-Demand of the g4dn/g5/g6/g6e families elsewhere, from
a dated extract of AWS's price list, with the sizes that list has no On-Demand price for) and
components/tables/prices.py (NAT, load balancer, public IPv4, EBS, snapshots; each price with its
source and date). docs/cost.md says what is in and what is not.

Every line item has a count at the pools' minimum, desired and maximum sizes (an autoscaled pool:
`autoscaling.minSize` at both minimum and desired, `autoscaling.maxSize` at maximum) and a unit price
per hour, or the reason it has none: a Region or type missing from the tables ("no price for <region>
in the table"), a size AWS's price list has no On-Demand price for in the Region ("<type> has no
On-Demand price in <region> in AWS's price list of <date>"), spot ("variable"), a Capacity Block
("priced at purchase"). An On-Demand Capacity Reservation whose size the settings declare
(`capacityReservation.instanceCount`) adds a line of the reserved instances the pool does not run
(instanceCount less the pool's count at each size, never below 0) at the On-Demand rate: AWS bills them,
running or not. Totals add the priced items only, and every summary says what was left out.
A month is 730 hours (tables/prices.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..aws.endpoints import planned_endpoints
from ..settings.model import NodePoolSettings, Settings
from ..tables import ec2_prices, ec2_regional_prices, prices
from ..tables.prices import HOURS_PER_MONTH, WEEKS_PER_MONTH, Price, Source

EC2_DATE = ec2_prices.GENERATED_AT[:10]
EC2_SOURCE = (f"EC2 On-Demand: {ec2_prices.SOURCE_MODULE} {ec2_prices.SOURCE_VERSION} {ec2_prices.SOURCE_FILE}, "
              f"generated {ec2_prices.GENERATED_AT} (Regions: {', '.join(sorted(ec2_prices.ON_DEMAND))})")
REGIONAL = ec2_regional_prices
REGIONAL_CITATION = f"{REGIONAL.SOURCE_REPOSITORY.removeprefix('github.com/')}@{REGIONAL.SOURCE_COMMIT[:7]}"


def regional_source(region: str) -> str:
    """The sources line of the regional EC2 table, for one Region."""
    return (f"EC2 On-Demand, {region}: AWS's price list of {REGIONAL.PRICE_AS_OF} ({REGIONAL.AWS_PRICE_LIST}, "
            f"location \"{REGIONAL.LOCATIONS[region]}\"), as extracted to "
            f"{REGIONAL.SOURCE_REPOSITORY} {REGIONAL.SOURCE_FILE} at {REGIONAL.SOURCE_COMMIT[:7]} "
            f"(PriceAsOf {REGIONAL.PRICE_AS_OF}; families {', '.join(REGIONAL.FAMILIES)})")


def not_listed(instance_type: str, region: str) -> str:
    return (f"{instance_type} has no On-Demand price in {region} in AWS's price list of {REGIONAL.PRICE_AS_OF} "
            f"({REGIONAL_CITATION})")


# An image build with its test, as the project documents it: "`pulumi up` builds the first image and
# waits for it (about half an hour)" (components/images/settings.py buildOnUp; ADR 0020: "an image
# build takes tens of minutes"). Not measured: CI has no AWS account (ADR 0020). The pipeline's
# create timeout, 120 minutes (components/images/component.py), bounds it.
IMAGE_BUILD_HOURS = 0.5
IMAGE_BUILD_HOURS_SOURCE = ("about half an hour a build (components/images/settings.py buildOnUp, ADR 0020; an "
                            "estimate, not measured), at most 2 h (the 120-minute build timeout)")
CAPACITY_BLOCK = "Capacity Block: priced at purchase, not in the table"
SPOT = "variable (spot)"

Counts = tuple[int, int, int]  # at the pools' minimum, desired and maximum sizes
Money = tuple[float, float, float]


def no_region(region: str | None) -> str:
    return f"no price for {region or 'an unset region'} in the table"


@dataclass(frozen=True)
class LineItem:
    what: str
    counts: Counts
    unit: float | None  # USD per hour for one counted thing; None: not priced (`unpriced` says why)
    unpriced: str = ""
    note: str = ""

    @property
    def hourly(self) -> Money | None:
        if self.unit is None:
            return None
        lo, mid, hi = self.counts
        return lo * self.unit, mid * self.unit, hi * self.unit


@dataclass(frozen=True)
class ClusterCost:
    stack: str
    platform: str
    region: str | None
    items: tuple[LineItem, ...] = ()
    notes: tuple[str, ...] = ()  # how AWS bills what the items cannot say (reservations, traffic)
    sources: tuple[str, ...] = ()  # every price or fact used, with where it comes from
    used_ec2: bool = False
    used_other: bool = False
    ec2_date: str = EC2_DATE  # the date of the EC2 table the Region is priced from

    @property
    def on_aws(self) -> bool:
        return self.platform == "aws"

    @property
    def unpriced(self) -> list[LineItem]:
        return [i for i in self.items if i.unit is None]

    @property
    def complete(self) -> bool:
        return self.on_aws and not self.unpriced

    @property
    def hourly(self) -> Money:
        """Sum over the priced items (all of them only when `complete`)."""
        sums = [i.hourly for i in self.items if i.hourly is not None]
        return (sum(s[0] for s in sums), sum(s[1] for s in sums), sum(s[2] for s in sums))

    @property
    def monthly(self) -> Money:
        lo, mid, hi = self.hourly
        return lo * HOURS_PER_MONTH, mid * HOURS_PER_MONTH, hi * HOURS_PER_MONTH

    @property
    def only_region_missing(self) -> bool:
        """Every line lacks a price only because the tables have none for the Region."""
        return {i.unpriced for i in self.items} <= {no_region(self.region)}

    @property
    def dates(self) -> str:
        days = ([self.ec2_date] if self.used_ec2 else []) + ([prices.READ_ON] if self.used_other else [])
        return " and ".join(dict.fromkeys(days))


class _Pricer:
    """Looks prices up for one Region, remembering which sources were used."""

    def __init__(self, region: str | None) -> None:
        self.region = region
        self.sources: dict[str, None] = {}
        self.used_ec2 = False
        self.used_other = False
        region = region or ""
        # us-east-1 from the pinned Karpenter table; elsewhere the regional extract of AWS's price list
        self.ec2_regional = region not in ec2_prices.ON_DEMAND and region in REGIONAL.ON_DEMAND
        self.ec2_table = (REGIONAL.ON_DEMAND if self.ec2_regional else ec2_prices.ON_DEMAND).get(region)
        self.ec2_date = REGIONAL.PRICE_AS_OF if self.ec2_regional else EC2_DATE
        self.ec2_source = regional_source(region) if self.ec2_regional else EC2_SOURCE

    def ec2(self, instance_type: str) -> tuple[float | None, str]:
        table = self.ec2_table
        if table is None:
            return None, no_region(self.region)
        if instance_type not in table:
            if self.ec2_regional and instance_type in REGIONAL.NOT_LISTED.get(self.region or "", ()):
                self.sources[self.ec2_source] = None  # the fact comes from it
                return None, not_listed(instance_type, self.region or "")
            return None, f"no price for {instance_type} in {self.region} in the table"
        self.used_ec2 = True
        self.sources[self.ec2_source] = None
        return table[instance_type], ""

    def other(self, key: str) -> Price | None:
        found = prices.price(self.region, key)
        if found is not None:
            self.used_other = True
            self.sources[source_line(found)] = None
        return found

    def hourly(self, key: str, per: float = 1.0) -> tuple[float | None, str]:
        """A price per hour (`per` units of it); a GB-month price is divided by the 730-hour month."""
        found = self.other(key)
        if found is None:
            return None, no_region(self.region)
        usd = found.usd / HOURS_PER_MONTH if key.endswith("-month") else found.usd
        return usd * per, ""

    def fact(self, source: Source) -> None:
        self.sources[fact_line(source)] = None


def source_line(p: Price) -> str:
    s = p.source
    read = s.aws_page if s.read_from == s.aws_page else f"{s.aws_page}, read from {s.read_from}"
    return f"${p.usd:g} {p.unit}: {read} on {s.read_on}" + (f" ({s.note})" if s.note else "")


def fact_line(s: Source) -> str:
    read = s.aws_page if s.read_from == s.aws_page else f"{s.aws_page}, read from {s.read_from}"
    return f"\"{s.quote}\": {read} on {s.read_on}" + (f" ({s.note})" if s.note else "")


def _volume(p: _Pricer, what: str, gib: int, counts: Counts) -> LineItem:
    unit, why = p.hourly(prices.EBS_GP3_GB_MONTH, per=gib)
    return LineItem(f"{what} root volumes ({gib} GiB gp3)", counts, unit, why)


def pool_counts(pool: NodePoolSettings) -> Counts:
    if pool.autoscaling is not None:  # Karpenter starts from autoscaling.minSize (default 0)
        return pool.autoscaling.min_size, pool.start_size, pool.max_nodes
    return pool.min_size, pool.desired_size, pool.max_size


def _pool(p: _Pricer, pool: NodePoolSettings) -> Iterable[LineItem]:
    counts = pool_counts(pool)
    kind = "autoscaled, " if pool.autoscaling is not None else ""
    what = f"pool {pool.name} ({pool.instance_type}, {kind}{pool.capacity_type})"
    reservation = pool.capacity_reservation
    if pool.on_capacity_block:
        p.fact(prices.CAPACITY_BLOCK_BILLING)
        yield LineItem(what, counts, None, CAPACITY_BLOCK)
    elif pool.capacity_type == "spot":
        p.fact(prices.SPOT_BILLING)
        unit, _ = p.ec2(pool.instance_type)
        yield LineItem(what, counts, None, SPOT,
                       note=f"at most the On-Demand ${unit:g}/h" if unit is not None else "")
    else:
        unit, why = p.ec2(pool.instance_type)
        note = ""
        unused: Counts | None = None
        if reservation is not None:
            p.fact(prices.CAPACITY_RESERVATION_BILLING)
            held = reservation.id or reservation.resource_group_arn
            size = reservation.instance_count
            if size is None:
                note = (f"On-Demand Capacity Reservation {held}: billed at the On-Demand rate for every reserved "
                        "instance, running or not; its size is not in the settings (declare "
                        "capacityReservation.instanceCount; `ck8s-gpu preflight` reads it), so unused reserved "
                        "instances are not in the totals")
            else:
                lo, mid, hi = (max(0, size - n) for n in counts)
                unused = (lo, mid, hi)
                note = (f"On-Demand Capacity Reservation {held} of {size} instance(s) (instanceCount): billed at the "
                        "On-Demand rate for every reserved instance, running or not; "
                        + ("the ones the pool does not run are their own line" if any(unused)
                           else "the pool runs every one at each size"))
        yield LineItem(what, counts, unit, why, note)
        if unused is not None and any(unused):
            yield LineItem(f"pool {pool.name} reserved, not running ({held})", unused, unit, why)
    yield _volume(p, f"pool {pool.name}", pool.root_volume_gib, counts)


def cluster_cost(settings: Settings, stack: str = "") -> ClusterCost:
    """What the stack's cluster program creates, per hour; nothing on a platform that creates no AWS resources."""
    if settings.platform != "aws":
        return ClusterCost(stack, settings.platform, settings.region)
    p = _Pricer(settings.region)
    cp, net = settings.control_plane, settings.network
    items: list[LineItem] = []
    notes: list[str] = []

    unit, why = p.ec2(cp.instance_type)
    fixed: Counts = (cp.count, cp.count, cp.count)
    items.append(LineItem(f"control planes ({cp.instance_type})", fixed, unit, why))
    items.append(_volume(p, "control-plane", cp.root_volume_gib, fixed))
    for pool in settings.node_pools:
        items.extend(_pool(p, pool))

    zones = net.az_count
    if net.existing is None:
        nats = {"single": 1, "per-az": zones, "none": 0}[net.nat_gateways]
        if nats:
            unit, why = p.hourly(prices.NAT_GATEWAY_HOUR)
            items.append(LineItem(f"NAT gateways ({net.nat_gateways})", (nats,) * 3, unit, why))
            unit, why = p.hourly(prices.PUBLIC_IPV4_HOUR)
            items.append(LineItem("NAT gateways' public IPv4 addresses", (nats,) * 3, unit, why))
            per_gb = p.other(prices.NAT_GATEWAY_GB)
            notes.append(f"NAT gateways also bill ${per_gb.usd:g} per GB they process (not in the totals: it "
                         "follows the traffic)" if per_gb else
                         f"NAT gateways also bill per GB they process ({no_region(settings.region)})")
    public_subnets = len(net.existing.public_subnet_ids) if net.existing is not None else zones
    private_subnets = len(net.existing.private_subnet_ids) if net.existing is not None else zones

    unit, why = p.hourly(prices.NLB_HOUR)
    items.append(LineItem(f"API load balancer (NLB, {cp.api_load_balancer})", (1, 1, 1), unit, why))
    if cp.api_load_balancer == "internet-facing":
        unit, why = p.hourly(prices.PUBLIC_IPV4_HOUR)
        items.append(LineItem("API load balancer's public IPv4 addresses (one a zone)", (public_subnets,) * 3,
                              unit, why))
    notes.append("the load balancer also bills NLCU-hours, which follow the traffic (not in the totals)")

    interface = [e for e, _ in planned_endpoints(settings, existing_vpc=net.existing is not None)
                 if e.kind == "Interface"]
    if interface:
        n = len(interface) * private_subnets
        unit, why = p.hourly(prices.VPC_ENDPOINT_AZ_HOUR)
        items.append(LineItem(f"VPC interface endpoints ({len(interface)} services x {private_subnets} zones)",
                              (n, n, n), unit, why))
        notes.append("interface endpoints also bill per GB they process (not in the totals: it follows the traffic)")
    notes.append("not included: data transfer, backups' S3 storage, ECR storage, Secrets Manager secrets, "
                 "CloudWatch, taxes (docs/cost.md)")
    return ClusterCost(stack, "aws", settings.region, tuple(items), tuple(notes), tuple(p.sources),
                       p.used_ec2, p.used_other, p.ec2_date)


def _usd(x: float) -> str:
    return f"${x:,.2f}"


def summary_line(cost: ClusterCost) -> str:
    """The one line every plan summary gets."""
    if not cost.on_aws:
        return f"cost: not priced: platform {cost.platform} creates no AWS resources"
    if not cost.used_ec2 and not cost.used_other:
        if cost.only_region_missing:
            return f"cost: {no_region(cost.region)} (`ck8s-gpu plan --cost` lists the line items)"
        reasons = dict.fromkeys(i.unpriced for i in cost.unpriced)  # nothing priced: each reason once
        return f"cost: not priced: {'; '.join(reasons)} (`ck8s-gpu plan --cost` lists the line items)"
    lo, mid, hi = cost.hourly
    head = "cost: " + ("" if cost.complete else "at least ")
    line = (f"{head}{_usd(lo)}/h min, {_usd(mid)}/h desired, {_usd(hi)}/h max "
            f"(On-Demand, {cost.region}, prices of {cost.dates})")
    if cost.unpriced:
        line += "; not priced: " + ", ".join(f"{i.what} ({i.unpriced})" for i in cost.unpriced)
    return line


def total_line(costs: Sequence[ClusterCost]) -> str:
    """The sum over several stacks (`stamp`): priced items only, and says so."""
    lo = sum(c.hourly[0] for c in costs)
    mid = sum(c.hourly[1] for c in costs)
    hi = sum(c.hourly[2] for c in costs)
    left = [c.stack for c in costs if c.on_aws and not c.complete]
    if not any(c.used_ec2 or c.used_other for c in costs):
        return f"total: not priced ({', '.join(left) or 'nothing on AWS'})"
    head = "total: " + ("at least " if left else "")
    return (f"{head}{_usd(lo)}/h min, {_usd(mid)}/h desired, {_usd(hi)}/h max"
            + (f" (not priced in full: {', '.join(left)})" if left else ""))


def table_lines(cost: ClusterCost) -> list[str]:
    """`plan --cost`: the line items, the totals, the notes, the sources."""
    title = f"Cost of {cost.stack or 'the stack'}"
    if not cost.on_aws:
        return [f"{title}: platform {cost.platform} creates no AWS resources: nothing to price"]
    rows = [("item", "count min/desired/max", "unit $/h", "$/h min", "$/h desired", "$/h max", "$/month desired")]
    for i in cost.items:
        count = "/".join(str(c) for c in i.counts)
        if i.hourly is None or i.unit is None:
            rows.append((i.what, count, i.unpriced, "", "", "", ""))
            continue
        lo, mid, hi = i.hourly
        rows.append((i.what, count, f"{i.unit:.4f}", f"{lo:,.2f}", f"{mid:,.2f}", f"{hi:,.2f}",
                     f"{mid * HOURS_PER_MONTH:,.2f}"))
    priced = cost.used_ec2 or cost.used_other
    if priced:
        lo, mid, hi = cost.hourly
        rows.append(("total" + ("" if cost.complete else " (priced items only)"), "", "", f"{lo:,.2f}",
                     f"{mid:,.2f}", f"{hi:,.2f}", f"{mid * HOURS_PER_MONTH:,.2f}"))
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    out = [f"{title} ({cost.region}), On-Demand USD; a month is {HOURS_PER_MONTH} hours:"]
    for r in rows:
        cells = [r[0].ljust(widths[0]), r[1].ljust(widths[1]),
                 *(c.rjust(w) if c and (c[0].isdigit() or c[0] == "-") else c.ljust(w)
                   for c, w in zip(r[2:], widths[2:], strict=True))]
        out.append("  ".join(cells).rstrip())
    if priced:
        mlo, mmid, mhi = cost.monthly
        out.append(f"a month ({HOURS_PER_MONTH} h): {_usd(mlo)} min, {_usd(mmid)} desired, {_usd(mhi)} max"
                   + ("" if cost.complete else " (priced items only)"))
    elif cost.only_region_missing:
        out.append(f"total: not priced: {no_region(cost.region)}")
    else:
        out.append("total: not priced: no line item has a price (each says why below)")
    for i in cost.items:
        if i.note:
            out.append(f"note: {i.what}: {i.note}")
    out += [f"note: {n}" for n in cost.notes]
    by_reason: dict[str, list[str]] = {}
    for i in cost.unpriced:
        by_reason.setdefault(i.unpriced, []).append(i.what)
    out += [f"not priced ({why}): {', '.join(whats)}" for why, whats in by_reason.items()]
    out.append("sources:")
    out += [f"  {s}" for s in cost.sources] or ["  none: nothing was priced"]
    return out


def document(cost: ClusterCost) -> dict[str, Any]:
    """The same as JSON (`plan --cost --out`: cost.json)."""
    lo, mid, hi = cost.hourly
    return {
        "stack": cost.stack, "platform": cost.platform, "region": cost.region, "complete": cost.complete,
        "hoursPerMonth": HOURS_PER_MONTH, "currency": "USD", "basis": "On-Demand",
        "hourly": {"min": lo, "desired": mid, "max": hi},
        "items": [{"what": i.what, "counts": dict(zip(("min", "desired", "max"), i.counts, strict=True)),
                   "unitPerHour": i.unit, "unpriced": i.unpriced or None, "note": i.note or None}
                  for i in cost.items],
        "notes": list(cost.notes), "sources": list(cost.sources), "summary": summary_line(cost),
    }


@dataclass(frozen=True)
class ImageLineCost:
    """One image line of the image program (images/): per build and per month at its schedule,
    with its AMIs' snapshots kept in every Region it distributes to."""

    name: str
    build_region: str
    build_instance_type: str
    rebuild: str
    builds_per_month: float
    keep: int | None  # None: no lifecycle policy, every AMI stays
    snapshot_gib: int
    per_build: float | None
    per_build_unpriced: str
    per_ami: tuple[tuple[str, float | None], ...]  # (Region, USD a month for one AMI's snapshot there)
    sources: tuple[str, ...] = field(default=())

    @property
    def storage(self) -> tuple[tuple[str, float | None], ...]:
        """USD a month for the kept snapshots per Region (at most: a snapshot is at most the volume);
        without a lifecycle policy, what each month of builds adds."""
        kept = self.keep if self.keep is not None else self.builds_per_month
        return tuple((region, None if usd is None else usd * kept) for region, usd in self.per_ami)

    @property
    def monthly(self) -> float | None:
        """Builds at the schedule plus the kept snapshots, where everything has a price and is bounded."""
        if self.per_build is None or self.keep is None or any(usd is None for _, usd in self.per_ami):
            return None
        return self.builds_per_month * self.per_build + sum(usd or 0.0 for _, usd in self.storage)

    def lines(self) -> list[str]:
        build = self.per_build_unpriced if self.per_build is None else f"{_usd(self.per_build)} a build"
        schedule = (f"weekly: {self.builds_per_month:.2f} builds a month" if self.rebuild == "weekly"
                    else "manual: no scheduled build")
        kept = f"the last {self.keep}" if self.keep is not None else "every AMI (no lifecycle policy)"
        out = [f"{self.name}: builds on {self.build_instance_type} in {self.build_region} ({build}); {schedule}",
               f"  AMI snapshots: keeps {kept}, at most {self.snapshot_gib} GiB each:"]
        for region, usd in self.storage:
            if usd is None:
                out.append(f"    {region}: {no_region(region)}")
            elif self.keep is None:
                out.append(f"    {region}: at most {_usd(usd)} a month more after every month of builds")
            else:
                out.append(f"    {region}: at most {_usd(usd)} a month")
        monthly = self.monthly
        out.append("  a month: " + (f"at most {_usd(monthly)}" if monthly is not None
                                    else "not priced: " + "; ".join(self._missing())))
        return out

    def _missing(self) -> list[str]:
        missing = [self.per_build_unpriced] if self.per_build is None else []
        missing += [no_region(r) for r, usd in self.per_ami if usd is None]
        if self.keep is None:
            missing.append("unbounded: no lifecycle policy")
        return list(dict.fromkeys(missing))


def image_line_cost(name: str, build_region: str, regions: Sequence[str], build_instance_type: str,
                    root_volume_gib: int, rebuild: str, keep: int | None) -> ImageLineCost:
    """Per build: the build instance for IMAGE_BUILD_HOURS, with its gp3 root volume (Image Builder
    itself is free). Per month: the schedule's builds (weekly: 730/168 of them) and `keep` AMIs'
    snapshots in every Region, each at most the root volume's size (each build starts from a new
    instance, so no snapshot shares blocks with an older one)."""
    p = _Pricer(build_region)
    p.fact(prices.IMAGE_BUILDER_BILLING)
    instance, why = p.ec2(build_instance_type)
    volume, why_volume = p.hourly(prices.EBS_GP3_GB_MONTH, per=root_volume_gib)
    per_build = (instance + volume) * IMAGE_BUILD_HOURS if instance is not None and volume is not None else None
    per_ami = []
    sources = dict(p.sources)
    for region in regions:
        q = _Pricer(region)
        snap = q.other(prices.EBS_SNAPSHOT_GB_MONTH)
        sources.update(q.sources)
        per_ami.append((region, None if snap is None else snap.usd * root_volume_gib))
    sources[f"image build time: {IMAGE_BUILD_HOURS_SOURCE}"] = None
    return ImageLineCost(name, build_region, build_instance_type, rebuild,
                         WEEKS_PER_MONTH if rebuild == "weekly" else 0.0, keep, root_volume_gib, per_build,
                         why or why_volume, tuple(per_ami), tuple(sources))

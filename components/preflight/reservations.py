"""Pre-flight of reserved capacity (pure): does each pool's `capacityReservation` exist in the
region, fit the pool, and hold enough instances; when does a Capacity Block start and end.

The rules and where AWS states them (read 2026-12):
- fields and states: EC2 API Reference, `CapacityReservation` data type (botocore's ec2 2016-11-15
  service model): State active | expired | cancelled | pending | failed | scheduled |
  payment-pending | payment-failed | assessing | delayed | unsupported | cancelling | unavailable;
  only `active` capacity can be launched into ("The capacity is available for use"); a Capacity
  Block is bought ahead and waits as `scheduled` (EC2 User Guide, capacity-blocks-using.html);
  `payment-pending` becomes `payment-failed`, the block released, when the upfront payment is not
  processed within 12 hours;
- ReservationType `capacity-block` for a Capacity Block, `default` for an On-Demand Capacity
  Reservation (the same model); the launch names the block with `marketType: capacity-block`;
- an instance launches into a reservation only with the same instance type, platform and
  Availability Zone (EC2 User Guide, capacity-reservations-using.html; capacity-blocks-launch.html:
  "can't launch in a subnet in a different Availability Zone", "can't launch using an AMI with a
  different platform"): nodes boot Ubuntu, platform `Linux/UNIX`; the launch template asks for no
  dedicated tenancy, so Tenancy must be `default`;
- `targeted` and `open` reservations both take the pool's instances: the launch template targets
  the reservation explicitly (components/aws/launch.py);
- AvailableInstanceCount: "the number of instances that can be launched" into it; TotalInstanceCount:
  "the total number of instances for which the Capacity Reservation reserves capacity", what a
  pool's `capacityReservation.instanceCount` declares;
- EC2 terminates instances still running in a Capacity Block 30 minutes before its EndDate (EC2
  Auto Scaling User Guide, launch-template-capacity-blocks.html, "Operational guidelines").
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from ..facts.efa import efa_enabled
from ..settings.model import NodePoolSettings, Settings
from .facts import RegionFacts, Reservation
from .findings import Finding

PLATFORM = "Linux/UNIX"  # Ubuntu nodes (Canonical's AMI or a pool's own Ubuntu image)
TENANCY = "default"
USABLE_STATES = {"on-demand": ("active",), "capacity-block": ("active", "scheduled")}
RESERVATION_TYPE = {"on-demand": "default", "capacity-block": "capacity-block"}
BLOCK_TERMINATES_BEFORE_END = timedelta(minutes=30)
# A reservation whose usable time ends within this of pre-flight is worth a warning: a cluster
# takes up to ~25 minutes to its first GPU job (docs/benchmarks.md), work needs the rest.
ENDS_SOON = timedelta(hours=24)


def source(pool: NodePoolSettings) -> str:
    """The key of a pool's reservation in RegionFacts.reservations: its id or its group's ARN."""
    cr = pool.capacity_reservation
    assert cr is not None
    return cr.id or cr.resource_group_arn or ""


def iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _fits(r: Reservation, pool: NodePoolSettings) -> list[str]:
    """What about `r` keeps the pool's instances out of it (empty: they fit)."""
    cr = pool.capacity_reservation
    assert cr is not None
    wrong = []
    if r.reservation_type != RESERVATION_TYPE[cr.market_type]:
        fix = ("marketType: capacity-block" if r.reservation_type == "capacity-block"
               else "marketType: on-demand")
        wrong.append(f"it is a {'Capacity Block' if r.reservation_type == 'capacity-block' else 'Capacity Reservation'}"
                     f" (ReservationType {r.reservation_type}), the pool says marketType {cr.market_type}: set {fix}")
    if r.instance_type != pool.instance_type:
        wrong.append(f"it reserves {r.instance_type}, the pool runs {pool.instance_type}: set instanceType: "
                     f"{r.instance_type} or name a reservation of {pool.instance_type}")
    if pool.availability_zone is None:
        wrong.append(f"it is in {r.availability_zone} and the pool names no availabilityZone: set "
                     f"availabilityZone: {r.availability_zone}")
    elif r.availability_zone != pool.availability_zone:
        wrong.append(f"it is in {r.availability_zone}, the pool launches in {pool.availability_zone}: set "
                     f"availabilityZone: {r.availability_zone}")
    if r.platform != PLATFORM:
        wrong.append(f"it reserves {r.platform} instances, nodes boot Ubuntu ({PLATFORM}): reserve {PLATFORM}")
    if r.tenancy != TENANCY:
        wrong.append(f"its tenancy is {r.tenancy}, nodes launch with tenancy {TENANCY}: reserve {TENANCY} tenancy")
    return wrong


def _state(r: Reservation, pool: NodePoolSettings, subject: str) -> Iterator[Finding]:
    cr = pool.capacity_reservation
    assert cr is not None
    usable = USABLE_STATES[cr.market_type]
    if r.state in usable:
        return
    if r.state == "payment-pending" and cr.capacity_block:
        yield Finding("reservation-state", "warning", subject,
                      f"{r.id} is payment-pending: the upfront payment is not processed yet; AWS releases the "
                      f"block (payment-failed) when it is not processed within 12 hours")
        return
    yield Finding("reservation-state", "error", subject,
                  f"{r.id} is {r.state}, instances launch only into {' or '.join(usable)} capacity: "
                  f"name a reservation that is {' or '.join(usable)}, or drop capacityReservation")


def _window(r: Reservation, pool: NodePoolSettings, subject: str, now: datetime | None) -> Iterator[Finding]:
    cr = pool.capacity_reservation
    assert cr is not None
    block = r.reservation_type == "capacity-block"
    if block and r.start is not None:
        ends = (f", ends {iso(r.end)} (EC2 terminates its instances at {iso(r.end - BLOCK_TERMINATES_BEFORE_END)}: "
                f"scale the pool to 0 before)") if r.end is not None else ""
        yield Finding("reservation-window", "info", subject, f"Capacity Block {r.id} starts {iso(r.start)}{ends}")
        future = now is not None and r.start > now
        if future and cr.starts_at is None:
            yield Finding("reservation-window", "warning", f"{subject}.startsAt",
                          f"the block starts {iso(r.start)} but startsAt is null, so `plan --timeline` models it "
                          f"as active: set startsAt: {iso(r.start)}")
        elif cr.starts is not None and cr.starts != r.start:
            yield Finding("reservation-window", "warning", f"{subject}.startsAt",
                          f"startsAt {cr.starts_at} is not the block's start {iso(r.start)} (what `plan "
                          f"--timeline` waits for): set startsAt: {iso(r.start)}")
    if r.end is None or now is None:
        return
    usable_until = r.end - (BLOCK_TERMINATES_BEFORE_END if block else timedelta(0))
    from_ = max(now, r.start) if r.start is not None else now
    if usable_until - from_ < ENDS_SOON:
        left = max(usable_until - from_, timedelta(0))
        yield Finding("reservation-window", "warning", subject,
                      f"{r.id} can hold instances until {iso(usable_until)}, {int(left.total_seconds() // 3600)}h"
                      f"{int(left.total_seconds() % 3600 // 60):02d}m from {'its start' if from_ != now else 'now'}"
                      f": extend it or name a longer one")


def _declared_size(r: Reservation, pool: NodePoolSettings, subject: str) -> Iterator[Finding]:
    """`instanceCount` against AWS's TotalInstanceCount: validate() holds the pool's maxSize to the
    declared count and `plan --cost` prices an On-Demand reservation's unused instances from it, so a
    count AWS does not have misleads both."""
    cr = pool.capacity_reservation
    assert cr is not None
    if cr.instance_count is not None and cr.instance_count != r.total:
        yield Finding("reservation-mismatch", "warning", f"{subject}.instanceCount",
                      f"instanceCount {cr.instance_count} is not the size of {r.id}: AWS's TotalInstanceCount is "
                      f"{r.total} (what validate holds {pool.max_nodes_key} to and `plan --cost` prices the "
                      f"unused part from): set instanceCount: {r.total}")


def _one(pool: NodePoolSettings, path: str, found: tuple[Reservation, ...], now: datetime | None) -> Iterator[Finding]:
    cr = pool.capacity_reservation
    assert cr is not None
    subject = f"{path}.capacityReservation"
    if cr.id is not None:
        [r] = found
        wrong = _fits(r, pool)
        if wrong:
            yield Finding("reservation-mismatch", "error", f"{subject}.id", f"{r.id} cannot take the pool's "
                          f"instances: " + "; ".join(wrong))
            return
        state = list(_state(r, pool, f"{subject}.id"))
        yield from state
        if any(f.severity == "error" for f in state):
            return  # an expired or failed reservation has nothing to count
        yield from _declared_size(r, pool, subject)
        start, most = pool.start_size_key, pool.max_nodes_key
        if r.available < pool.start_size:
            yield Finding("reservation-too-small", "error", f"{subject}.id",
                          f"{r.id} has {r.available} of {r.total} instance(s) available, the pool wants "
                          f"{start} {pool.start_size}: lower {start} or name a larger reservation")
        elif pool.max_nodes > r.total:
            yield Finding("reservation-too-small", "warning", f"{subject}.id",
                          f"{most} {pool.max_nodes} is more than {r.id} holds ({r.total}): nodes beyond it do "
                          f"not launch into the reservation")
        yield from _window(r, pool, f"{subject}.id", now)
        return
    # A resource group: the pool's instances go into any member that fits (EC2 User Guide,
    # create-cr-group.html); what counts is the capacity of the members that fit and are active.
    subject = f"{subject}.resourceGroupArn"
    if not found:
        yield Finding("reservation-missing", "error", subject,
                      f"the group {cr.resource_group_arn} holds no Capacity Reservation: add the pool's "
                      f"reservations to it (aws resource-groups group-resources)")
        return
    fitting = [r for r in found if not _fits(r, pool) and r.state in USABLE_STATES[cr.market_type]]
    if not fitting:
        have = "; ".join(f"{r.id}: {r.instance_type} in {r.availability_zone}, {r.state}" for r in found)
        yield Finding("reservation-mismatch", "error", subject,
                      f"no active {pool.instance_type} reservation in {pool.availability_zone or 'the pool zone'} "
                      f"in the group ({have}): add one, or fix instanceType / availabilityZone")
        return
    available = sum(r.available for r in fitting)
    start = pool.start_size_key
    if available < pool.start_size:
        yield Finding("reservation-too-small", "error", subject,
                      f"the group's fitting reservations ({', '.join(r.id for r in fitting)}) have {available} "
                      f"instance(s) available, the pool wants {start} {pool.start_size}: lower {start} "
                      f"or add capacity to the group")
    for r in fitting:
        yield from _window(r, pool, subject, now)


def _zone(settings: Settings, pool: NodePoolSettings, path: str, zones: tuple[str, ...]) -> Iterator[Finding]:
    if pool.availability_zone is not None and zones and pool.availability_zone not in zones:
        yield Finding("zone-unused", "error", f"{path}.availabilityZone",
                      f"{pool.availability_zone} is not one of the cluster's zones ({', '.join(zones)}), so the "
                      f"pool has no subnet there: list it in network.availabilityZones"
                      + (" or bring a subnet there through network.existing" if settings.network.existing else ""))


def _efa(pool: NodePoolSettings, path: str, facts: RegionFacts) -> Iterator[Finding]:
    if not efa_enabled(pool):
        return
    supported = facts.efa_supported.get(pool.instance_type)
    if supported is None:
        if "instance-types" in facts.errors:
            yield Finding("could-not-check", "error", f"{path}.efa",
                          f"{facts.errors['instance-types']}: allow ec2:DescribeInstanceTypes for the pre-flight role")
        return
    if not supported:
        yield Finding("efa-unsupported", "error", f"{path}.efa",
                      f"{pool.instance_type} has no EFA in {facts.region} (DescribeInstanceTypes: "
                      f"NetworkInfo.EfaSupported false): set efa: false or choose a type with EFA")


def check(settings: Settings, facts: RegionFacts, zones: tuple[str, ...]) -> Iterator[Finding]:
    """`zones`: the AZs the cluster's subnets are in (checks.chosen_zones)."""
    for i, pool in enumerate(settings.node_pools):
        path = f"settings.nodePools[{i}]"
        yield from _zone(settings, pool, path, zones)
        if pool.capacity_reservation is None:
            continue
        key = source(pool)
        what = "ec2:DescribeCapacityReservations" + (
            "" if pool.capacity_reservation.id else " and resource-groups:ListGroupResources")
        if key in facts.errors:
            yield Finding("could-not-check", "error", f"{path}.capacityReservation",
                          f"{facts.errors[key]}: allow {what} for the pre-flight role")
            continue
        found = facts.reservations.get(key)
        if found is None:
            name = "Capacity Reservation" if pool.capacity_reservation.id else "resource group"
            yield Finding("reservation-missing", "error", f"{path}.capacityReservation",
                          f"{name} {key} does not exist in {facts.region} for this account (reservations live "
                          f"in one region): check the id, the stack's region and the account")
            continue
        yield from _one(pool, path, found, facts.now)
        yield from _efa(pool, path, facts)


def efa_types(settings: Settings) -> list[str]:
    """Instance types whose EFA support the boundary asks about: pools with reserved capacity and EFA on."""
    return sorted({p.instance_type for p in settings.node_pools
                   if p.capacity_reservation is not None and efa_enabled(p)})

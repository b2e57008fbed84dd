"""Pre-flight of reserved capacity over recorded AWS answers (tests/data/aws_responses/reservation*.json,
replayed through real boto3 clients and validated against botocore's model): a pool's On-Demand
Capacity Reservation, Capacity Block or reservation group exists, fits the pool and is big enough."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from components.preflight.checks import Finding, check, failed
from components.preflight.facts import RegionFacts, Reservation
from components.preflight.report import lines
from components.preflight.run import preflight
from components.settings.load import read_stack_file
from components.settings.model import (
    AutoscalingSettings,
    CapacityReservationSettings,
    NodePoolSettings,
    Settings,
)
from components.validate import from_config as settings_from_config
from tests.unit.preflight.recorded import RecordedSession

TEMPLATE = Path(__file__).resolve().parents[2] / "data" / "stamping" / "Pulumi.gpu-prod.yaml"
NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)  # the recorded block starts at 11:30Z
ODCR, BLOCK = "cr-0a1b2c3d4e5f60718", "cr-0b1c2d3e4f5a60719"
GROUP = "arn:aws:resource-groups:us-east-1:123456789012:group/h100-reservations"


def _settings(*, odcr: CapacityReservationSettings | None = None, h100: dict[str, object] | None = None,
              starts_at: str | None = "2026-12-01T11:30:00Z") -> Settings:
    s = settings_from_config(read_stack_file(TEMPLATE), "gpu-prod", offline=True)
    l40s, h100_pool = s.node_pools
    h100_pool = h100_pool.model_copy(update={
        "availability_zone": "us-east-1a", "desired_size": 2, "max_size": 2,
        "capacity_reservation": odcr or CapacityReservationSettings(id=ODCR), **(h100 or {})})
    block = NodePoolSettings(name="h100-block", instance_type="p5.48xlarge", min_size=2, desired_size=2, max_size=2,
                             availability_zone="us-east-1b",
                             capacity_reservation=CapacityReservationSettings(
                                 id=BLOCK, market_type="capacity-block", starts_at=starts_at))
    return s.model_copy(update={"node_pools": (l40s, h100_pool, block)})


def _run(scenario: str, settings: Settings | None = None) -> tuple[list[Finding], RecordedSession]:
    session = RecordedSession(scenario)
    return preflight(settings or _settings(), session, clock=lambda: NOW), session


def _kinds(findings: list[Finding]) -> list[tuple[str, str, str]]:
    return [(f.kind, f.severity, f.subject) for f in findings]


def test_an_active_odcr_and_a_scheduled_block_pass_and_the_block_window_is_reported() -> None:
    findings, session = _run("reservations-ok.json")
    assert not failed(findings)
    [note] = findings
    assert _kinds(findings) == [("reservation-window", "info", "settings.nodePools[2].capacityReservation.id")]
    assert note.message == (f"Capacity Block {BLOCK} starts 2026-12-01T11:30:00Z, ends 2026-12-08T11:30:00Z (EC2 "
                            "terminates its instances at 2026-12-08T11:00:00Z: scale the pool to 0 before)")
    # One call per reservation, by id; EFA support asked with the vCPUs in one DescribeInstanceTypes.
    assert session.called("ec2.DescribeCapacityReservations") == [{"CapacityReservationIds": [ODCR]},
                                                                   {"CapacityReservationIds": [BLOCK]}]
    assert session.called("ec2.DescribeInstanceTypes") == [{"InstanceTypes": ["m7i.2xlarge", "p5.48xlarge"]}]
    assert session.called("resource-groups.ListGroupResources") == []
    assert lines("gpu-prod", "us-east-1", findings)[0] == "pre-flight gpu-prod (us-east-1): ok, 0 error(s), " \
                                                          "0 warning(s), 1 note(s)"


def test_a_reservation_that_does_not_exist_is_an_error_naming_the_region() -> None:
    findings, _ = _run("reservation-not-found.json")
    assert _kinds(findings)[0] == ("reservation-missing", "error", "settings.nodePools[1].capacityReservation")
    assert f"Capacity Reservation {ODCR} does not exist in us-east-1" in findings[0].message
    assert failed(findings)


def test_a_reservation_of_another_instance_type() -> None:
    findings, _ = _run("reservation-wrong-type.json")
    [wrong] = [f for f in findings if f.severity == "error"]
    assert wrong.kind == "reservation-mismatch" and wrong.subject == "settings.nodePools[1].capacityReservation.id"
    assert "it reserves p4d.24xlarge, the pool runs p5.48xlarge" in wrong.message


def test_a_reservation_in_another_zone_says_which() -> None:
    findings, _ = _run("reservation-wrong-az.json")
    [wrong] = [f for f in findings if f.severity == "error"]
    assert wrong.kind == "reservation-mismatch"
    assert "it is in us-east-1c, the pool launches in us-east-1a: set availabilityZone: us-east-1c" in wrong.message


def test_an_expired_reservation_cannot_be_launched_into() -> None:
    findings, _ = _run("reservation-expired.json")
    [state] = [f for f in findings if f.severity == "error"]
    assert state.kind == "reservation-state"
    assert f"{ODCR} is expired, instances launch only into active capacity" in state.message


def test_a_reservation_with_fewer_instances_available_than_desired() -> None:
    findings, _ = _run("reservation-too-small.json")
    [small] = [f for f in findings if f.severity == "error"]
    assert small.kind == "reservation-too-small"
    assert "has 0 of 2 instance(s) available, the pool wants desiredSize 2" in small.message
    # exactly enough passes
    findings, _ = _run("reservations-ok.json")
    assert not failed(findings)


def test_an_autoscaled_pool_is_judged_by_its_autoscaling_sizes() -> None:
    """Its Auto Scaling group holds autoscaling.minSize; Karpenter launches up to autoscaling.maxSize.
    The leftover desiredSize of the fixture (2) must not count: the reservation has 0 of 2 free."""
    def scaled(lo: int, hi: int) -> Settings:
        return _settings(h100={"autoscaling": AutoscalingSettings(min_size=lo, max_size=hi)})

    findings, _ = _run("reservation-too-small.json", scaled(0, 4))
    assert not failed(findings), [f.message for f in findings]
    [warn] = [f for f in findings if f.kind == "reservation-too-small"]
    assert warn.severity == "warning"
    assert warn.message.startswith(f"autoscaling.maxSize 4 is more than {ODCR} holds (2)")
    findings, _ = _run("reservation-too-small.json", scaled(1, 2))
    [small] = [f for f in findings if f.severity == "error"]
    assert "has 0 of 2 instance(s) available, the pool wants autoscaling.minSize 1: lower autoscaling.minSize" \
        in small.message


def test_efa_on_a_type_without_efa_is_refused_from_aws_answer() -> None:
    settings = _settings(h100={"instance_type": "g6e.xlarge", "efa": True})
    findings, session = _run("reservation-efa-unsupported.json", settings)
    assert [(f.kind, f.subject) for f in findings if f.severity == "error"] == [
        ("efa-unsupported", "settings.nodePools[1].efa")]
    assert "g6e.xlarge has no EFA in us-east-1 (DescribeInstanceTypes: NetworkInfo.EfaSupported false)" in \
        next(f.message for f in findings if f.kind == "efa-unsupported")
    assert session.called("ec2.DescribeInstanceTypes") == [{"InstanceTypes": ["g6e.xlarge", "m7i.2xlarge",
                                                                               "p5.48xlarge"]}]


def test_a_resource_group_counts_only_the_members_that_fit() -> None:
    settings = _settings(odcr=CapacityReservationSettings(resource_group_arn=GROUP))
    findings, session = _run("reservation-group.json", settings)
    assert session.called("resource-groups.ListGroupResources") == [{
        "Group": GROUP, "Filters": [{"Name": "resource-type", "Values": ["AWS::EC2::CapacityReservation"]}]}]
    assert session.called("ec2.DescribeCapacityReservations")[0] == {
        "CapacityReservationIds": [ODCR, "cr-0c1d2e3f4a5b60720"]}
    # The p4d member does not count: one fitting instance for desiredSize 2.
    [small] = [f for f in findings if f.severity == "error"]
    assert small.kind == "reservation-too-small"
    assert small.subject == "settings.nodePools[1].capacityReservation.resourceGroupArn"
    assert f"({ODCR}) have 1 instance(s) available, the pool wants desiredSize 2" in small.message
    ok, _ = _run("reservation-group.json", _settings(odcr=CapacityReservationSettings(resource_group_arn=GROUP),
                                                     h100={"desired_size": 1}))
    assert not failed(ok)


def test_a_resource_group_that_does_not_exist() -> None:
    settings = _settings(odcr=CapacityReservationSettings(resource_group_arn=GROUP))
    findings, _ = _run("reservation-group-missing.json", settings)
    assert _kinds(findings)[0] == ("reservation-missing", "error", "settings.nodePools[1].capacityReservation")
    assert f"resource group {GROUP} does not exist in us-east-1" in findings[0].message


def test_a_block_start_the_timeline_does_not_know_is_a_warning() -> None:
    findings, _ = _run("reservations-ok.json", _settings(starts_at=None))
    [warn] = [f for f in findings if f.severity == "warning"]
    assert warn.subject == "settings.nodePools[2].capacityReservation.id.startsAt"
    assert "set startsAt: 2026-12-01T11:30:00Z" in warn.message and not failed(findings)
    findings, _ = _run("reservations-ok.json", _settings(starts_at="2026-12-01T12:30:00Z"))
    assert ["startsAt 2026-12-01T12:30:00Z is not the block's start 2026-12-01T11:30:00Z" in f.message
            for f in findings if f.severity == "warning"] == [True]


# ---- the same decisions over plain facts (no AWS)

def _facts(settings: Settings, reservation: Reservation, now: datetime = NOW) -> RegionFacts:
    zones = ("us-east-1a", "us-east-1b", "us-east-1c")
    types = {settings.control_plane.instance_type, *(p.instance_type for p in settings.node_pools)}
    return RegionFacts(region="us-east-1", zones=zones, offerings={t: frozenset(zones) for t in types},
                       vcpus={"m7i.2xlarge": 8}, efa_supported={"p5.48xlarge": True},
                       amis={"/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id":
                             "ami-0a7d80731ae1b2435"},
                       quotas={"L-1216C47A": 1e4, "L-DB2E81BA": 1e4, "L-417A185B": 1e4},
                       reservations={ODCR: (reservation,), BLOCK: (_block(),)}, now=now)


def _odcr(**over: object) -> Reservation:
    base: dict[str, object] = {"id": ODCR, "instance_type": "p5.48xlarge", "availability_zone": "us-east-1a",
                               "state": "active", "reservation_type": "default", "available": 2, "total": 2,
                               "platform": "Linux/UNIX", "tenancy": "default", "match_criteria": "open"}
    base.update(over)
    return Reservation(**base)  # type: ignore[arg-type]


def _block(**over: object) -> Reservation:
    block: dict[str, object] = {"id": BLOCK, "availability_zone": "us-east-1b", "state": "scheduled",
                                "reservation_type": "capacity-block",
                                "start": datetime(2026, 12, 1, 11, 30, tzinfo=UTC),
                                "end": datetime(2026, 12, 8, 11, 30, tzinfo=UTC)}
    return _odcr(**{**block, **over})


def test_platform_tenancy_and_market_type_must_match() -> None:
    s = _settings()
    for over, text in (({"platform": "Ubuntu Pro"}, "it reserves Ubuntu Pro instances"),
                       ({"tenancy": "dedicated"}, "its tenancy is dedicated"),
                       ({"reservation_type": "capacity-block"}, "set marketType: capacity-block")):
        [f] = [f for f in check(s, _facts(s, _odcr(**over))) if f.severity == "error"]
        assert f.kind == "reservation-mismatch" and text in f.message
    assert not failed(check(s, _facts(s, _odcr())))


def test_a_block_that_is_still_to_be_paid_warns_and_one_ending_soon_warns() -> None:
    s = _settings()
    facts = _facts(s, _odcr())
    facts.reservations[BLOCK] = (_block(state="payment-pending"),)
    assert [(f.kind, f.severity) for f in check(s, facts) if f.severity != "info"] == [
        ("reservation-state", "warning")]
    # A block that has started and can hold instances for 5 more hours.
    late = NOW + timedelta(days=6, hours=20, minutes=30)
    findings = [f for f in check(s, _facts(s, _odcr(), now=late)) if f.severity == "warning"]
    assert [f.kind for f in findings] == ["reservation-window"]
    assert "can hold instances until 2026-12-08T11:00:00Z, 5h00m from now" in findings[0].message


def test_a_scheduled_odcr_is_not_launchable_yet() -> None:
    s = _settings()
    [f] = [f for f in check(s, _facts(s, _odcr(state="scheduled"))) if f.severity == "error"]
    assert f.kind == "reservation-state" and "only into active capacity" in f.message


def test_a_pool_zone_outside_the_cluster_zones() -> None:
    s = _settings()
    s = s.model_copy(update={"network": s.network.model_copy(update={"availability_zones": ("us-east-1b",
                                                                                           "us-east-1c")})})
    errors = [f for f in check(s, _facts(s, _odcr())) if f.severity == "error"]
    assert [(f.kind, f.subject) for f in errors] == [("zone-unused", "settings.nodePools[1].availabilityZone")]

"""Pre-flight decisions over plain facts (no AWS): quota classes, demand, warnings vs errors."""

from __future__ import annotations

import pytest

from components.preflight.checks import check, demands, failed
from components.preflight.facts import RegionFacts
from components.preflight.quotas import BY_CODE, quota_class, quota_for
from components.settings.model import Settings

AMD = "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"


def _settings(**extra: object) -> Settings:
    raw = {"platform": "aws", "region": "eu-west-1",
           "nodePools": [{"name": "l4", "instanceType": "g6.12xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 3}]}
    raw.update(extra)
    return Settings.model_validate(raw)


def _facts(settings: Settings, **over: object) -> RegionFacts:
    zones = ("eu-west-1a", "eu-west-1b", "eu-west-1c")
    types = {settings.control_plane.instance_type, *(p.instance_type for p in settings.node_pools)}
    base: dict[str, object] = {
        "region": "eu-west-1", "zones": zones,
        "offerings": {t: frozenset(zones) for t in types},
        "vcpus": {"m7i.xlarge": 4}, "amis": {AMD: "ami-0123456789abcdef0"},
        "quotas": {q: 10_000.0 for q in BY_CODE},
    }
    base.update(over)
    return RegionFacts(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(("itype", "cls"), [
    ("g6e.xlarge", "g"), ("g4dn.12xlarge", "g"), ("vt1.3xlarge", "g"), ("p5.48xlarge", "p"),
    ("p6-b200.48xlarge", "p"), ("p4de.24xlarge", "p"), ("m7i.xlarge", "standard"), ("c7gn.large", "standard"),
    ("inf2.xlarge", None), ("trn1.32xlarge", None), ("x2idn.16xlarge", None), ("u-6tb1.metal", None),
    ("hpc7g.16xlarge", None),
])
def test_quota_class(itype: str, cls: str | None) -> None:
    assert quota_class(itype) == cls


def test_spot_pools_count_against_spot_quotas() -> None:
    s = _settings(nodePools=[
        {"name": "a", "instanceType": "g6.12xlarge", "capacityType": "spot",
         "minSize": 0, "desiredSize": 1, "maxSize": 5},
        {"name": "b", "instanceType": "g6.xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 2},
    ])
    needed = {d.quota.code: d.vcpus for d in demands(s, _facts(s))[0]}
    assert needed == {"L-1216C47A": 4, "L-3819A6DF": 5 * 48, "L-DB2E81BA": 2 * 4}
    assert quota_for("g6.12xlarge", "spot") == BY_CODE["L-3819A6DF"]


def test_quota_exactly_enough_passes_one_short_fails() -> None:
    s = _settings()
    enough = {**{q: 10_000.0 for q in BY_CODE}, "L-DB2E81BA": 144.0}
    assert check(s, _facts(s, quotas=enough)) == []
    short = {**enough, "L-DB2E81BA": 143.0}
    [finding] = check(s, _facts(s, quotas=short))
    assert finding.kind == "quota-too-low" and "needs 144 vCPUs" in finding.message


def test_pools_at_zero_need_no_quota_and_unknown_families_only_warn() -> None:
    s = _settings(nodePools=[
        {"name": "idle", "instanceType": "p5.48xlarge", "minSize": 0, "desiredSize": 0, "maxSize": 0},
        {"name": "inf", "instanceType": "inf2.48xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1,
         "gpu": {"count": 1, "productName": "Inferentia2", "memoryGiB": 32}},
    ], smokeTest={"enabled": False})
    findings = check(s, _facts(s))
    assert [(f.kind, f.severity) for f in findings] == [("quota-unchecked", "warning")]
    assert not failed(findings)
    assert "L-417A185B" not in {d.quota.code for d in demands(s, _facts(s))[0]}


def test_unknown_vcpus_is_an_error_naming_the_setting() -> None:
    s = _settings()
    findings = check(s, _facts(s, vcpus={}, errors={"vcpus": "InvalidInstanceType"}))
    assert [(f.kind, f.subject) for f in findings] == [("vcpus-unknown", "settings.controlPlane.instanceType")]
    assert "InvalidInstanceType" in findings[0].message


def test_failed_offerings_call_is_could_not_check() -> None:
    s = _settings()
    findings = check(s, _facts(s, offerings={}, errors={"offerings": "UnauthorizedOperation"}))
    assert [f.kind for f in findings] == ["could-not-check"]

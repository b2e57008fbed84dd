"""EC2 vCPU service quotas per instance class and purchase option (codes verified 2026-11 against
AWS's published quota names; they are account-wide per region and counted in vCPUs)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

QuotaClass = Literal["standard", "g", "p"]
Purchase = Literal["on-demand", "spot"]
SERVICE_CODE = "ec2"


@dataclass(frozen=True)
class Quota:
    code: str
    name: str
    quota_class: QuotaClass
    purchase: Purchase


QUOTAS: tuple[Quota, ...] = (
    Quota("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", "standard", "on-demand"),
    Quota("L-34B43A08", "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests", "standard", "spot"),
    Quota("L-DB2E81BA", "Running On-Demand G and VT instances", "g", "on-demand"),
    Quota("L-3819A6DF", "All G and VT Spot Instance Requests", "g", "spot"),
    Quota("L-417A185B", "Running On-Demand P instances", "p", "on-demand"),
    Quota("L-7212CCBC", "All P Spot Instance Requests", "p", "spot"),
)
BY_CODE = {q.code: q for q in QUOTAS}

_FAMILY = re.compile(r"^([a-z]+)\d")
_STANDARD = set("acdhimrtz")


def quota_class(instance_type: str) -> QuotaClass | None:
    """`g6e.xlarge` -> g, `vt1.3xlarge` -> g (G and VT share a quota), `p6-b200.48xlarge` -> p,
    `m7i.xlarge` -> standard; None for classes this project does not check (inf, trn, x, f...)."""
    match = _FAMILY.match(instance_type)
    if match is None:
        return None
    letters = match.group(1)
    if letters in ("g", "vt"):
        return "g"
    if letters == "p":
        return "p"
    if len(letters) == 1 and letters in _STANDARD:
        return "standard"
    return None


def quota_for(instance_type: str, purchase: Purchase) -> Quota | None:
    cls = quota_class(instance_type)
    return next((q for q in QUOTAS if q.quota_class == cls and q.purchase == purchase), None)


def increase_command(quota: Quota, vcpus: int, region: str) -> str:
    return (f"aws service-quotas request-service-quota-increase --service-code {SERVICE_CODE} "
            f"--quota-code {quota.code} --desired-value {vcpus} --region {region}")

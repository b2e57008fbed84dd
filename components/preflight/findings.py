"""A pre-flight finding: what is wrong (or worth knowing) about a stack in its region, and what to change."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["region-unavailable", "too-few-zones", "not-offered", "ami-missing", "quota-too-low",
               "vcpus-unknown", "quota-unchecked", "could-not-check",
               "reservation-missing", "reservation-mismatch", "reservation-state", "reservation-too-small",
               "reservation-window", "efa-unsupported", "zone-unused",
               # components/preflight/placement.py: an existing placement group as the settings declare it
               "placement-group-missing", "placement-group-state", "placement-group-mismatch",
               # components/preflight/egress.py: private subnets' ways to AWS's APIs and beyond
               "no-aws-route", "no-egress", "endpoint-service-missing", "endpoint-subnets", "endpoint-conflict",
               "cache-first-pull",
               # components/preflight/images.py: what the node images carry (their ck8s-gpu: tags)
               "image-snap-mismatch", "image-not-preloaded", "image-role", "image-untagged", "image-no-toolkit",
               "image-toolkit-version", "image-fabric-manager-mode"]
# info: reported, never fails (a Capacity Block's window); warning: reported, does not fail.
Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class Finding:
    kind: Kind
    severity: Severity
    subject: str  # the setting or resource the finding is about
    message: str  # what is wrong AND what to change

    def line(self) -> str:
        return f"{self.severity.upper()} {self.kind} [{self.subject}]: {self.message}"

"""Region parity (pure): two regions' plans may differ ONLY in region-scoped values.

Each plan's resources.json is normalised with what is region-scoped in its own settings, then the
two are diffed by resource key; whatever remains is a parity violation. Region-scoped:
- the region and the backup region (AZ names `<region>a`, ARNs, endpoints follow from them);
- the cluster name (`ck8s-<env>-<region>`), so every name and URN derived from it, its hashed
  forms included (`<head>-<digest>`, where a name would not fit its AWS limit: ADR 0042);
- AZ ids (`use1-az1`), AMI ids, provider-computed ids (the plan's fake ids, hashes);
- zone-scoped values each region gives its own (stamping refuses the template's): capacity
  reservation ids (hashes), placement group names (carry the cluster name), AZ names;
- the VPC CIDR and the CIDRs inside it, ONLY when the two regions configure different VPC CIDRs
  (compared as offsets inside their VPC, so a changed subnet layout still shows).
"""

from __future__ import annotations

import base64
import binascii
import difflib
import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..plan.diff import PlanDiff, diff_resources
from ..settings.model import Settings
from ..tables import tokens
from ..tables.hashed_names import hashed_stems

AMI = re.compile(r"\bami-[0-9a-f]{8,17}\b")
ZONE_ID = re.compile(r"\b[a-z]{2,4}\d{0,2}-{1,2}az\d+\b")
HASH = re.compile(r"\b[0-9a-f]{17,64}\b")
CIDR = re.compile(r"\b(\d{1,3}(?:\.\d{1,3}){3})/(\d{1,2})\b")


@dataclass(frozen=True)
class RegionScope:
    region: str
    cluster_name: str
    backup_region: str | None
    vpc_cidr: str | None  # set only when the two plans configure different VPC CIDRs

    @staticmethod
    def pair(a: Settings, b: Settings) -> tuple[RegionScope, RegionScope]:
        per_region = a.network.vpc_cidr != b.network.vpc_cidr
        return tuple(  # type: ignore[return-value]
            RegionScope(s.region or "", s.cluster_name, s.backup.region if s.backup else None,
                        s.network.vpc_cidr if per_region else None)
            for s in (a, b)
        )


def _decoded(value: str) -> str:
    try:
        return base64.b64decode(value, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return value


def _cidr(match: re.Match[str], vpc: ipaddress.IPv4Network) -> str:
    try:
        net = ipaddress.IPv4Network(f"{match.group(1)}/{match.group(2)}", strict=False)
    except ValueError:
        return match.group(0)
    if not net.subnet_of(vpc):
        return match.group(0)
    offset = int(net.network_address) - int(vpc.network_address)
    return f"<vpc>+{offset}/{net.prefixlen}"


class _Normaliser:
    def __init__(self, scope: RegionScope, names: Iterable[str]) -> None:
        self.scope = scope
        self.vpc = ipaddress.IPv4Network(scope.vpc_cidr) if scope.vpc_cidr else None
        # Fake ids of the offline plan are `<logical name>-<8 hex>`; names carry the cluster name.
        alternatives = sorted({re.escape(n) for n in names if n}, key=len, reverse=True)
        self.fake_id = re.compile(rf"\b({'|'.join(alternatives)})-[0-9a-f]{{8}}\b") if alternatives else None
        stems = hashed_stems(scope.cluster_name)
        self.hashed = re.compile("|".join(re.escape(h) for h in stems)) if stems else None

    def text(self, value: str) -> str:
        if self.fake_id is not None:
            value = self.fake_id.sub(lambda m: f"<id:{m.group(1)}>", value)
        value = AMI.sub("<ami>", value)
        value = HASH.sub("<hash>", value)
        if self.hashed is not None:
            value = self.hashed.sub("<cluster>", value)
        value = value.replace(self.scope.cluster_name, "<cluster>")
        if self.scope.backup_region:
            value = value.replace(self.scope.backup_region, "<backup-region>")
        value = value.replace(self.scope.region, "<region>")
        value = ZONE_ID.sub("<zone-id>", value)
        if self.vpc is not None:
            vpc = self.vpc
            value = CIDR.sub(lambda m: _cidr(m, vpc), value)
        return value

    def value(self, value: Any, key: str = "") -> Any:
        if isinstance(value, str):
            if key == "userData":  # launch templates carry it base64-encoded: compare the text
                return self.text(_decoded(value))
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k): self.value(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value


def normalise(resources: list[dict[str, Any]], scope: RegionScope) -> list[dict[str, Any]]:
    """resources.json entries with every region-scoped value replaced by a placeholder."""
    norm = _Normaliser(scope, (str(r.get("name", "")) for r in resources))
    out: list[dict[str, Any]] = norm.value(resources)
    return out


def violations(
    a: list[dict[str, Any]], a_settings: Settings, b: list[dict[str, Any]], b_settings: Settings
) -> PlanDiff:
    """What differs between two regions' plans beyond region-scoped values (empty = parity)."""
    scope_a, scope_b = RegionScope.pair(a_settings, b_settings)
    return diff_resources(normalise(a, scope_a), normalise(b, scope_b))


def format_violations(diff: PlanDiff, context: int = 2) -> list[str]:
    """Like plan.diff.format_diff, but long or multi-line values (user-data, policies) as a unified
    diff of the two, so a reviewer sees the one line that differs."""
    lines = [f"+ {k}" for k in diff.added] + [f"- {k}" for k in diff.removed]
    for change in diff.changed:
        lines.append(f"~ {change.key}")
        for path, (old, new) in change.fields.items():
            if isinstance(old, str) and isinstance(new, str) and ("\n" in old or len(old) > 120):
                lines.append(f"    {path}:")
                lines += [f"      {d}" for d in difflib.unified_diff(old.splitlines(), new.splitlines(), "a", "b",
                                                                   n=context, lineterm="")]
            else:
                lines.append(f"    {path}: {old!r} -> {new!r}")
    return lines


def scope_of(document: dict[str, Any]) -> RegionScope:
    """The region scope of a written plan (resources.json), for `plan --diff` across regions:
    cluster name and environment from the outputs, region from the cluster name, VPC CIDR from the
    VPC, backup region from the BackupTarget's provider."""
    outputs = document.get("outputs") or {}
    cluster, environment = str(outputs.get("clusterName", "")), str(outputs.get("environment", ""))
    prefix = f"ck8s-{environment}-"
    region = cluster[len(prefix):] if environment and cluster.startswith(prefix) else ""
    vpc_cidr = backup_region = None
    for r in document.get("resources", []):
        inputs = r.get("inputs") or {}
        if r.get("type") == tokens.AWS_EC2_VPC and isinstance(inputs.get("cidrBlock"), str):
            vpc_cidr = inputs["cidrBlock"]
        if r.get("type") == tokens.PROVIDER_AWS and tokens.BACKUP_TARGET in str(r.get("parent", "")):
            backup_region = inputs.get("region")
    return RegionScope(region, cluster, backup_region, vpc_cidr)


def document_violations(old: dict[str, Any], new: dict[str, Any]) -> PlanDiff:
    """`violations` for two written plans (resources.json documents) of different regions."""
    a, b = scope_of(old), scope_of(new)
    if a.vpc_cidr == b.vpc_cidr:  # same VPC CIDR: every CIDR must match as written
        a = RegionScope(a.region, a.cluster_name, a.backup_region, None)
        b = RegionScope(b.region, b.cluster_name, b.backup_region, None)
    return diff_resources(normalise(old.get("resources", []), a), normalise(new.get("resources", []), b))

"""Pre-flight decisions (pure): settings + region facts -> findings, each saying what to change."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..images.settings import PARAMETER_PREFIX as IMAGE_PROGRAM_PREFIX
from ..settings.facts import pool_gpus
from ..settings.model import Settings
from ..tables.instance_types import GPU_INSTANCE_TYPES
from . import egress, images, placement, reservations
from .facts import RegionFacts
from .findings import Finding, Kind, Severity
from .quotas import Purchase, Quota, increase_command, quota_for

__all__ = ["Finding", "Kind", "Severity", "check", "failed"]  # Finding's home is findings.py


@dataclass(frozen=True)
class Demand:
    """vCPUs the stack can run at its maximum size, per quota."""

    quota: Quota
    vcpus: int
    parts: tuple[str, ...]  # "2 x m7i.2xlarge (control plane)", ...


def instance_types(settings: Settings) -> dict[str, str]:
    """Instance type -> the setting that asks for it (control plane first, then pools)."""
    out = {settings.control_plane.instance_type: "settings.controlPlane.instanceType"}
    for i, pool in enumerate(settings.node_pools):
        out.setdefault(pool.instance_type, f"settings.nodePools[{i}].instanceType")
    return out


def image_sources(settings: Settings) -> dict[str, list[str]]:
    """Where each node's image comes from -> the settings that choose it: the control planes' or
    a pool's own `ami` (an `ami-` id or an SSM parameter path, docs/adr/0018), else Canonical's
    Ubuntu parameter for the instance type's architecture (images.node_images)."""
    out: dict[str, list[str]] = {}
    for n in images.node_images(settings):
        out.setdefault(n.source, []).append(n.path)
    return out


def own_sources(settings: Settings) -> set[str]:
    """The images the stack names itself: the boundary reads their tags (images.check)."""
    return {n.source for n in images.node_images(settings) if n.own}


def alternatives(instance_type: str, settings: Settings) -> list[str]:
    """Types from the GPU table with the same GPU model and at least as many GPUs: what to try
    instead when a type is not offered (the boundary asks about their offerings too)."""
    pool = next((p for p in settings.node_pools if p.instance_type == instance_type), None)
    facts = pool_gpus(pool) if pool is not None else None
    if facts is None:
        return []
    return sorted(
        name for name, f in GPU_INSTANCE_TYPES.items()
        if name != instance_type and f.product_name == facts.product_name and f.count >= facts.count
    )


def chosen_zones(settings: Settings, facts: RegionFacts) -> tuple[str, ...]:
    """The AZs the stack will use: its own subnets' AZs, or the first `azCount` available AZs
    (what components/aws/network.py takes from aws.get_availability_zones)."""
    if settings.network.existing is not None:
        return facts.subnet_zones
    if settings.network.availability_zones is not None:
        return settings.network.availability_zones
    return facts.zones[: settings.network.az_count]


def zones_needed(settings: Settings, facts: RegionFacts) -> dict[str, tuple[str, ...]]:
    """Instance type -> the AZs it must be offered in: every chosen AZ, except for pools pinned to
    one `availabilityZone` (a reservation or cluster placement group lives in one zone)."""
    zones = chosen_zones(settings, facts)
    out: dict[str, list[str]] = {settings.control_plane.instance_type: list(zones)}
    for pool in settings.node_pools:
        needed = out.setdefault(pool.instance_type, [])
        for z in ((pool.availability_zone,) if pool.availability_zone else zones):
            if z not in needed:
                needed.append(z)
    return {t: tuple(z) for t, z in out.items()}


def vcpus_of(instance_type: str, facts: RegionFacts) -> int | None:
    known = GPU_INSTANCE_TYPES.get(instance_type)
    if known is not None and known.vcpus > 0:
        return known.vcpus
    return facts.vcpus.get(instance_type)


def demands(settings: Settings, facts: RegionFacts) -> tuple[list[Demand], list[Finding]]:
    per_quota: dict[str, tuple[Quota, int, list[str]]] = {}
    findings: list[Finding] = []
    wanted: list[tuple[str, int, Purchase, str, str]] = [
        (settings.control_plane.instance_type, settings.control_plane.count, "on-demand", "control plane",
         "settings.controlPlane"),
    ]
    wanted += [(p.instance_type, p.max_nodes, p.capacity_type, f"pool {p.name} at maxSize", f"settings.nodePools[{i}]")
               for i, p in enumerate(settings.node_pools)]
    for itype, count, purchase, what, path in wanted:
        if count == 0:
            continue
        quota = quota_for(itype, purchase)
        if quota is None:
            findings.append(Finding("quota-unchecked", "warning", f"{path}.instanceType",
                                    f"{itype} is outside the G/VT, P and Standard classes this check knows; "
                                    f"check its {purchase} vCPU quota in the Service Quotas console"))
            continue
        vcpus = vcpus_of(itype, facts)
        if vcpus is None:
            findings.append(Finding("vcpus-unknown", "error", f"{path}.instanceType",
                                    f"vCPUs of {itype} are unknown (not in the GPU table and DescribeInstanceTypes "
                                    f"did not answer{': ' + facts.errors['vcpus'] if 'vcpus' in facts.errors else ''}"
                                    f"): check the type name"))
            continue
        entry = per_quota.setdefault(quota.code, (quota, 0, []))
        per_quota[quota.code] = (quota, entry[1] + count * vcpus, [*entry[2], f"{count} x {itype} ({what})"])
    return [Demand(q, v, tuple(parts)) for q, v, parts in per_quota.values()], findings


def _zones(settings: Settings, facts: RegionFacts) -> Iterator[Finding]:
    if settings.network.existing is not None:
        if "subnets" in facts.errors:
            yield Finding("could-not-check", "error", "settings.network.existing.privateSubnetIds",
                          f"{facts.errors['subnets']}: check the subnet ids exist in {facts.region} and allow "
                          f"ec2:DescribeSubnets for the pre-flight role")
        return
    if len(facts.zones) < settings.network.az_count:
        yield Finding("too-few-zones", "error", "settings.network.azCount",
                      f"{facts.region} has {len(facts.zones)} available AZ(s) ({', '.join(facts.zones) or 'none'}), "
                      f"the stack asks for {settings.network.az_count}: lower azCount or choose another region")


def _offerings(settings: Settings, facts: RegionFacts) -> Iterator[Finding]:
    if "offerings" in facts.errors:
        yield Finding("could-not-check", "error", "ec2:DescribeInstanceTypeOfferings",
                      f"{facts.errors['offerings']}: allow ec2:DescribeInstanceTypeOfferings for the pre-flight role")
        return
    needed = zones_needed(settings, facts)
    for itype, path in instance_types(settings).items():
        zones = needed[itype]
        offered = facts.offerings.get(itype, frozenset())
        missing = [z for z in zones if z not in offered]
        if not missing:
            continue
        elsewhere = sorted(z for z in facts.zones if z in offered)
        fixes = []
        usable = [a for a in alternatives(itype, settings) if all(z in facts.offerings.get(a, ()) for z in zones)]
        if usable:
            fixes.append(f"use {' or '.join(usable)} (same GPU, offered in {', '.join(zones)})")
        if elsewhere:
            fixes.append(f"bring subnets in {', '.join(elsewhere)} through settings.network.existing")
        fixes.append("stamp another region")
        where = "in this region" if not offered else f"in {', '.join(missing)} (offered in {', '.join(elsewhere)})"
        yield Finding("not-offered", "error", path, f"{itype} is not offered {where}: " + "; or ".join(fixes))


def _amis(settings: Settings, facts: RegionFacts) -> Iterator[Finding]:
    for source, paths in image_sources(settings).items():
        own = all(p.endswith(".ami") for p in paths)
        if f"image:{source}" in facts.errors:
            yield Finding("could-not-check", "error", ", ".join(paths),
                          f"{source} names {facts.amis.get(source)}, which could not be described: "
                          f"{facts.errors[f'image:{source}']}: allow ec2:DescribeImages for the pre-flight role "
                          f"(the image's tags say what it carries)")
        elif source in facts.image_gone:
            rebuild = "`pulumi up -C images`" if source.startswith(IMAGE_PROGRAM_PREFIX) else "its pipeline"
            yield Finding("ami-missing", "error", ", ".join(paths),
                          f"the SSM parameter {source} names {facts.amis.get(source)}, which "
                          f"{facts.image_gone[source]} in {facts.region}: the parameter outlived its image; rebuild "
                          f"the image ({rebuild}) so the parameter names one that exists")
        elif source in facts.errors:
            needs = ("ec2:DescribeImages" if source.startswith("ami-") else
                     f"ssm:GetParameter on arn:aws:ssm:{facts.region}:<account>:parameter{source}" if own else
                     f"ssm:GetParameter on public parameters (arn:aws:ssm:{facts.region}::parameter/aws/service/*)")
            yield Finding("could-not-check", "error", source, f"{facts.errors[source]}: allow {needs}")
        elif facts.amis.get(source) is None:
            if source.startswith("ami-"):
                why = (f"image {source} does not exist in {facts.region} or is not available (AMI ids are "
                       f"per region: name this region's copy, or an SSM parameter path every region has)")
            elif own:
                why = (f"the SSM parameter {source} does not exist in {facts.region}: publish the image's id "
                       f"there (the pool's image pipeline) or name another image")
                if source.startswith(IMAGE_PROGRAM_PREFIX):
                    why = (f"the SSM parameter {source} does not exist in {facts.region}: build the image there "
                           f"first (`pulumi up -C images` with {facts.region} as its region or among its "
                           f"distributionRegions, docs/images.md)")
            else:
                why = (f"the Ubuntu AMI parameter {source} does not resolve in {facts.region}: Canonical "
                       f"publishes no such image there; choose another region or instance types of "
                       f"another CPU architecture")
            yield Finding("ami-missing", "error", ", ".join(paths), why)


def _quotas(settings: Settings, facts: RegionFacts) -> Iterator[Finding]:
    needed, findings = demands(settings, facts)
    yield from findings
    for d in needed:
        if d.quota.code in facts.errors:
            yield Finding("could-not-check", "error", f"{d.quota.code} {d.quota.name}",
                          f"{facts.errors[d.quota.code]}: allow servicequotas:GetServiceQuota and "
                          f"servicequotas:GetAWSDefaultServiceQuota for the pre-flight role")
            continue
        have = facts.quotas.get(d.quota.code)
        if have is None or have < d.vcpus:
            yield Finding("quota-too-low", "error", f"{d.quota.code} {d.quota.name}",
                          f"the stack needs {d.vcpus} vCPUs ({' + '.join(d.parts)}) but the quota is "
                          f"{0 if have is None else have:g} in {facts.region} (instances already running there "
                          f"count too): request more with `{increase_command(d.quota, d.vcpus, facts.region)}`, "
                          f"or lower maxSize")


def check(settings: Settings, facts: RegionFacts) -> list[Finding]:
    if facts.unavailable:
        return [Finding("region-unavailable", "error", "settings.region",
                        f"{facts.region} cannot be used: {facts.unavailable}. Enable the region for the account "
                        f"(Account > AWS Regions) or check the credentials")]
    return [*_zones(settings, facts), *_offerings(settings, facts), *_amis(settings, facts),
            *images.check(settings, facts), *_quotas(settings, facts),
            *reservations.check(settings, facts, chosen_zones(settings, facts)),
            *placement.check(settings, facts),
            *egress.check(settings, facts, chosen_zones(settings, facts))]


def failed(findings: list[Finding]) -> bool:
    return any(f.severity == "error" for f in findings)

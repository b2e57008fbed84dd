"""A region's stack config from the template's: merge the overrides, then derive region-scoped fields.

Region-scoped fields are the only ones allowed to differ between two stamped regions (the
parity test holds the program to that):
- `region` (and the `aws:region` provider config when the template sets it);
- `network.vpcCidr` when the overrides configure one per region (otherwise the template's);
- `network.existing` (VPC and subnet ids exist in one region only: required per region);
- `backup.region`: the template's when it is another region of the same geography, else it
  must be given (a silent cross-geography default would move data across residency borders);
- `backup.restoreFrom` for a rebuild: the template cluster's bucket, read-only;
- zone-scoped fields (`network.availabilityZones`, a pool's `availabilityZone`, its
  `capacityReservation` and `placement.groupName`): zones, reservations and placement groups
  exist in one region only, so a stamped stack that keeps the template's is refused: give the
  region's own (or null).
Secrets are never copied: they are encrypted per stack (see stackfile.py).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..settings.load import SETTINGS_KEY, SettingsError
from ..settings.model import Settings
from ..settings.rules.cluster import REGION
from ..validate import from_config as settings_from_config
from .merge import merge_settings

Problem = tuple[str, str]
PROVIDER_REGION_KEY = "aws:region"


@dataclass(frozen=True)
class StampedStack:
    template: str
    region: str
    stack: str
    config: dict[str, Any]  # the stack's `config:` mapping, secrets left out
    settings: Settings
    secrets_to_set: tuple[str, ...] = ()  # template secrets the operator sets on this stack
    notes: tuple[str, ...] = field(default=())


def stack_name(template: str, region: str) -> str:
    return f"{template}-{region}"


def geography(region: str) -> str:
    """`us-east-1` -> `us`, `us-gov-west-1` -> `us-gov`: backups stay inside one geography."""
    parts = region.split("-")
    return "-".join(parts[:2]) if len(parts) > 3 else parts[0]


def is_secret(value: Any) -> bool:
    return isinstance(value, Mapping) and set(value) == {"secure"}


def _backup(raw: dict[str, Any], template: Settings, region: str, override: Mapping[str, Any],
            backup_region: str | None, restore: bool, where: str) -> tuple[list[Problem], list[str]]:
    problems: list[Problem] = []
    notes: list[str] = []
    backup = raw.get("backup")
    if restore:
        if template.backup is None or template.backup.region is None:
            problems.append(("settings.backup", "the template has no backups to restore from (backup is unset)"))
            return problems, notes
        if backup is None:
            problems.append((f"{where}.backup", "a rebuild keeps backups on: do not set backup to null"))
            return problems, notes
    if not isinstance(backup, dict):
        return problems, notes
    given = backup_region or (override.get("backup") or {}).get("region")
    if given is not None:
        backup["region"] = given
    else:
        inherited = backup.get("region")
        if inherited == region:
            problems.append((f"{where}.backup.region",
                             f"the template backs up to {inherited}, which is this region: give another region "
                             f"of {geography(region)} (overrides file or --backup-region)"))
        elif isinstance(inherited, str) and geography(inherited) != geography(region):
            problems.append((f"{where}.backup.region",
                             f"the template backs up to {inherited}, outside {geography(region)}: name the backup "
                             f"region for {region} explicitly (overrides file or --backup-region)"))
        elif isinstance(inherited, str):
            notes.append(f"backups go to {inherited} (the template's backup region)")
    if restore and template.backup is not None:
        backup["restoreFrom"] = {"clusterName": template.cluster_name, "region": template.backup.region}
        notes.append(f"restores read-only from {template.cluster_name}'s backups in {template.backup.region}")
    return problems, notes


def _zone_scoped(raw: dict[str, Any], template: Settings, where: str) -> list[Problem]:
    """Template values that name one region's zones, reservations or placement groups, still there."""
    problems: list[Problem] = []
    network: dict[str, Any] = raw["network"] if isinstance(raw.get("network"), dict) else {}
    zones = template.network.availability_zones
    if zones is not None and tuple(network.get("availabilityZones") or ()) == zones:
        problems.append((f"{where}.network.availabilityZones",
                         f"the template's zones ({', '.join(zones)}) are {template.region}'s: give this region's"))
    stamped = {p.get("name"): p for p in raw.get("nodePools") or [] if isinstance(p, dict)}
    for pool in template.node_pools:
        got = stamped.get(pool.name) or {}
        kept = []
        if pool.availability_zone is not None and got.get("availabilityZone") == pool.availability_zone:
            kept.append(f"availabilityZone {pool.availability_zone}")
        cr = pool.capacity_reservation
        if cr is not None and got.get("capacityReservation") == cr.model_dump(by_alias=True, exclude_defaults=True):
            kept.append(f"capacityReservation {cr.id or cr.resource_group_arn}")
        pg = pool.placement
        stamped_group = (got.get("placement") or {}).get("groupName")
        if pg is not None and pg.group_name is not None and stamped_group == pg.group_name:
            kept.append(f"placement.groupName {pg.group_name}")
        if kept:
            problems.append((f"{where}.nodePools",
                             f"pool '{pool.name}': {', '.join(kept)} exist only in {template.region}: give this "
                             f"region's (nodePools: [{{name: {pool.name}, ...}}]), or null"))
    return problems


def derive(
    template: str,
    template_config: Mapping[str, Any],
    template_settings: Settings,
    region: str,
    override: Mapping[str, Any] | None = None,
    *,
    backup_region: str | None = None,
    restore: bool = False,
    overrides_source: str = "overrides",
) -> StampedStack:
    """The stamped stack for `region`. Raises SettingsError naming every problem (with fixes)."""
    override = override or {}
    where = f"{overrides_source}: regions.{region}"
    problems: list[Problem] = []
    if not REGION.match(region):
        raise SettingsError(f"stamp {template} -> {region}", [("region", f"'{region}' is not an AWS region name")])
    if template_settings.platform != "aws":
        problems.append(("settings.platform",
                         f"only aws stacks are stamped per region; {template} is {template_settings.platform}"))
    if region == template_settings.region:
        problems.append(("region", f"{region} is the template's own region: stack {template} already serves it"))
    if backup_region is not None and backup_region == region:
        problems.append(("--backup-region", f"must differ from the stamped region {region}"))

    raw = merge_settings(template_config[SETTINGS_KEY], override)
    raw["region"] = region
    network = raw.get("network")
    if (template_settings.network.existing is not None and isinstance(network, dict) and "existing" in network
            and "existing" not in (override.get("network") or {})):
        problems.append((f"{where}.network.existing",
                         f"the template's VPC {template_settings.network.existing.vpc_id} exists only in "
                         f"{template_settings.region}: give this region's vpcId and subnets, or null for a new VPC"))
    # An `ami-` id names an image in one region (a parameter path is looked up in each region).
    stamped_amis = {p.get("name"): p.get("ami") for p in raw.get("nodePools") or [] if isinstance(p, dict)}
    for pool in template_settings.node_pools:
        if pool.ami is not None and pool.ami.startswith("ami-") and stamped_amis.get(pool.name) == pool.ami:
            problems.append((f"{where}.nodePools",
                             f"pool '{pool.name}': the template's image {pool.ami} exists only in "
                             f"{template_settings.region}: give this region's (nodePools: [{{name: {pool.name}, "
                             f"ami: ...}}]), or name an SSM parameter path present in every region"))
    problems += _zone_scoped(raw, template_settings, where)
    backup_problems, notes = _backup(raw, template_settings, region, override, backup_region, restore, where)
    problems += backup_problems

    config: dict[str, Any] = {}
    secrets: list[str] = []
    for key, value in template_config.items():
        if key == SETTINGS_KEY:
            config[key] = raw
        elif is_secret(value):
            secrets.append(key)  # encrypted with the template stack's key: useless to another stack
        elif key == PROVIDER_REGION_KEY:
            config[key] = region
        else:
            config[key] = copy.deepcopy(value)
    source = f"stamp {template} -> {region}"
    if problems:
        raise SettingsError(source, problems)
    settings = settings_from_config(config, source, offline=True)
    return StampedStack(
        template=template, region=region, stack=stack_name(template, region), config=config, settings=settings,
        secrets_to_set=tuple(secrets), notes=tuple(notes),
    )


def derive_all(
    template: str,
    template_config: Mapping[str, Any],
    regions: list[str],
    overrides: Mapping[str, Mapping[str, Any]],
    *,
    backup_region: str | None = None,
    restore: bool = False,
    overrides_source: str = "overrides",
) -> list[StampedStack]:
    """Every region's stack, or ONE SettingsError listing every region's problems (nothing half-stamped)."""
    template_settings = settings_from_config(template_config, f"stack {template}", offline=True)
    problems: list[Problem] = []
    if len(set(regions)) != len(regions):
        dupes = sorted({r for r in regions if regions.count(r) > 1})
        problems.append(("--regions", f"listed twice: {', '.join(dupes)}"))
    stamped: list[StampedStack] = []
    for region in dict.fromkeys(regions):
        try:
            stamped.append(derive(template, template_config, template_settings, region, overrides.get(region),
                                  backup_region=backup_region, restore=restore, overrides_source=overrides_source))
        except SettingsError as exc:
            problems += [(f"[{region}] {path}", reason) for path, reason in exc.problems]
    if problems:
        raise SettingsError(f"stamp {template}", problems)
    return stamped


def unused_overrides(regions: list[str], overrides: Mapping[str, Any]) -> list[str]:
    """Regions the overrides file names but this run does not stamp (a note, not an error)."""
    return sorted(set(overrides) - set(regions))

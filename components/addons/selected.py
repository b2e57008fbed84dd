"""Which add-ons a stack installs, asked by the layers that create what an add-on needs (pure)."""

from __future__ import annotations

from ..facts.cluster import AddonFacts
from ..settings.model import Settings
from .aws_cloud_controller_manager import NAME as CCM
from .catalog import ADDONS
from .graph import cluster_capabilities, select


def installed(settings: Settings) -> frozenset[str]:
    """The names of the add-ons this stack installs: the one answer, for every layer above the
    catalog (the add-on modules themselves read their context's `enabled`)."""
    return frozenset(a.name for a in select(ADDONS, settings, cluster_capabilities(settings)))


def addon_facts(settings: Settings) -> AddonFacts:
    """What a platform must know of the add-ons this stack installs (the platforms never import them)."""
    names = installed(settings)
    return AddonFacts(cloud_controller_manager=CCM in names, backup_target=_backup_target(settings, names))


def backup_target_needed(settings: Settings) -> bool:
    """The program creates a BackupTarget on AWS when the stack asks for backups and installs
    Velero: with `velero.enabled: false` an access key nobody uses would only be a liability."""
    return _backup_target(settings, installed(settings))


def _backup_target(settings: Settings, names: frozenset[str]) -> bool:
    return settings.platform == "aws" and settings.backup is not None and "velero" in names

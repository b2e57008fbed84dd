"""Which add-ons a stack installs, asked by the layers that create what an add-on needs (pure)."""

from __future__ import annotations

from ..settings.model import Settings
from .catalog import ADDONS
from .graph import cluster_capabilities, select


def installs(settings: Settings, addon: str) -> bool:
    return any(a.name == addon for a in select(ADDONS, settings, cluster_capabilities(settings)))


def backup_target_needed(settings: Settings) -> bool:
    """The program creates a BackupTarget on AWS when the stack asks for backups and installs
    Velero: with `velero.enabled: false` an access key nobody uses would only be a liability."""
    return settings.platform == "aws" and settings.backup is not None and installs(settings, "velero")

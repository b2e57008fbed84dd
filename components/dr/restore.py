"""What a DR restore brings back, and the commands that do it (pure).

The replacement cluster's own Pulumi program re-creates everything this project manages (add-on
namespaces, the smoke test); restoring those from the old cluster would fight the program, and the
Kubernetes system namespaces belong to the new cluster. Everything else (the teams' namespaces and
their volumes) comes back from the lost cluster's latest backup.
"""

from __future__ import annotations

import contextlib

from ..addons.graph import AddonGraphError, install_graph
from ..addons.velero_values import RESTORE_LOCATION
from ..settings.model import Settings

SYSTEM_NAMESPACES = ("kube-node-lease", "kube-public", "kube-system")


def managed_namespaces(settings: Settings) -> list[str]:
    """Namespaces the program (re)creates: never restored over."""
    names = set(SYSTEM_NAMESPACES)
    with contextlib.suppress(AddonGraphError):  # invalid add-on settings: the plan reports them
        names |= {a.namespace for a in install_graph(settings).order}
    if settings.smoke_test.enabled:
        names.add(settings.smoke_test.namespace)
    return sorted(names)


def restore_commands(settings: Settings) -> list[str]:
    """Shell commands restoring the lost cluster's latest backup into the replacement (velero CLI
    matching the pinned chart's Velero release, kubeconfig of the replacement)."""
    backup = settings.backup
    if backup is None or backup.restore_from is None:
        return []
    old = backup.restore_from.cluster_name
    selector = f"velero.io/storage-location={RESTORE_LOCATION}"
    return [
        f"kubectl -n velero get backupstoragelocation {RESTORE_LOCATION}   # PHASE must be Available",
        f"kubectl -n velero get backups -l {selector} --sort-by=.status.completionTimestamp",
        f"velero restore create restore-{old} --from-backup <the newest Completed backup above> "
        f"--exclude-namespaces {','.join(managed_namespaces(settings))} --wait",
        f"velero restore describe restore-{old} --details   # Phase: Completed, no errors",
    ]

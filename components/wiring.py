"""The one wiring: settings to a cluster, its backup target, the add-on set and the smoke test.

The repository's program (`__main__.py`) and the typed components (`GpuAddons`, `GpuCluster`,
components/api.py) both wire through `wire`, so a stack and a component with the same settings
get the same resources in the same order; only the logical names differ (the program's are
fixed by the state of deployed stacks, a component's are prefixed by its own name).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from .addons.addon_set import AddonSet
from .addons.selected import backup_target_needed
from .dr.backup_target import BackupTarget
from .kube.cluster_handle import ClusterHandle
from .platforms import make_cluster
from .settings.model import Settings
from .smoke.component import SmokeTest


@dataclass(frozen=True)
class Names:
    """Logical names of the wired pieces (a rename replaces resources: never change a deployed one)."""

    cluster: str
    backup: str
    addons: str
    smoke: str

    @staticmethod
    def program(settings: Settings) -> Names:
        """The names `__main__.py` has always registered (deployed stacks' state holds them)."""
        return Names(cluster=settings.cluster_name, backup="backup", addons="gpu-stack", smoke="smoke-test")

    @staticmethod
    def component(name: str) -> Names:
        """A component's children: its own name first, so two components in one program never collide."""
        return Names(cluster=f"{name}-cluster", backup=f"{name}-backup", addons=f"{name}-addons",
                     smoke=f"{name}-smoke-test")


@dataclass(frozen=True)
class Wired:
    cluster: ClusterHandle
    backup: BackupTarget | None
    addons: AddonSet
    smoke: SmokeTest


def wire(settings: Settings, kubeconfig: pulumi.Input[str] | None, names: Names,
         opts: pulumi.ResourceOptions | None = None) -> Wired:
    """Everything a validated stack makes. `opts` (a parent, providers) applies to every piece."""
    cluster = make_cluster(names.cluster, settings, kubeconfig, opts=opts)
    # Velero's off-region bucket, key and IAM user; the add-on gets the access key and waits for them.
    backup = BackupTarget(names.backup, settings, opts) if backup_target_needed(settings) else None
    extra_values: dict[str, pulumi.Input[dict[str, Any]]] = {"velero": backup.velero_values()} if backup else {}
    if cluster.node_classes is not None:  # the autoscaled pools' EC2NodeClasses (components/aws/karpenter.py)
        extra_values["karpenter-nodepools"] = cluster.node_classes.apply(lambda c: {"nodeClasses": c})
    addons = AddonSet(
        names.addons, settings, cluster,
        extra_values=extra_values or None,
        extra_dependencies={"velero": backup.ready} if backup else None,
        opts=opts,
    )
    # After every add-on release; a changed release (a new pin) runs it again (docs/addons.md, Upgrades).
    smoke = SmokeTest(names.smoke, settings, cluster, depends_on=addons.smoke_dependencies,
                      addons_digest=addons.fingerprint, opts=opts)
    return Wired(cluster=cluster, backup=backup, addons=addons, smoke=smoke)

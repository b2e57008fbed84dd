"""Velero backups to an S3 bucket in another region (values only; issue 8 wires bucket and IAM).

Off by default on every platform. Values keys verified against vmware-tanzu/helm-charts tag
velero-11.1.1 (charts/velero/values.yaml: configuration.backupStorageLocation, schedules,
credentials.useSecret, deployNodeAgent). The AWS object-store plugin (an init container) needs an
image pin with a digest first; until then supply it through gpuStack.addons.velero.values.
"""

from __future__ import annotations

from typing import Any

from components.addons.base import Addon, AddonContext
from components.settings.model import Settings

NAMESPACE = "velero"


def bucket_name(cluster_name: str) -> str:
    """The bucket the backup component creates (one per cluster, in settings.backup.region)."""
    return f"{cluster_name}-velero"


def values(ctx: AddonContext) -> dict[str, Any]:
    s = ctx.settings
    backup = s.backup
    if backup is None or backup.region is None:
        return {}  # the add-on's check reports this before anything installs
    return {
        "configuration": {
            "backupStorageLocation": [{
                "name": "default",
                "provider": "aws",
                "bucket": bucket_name(s.cluster_name),
                "default": True,
                "config": {"region": backup.region},
            }],
            "volumeSnapshotLocation": [],
        },
        # Node credentials (instance profile / IRSA), never a static key in a Secret.
        "credentials": {"useSecret": False},
        "schedules": {
            "cluster": {
                "schedule": backup.schedule,
                "template": {"ttl": f"{backup.ttl_hours}h0m0s", "includedNamespaces": ["*"]},
            },
        },
    }


def _check(settings: Settings) -> tuple[str, ...]:
    if settings.backup is None or settings.backup.region is None:
        return ("needs settings.backup.region (the bucket's region, not the cluster's)",)
    return ()


ADDON = Addon(
    name="velero",
    settings_key="velero",
    description="Velero backups of cluster objects to a bucket in another region",
    namespace=NAMESPACE,
    pod_security="baseline",
    values=values,
    chart_pin="velero",
    timeout_seconds=10 * 60,
    check=_check,
)

"""THE Velero values (pure): the `velero` add-on's values function is `velero_values`, and
BackupTarget supplies only what it alone knows, the access key, through `credentials_values`.

Keys verified against vmware-tanzu/helm-charts tag velero-11.1.1 (commit 5b4838c, charts/velero/
values.yaml and templates): initContainers, upgradeCRDs, configuration.{backupStorageLocation[].
accessMode, volumeSnapshotLocation, uploaderType, defaultVolumesToFsBackup}, snapshotsEnabled,
deployNodeAgent, nodeAgent.tolerations, credentials.{useSecret,name,secretContents},
schedules.<name>.{schedule,template}. The chart mounts the credentials Secret into the server and
the node agent and sets AWS_SHARED_CREDENTIALS_FILE=/credentials/cloud. The Velero image stays
the chart's default (values.yaml image velero/velero, tag v1.17.0 at 11.1.1): nothing to set.

Why node-agent file-system backups rather than EBS snapshots: snapshots live in the cluster's
region and are lost with it; kopia uploads go to the bucket in the backup region.
Why a credentials file rather than node credentials: nodes keep IMDSv2 at hop limit 1 (pods
cannot reach instance credentials, components/aws/hardening.py) and the chart offers no host
networking; the key belongs to an IAM user that can touch only the backup bucket (ADR 0010).
"""

from __future__ import annotations

from typing import Any

from ..settings.model import Settings
from ..tables import pins
from ..tables.backup_names import CREDENTIALS_SECRET, bucket_name

RESTORE_LOCATION = "restore-source"
SCHEDULE = "cluster"  # the chart names the Schedule `velero-<this>`
# The chart copies the plugin binary from the init container into this shared emptyDir.
PLUGINS_VOLUME = "plugins"


def credentials_file(access_key_id: str, secret_access_key: str) -> str:
    """The AWS shared-credentials file Velero reads (chart credentials.secretContents.cloud)."""
    return f"[default]\naws_access_key_id={access_key_id}\naws_secret_access_key={secret_access_key}\n"


def credentials_values(cloud: str) -> dict[str, Any]:
    """What the wiring merges over `velero_values`: the credentials file (keep it a secret)."""
    return {"credentials": {"secretContents": {"cloud": cloud}}}


def _tolerations(settings: Settings) -> list[dict[str, str]]:
    """The node agent must run on the tainted GPU nodes too: their pods' volumes are backed up there."""
    seen: dict[tuple[str, str, str], dict[str, str]] = {}
    for pool in settings.node_pools:
        for t in pool.taints:
            seen[(t.key, t.value, t.effect)] = {"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
    return [seen[k] for k in sorted(seen)]


def _aws_plugin() -> dict[str, Any]:
    """The AWS object-store plugin as the init container the chart requires for a provider."""
    return {
        "name": "velero-plugin-for-aws",
        "image": pins.image("velero-plugin-aws").ref,
        "imagePullPolicy": "IfNotPresent",
        "volumeMounts": [{"mountPath": "/target", "name": PLUGINS_VOLUME}],
    }


def velero_values(settings: Settings) -> dict[str, Any]:
    """Values for the `velero` release; {} when the stack has no backups."""
    backup = settings.backup
    if backup is None or backup.region is None:
        return {}
    locations: list[dict[str, Any]] = [{
        "name": "default",
        "provider": "aws",
        "bucket": bucket_name(settings.cluster_name),
        "default": True,
        "accessMode": "ReadWrite",
        "config": {"region": backup.region},
    }]
    if backup.restore_from is not None:
        # The lost cluster's backups, never written to: Velero syncs them in as Backup objects.
        locations.append({
            "name": RESTORE_LOCATION,
            "provider": "aws",
            "bucket": bucket_name(backup.restore_from.cluster_name),
            "default": False,
            "accessMode": "ReadOnly",
            "config": {"region": backup.restore_from.region},
        })
    return {
        "initContainers": [_aws_plugin()],
        # The CRD-upgrade hook runs docker.io/bitnamilegacy/kubectl:<cluster minor>: unmaintained, not
        # pinnable here, and reported to have no 1.34 tag (the install would fail). Helm installs
        # the chart's crds/ itself; a chart bump applies new CRDs by hand (ADR 0010).
        "upgradeCRDs": False,
        "configuration": {
            "backupStorageLocation": locations,
            "volumeSnapshotLocation": [],
            "uploaderType": "kopia",
            "defaultVolumesToFsBackup": True,
        },
        "snapshotsEnabled": False,
        "deployNodeAgent": True,
        # The chart's nodeAgent.podVolumePath default /var/lib/kubelet/pods is Canonical
        # Kubernetes' kubelet root too: nothing to set.
        "nodeAgent": {"tolerations": _tolerations(settings)},
        # secretContents.cloud comes from BackupTarget (`credentials_values`, a Pulumi secret).
        "credentials": {"useSecret": True, "name": CREDENTIALS_SECRET},
        "schedules": {
            SCHEDULE: {
                "schedule": backup.schedule,
                "template": {"ttl": f"{backup.ttl_hours}h0m0s", "includedNamespaces": ["*"]},
            },
        },
    }

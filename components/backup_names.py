"""Names of the backup objects (bucket, KMS alias, IAM user, Velero's credentials Secret), derived from the
cluster name (unique per environment and region): the AWS inventory, the Velero add-on and the DR
tools all read them here (pure; no imports)."""

from __future__ import annotations

# The Secret the Velero chart creates from credentials.secretContents (chart value credentials.name).
CREDENTIALS_SECRET = "velero-aws-credentials"


def bucket_name(cluster_name: str) -> str:
    """The backup bucket of a cluster (one per cluster, in its settings.backup.region). A rebuild
    finds a lost cluster's backups by this name alone, so it must never depend on anything else."""
    return f"{cluster_name}-velero"


def key_alias(cluster_name: str) -> str:
    return f"alias/{cluster_name}-velero"


def user_name(cluster_name: str) -> str:
    return f"{cluster_name}-velero"

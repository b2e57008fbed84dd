"""Names of the backup objects (bucket, KMS alias, IAM user, Velero's credentials Secret), derived from the
cluster name (unique per environment and region): the AWS inventory, the Velero add-on and the DR
tools all read them here (pure). Hashed only where AWS's limit needs it (ADR 0042), from the cluster
name alone, so a rebuild derives the lost cluster's names from `restoreFrom.clusterName`."""

from __future__ import annotations

from .hashed_names import fit

# The Secret the Velero chart creates from credentials.secretContents (chart value credentials.name).
CREDENTIALS_SECRET = "velero-aws-credentials"
# AWS's limits (components/aws/naming.py NAME_RULES has each with its source; a test keeps them equal).
BUCKET_MAX, ALIAS_MAX, USER_MAX = 63, 256, 64
ALIAS_PREFIX = "alias/"


def bucket_name(cluster_name: str) -> str:
    """The backup bucket of a cluster (one per cluster, in its settings.backup.region). A rebuild
    finds a lost cluster's backups by this name alone, so it must never depend on anything else."""
    return fit(cluster_name, "-velero", BUCKET_MAX)


def key_alias(cluster_name: str) -> str:
    return ALIAS_PREFIX + fit(cluster_name, "-velero", ALIAS_MAX - len(ALIAS_PREFIX))


def user_name(cluster_name: str) -> str:
    return fit(cluster_name, "-velero", USER_MAX)

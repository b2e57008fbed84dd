"""Names of the DR objects, derived from the cluster name (unique per environment and region)."""

from __future__ import annotations

from components.addons.velero import bucket_name

__all__ = ["CREDENTIALS_SECRET", "bucket_name", "key_alias", "user_name"]

# The Secret the Velero chart creates from credentials.secretContents (chart value credentials.name).
CREDENTIALS_SECRET = "velero-aws-credentials"


def key_alias(cluster_name: str) -> str:
    return f"alias/{cluster_name}-velero"


def user_name(cluster_name: str) -> str:
    return f"{cluster_name}-velero"

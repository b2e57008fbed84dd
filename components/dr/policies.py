"""IAM and bucket policy documents for Velero's backup target (pure, JSON-ready dicts).

Least privilege, read from vmware-tanzu/velero-plugin-for-aws README (commit 800bcfb, 2026-02):
Velero's object store needs s3:GetObject/PutObject/DeleteObject/AbortMultipartUpload/
ListMultipartUploadParts on the objects and s3:ListBucket on the bucket. Left out on purpose:
s3:PutObjectTagging (only for BSL `config.tagging`, unused) and every ec2:*Snapshot/Volume action
(EBS snapshots stay in the cluster's region and die with it; volumes go through the node agent's
file-system backup into the off-region bucket instead). Deleting object VERSIONS is not granted:
with bucket versioning, whatever Velero (or a thief holding its key) deletes stays recoverable
until the noncurrent-version lifecycle expires it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..settings.model import RestoreSource
from ..tables.backup_names import bucket_name, key_alias

OBJECT_ACTIONS = ("s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:ListMultipartUploadParts",
                  "s3:PutObject")
READ_OBJECT_ACTIONS = ("s3:GetObject",)
BUCKET_ACTIONS = ("s3:ListBucket",)
# SSE-KMS: writing needs a data key, reading needs Decrypt; nothing else on the key.
KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")


def velero_policy(
    *,
    partition: str,
    bucket_arn: str,
    key_arn: str,
    restore_from: RestoreSource | None = None,
    source_ips: Sequence[str] = (),
) -> dict[str, Any]:
    """The Velero user's policy: read/write its own bucket (and key), read-only on a lost cluster's
    bucket when rebuilding. `source_ips` (the cluster's NAT egress addresses) pins every grant to
    requests from the cluster; empty = no IP condition."""
    condition = {"IpAddress": {"aws:SourceIp": sorted(source_ips)}} if source_ips else None
    statements: list[dict[str, Any]] = [
        {"Sid": "BackupObjects", "Effect": "Allow", "Action": list(OBJECT_ACTIONS), "Resource": f"{bucket_arn}/*"},
        {"Sid": "BackupBucket", "Effect": "Allow", "Action": list(BUCKET_ACTIONS), "Resource": bucket_arn},
        {"Sid": "BackupKey", "Effect": "Allow", "Action": list(KEY_ACTIONS), "Resource": key_arn},
    ]
    if restore_from is not None:
        old = f"arn:{partition}:s3:::{bucket_name(restore_from.cluster_name)}"
        statements += [
            {"Sid": "RestoreObjects", "Effect": "Allow", "Action": list(READ_OBJECT_ACTIONS), "Resource": f"{old}/*"},
            {"Sid": "RestoreBucket", "Effect": "Allow", "Action": list(BUCKET_ACTIONS), "Resource": old},
            # The old key's id is not known to this stack: allow it by its alias, through S3 only.
            {"Sid": "RestoreKey", "Effect": "Allow", "Action": ["kms:Decrypt"],
             "Resource": f"arn:{partition}:kms:{restore_from.region}:*:key/*",
             "Condition": {
                 "ForAnyValue:StringEquals": {"kms:ResourceAliases": key_alias(restore_from.cluster_name)},
                 "StringEquals": {"kms:ViaService": f"s3.{restore_from.region}.amazonaws.com"},
             }},
        ]
    if condition is not None:
        # S3 statements only: KMS is called by S3 on the caller's behalf, and such calls carry no
        # aws:SourceIp (an IP condition there would deny every encrypted read and write).
        for statement in statements:
            if all(a.startswith("s3:") for a in statement["Action"]):
                statement["Condition"] = {**statement.get("Condition", {}), **condition}
    return {"Version": "2012-10-17", "Statement": statements}


def bucket_policy(bucket_arn: str) -> dict[str, Any]:
    """Deny any request without TLS (the bucket holds every Secret of the cluster)."""
    return {
        "Version": "2012-10-17",
        "Statement": [{
            "Sid": "TlsOnly",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:*",
            "Resource": [bucket_arn, f"{bucket_arn}/*"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }],
    }


def noncurrent_days(ttl_hours: int) -> int:
    """Keep deleted/overwritten backup objects as long as a backup lives (whole days, at least 1):
    a backup removed early by mistake or malice stays recoverable for its whole lifetime."""
    return max(1, -(-ttl_hours // 24))

"""Velero's IAM policy and the bucket policy: least privilege, and what a rebuild may read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from components.dr.policies import bucket_policy, noncurrent_days, velero_policy
from components.settings.model import RestoreSource
from tests.helpers.golden import assert_golden

BUCKET = "arn:aws:s3:::ck8s-prod-us-west-2-velero"
KEY = "arn:aws:kms:us-east-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
RESTORE = RestoreSource(cluster_name="ck8s-prod-us-east-1", region="us-west-2")


def _actions(doc: dict[str, Any]) -> set[str]:
    return {a for s in doc["Statement"] for a in s["Action"]}


def test_own_bucket_read_write_no_versions_no_snapshots_no_wildcards() -> None:
    doc = velero_policy(partition="aws", bucket_arn=BUCKET, key_arn=KEY)
    assert _actions(doc) == {"s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject",
                             "s3:ListMultipartUploadParts", "s3:PutObject", "s3:ListBucket", "kms:Decrypt",
                             "kms:GenerateDataKey"}
    resources = {s["Resource"] for s in doc["Statement"]}
    assert resources == {BUCKET, f"{BUCKET}/*", KEY}
    assert not any(a == "*" or a.endswith(":*") for a in _actions(doc))


def test_restore_adds_read_only_access_to_the_lost_clusters_bucket_and_key() -> None:
    doc = velero_policy(partition="aws", bucket_arn=BUCKET, key_arn=KEY, restore_from=RESTORE)
    restore = {s["Sid"]: s for s in doc["Statement"] if s["Sid"].startswith("Restore")}
    assert restore["RestoreObjects"]["Action"] == ["s3:GetObject"]
    assert restore["RestoreObjects"]["Resource"] == "arn:aws:s3:::ck8s-prod-us-east-1-velero/*"
    assert restore["RestoreBucket"]["Action"] == ["s3:ListBucket"]
    key = restore["RestoreKey"]
    assert key["Action"] == ["kms:Decrypt"]
    assert key["Condition"]["ForAnyValue:StringEquals"] == {"kms:ResourceAliases": "alias/ck8s-prod-us-east-1-velero"}
    assert key["Condition"]["StringEquals"] == {"kms:ViaService": "s3.us-west-2.amazonaws.com"}


def test_source_ips_pin_s3_grants_but_not_kms_called_through_s3() -> None:
    doc = velero_policy(partition="aws", bucket_arn=BUCKET, key_arn=KEY, restore_from=RESTORE,
                        source_ips=["198.51.100.7/32", "198.51.100.3/32"])
    for s in doc["Statement"]:
        ip = s.get("Condition", {}).get("IpAddress")
        if s["Action"][0].startswith("s3:"):
            assert ip == {"aws:SourceIp": ["198.51.100.3/32", "198.51.100.7/32"]}, s["Sid"]
        else:
            assert ip is None, s["Sid"]


def test_bucket_policy_denies_plain_http() -> None:
    [deny] = bucket_policy(BUCKET)["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert deny["Resource"] == [BUCKET, f"{BUCKET}/*"]


def test_noncurrent_versions_live_as_long_as_backups() -> None:
    assert noncurrent_days(720) == 30
    assert noncurrent_days(25) == 2
    assert noncurrent_days(1) == 1


def test_policy_document_golden() -> None:
    doc = velero_policy(partition="aws", bucket_arn=BUCKET, key_arn=KEY, restore_from=RESTORE,
                        source_ips=["198.51.100.7/32"])
    assert_golden(Path("dr") / "velero-policy.json", json.dumps(doc, indent=2, sort_keys=True) + "\n")

"""BackupTarget under the mock engine: what it creates, in which region, what is protected, what
is secret, and the order AWS needs (policy after the public-access block)."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pytest

from components.addons.selected import backup_target_needed
from components.dr.backup_target import BackupTarget
from components.plan.mockengine import MASK, Recorded, run_program
from components.settings.model import Settings


def _settings(protect: bool = True, **backup: Any) -> Settings:
    return Settings.model_validate({
        "platform": "aws", "environment": "prod", "production": True, "region": "us-east-1", "tags": {"team": "ml"},
        "protection": {"protect": protect, "retainOnDelete": protect},
        "backup": {"region": "us-west-2", "ttlHours": 240, **backup},
    })


def _run(settings: Settings, **kwargs: Any) -> dict[str, Recorded]:
    def program() -> None:
        target = BackupTarget("backup", settings, **kwargs)
        pulumi.export("credentials", target.credentials)

    run = run_program(program, {}, stack="prod", region="us-east-1")
    assert run.outputs["credentials"] == MASK  # exported as a secret
    return {r.name: r for r in run.resources}


def test_resources_parents_and_the_backup_region_provider() -> None:
    res = _run(_settings())
    component = res["backup"]
    assert component.type == "ck8s-gpu:index:BackupTarget"
    assert all(r.parent == component.urn for name, r in res.items() if name != "backup")
    provider = res["backup-aws"]
    assert provider.inputs["region"] == "us-west-2"  # ANOTHER region than the cluster's
    tags = json.loads(provider.inputs["defaultTags"])["tags"]
    assert tags == {"team": "ml", "ck8s-gpu/cluster": "ck8s-prod-us-east-1"}
    aws_children = [r for r in res.values() if r.type.startswith("aws:")]
    assert len(aws_children) == 12 and all(r.provider.startswith("backup-aws-") for r in aws_children)
    assert res["backup-bucket"].inputs["bucket"] == "ck8s-prod-us-east-1-velero"
    assert res["backup-bucket"].inputs["forceDestroy"] is False


def test_encrypted_versioned_private_bucket() -> None:
    res = _run(_settings())
    sse = res["backup-encryption"].inputs["rules"][0]
    assert sse["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "aws:kms"
    assert sse["bucketKeyEnabled"] is True
    assert res["backup-versioning"].inputs["versioningConfiguration"]["status"] == "Enabled"
    pab = res["backup-public-access"].inputs
    assert all(pab[k] is True for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls",
                                        "restrictPublicBuckets"))
    assert res["backup-ownership"].inputs["rule"]["objectOwnership"] == "BucketOwnerEnforced"
    assert res["backup-key"].inputs["enableKeyRotation"] is True
    rule = res["backup-lifecycle"].inputs["rules"][0]
    assert rule["noncurrentVersionExpiration"]["noncurrentDays"] == 10  # ttlHours 240
    assert res["backup-policy"].dependencies and res["backup-public-access"].urn in res["backup-policy"].dependencies


@pytest.mark.parametrize("protect", [True, False])
def test_protection_follows_settings_on_state_bearing_resources(protect: bool) -> None:
    res = _run(_settings(protect=protect))
    for name in ("backup-bucket", "backup-key", "backup-versioning"):
        assert (res[name].protect, res[name].retain_on_delete) == (protect, protect), name
    # Disposable pieces are never protected: a rebuild recreates them.
    for name in ("backup-user", "backup-user-key", "backup-user-policy"):
        assert not res[name].protect, name


def test_velero_has_its_own_user_whose_key_is_only_exported_as_a_secret() -> None:
    res = _run(_settings())  # _run asserts the credentials output is masked
    assert res["backup-user"].inputs["name"] == "ck8s-prod-us-east-1-velero"
    assert res["backup-user-key"].inputs["user"] == "ck8s-prod-us-east-1-velero"
    assert res["backup-user-policy"].inputs["user"] == "ck8s-prod-us-east-1-velero"


def test_policy_scopes_to_the_bucket_and_restore_source_and_source_ips() -> None:
    res = _run(_settings(restoreFrom={"clusterName": "ck8s-prod-us-west-1", "region": "us-west-2"}),
               source_ips=["198.51.100.7/32"])
    doc = json.loads(res["backup-user-policy"].inputs["policy"])
    sids = [s["Sid"] for s in doc["Statement"]]
    assert sids == ["BackupObjects", "BackupBucket", "BackupKey", "RestoreObjects", "RestoreBucket", "RestoreKey"]
    assert doc["Statement"][0]["Condition"]["IpAddress"]["aws:SourceIp"] == ["198.51.100.7/32"]


def test_refuses_settings_without_an_off_region_backup() -> None:
    bare = Settings.model_validate({"platform": "aws", "region": "us-east-1"})
    with pytest.raises(ValueError, match="another region"):
        run_program(lambda: BackupTarget("backup", bare), {}, stack="dev", region="us-east-1")


def test_release_values_are_only_the_credentials_and_secret() -> None:
    seen: dict[str, Any] = {}

    def program() -> None:
        target = BackupTarget("backup", _settings())
        values = target.velero_values()
        pulumi.export("values", values)
        values.apply(lambda v: seen.update(v))

    run = run_program(program, {}, stack="prod", region="us-east-1")
    assert run.outputs["values"] == MASK
    # Everything else comes from the add-on (components/addons/velero_values.py): one source of values.
    assert list(seen) == ["credentials"] and list(seen["credentials"]) == ["secretContents"]
    assert seen["credentials"]["secretContents"]["cloud"].startswith("[default]\naws_access_key_id=")


@pytest.mark.parametrize(("platform", "backup", "velero", "needed"), [
    ("aws", True, None, True),
    ("aws", True, False, False),  # explicit enabled false wins: no unused access key
    ("aws", False, None, False),
    ("existing", True, True, False),  # nothing creates AWS resources off AWS: bring your own Secret
])
def test_the_program_creates_a_target_exactly_for_velero_on_aws(
    platform: str, backup: bool, velero: bool | None, needed: bool
) -> None:
    doc: dict[str, Any] = {"platform": platform, "region": "us-east-1" if platform == "aws" else None,
                           "gpuStack": {"addons": {"velero": {"enabled": velero}}}}
    if backup:
        doc["backup"] = {"region": "us-west-2"}
    assert backup_target_needed(Settings.model_validate(doc)) is needed

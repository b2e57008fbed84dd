"""Velero values for DR: file-system backups to the off-region bucket, a read-only restore source."""

from __future__ import annotations

from typing import Any

from components import pins
from components.dr.names import CREDENTIALS_SECRET
from components.dr.velero_values import RESTORE_LOCATION, credentials_file, velero_values
from components.settings.model import Settings


def _settings(**backup: Any) -> Settings:
    return Settings.model_validate({
        "platform": "aws", "environment": "prod", "region": "us-west-2",
        "nodePools": [
            {"name": "l40s", "instanceType": "g6e.12xlarge"},
            {"name": "h100", "instanceType": "p5.48xlarge",
             "taints": [{"key": "nvidia.com/gpu", "value": "present"}, {"key": "training", "effect": "NoExecute"}]},
        ],
        "backup": {"region": "us-east-2", **backup},
    })


def test_no_backup_no_values() -> None:
    assert velero_values(Settings.model_validate({"platform": "aws", "region": "us-west-2"})) == {}


def test_volumes_go_through_the_node_agent_to_the_bucket_never_snapshots() -> None:
    v = velero_values(_settings())
    [location] = v["configuration"]["backupStorageLocation"]
    assert location == {"name": "default", "provider": "aws", "bucket": "ck8s-prod-us-west-2-velero",
                        "default": True, "accessMode": "ReadWrite", "config": {"region": "us-east-2"}}
    assert v["configuration"]["volumeSnapshotLocation"] == [] and v["snapshotsEnabled"] is False
    assert v["deployNodeAgent"] is True and v["configuration"]["defaultVolumesToFsBackup"] is True
    assert v["configuration"]["uploaderType"] == "kopia"
    assert v["credentials"] == {"useSecret": True, "name": CREDENTIALS_SECRET}
    assert "secretContents" not in v["credentials"]  # the key is a Pulumi secret, merged by the wiring


def test_node_agent_tolerates_every_pool_taint_once() -> None:
    tolerations = velero_values(_settings())["nodeAgent"]["tolerations"]
    assert tolerations == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "training", "operator": "Equal", "value": "", "effect": "NoExecute"},
    ]


def test_restore_source_is_a_second_read_only_location() -> None:
    v = velero_values(_settings(restoreFrom={"clusterName": "ck8s-prod-us-east-1", "region": "us-west-2"}))
    default, source = v["configuration"]["backupStorageLocation"]
    assert default["default"] is True and default["accessMode"] == "ReadWrite"
    assert source == {"name": RESTORE_LOCATION, "provider": "aws", "bucket": "ck8s-prod-us-east-1-velero",
                      "default": False, "accessMode": "ReadOnly", "config": {"region": "us-west-2"}}


def test_merged_over_the_addon_values_both_locations_and_the_schedule_survive() -> None:
    from components.addons.base import AddonContext, deep_merge
    from components.addons.velero import values as addon_values
    from components.cluster import cluster_facts

    s = _settings(restoreFrom={"clusterName": "ck8s-prod-us-east-1", "region": "us-west-2"})
    ctx = AddonContext(settings=s, facts=cluster_facts(s), capabilities=frozenset(), enabled=frozenset({"velero"}),
                       version=pins.chart("velero").version)
    merged = deep_merge(addon_values(ctx), velero_values(s))
    assert [b["name"] for b in merged["configuration"]["backupStorageLocation"]] == ["default", RESTORE_LOCATION]
    assert merged["schedules"]["cluster"]["schedule"] == s.backup.schedule  # type: ignore[union-attr]
    assert merged["credentials"]["useSecret"] is True


def test_credentials_file() -> None:
    assert credentials_file("AKIAEXAMPLE", "s3cr3t") == (
        "[default]\naws_access_key_id=AKIAEXAMPLE\naws_secret_access_key=s3cr3t\n")

"""Velero values for DR: file-system backups to the off-region bucket, a read-only restore source."""

from __future__ import annotations

from typing import Any

from components.addons.base import AddonContext, deep_merge
from components.addons.velero_values import (
    RESTORE_LOCATION,
    SCHEDULE,
    credentials_file,
    credentials_values,
    velero_values,
)
from components.facts.cluster import cluster_facts
from components.settings.model import Settings
from components.tables import pins
from components.tables.backup_names import CREDENTIALS_SECRET


def _settings(**backup: Any) -> Settings:
    return Settings.model_validate({
        "platform": "aws", "environment": "prod", "production": True, "region": "us-west-2",
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


def test_the_addon_installs_exactly_these_values() -> None:
    """One source: the velero add-on's values are this module's, whatever the stack."""
    from components.addons.velero import ADDON

    s = _settings(restoreFrom={"clusterName": "ck8s-prod-us-east-1", "region": "us-west-2"})
    ctx = AddonContext(settings=s, facts=cluster_facts(s), capabilities=frozenset(), enabled=frozenset({"velero"}),
                       version=pins.chart("velero").version)
    assert ADDON.values(ctx) == velero_values(s)


def test_the_aws_plugin_is_the_pinned_image_copied_into_the_plugins_volume() -> None:
    [plugin] = velero_values(_settings())["initContainers"]
    pin = pins.image("velero-plugin-aws")
    assert plugin["image"] == f"docker.io/velero/velero-plugin-for-aws:{pin.tag}@{pin.digest}"
    assert plugin["volumeMounts"] == [{"mountPath": "/target", "name": "plugins"}]


def test_no_crd_upgrade_hook_with_an_unpinnable_kubectl_image() -> None:
    assert velero_values(_settings())["upgradeCRDs"] is False


def test_one_schedule_of_everything_kept_for_the_ttl() -> None:
    v = velero_values(_settings(schedule="15 2 * * *", ttlHours=48))
    assert v["schedules"] == {SCHEDULE: {"schedule": "15 2 * * *",
                                         "template": {"ttl": "48h0m0s", "includedNamespaces": ["*"]}}}


def test_credentials_values_fill_the_secret_the_chart_creates() -> None:
    merged = deep_merge(velero_values(_settings()), credentials_values("[default]\n"))
    assert merged["credentials"] == {"useSecret": True, "name": CREDENTIALS_SECRET,
                                     "secretContents": {"cloud": "[default]\n"}}


def test_credentials_file() -> None:
    assert credentials_file("AKIAEXAMPLE", "s3cr3t") == (
        "[default]\naws_access_key_id=AKIAEXAMPLE\naws_secret_access_key=s3cr3t\n")

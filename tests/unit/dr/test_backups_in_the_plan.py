"""Backups end to end in the offline plan of the real program (__main__.py under the mock engine):
prod gets the off-region target and a Velero release that holds its key as a secret and waits for
it; dev (no `backup:`) gets neither; an explicit `velero.enabled: false` wins."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path

from components.plan import artifacts
from components.plan.mockengine import MASK, Recorded
from components.plan.run import Plan, plan_config, plan_stack, stack_file
from components.settings.load import SETTINGS_KEY, read_stack_file

TARGET = "ck8s-gpu:index:BackupTarget"
RELEASE = "kubernetes:helm.sh/v3:Release"


@cache
def prod() -> Plan:
    return plan_stack("aws-prod")


def _by_name(plan: Plan) -> dict[str, Recorded]:
    return {r.name: r for r in plan.resources}


def test_prod_backs_up_to_an_encrypted_bucket_in_the_backup_region() -> None:
    res = _by_name(prod())
    assert res["backup"].type == TARGET
    assert res["backup-aws"].inputs["region"] == "us-west-2"  # stacks/Pulumi.aws-prod.yaml backup.region
    assert res["backup-bucket"].provider.startswith("backup-aws-")
    assert res["backup-bucket"].inputs["bucket"] == "ck8s-prod-us-east-1-velero"
    assert prod().outputs["backupBucket"] == "ck8s-prod-us-east-1-velero"


def test_velero_names_that_bucket_and_region_and_waits_for_the_target() -> None:
    res = _by_name(prod())
    velero = res["gpu-stack-velero"]
    assert velero.type == RELEASE and velero.inputs["chart"] == "velero"
    [location] = velero.raw_inputs["values"]["configuration"]["backupStorageLocation"]
    assert (location["bucket"], location["config"]["region"]) == (res["backup-bucket"].inputs["bucket"], "us-west-2")
    # Encrypted, versioned, its key aliased and the user allowed to write: before Velero starts.
    for ready in ("backup-encryption", "backup-versioning", "backup-user-policy", "backup-key-alias"):
        assert res[ready].urn in velero.dependencies, ready
    assert res["gpu-stack-ns-velero"].inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == \
        "privileged"  # the node agent's hostPath


def test_the_access_key_is_a_secret_and_never_in_the_plan_files(tmp_path: Path) -> None:
    velero = _by_name(prod())["gpu-stack-velero"]
    assert velero.inputs["values"] == MASK and "values" in velero.secret_paths
    cloud = velero.raw_inputs["values"]["credentials"]["secretContents"]["cloud"]
    assert cloud.startswith("[default]\naws_access_key_id=")
    key_line = cloud.splitlines()[1]
    artifacts.write(prod(), tmp_path)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert key_line not in text and "aws_secret_access_key" not in text, path


def test_dev_without_backup_has_neither_target_nor_velero() -> None:
    dev = plan_stack("aws-dev")
    assert dev.settings.backup is None
    assert not [r for r in dev.resources if r.type == TARGET or r.name.startswith("backup")]
    assert "gpu-stack-velero" not in _by_name(dev) and "backupBucket" not in dev.outputs


def test_explicit_enabled_false_wins() -> None:
    config = copy.deepcopy(read_stack_file(stack_file("aws-prod")))
    config[SETTINGS_KEY].setdefault("gpuStack", {}).setdefault("addons", {})["velero"] = {"enabled": False}
    plan = plan_config(config, "aws-prod", "aws-prod without velero")
    assert "gpu-stack-velero" not in _by_name(plan)
    assert not [r for r in plan.resources if r.type == TARGET]  # no access key nobody uses
    assert "velero" not in plan.outputs["addons"]

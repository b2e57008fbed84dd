"""`ck8s-gpu rebuild-plan`: the replacement's offline plan, what differs, the next steps; and the
replacement is exactly what `stamp --restore` writes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from components.cli.main import main
from components.dr.restore import managed_namespaces, restore_commands
from components.plan.run import PROJECT_DIR
from components.settings.model import Settings
from components.tables.ec2_regional_prices import ON_DEMAND as REGIONAL
from components.tables.ec2_regional_prices import PRICE_AS_OF

STACKS = PROJECT_DIR / "stacks"


@pytest.fixture
def stacks(tmp_path: Path) -> Path:
    d = tmp_path / "stacks"
    d.mkdir()
    shutil.copy(STACKS / "Pulumi.aws-prod.yaml", d)
    shutil.copy(STACKS / "aws-prod.regions.yaml", d)  # the DR region's zones (zone-scoped fields)
    return d


def test_rebuild_in_the_backup_region_plans_the_same_stack_moved(
    stacks: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    code = main(["rebuild-plan", "--from", "aws-prod", "--to", "us-west-2", "--backup-region", "us-east-2",
                 "--stacks-dir", str(stacks), "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "Replacement of aws-prod (us-east-1) in us-west-2: stack aws-prod-us-west-2" in text
    # What the replacement creates, an hour (docs/cost.md): in us-west-2 only the l40s pool (2/2/8 x
    # g6e.12xlarge) has a price, from the regional EC2 table; everything else is named unpriced.
    l40s = REGIONAL["us-west-2"]["g6e.12xlarge"]
    assert (f"cost: at least ${2 * l40s:,.2f}/h min, ${2 * l40s:,.2f}/h desired, ${8 * l40s:,.2f}/h max "
            f"(On-Demand, us-west-2, prices of {PRICE_AS_OF}); not priced: control planes (m7i.2xlarge) "
            "(no price for m7i.2xlarge in us-west-2 in the table)") in text
    assert "restores read-only from ck8s-prod-us-east-1's backups in us-west-2" in text
    # The backups' one difference beyond region-scoped values: Velero's user may read the lost
    # bucket (its second, read-only location is in the release's values, a secret in any plan).
    differences = text.split("beyond region-scoped values")[1].split("Next steps")[0]
    changed = [line for line in differences.splitlines() if line.startswith(("~", "+", "-"))
               and ("BackupTarget" in line or "velero" in line)]
    assert changed == ["~ ck8s-gpu:index:BackupTarget$aws:iam/userPolicy:UserPolicy::backup-user-policy"]
    assert '"Sid": "RestoreObjects"' in differences and "arn:aws:s3:::ck8s-prod-us-east-1-velero/*" in differences
    assert ("ck8s-gpu stamp --template aws-prod --regions us-west-2 --restore --backup-region us-east-2 --up"
            in text)
    assert "velero restore create restore-ck8s-prod-us-east-1" in text
    assert (out / "aws-prod" / "resources.json").exists() and (out / "aws-prod-us-west-2" / "resources.json").exists()

    # What rebuild-plan planned is what `stamp --restore` writes (checked offline: no CLI needed).
    planned = json.loads((out / "replacement-config.json").read_text())
    assert main(["stamp", "--template", "aws-prod", "--regions", "us-west-2", "--restore", "--backup-region",
                 "us-east-2", "--offline", "--stacks-dir", str(stacks)]) == 0
    written = yaml.safe_load((stacks / "Pulumi.aws-prod-us-west-2.yaml").read_text())["config"]
    assert written == planned


def test_a_changed_setting_in_the_new_region_is_listed(stacks: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (stacks / "aws-prod.regions.yaml").write_text(
        "regions:\n  us-west-2:\n    network: {availabilityZones: [us-west-2a, us-west-2b, us-west-2c]}\n"
        "    nodePools: [{name: h100, instanceType: p5.4xlarge, availabilityZone: null, capacityReservation: null,"
        " placement: null}]\n")
    assert main(["rebuild-plan", "--from", "aws-prod", "--to", "us-west-2", "--backup-region", "us-east-2",
                 "--stacks-dir", str(stacks)]) == 0
    text = capsys.readouterr().out
    section = text.split("beyond region-scoped values")[1]
    assert "p5.48xlarge" in section and "p5.4xlarge" in section


def test_without_a_usable_backup_region_nothing_is_planned(stacks: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rebuild-plan", "--from", "aws-prod", "--to", "us-west-2", "--stacks-dir", str(stacks)]) == 2
    err = capsys.readouterr().err
    assert "which is this region" in err and "--backup-region" in err


def _restoring() -> Settings:
    return Settings.model_validate({
        "platform": "aws", "environment": "prod", "production": True, "region": "us-west-2",
        "backup": {"region": "us-east-2", "restoreFrom": {"clusterName": "ck8s-prod-us-east-1", "region": "us-west-2"}},
        "gpuStack": {"addons": {"velero": {"enabled": True}}},
    })


def test_restore_leaves_what_the_program_manages_alone() -> None:
    names = managed_namespaces(_restoring())
    assert {"kube-system", "gpu-operator", "kai-scheduler", "velero", "gpu-smoke-test"} <= set(names)
    assert "default" not in names  # teams' namespaces come back from the backup


def test_restore_commands_only_when_restoring() -> None:
    commands = restore_commands(_restoring())
    assert commands[0].startswith("kubectl -n velero get backupstoragelocation restore-source")
    excluded = commands[2].split("--exclude-namespaces ")[1].split()[0].split(",")
    assert excluded == managed_namespaces(_restoring())
    plain = Settings.model_validate({"platform": "aws", "region": "us-west-2", "backup": {"region": "us-east-2"}})
    assert restore_commands(plain) == []

"""Stamped stack files: reviewable text (golden), and re-stamping keeps what Pulumi and the
operator added (encryption salt, secrets set on the stack)."""

from __future__ import annotations

from pathlib import Path

import yaml

from components.settings.load import read_stack_file
from components.stamping import stackfile
from components.stamping.derive import StampedStack, derive_all
from components.stamping.overrides import load_overrides
from tests.helpers.golden import assert_golden
from tests.unit.stamping.helpers import DATA

OVERRIDES = "gpu-prod.regions.yaml"


def _stamped(regions: list[str], **extra: object) -> list[StampedStack]:
    config = {**read_stack_file(DATA / "Pulumi.gpu-prod.yaml"), **extra}
    return derive_all("gpu-prod", config, regions, load_overrides(DATA / OVERRIDES), overrides_source=OVERRIDES)


def test_rendered_stack_files_match_golden() -> None:
    for s in _stamped(["us-east-2", "eu-central-1"]):
        text = stackfile.render(s, None, OVERRIDES)
        assert_golden(Path("stamping") / f"Pulumi.{s.stack}.yaml", text)


def test_the_rendered_file_loads_back_to_the_same_settings() -> None:
    from components.validate import from_config as settings_from_config

    for s in _stamped(["us-east-2", "eu-central-1"]):
        doc = yaml.safe_load(stackfile.render(s, None, "x"))
        assert settings_from_config(doc["config"], s.stack, offline=True) == s.settings


def test_restamping_keeps_encryption_keys_and_operator_secrets_not_template_secrets() -> None:
    s = _stamped(["us-east-2"])[0]
    existing = yaml.safe_dump({
        "encryptionsalt": "v1:SALT",
        "secretsprovider": "awskms://alias/pulumi",
        "config": {"ck8s-gpu:kubeconfig": {"secure": "v1:OPERATOR"}, "ck8s-gpu:settings": {"platform": "aws"}},
    })
    doc = yaml.safe_load(stackfile.render(s, existing, None))
    assert doc["encryptionsalt"] == "v1:SALT" and doc["secretsprovider"] == "awskms://alias/pulumi"
    assert doc["config"]["ck8s-gpu:kubeconfig"] == {"secure": "v1:OPERATOR"}
    assert "v1:TEMPLATEONLY" not in stackfile.render(s, None, None)
    assert "pulumi config set --secret ck8s-gpu:kubeconfig -s gpu-prod-us-east-2" in stackfile.render(s, None, None)


def test_file_actions_and_write(tmp_path: Path) -> None:
    stamped = _stamped(["us-east-2", "eu-central-1"])
    first = stackfile.prepare(stamped, tmp_path, OVERRIDES)
    assert [f.action for f in first] == ["create", "create"]
    stackfile.write(first)
    again = stackfile.prepare(stamped, tmp_path, OVERRIDES)
    assert [f.action for f in again] == ["unchanged", "unchanged"]
    # Pulumi adds its salt on `stack init`: still unchanged once re-rendered with it kept.
    path = tmp_path / "Pulumi.gpu-prod-us-east-2.yaml"
    path.write_text("encryptionsalt: v1:SALT\n" + path.read_text())
    after_init = stackfile.prepare(stamped, tmp_path, OVERRIDES)[0]
    assert after_init.action == "update" and "encryptionsalt: v1:SALT" in after_init.text
    stackfile.write([after_init])
    assert stackfile.prepare(stamped, tmp_path, OVERRIDES)[0].action == "unchanged"
    # A changed template shows as an update.
    changed = _stamped(["us-east-2"], **{"aws:profile": "prod"})
    assert stackfile.prepare(changed, tmp_path, OVERRIDES)[0].action == "update"

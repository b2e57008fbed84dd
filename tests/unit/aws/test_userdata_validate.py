"""Every rendered user-data passes Debian's `cloud-init schema`; every embedded script `shellcheck`.

Covers the committed AWS stacks plus variants that change what is rendered (DRA gates on 1.33,
spot pools, device-plugin allocation, the CCM off). The negative controls prove the validators
catch what they are here to catch.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.aws import userdata as ud
from components.plan.mockengine import PlanRun
from tests.unit.aws.conftest import AWS_STACKS, run_cluster, settings_for, user_data_by_name
from tests.unit.aws.tools import cloud_init_schema, shellcheck


def _gates(raw: dict[str, Any]) -> None:
    raw["kubernetes"] = {"track": "1.33-classic", "featureGates": ["DynamicResourceAllocation=true"]}


def _spot_device_plugin(raw: dict[str, Any]) -> None:
    raw["nodePools"][0]["capacityType"] = "spot"
    raw["gpuStack"] = {"allocation": "device-plugin"}
    raw["smokeTest"] = {"enabled": False}  # the smoke test proves the DRA path only


VARIANTS: dict[str, Callable[[dict[str, Any]], None]] = {"gates-1.33": _gates, "spot": _spot_device_plugin}


def all_user_data(stack_run: Callable[[str], PlanRun]) -> dict[str, str]:
    out = {}
    for stack in AWS_STACKS:
        out.update({f"{stack}/{name}": text for name, text in user_data_by_name(stack_run(stack)).items()})
    for variant, change in VARIANTS.items():
        run = run_cluster(settings_for("aws-prod", change))
        out.update({f"{variant}/{name}": text for name, text in user_data_by_name(run).items()})
    return out


def test_rendered_user_data_passes_cloud_init_schema(tmp_path: Path, stack_run: Callable[[str], PlanRun]) -> None:
    rendered = all_user_data(stack_run)
    assert len(rendered) >= 2 + 5 + 5
    for key, text in rendered.items():
        path = tmp_path / (key.replace("/", "_") + ".yaml")
        path.write_text(text)
        result = cloud_init_schema(path)
        assert result.returncode == 0 and "Valid cloud-config" in result.stdout, f"{key}:\n{result.stderr}"


def test_embedded_scripts_pass_shellcheck(tmp_path: Path, stack_run: Callable[[str], PlanRun]) -> None:
    scripts = set()
    for text in all_user_data(stack_run).values():
        scripts.add(ud.decoded_files(text)[ud.SCRIPT_PATH])
    scripts.add(ud.SCRIPT_SOURCE.read_text())
    for i, script in enumerate(sorted(scripts)):
        path = tmp_path / f"script-{i}.sh"
        path.write_text(script)
        result = shellcheck(path)
        assert result.returncode == 0, result.stdout


def test_the_env_file_passes_shellcheck_as_a_sourced_file(tmp_path: Path, stack_run: Callable[[str], PlanRun]) -> None:
    for key, text in user_data_by_name(stack_run("aws-prod")).items():
        env = next(f["content"] for f in yaml.safe_load(text)["write_files"] if f["path"].endswith("node.env"))
        path = tmp_path / f"{key}.env"
        path.write_text("# shellcheck shell=bash disable=SC2034\n" + env)
        result = shellcheck(path)
        assert result.returncode == 0, result.stdout


@pytest.mark.parametrize(
    "bad",
    [
        "#cloud-config\nruncmd: {a: 1}\n",
        "#cloud-config\nwrite_files:\n- path: /x\n  content: hi\n  permissions: 420\n",
    ],
)
def test_cloud_init_schema_rejects_type_errors(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(bad)
    assert cloud_init_schema(path).returncode != 0


def test_shellcheck_rejects_an_unquoted_expansion(tmp_path: Path) -> None:
    path = tmp_path / "bad.sh"
    path.write_text('#!/bin/bash\nrm -rf $1/cache\n')
    result = shellcheck(path)
    assert result.returncode != 0 and "SC2086" in result.stdout

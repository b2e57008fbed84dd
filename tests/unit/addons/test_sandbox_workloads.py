"""Sandboxed GPU workloads and GPU confidential computing are refused on aws with the EC2 facts that
rule them out (issue 44, docs/conformance.md "Confidential containers"), however the switch is spelt."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import botocore
import pytest

from components.settings.load import SettingsError
from tests.unit.aws.conftest import settings_for


def with_sandbox(enabled: Any, stack: str = "aws-dev") -> Any:
    def change(raw: dict[str, Any]) -> None:
        addons = raw.setdefault("gpuStack", {}).setdefault("addons", {})
        addons.setdefault("gpuOperator", {})["values"] = {"sandboxWorkloads": {"enabled": enabled}}
    return settings_for(stack, change)


@pytest.mark.parametrize("on", [True, "true", "True", "yes", "on"])
def test_sandbox_workloads_are_refused_on_aws_naming_why(on: Any) -> None:
    with pytest.raises(SettingsError) as e:
        with_sandbox(on)
    assert "sandboxWorkloads.enabled" in e.value.message and "SEV-SNP" in e.value.message


@pytest.mark.parametrize("off", [False, "false", "no", "", None])
def test_sandbox_workloads_off_is_accepted(off: Any) -> None:
    with_sandbox(off)


def test_the_ec2_facts_the_refusal_states_are_the_pinned_botocores() -> None:
    """The message's instance families come from botocore's EC2 model at the pin: if AWS adds a
    GPU type with SEV-SNP or nested virtualization, this fails and the refusal must be revisited."""
    model = Path(botocore.__file__).parent / "data" / "ec2" / "2016-11-15" / "service-2.json.gz"
    members = json.loads(gzip.decompress(model.read_bytes()))["shapes"]["CpuOptionsRequest"]["members"]
    assert "supported with M6a, R6a, and C6a instance types only" in members["AmdSevSnp"]["documentation"]
    assert "only on 8th generation Intel-based instance types (c8i, m8i, r8i" in (
        members["NestedVirtualization"]["documentation"])

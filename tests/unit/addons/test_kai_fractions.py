"""KAI GPU fractions on a DRA stack are refused with KAI's own reason (issue 43, docs/sharing.md):
however the switch is spelt, and only where DRA publishes the GPUs."""

from __future__ import annotations

from typing import Any

import pytest

from components.settings.load import SettingsError
from tests.unit.aws.conftest import settings_for


def with_kai(values: dict[str, Any], **gpu_stack: Any) -> Any:
    def change(raw: dict[str, Any]) -> None:
        stack = raw.setdefault("gpuStack", {})
        stack.update(gpu_stack)
        stack.setdefault("addons", {}).setdefault("kaiScheduler", {})["values"] = values
    return settings_for("aws-dev", change)


# The chart prints the value into YAML that Kubernetes reads as YAML 1.1 (kai_scheduler._renders_true).
@pytest.mark.parametrize("on", [True, "true", "True", "yes", "on"])
def test_any_helm_truthy_spelling_of_gpu_sharing_is_refused_with_kais_reason(on: Any) -> None:
    with pytest.raises(SettingsError) as e:
        with_kai({"global": {"gpuSharing": on}})
    assert "not yet supported on DRA-only nodes" in e.value.message
    assert "gpuStack.addons.kaiScheduler.values.global.gpuSharing" in e.value.message


@pytest.mark.parametrize("off", [False, "", 0, None, "false", "False", "no", "off"])
def test_sharing_off_or_absent_is_accepted(off: Any) -> None:
    with_kai({"global": {"gpuSharing": off, "other": 1}})
    with_kai({"global": {}})

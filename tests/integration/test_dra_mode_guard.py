"""DraModeGuard through the REAL engine: a deployed stack's preview fails on a switch of
`gpuStack.draManagedBy`, before anything changes, and the documented path (the guard gone for
one `up`) passes. The provider's `check` gets the old inputs only from the engine's state, which no
mock has (components/addons/dra_mode_guard.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.tools import copy_parts
from tests.integration.conftest import EngineTools

pytestmark = pytest.mark.integration

PROGRAM = '''
import pulumi
from components.addons.dra_mode_guard import DraModeGuard

mode = pulumi.Config().get("mode")
if mode:
    DraModeGuard("gpu-stack-dra-mode", mode)
'''


def test_a_deployed_stack_refuses_switching_who_manages_dra(engine_tools: EngineTools, tmp_path: Path) -> None:
    from pulumi import automation as auto

    project = copy_parts(tmp_path / "project", ("components",))
    (project / "__main__.py").write_text(PROGRAM)
    stack = auto.create_stack("guard", work_dir=str(project),
                              opts=engine_tools.workspace(tmp_path, project, "dra-mode-guard"))

    def mode(value: str | None) -> None:
        if value is None:
            stack.remove_config("ck8s-gpu:mode")
        else:
            stack.set_config("ck8s-gpu:mode", auto.ConfigValue(value))

    # A stack with no config at all crashes the SDK's config loading (set_all_config on None):
    # one key that stays keeps that apart from what is tested.
    stack.set_config("ck8s-gpu:test", auto.ConfigValue("dra-mode-guard"))
    mode("chart")
    stack.up(color="never")
    mode("operator")
    for attempt in (stack.preview, stack.up):
        with pytest.raises(auto.CommandError) as refused:
            attempt(color="never")
        assert "gpuStack.draManagedBy changes from chart to operator on a deployed stack" in str(refused.value)
    (guard,) = [r for r in stack.export_stack().deployment["resources"] if r["type"].endswith(":DraModeGuard")]
    assert guard["outputs"]["mode"] == "chart", "the refused up changed the state"
    # The documented path: one up without the guard (no GPU Operator), then the new mode.
    mode(None)
    stack.up(color="never")
    mode("operator")
    assert stack.up(color="never").summary.resource_changes == {"create": 1, "same": 1}
    stack.destroy(color="never")

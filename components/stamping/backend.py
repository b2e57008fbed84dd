"""The Pulumi Automation API behind a small boundary (tests replace it with a fake).

Stacks are LOCAL programs: a LocalWorkspace on the project directory, so the stack files the
stamper wrote into `stacks/` (Pulumi.yaml sets `stackConfigDir: stacks`) are what Pulumi reads.
The backend (Pulumi Cloud, s3://, file://) comes from the usual `PULUMI_BACKEND_URL` / `pulumi
login`: for DR it must live outside every region it serves (docs/runbooks/dr-rebuild.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

OnOutput = Callable[[str], None]


@dataclass(frozen=True)
class OpResult:
    ok: bool
    changes: dict[str, int] = field(default_factory=dict)  # engine op ("create", "update"...) -> count
    outputs: dict[str, Any] = field(default_factory=dict)  # plain values; secret outputs are not read
    error: str = ""


class BackendUnavailable(Exception):
    """No Pulumi CLI, or the state backend cannot be reached: nothing was attempted."""


class StackBackend(Protocol):
    def existing_stacks(self) -> set[str]:
        """Names of the project's stacks the state backend already has."""
        ...

    def preview(self, stack: str, on_output: OnOutput) -> OpResult: ...

    def up(self, stack: str, on_output: OnOutput) -> OpResult: ...


def _stack_config_dir(work_dir: Path) -> str:
    try:
        project = yaml.safe_load((work_dir / "Pulumi.yaml").read_text()) or {}
    except (OSError, yaml.YAMLError):
        return "."
    return str(project.get("stackConfigDir") or ".")


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


class AutomationBackend:
    """`pulumi.automation` on this project directory. One CLI process per operation."""

    def __init__(self, work_dir: Path, stacks_dir: Path | None = None) -> None:
        self.work_dir = work_dir
        project_stacks = work_dir / _stack_config_dir(work_dir)
        if stacks_dir is not None and stacks_dir.resolve() != project_stacks.resolve():
            raise BackendUnavailable(
                f"Pulumi reads stack files from {project_stacks} (Pulumi.yaml stackConfigDir), not {stacks_dir}: "
                "drop --stacks-dir, or plan with --offline")

    def _auto(self) -> Any:
        from pulumi import automation  # imported late: `ck8s-gpu --help` stays fast

        return automation

    def existing_stacks(self) -> set[str]:
        auto = self._auto()
        try:
            workspace = auto.LocalWorkspace(work_dir=str(self.work_dir))
            summaries = workspace.list_stacks()
        except FileNotFoundError as exc:
            raise BackendUnavailable(
                f"the Pulumi CLI is not installed or not on PATH ({exc.filename}); "
                "install it, or plan offline with --offline") from None
        except auto.CommandError as exc:
            raise BackendUnavailable(f"cannot list stacks (is `pulumi login` done?): {_tail(str(exc), 5)}") from None
        # Cloud backends answer `org/project/stack`; keep the stack name.
        return {s.name.rsplit("/", 1)[-1] for s in summaries}

    def _stack(self, name: str) -> Any:
        return self._auto().create_or_select_stack(name, work_dir=str(self.work_dir))

    def preview(self, stack: str, on_output: OnOutput) -> OpResult:
        auto = self._auto()
        try:
            result = self._stack(stack).preview(on_output=on_output, color="never", suppress_progress=True)
        except auto.CommandError as exc:
            return OpResult(ok=False, error=_tail(str(exc)))
        return OpResult(ok=True, changes=dict(result.change_summary or {}))

    def up(self, stack: str, on_output: OnOutput) -> OpResult:
        auto = self._auto()
        try:
            result = self._stack(stack).up(on_output=on_output, color="never", suppress_progress=True)
        except auto.CommandError as exc:
            return OpResult(ok=False, error=_tail(str(exc)))
        outputs = {k: v.value for k, v in (result.outputs or {}).items() if not v.secret}
        return OpResult(ok=True, changes=dict(result.summary.resource_changes or {}), outputs=outputs)

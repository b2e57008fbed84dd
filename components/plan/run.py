"""Load a stack file and run the project's real `__main__.py` under the mock engine."""

from __future__ import annotations

import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..runtime.checkout_alias import alias_checkout_name
from ..settings.load import KUBECONFIG_KEY, SettingsError, read_stack_file
from ..settings.model import Settings
from ..tables.paths import PROJECT_DIR as PROJECT_DIR  # re-exported: tests and scripts locate the program here
from ..validate import from_config as settings_from_config
from .mockengine import PlanRun, Recorded, run_program
from .names import recorded_problems

SECRET_PLACEHOLDER = "[secret config: not decrypted by the offline plan]"
# Parsable on purpose: components may read the server address; nothing ever connects to it.
PLACEHOLDER_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: offline-plan, cluster: {server: "https://offline-plan.invalid:6443"}}]
users: [{name: offline-plan, user: {token: offline-plan}}]
contexts: [{name: offline-plan, context: {cluster: offline-plan, user: offline-plan}}]
current-context: offline-plan
"""


@dataclass
class Plan:
    stack: str
    settings: Settings
    resources: list[Recorded]
    outputs: dict[str, Any]


def stack_file(name: str, stacks_dir: Path | None = None) -> Path:
    """The stack's file, absolute: `stacks_dir` (a command's --stacks-dir) is taken from the working
    directory, the default from the checkout, and every message then names the file really read."""
    return ((stacks_dir or PROJECT_DIR / "stacks") / f"Pulumi.{name}.yaml").absolute()


def offline_config(config: dict[str, Any], settings: Settings) -> tuple[dict[str, Any], list[str]]:
    """Replace encrypted values by placeholders; supply a placeholder kubeconfig where one is needed."""
    out: dict[str, Any] = {}
    secret_keys: list[str] = []
    for key, value in config.items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            value = PLACEHOLDER_KUBECONFIG if key == KUBECONFIG_KEY else SECRET_PLACEHOLDER
            secret_keys.append(key)
        out[key] = value
    # Needed to deploy, not to plan: the local stack's is set by the test that starts the
    # cluster, an existing stack's by `pulumi config set --secret` on the operator's machine.
    if settings.traits.needs_kubeconfig and KUBECONFIG_KEY not in out:
        out[KUBECONFIG_KEY] = PLACEHOLDER_KUBECONFIG
        secret_keys.append(KUBECONFIG_KEY)
    return out, secret_keys


def plan_config(config: dict[str, Any], stack: str, source: str) -> Plan:
    """Validate first (nothing registered on bad input), run the program, then check its AWS names."""
    settings = settings_from_config(config, source, offline=True)
    wire, secret_keys = offline_config(config, settings)
    alias_checkout_name()  # the program's `components` imports are this package's own modules
    run: PlanRun = run_program(
        lambda: runpy.run_path(str(PROJECT_DIR / "__main__.py"), run_name="__main__"),
        wire,
        stack=stack,
        region=settings.region or "",
        secret_keys=secret_keys,
        root_directory=PROJECT_DIR,
    )
    # The mock engine never runs pulumi-aws's Check: apply its naming and AWS's rules to what was registered.
    problems = recorded_problems(run.resources)
    if problems:
        raise SettingsError(source, problems)
    return Plan(stack=stack, settings=settings, resources=run.resources, outputs=run.outputs)


def plan_stack(name: str, stacks_dir: Path | None = None) -> Plan:
    path = stack_file(name, stacks_dir)
    return plan_config(read_stack_file(path), name, str(path))

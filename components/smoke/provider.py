"""The Pulumi dynamic resource that gates `pulumi up` on the smoke test.

create() runs the smoke test (components/smoke/run.py) with the stack's kubeconfig and raises
with the failing hops when any check fails, so the update fails and names them. The resource
is replaced whenever its run spec changes (new run id: values, chart or smokeTest.trigger), and
only then; a kubeconfig rotation alone re-runs nothing. All logic lives in the functions below,
tested directly: the mock engine never calls create().
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pulumi
import pulumi.dynamic as dynamic

from ..runtime.atomic import write_text_atomic
from ..runtime.plain_errors import PlainError, install_in_provider_host
from . import report as reports
from .gateway import KubeError, KubeUnreachable
from .run import RunSpec, SmokeTimeout, run_smoke

# Inputs that never cause a re-run: credentials, and what the provider itself fills in.
NOT_A_CHANGE = frozenset({"kubeconfig", "report", "__provider"})
REPORT_DIR_ENV = "CK8S_GPU_SMOKE_REPORT_DIR"
DEFAULT_REPORT_DIR = "out/smoke"


install_in_provider_host()  # this module is what Pulumi's provider host loads to run a SmokeRun


class SmokeTestFailed(PlainError):
    """Raised from create(): Pulumi fails the update with this message (and no Python stack)."""


def changed_keys(olds: dict[str, Any], news: dict[str, Any]) -> list[str]:
    keys = (set(olds) | set(news)) - NOT_A_CHANGE
    return sorted(k for k in keys if olds.get(k) != news.get(k))


def outputs(props: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
    """State kept by Pulumi: the inputs minus the kubeconfig, plus the report."""
    return {**{k: v for k, v in props.items() if k not in NOT_A_CHANGE}, "report": report}


def write_report(doc: dict[str, Any], directory: str | None = None) -> str:
    """The full report (with diagnostics) next to the Pulumi project; '' when it cannot be written."""
    extra = doc["results"]["extra"]
    folder = Path(directory or os.environ.get(REPORT_DIR_ENV) or DEFAULT_REPORT_DIR)
    path = folder / f"{extra['namespace']}-{extra['runId']}.json"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(doc, indent=2, sort_keys=True) + "\n")
    except OSError:
        return ""
    return str(path.resolve())


def connect(kubeconfig: str) -> Any:
    from ..kube.client import api_client
    from .gateway import KubeGateway

    return KubeGateway(api_client(kubeconfig))


def _could_not_run(namespace: str, exc: Exception) -> str:
    # No check table exists: say what stopped the run and what to do.
    return (f"GPU smoke test could not run (namespace {namespace}): {type(exc).__name__}: {exc}\n"
            "Next: check that the cluster answers (kubectl get --raw /readyz) and that the namespace is not stuck "
            "terminating, then `pulumi up` again: a failed run is not recorded, so it runs again.")


def execute(props: dict[str, Any], *, gateway: Any = None, **run_kw: Any) -> dict[str, Any]:
    """Run the smoke test for the resource's inputs; the report, or SmokeTestFailed."""
    spec = RunSpec.from_dict(props["spec"])
    try:
        gw = gateway if gateway is not None else connect(props["kubeconfig"])
    except ValueError as exc:  # components.kube.client: an unusable kubeconfig, never quoted
        raise SmokeTestFailed(_could_not_run(spec.namespace, exc)) from None
    try:
        outcome = run_smoke(gw, spec, **run_kw)
    except (KubeError, KubeUnreachable, SmokeTimeout) as exc:
        raise SmokeTestFailed(_could_not_run(spec.namespace, exc)) from None
    if not outcome.passed:
        where = write_report(outcome.report)
        tail = f"\nFull report with diagnostics: {where}" if where else ""
        raise SmokeTestFailed(reports.failure_message(outcome.report) + tail)
    return outcome.report


class SmokeRunProvider(dynamic.ResourceProvider):
    def create(self, props: dict[str, Any]) -> dynamic.CreateResult:
        doc = execute(props)
        return dynamic.CreateResult(id_=f"{props['spec']['namespace']}/{props['spec']['runId']}",
                                    outs=outputs(props, doc))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.DiffResult:
        keys = changed_keys(olds, news)
        return dynamic.DiffResult(changes=bool(keys), replaces=keys, delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> dynamic.UpdateResult:
        # Only reached for inputs diff() ignores (a new kubeconfig): keep the last report.
        return dynamic.UpdateResult(outs={**outputs(news, olds.get("report") or {})})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """The chart's release owns the Jobs; nothing of the run outlives it."""


class SmokeRun(dynamic.Resource, module="ck8s-gpu", name="SmokeRun"):  # type: ignore[call-arg]
    report: pulumi.Output[dict[str, Any]]

    def __init__(self, name: str, *, kubeconfig: pulumi.Input[str], spec: dict[str, Any],
                 opts: pulumi.ResourceOptions | None = None) -> None:
        props = {"kubeconfig": pulumi.Output.secret(kubeconfig), "spec": spec, "report": None}
        super().__init__(SmokeRunProvider(), name, props, opts)

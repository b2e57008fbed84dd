"""DraModeGuard: refuses switching `gpuStack.draManagedBy` on a deployed stack in one `up`.

Neither Pulumi nor the GPU Operator can make that switch safe in one step (docs/adr/0048): towards
`operator`, Pulumi deletes the standalone driver's release only after the new gate has waited
on a GPUCluster beside it (two drivers publishing gpu.nvidia.com); towards `chart`, the chart keeps
its GPUCluster on a Helm upgrade (`helm.sh/resource-policy: keep`, templates/gpucluster.yaml at
v26.7.0) and the ClusterPolicy controller refuses to run beside it. The guard records the mode of
the stack's GPU Operator and fails the provider's `check` (so `preview` already fails, before any
change) when the next program asks for the other one. The documented procedure passes it: its
middle `up` installs no GPU Operator, so the guard goes with it, and the next `up` creates it
anew with the new mode (docs/components.md, "Switching who manages DRA").

No API call: the verdict is on the inputs alone. The provider class is pickled into the state by
reference: it must stay here under its name.
"""

from __future__ import annotations

import uuid
from typing import Any

import pulumi
import pulumi.dynamic

from ..tables import tokens

TYPE = tokens.DYNAMIC_DRA_MODE_GUARD
PROCEDURE = 'docs/components.md, "Switching who manages DRA"'


def switch_problem(olds: dict[str, Any], news: dict[str, Any]) -> str | None:
    """Why this change of inputs is refused; None when it is not a switch."""
    before, after = olds.get("mode"), news.get("mode")
    if not before or before == after:
        return None  # created now (no state yet), or the same mode
    return (f"gpuStack.draManagedBy changes from {before} to {after} on a deployed stack: that cannot be done in "
            "one `up` (the GPU Operator has no migration between its ClusterPolicy and a GPUCluster, and both "
            f"drivers publish gpu.nvidia.com). Keep {before}, or switch as {PROCEDURE} says: drain GPU work, one "
            "`up` without the GPU Operator and the DRA driver, then the new mode")


class _DraModeGuardProvider(pulumi.dynamic.ResourceProvider):  # type: ignore[misc]
    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        problem = switch_problem(olds or {}, news)
        failures = [pulumi.dynamic.CheckFailure("mode", problem)] if problem else []
        return pulumi.dynamic.CheckResult(news, failures)

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(f"dramode-{uuid.uuid4().hex[:12]}", {"mode": props["mode"]})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        return pulumi.dynamic.DiffResult(changes=olds.get("mode") != news.get("mode"))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult({"mode": news["mode"]})


class DraModeGuard(pulumi.dynamic.Resource, module="ck8s-gpu", name="DraModeGuard"):  # type: ignore[misc,call-arg]
    """Holds `gpuStack.draManagedBy` of a stack whose GPU Operator is installed; refuses a switch."""

    mode: pulumi.Output[str]

    def __init__(self, name: str, mode: str, opts: pulumi.ResourceOptions | None = None) -> None:
        if mode not in ("chart", "operator"):
            raise ValueError(f"DraModeGuard {name}: mode must be chart or operator (got {mode!r})")
        super().__init__(_DraModeGuardProvider(), name, {"mode": mode}, opts)

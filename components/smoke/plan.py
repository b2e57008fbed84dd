"""One smoke run, fully described: chart values, run id and what the verifier expects (pure).

The SmokeTest component and `ck8s-gpu smoke` both start here, so a run by hand after a
disaster-recovery rebuild tests exactly what `pulumi up` tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..facts.cluster import ClusterFacts
from ..settings.model import Settings
from ..tables import pins
from .cases import case_expectations, inference_expectation
from .expectations import Expectations, expectations_for
from .values import SmokeConfigError, chart_digest, chart_values, resource_api, run_id

RELEASE = "gpu-smoke-test"
# Readiness of the GPU nodes' slices is awaited for at most this share of the run's budget.
SLICE_WAIT_SHARE = 3


@dataclass(frozen=True)
class SmokePlan:
    release: str
    namespace: str
    values: dict[str, Any]
    expectations: Expectations
    timeout_seconds: int
    slice_wait_seconds: int
    stuck_seconds: int

    @property
    def run_id(self) -> str:
        return self.expectations.run_id

    def spec(self) -> dict[str, Any]:
        """Plain JSON for the Pulumi dynamic resource (everything the runner needs but a kubeconfig)."""
        return {
            "release": self.release,
            "namespace": self.namespace,
            "runId": self.run_id,
            "timeoutSeconds": self.timeout_seconds,
            "sliceWaitSeconds": self.slice_wait_seconds,
            "stuckSeconds": self.stuck_seconds,
            "expectations": self.expectations.to_dict(),
        }


def smoke_plan(
    settings: Settings,
    facts: ClusterFacts,
    image: pins.ImagePin,
    *,
    release: str = RELEASE,
    nonce: str = "",
    pools_known: bool = True,
    dcgm: bool | None = None,
) -> SmokePlan:
    """`nonce` joins settings.smokeTest.trigger in the run id: the CLI passes a fresh one per run,
    the SmokeTest component the add-on set's fingerprint (an upgraded add-on is tested again)."""
    t = settings.smoke_test
    if settings.gpu_stack.allocation != "dra":
        raise SmokeConfigError(
            "the smoke test proves the DRA allocation path, but gpuStack.allocation is "
            f"{settings.gpu_stack.allocation}: use allocation dra or set smokeTest.enabled false")
    draft = chart_values(settings, facts, image, run_id="")
    rid = run_id(draft, t.trigger + nonce, chart_digest())
    values = {**draft, "runId": rid}
    exp = expectations_for(settings, facts, release=release, run_id=rid, resource_api=resource_api(
        facts.kubernetes_minor), cases=case_expectations(settings, release=release, run_id=rid),
        pools_known=pools_known, dcgm=dcgm,
        inference=inference_expectation(settings, release=release, run_id=rid))
    return SmokePlan(release=release, namespace=t.namespace, values=values, expectations=exp,
                     timeout_seconds=t.timeout_seconds,
                     slice_wait_seconds=max(30, t.timeout_seconds // SLICE_WAIT_SHARE),
                     stuck_seconds=t.stuck_seconds)

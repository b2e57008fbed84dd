"""The CNCF Kubernetes AI Conformance checklists, per Kubernetes minor: which requirement, in which
section, at which level (issue 44, docs/conformance.md).

From github.com/cncf/k8s-ai-conformance at b2c8969 (2026-08-19), docs/AIConformance-1.33.yaml to
-1.36.yaml, the newest published; 1.37 is not there yet. A PRODUCT.yaml is the checklist's own file
with `status`, `evidence` and `notes` filled per requirement (its comments: status one of
Implemented, Not Implemented, Partially Implemented, N/A; N/A needs a justification in notes).
The descriptions are the checklist's to state: PRODUCT.yaml here carries the id, level and a link.
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE = "https://github.com/cncf/k8s-ai-conformance/blob/b2c8969/docs/AIConformance-{minor}.yaml"
STATUSES = ("Implemented", "Partially Implemented", "Not Implemented", "N/A")
SECTIONS = ("accelerators", "networking", "schedulingOrchestration", "observability", "security", "operator")


@dataclass(frozen=True)
class Requirement:
    section: str
    id: str
    level: str  # MUST | SHOULD


def _r(section: str, *items: tuple[str, str]) -> tuple[Requirement, ...]:
    return tuple(Requirement(section, rid, level) for rid, level in items)


_CORE = (
    *_r("schedulingOrchestration", ("gang_scheduling", "MUST"), ("cluster_autoscaling", "MUST"),
        ("pod_autoscaling", "MUST")),
    *_r("observability", ("accelerator_metrics", "MUST"), ("ai_service_metrics", "MUST")),
    *_r("security", ("secure_accelerator_access", "MUST")),
    *_r("operator", ("robust_controller", "MUST")),
)
_ACCELERATORS_135 = _r("accelerators", ("driver_runtime_management", "SHOULD"), ("gpu_sharing", "SHOULD"),
                       ("virtualized_accelerator", "SHOULD"))

CHECKLISTS: dict[int, tuple[Requirement, ...]] = {
    33: (*_r("accelerators", ("dra_support", "SHOULD")), *_r("networking", ("ai_inference", "MUST")), *_CORE),
    34: (*_r("accelerators", ("dra_support", "MUST")), *_r("networking", ("ai_inference", "MUST")), *_CORE),
    35: (*_r("accelerators", ("dra_support", "MUST")), *_ACCELERATORS_135, *_r("networking", ("ai_inference", "MUST")),
         *_CORE),
    36: (*_ACCELERATORS_135,
         *_r("networking", ("ai_inference", "MUST"), ("advanced_inference_ingress", "SHOULD"),
             ("high_performance_networking", "SHOULD"), ("disaggregated_inference", "SHOULD")),
         *_CORE),
}


def nearest(minor: int) -> int:
    """The checklist for Kubernetes 1.<minor>: its own, else the newest older one, else the oldest."""
    older = [m for m in CHECKLISTS if m <= minor]
    return max(older) if older else min(CHECKLISTS)


def source(checklist: int) -> str:
    return SOURCE.format(minor=f"1.{checklist}")

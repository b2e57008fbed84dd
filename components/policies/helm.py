"""Helm releases: exact versions from allowed repositories (the pin table's, the stack's own
chart mirrors from its settings, and the pack config's `allowedRepositories`); one whole-GPU
advertiser per cluster, counting the advertisers installed without Helm too (raw DaemonSets,
ConfigFile/ConfigGroup manifests, a ClusterPolicy, ResourceSlices: components/policies/workloads.py).

Release inputs (pulumi-kubernetes 4.34 wire names): `chart`, `version`, `repositoryOpts.repo`,
`namespace`, `createNamespace`, `values`. Chart defaults that decide who advertises GPUs, read
from upstream values.yaml:
- gpu-operator v26.7.0 (NVIDIA/gpu-operator 10ee5b3): `devicePlugin.enabled: true`.
- dra-driver-nvidia-gpu 0.4.x (kubernetes-sigs/dra-driver-nvidia-gpu, values.yaml 0f5a1bc,
  templates/validation.yaml 3fe9487): `resources.gpus.enabled: true`, `gpuResourcesEnabledOverride:
  false`, and rendering FAILS unless both are true: DRA allocates GPUs exactly when both are.
- fake-gpu-operator 0.2.0 (run-ai/fake-gpu-operator 3a3f644): `devicePlugin.enabled: true`,
  `kwokGpuDevicePlugin.enabled: true`, `draPlugin.enabled: false`, `kwokDraPlugin.enabled: false`.
- nvidia-device-plugin (NVIDIA/k8s-device-plugin): a device plugin whatever its values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from ..tables import pins, tokens
from ..tables.paths import PROJECT_DIR
from .facts import facts_of
from .k8s_objects import objects
from .props import get, helm_truthy, is_unknown
from .workloads import gpu_advertisers

RELEASE = tokens.K8S_HELM_V3_RELEASE
CHART_V4 = tokens.K8S_HELM_V4_CHART
HELM_TYPES = (RELEASE, CHART_V4)
LOCAL_CHARTS = PROJECT_DIR / "charts"


def allowed_repositories(extra: Iterable[str] = ()) -> frozenset[str]:
    """Repositories of the pin table, plus any the pack's config adds (`allowedRepositories`)."""
    return frozenset(_norm(r) for r in (*(p.repo for p in pins.CHARTS.values()), *extra))


def _norm(repo: str) -> str:
    return repo.rstrip("/")


@dataclass(frozen=True)
class ChartRef:
    name: str
    repo: str | None  # https repo or oci:// prefix; None for a local chart path
    local_path: Path | None


def chart_ref(props: Mapping[str, Any]) -> ChartRef | None:
    chart = props.get("chart")
    if not isinstance(chart, str) or is_unknown(chart):
        return None
    repo = get(props, "repositoryOpts.repo")
    if chart.startswith("oci://"):
        prefix, _, name = chart.rstrip("/").rpartition("/")
        return ChartRef(name, _norm(prefix), None)
    if isinstance(repo, str) and repo:
        return ChartRef(chart, _norm(repo), None)
    if chart.startswith(("/", "./", "../")) or ("/" in chart and Path(chart).parts[0] == "charts"):
        path = Path(chart) if Path(chart).is_absolute() else PROJECT_DIR / chart
        return ChartRef(path.name, None, path.resolve())
    # `repo/name` through a locally configured Helm repo alias, or a bare name: unverifiable.
    return ChartRef(chart.rpartition("/")[2], None, None)


def release_problems(resource_type: str, props: Mapping[str, Any], allowed: frozenset[str]) -> list[str]:
    if resource_type not in HELM_TYPES:
        return []
    ref = chart_ref(props)
    if ref is None:
        return []
    if ref.local_path is not None:
        if LOCAL_CHARTS.resolve() not in ref.local_path.parents:
            return [f"local chart {props.get('chart')!r} is outside this project's charts/ directory"]
        return []  # versioned by this repository's own history
    problems = []
    if ref.repo is None:
        problems.append(f"chart {props.get('chart')!r} names no repository (repositoryOpts.repo or an oci:// "
                        "reference): it resolves through whatever Helm repos the deploying machine has")
    elif ref.repo not in allowed:
        problems.append(f"repository {ref.repo!r} is not allowed (allowed: {', '.join(sorted(allowed))})")
    version = props.get("version")
    if not isinstance(version, str) or is_unknown(version):
        if not is_unknown(version):
            problems.append("no version: Helm would install whatever is latest at deploy time")
    elif not pins.is_exact_version(version):
        problems.append(f"version {version!r} is not an exact release (no ranges, 'latest' or empty)")
    return problems


# --- one whole-GPU advertiser ------------------------------------------------------------------

def _switch(values: Any, path: str, default: bool) -> bool | None:
    """A chart switch as the chart's templates will see it; None when unknown (preview)."""
    value = get(values, path, default)
    return None if is_unknown(value) else helm_truthy(value)


def advertisers(props: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(device-plugin advertisers, DRA GPU advertisers) a release installs, as 'what (switch)'."""
    ref = chart_ref(props)
    values = props.get("values") or {}
    if ref is None or not isinstance(values, Mapping):
        return [], []
    plugins: list[str] = []
    dra: list[str] = []
    if ref.name == "gpu-operator":
        if _switch(values, "devicePlugin.enabled", True):
            plugins.append("gpu-operator (devicePlugin.enabled)")
        # A GPUCluster runs the DRA driver (gpuCluster.deployCR, v26.7.0 templates/gpucluster.yaml).
        if _switch(values, "gpuCluster.deployCR", False):
            dra.append("gpu-operator (gpuCluster.deployCR)")
    elif ref.name in ("nvidia-device-plugin", "k8s-device-plugin"):
        plugins.append(f"{ref.name} chart")
    elif ref.name in ("dra-driver-nvidia-gpu", "nvidia-dra-driver-gpu"):
        if _switch(values, "resources.gpus.enabled", True) and _switch(values, "gpuResourcesEnabledOverride", False):
            dra.append(f"{ref.name} (resources.gpus.enabled + gpuResourcesEnabledOverride)")
    elif ref.name == "fake-gpu-operator":
        for key in ("devicePlugin.enabled", "kwokGpuDevicePlugin.enabled"):
            if _switch(values, key, True):
                plugins.append(f"fake-gpu-operator ({key})")
        for key in ("draPlugin.enabled", "kwokDraPlugin.enabled"):
            if _switch(values, key, False):
                dra.append(f"fake-gpu-operator ({key})")
    return plugins, dra


Advertisers = tuple[str, list[str], list[str]]  # (urn, device-plugin advertisers, DRA advertisers)


def advertiser_problems(releases: Iterable[tuple[str, Mapping[str, Any]]],
                        raw: Iterable[Advertisers] = ()) -> list[tuple[str, str]]:
    """(urn, message) for every release or raw object taking part in a device plugin + DRA double
    advertisement. `raw`: what workloads.gpu_advertisers found outside Helm releases."""
    plugin_urns: list[tuple[str, list[str]]] = []
    dra_urns: list[tuple[str, list[str]]] = []
    for urn, plugins, dra in [*((urn, *advertisers(props)) for urn, props in releases), *raw]:
        if plugins:
            plugin_urns.append((urn, plugins))
        if dra:
            dra_urns.append((urn, dra))
    if not plugin_urns or not dra_urns:
        return []
    plugin_names = ", ".join(n for _, names in plugin_urns for n in names)
    dra_names = ", ".join(n for _, names in dra_urns for n in names)
    message = (f"GPUs advertised twice: device plugin [{plugin_names}] and DRA [{dra_names}]; "
               "the scheduler would hand the same GPU to two pods")
    return list(dict.fromkeys((urn, message) for urn, _ in plugin_urns + dra_urns))


def validate_release_pinned(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    extra = list(args.get_config().get("allowedRepositories") or ())
    facts = facts_of(args)
    if facts is not None:  # the stack's own chart mirrors, declared in its settings
        extra += facts.chart_mirrors
    for problem in release_problems(args.resource_type, args.props, allowed_repositories(extra)):
        report_violation(problem, None)


def validate_one_advertiser(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    releases = [(r.urn, r.props) for r in args.resources if r.resource_type in HELM_TYPES]
    raw = [(o.urn, *gpu_advertisers(o)) for o in objects(args.resources)[0]]
    for urn, message in advertiser_problems(releases, raw):
        report_violation(message, urn)


HELM_RELEASE_PINNED = ResourceValidationPolicy(
    name="helm-release-pinned",
    description="Every Helm release installs an exact chart version from an allowed repository.",
    validate=validate_release_pinned,
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(
        properties={"allowedRepositories": {"type": "array", "items": {"type": "string"}}},
    ),
)
ONE_GPU_ADVERTISER = StackValidationPolicy(
    name="one-gpu-advertiser",
    description="Never a GPU device plugin and DRA GPU allocation in the same cluster, through Helm or not.",
    validate=validate_one_advertiser,
    enforcement_level=EnforcementLevel.MANDATORY,
)

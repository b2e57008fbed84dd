"""The add-on shape: what one add-on is, as plain data plus a pure values function.

An add-on module declares one `Addon`; the catalog lists them; the graph checks them; the
AddonSet component turns the enabled ones into Helm releases. Nothing here touches Pulumi, so
every decision (values, dependencies, defaults) is testable as a plain function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ..facts.cluster import ClusterFacts
from ..kube.charts import chart_version
from ..settings.model import AddonSettings, ClusterCapability, Settings
from ..tables import pins
from .image_refs import Entry, checked_mirror, mirror_values

# What an add-on needs from, or brings to, the cluster. A need is met by an enabled add-on that
# provides it (which then becomes a dependency) or by the cluster itself (its platform, or
# settings.gpuStack.clusterProvides). The names live in the settings model (the config boundary):
#   gpu-driver       NVIDIA driver + container toolkit ready on GPU nodes (ClusterPolicy ready)
#   dra-gpus         whole GPUs published as DRA devices of driver gpu.nvidia.com
#   kai-crds         KAI's CRDs (Queue scheduling.run.ai/v2, PodGroup...) exist
#   monitoring-crds  Prometheus Operator CRDs (ServiceMonitor, PrometheusRule) exist
Capability = ClusterCapability
CAPABILITIES: tuple[Capability, ...] = get_args(ClusterCapability)

# How the set knows an add-on is ready: Helm's own wait (Deployments/DaemonSets/Jobs ready), or
# that plus the GPU Operator's ClusterPolicy reporting `ready` (driver and toolkit rolled out).
# operator: the GPU Operator's custom resource reconciled onto the GPU nodes (its ClusterPolicy, or its
# GPUCluster with gpuStack.draManagedBy operator), judged by the gates of components/addons.
# gateway: Helm's wait, then the add-on's Gateway Accepted and Programmed by its controller
# (components/addons/gateway_ready.py; `Addon.gateway` names it).
Readiness = Literal["helm", "operator", "gateway"]

# Pod Security admission level of the add-on's namespace: NVIDIA operands load kernel modules and
# mount host paths, node exporters read the host, so those namespaces must be privileged.
PodSecurity = Literal["privileged", "baseline", "restricted"]

Default = Literal["on", "off", "auto"]  # auto: on exactly when every need is met
# An add-on's default on one platform: fixed, or decided from the settings (its docstring says how:
# docs/addons.md prints it).
DefaultRule = Default | Callable[[Settings], Default]
PLATFORMS = ("aws", "existing", "kind", "local")


@dataclass(frozen=True)
class AddonContext:
    """Everything a values function may look at: settings, cluster facts, capabilities present."""

    settings: Settings
    facts: ClusterFacts
    capabilities: frozenset[str]  # present in this cluster: from enabled add-ons or the cluster
    enabled: frozenset[str]  # names of the add-ons this set installs
    version: str  # the chart version being installed (pin or override)

    @property
    def track(self) -> pins.SnapTrack:
        return pins.track(self.settings.kubernetes.track)


ValuesFn = Callable[[AddonContext], dict[str, Any]]


@dataclass(frozen=True)
class GatewayGate:
    """The Gateway a `gateway`-ready add-on brings, and the controller that must program it."""

    gateway_class: str
    controller: str
    namespace: str
    name: str


@dataclass(frozen=True)
class CrdManifest:
    """CRDs no chart carries, applied before the release from a release manifest (CrdsFirst):
    `annotation` (key, value) is what each CRD in it must carry (the bundle version)."""

    url: str
    version: str
    annotation: tuple[str, str]


@dataclass(frozen=True)
class Addon:
    name: str  # release name and catalog key
    settings_key: str  # attribute of settings.gpuStack.addons
    description: str
    namespace: str
    pod_security: PodSecurity
    values: ValuesFn
    # Either a pin-table key (`pins.CHARTS`) or a chart of this repository (`charts/<name>`).
    chart_pin: str | None = None
    local_chart: str | None = None
    depends_on: tuple[str, ...] = ()  # add-on names; resolved to resource objects by the set
    needs: tuple[Capability, ...] = ()
    # Needed while running, not to install: must be met like `needs`, but adds no install edge
    # (the add-on's own pods wait for it, e.g. the DRA kubelet plugin's init container waits for
    # the driver), so the release installs beside what provides it (docs/adr/0019).
    uses: tuple[Capability, ...] = ()
    # Optional, CRDs only: when an enabled add-on provides one of these, this release waits for that
    # add-on's CRDs (its CrdsFirst resource, seconds), not for its workloads. The GPU Operator reads
    # whether the ServiceMonitor CRD exists when it reconciles and skips DCGM's ServiceMonitor for
    # good if it does not (controllers/object_controls.go ServiceMonitor, v26.7.0).
    after_crds_of: tuple[Capability, ...] = ()
    provides: Callable[[Settings], tuple[Capability, ...]] = field(default=lambda _s: ())
    # Every image the pinned chart runs or renders, read at the pin (components/addons/image_refs.py),
    # and values a mirror needs beyond the entries' keys (velero: its init containers, a list).
    images: tuple[Entry, ...] = ()
    mirror_extra: Callable[[Settings, str], dict[str, Any]] | None = None
    conflicts: tuple[str, ...] = ()  # add-ons that must never run in the same cluster
    readiness: Readiness = "helm"
    gateway: GatewayGate | None = None  # with readiness `gateway`
    # CRDs from a release manifest at the settings' URL, applied before every release of this add-on.
    crd_manifest: Callable[[Settings], CrdManifest] | None = None
    timeout_seconds: int = 600
    # Problems with the settings that only matter when this add-on is enabled.
    check: Callable[[Settings], tuple[str, ...]] = field(default=lambda _s: ())
    # Helm's upgrade skips OpenAPI validation (the GPU Operator's pre-upgrade CRD hook needs it).
    disable_openapi_validation: bool = False
    # On the path a GPU job takes (driver, DRA, scheduling): the smoke test waits for these releases
    # and re-runs when they change. Monitoring and backups are not: they install beside the test.
    on_gpu_path: bool = True
    # False for a namespace the cluster owns (kube-system): the set neither creates nor labels it.
    owns_namespace: bool = True
    # The release's URN before it became an add-on (settings, stack, project): adopted, not replaced.
    previous_urn: Callable[[Settings, str, str], str] | None = None
    # Whether the add-on installs by default on each platform (`gpuStack.addons.<x>.enabled` wins);
    # a catalog add-on names every platform (tests/unit/addons/test_graph.py).
    platform_defaults: Mapping[str, DefaultRule] = field(default_factory=dict)
    # Why a set without the values the program's wiring adds (AddonSet `extra_values`) would install
    # something broken; None where the stack brings its own.
    wired_values_problem: Callable[[Settings], str | None] | None = None

    def __post_init__(self) -> None:
        if (self.chart_pin is None) == (self.local_chart is None):
            raise ValueError(f"add-on {self.name}: exactly one of chart_pin / local_chart")
        if (self.readiness == "gateway") != (self.gateway is not None):
            raise ValueError(f"add-on {self.name}: readiness `gateway` and a GatewayGate go together")

    @property
    def release_name(self) -> str:
        """The chart's own name: Helm then names objects `<chart>-...`, not `<release>-<chart>-...`."""
        return self.chart_pin or self.local_chart or self.name

    def addon_settings(self, settings: Settings) -> AddonSettings:
        value: AddonSettings = getattr(settings.gpu_stack.addons, self.settings_key)
        return value

    @property
    def chart_name(self) -> str:
        """The chart's name in a Helm repository (the pinned chart's, or this repository's chart's)."""
        if self.chart_pin is not None:
            return pins.chart(self.chart_pin).name
        assert self.local_chart is not None
        return self.local_chart

    def repository(self, settings: Settings) -> str | None:
        """Where the chart comes from: the stack's mirror (`repository`), else the pin's repository;
        None for this repository's chart installed from `charts/`."""
        mirror = self.addon_settings(settings).repository
        if mirror is not None:
            return mirror.rstrip("/")
        return pins.chart(self.chart_pin).repo if self.chart_pin is not None else None

    def version(self, settings: Settings) -> str:
        """The chart version installed: the stack's override, else the pin; this repository's chart
        is `local` from `charts/`, or its own Chart.yaml version from a mirror."""
        override = self.addon_settings(settings).version
        if override is not None:
            return override
        if self.chart_pin is not None:
            return pins.chart(self.chart_pin).version
        assert self.local_chart is not None
        if self.addon_settings(settings).repository is not None:
            return chart_version(self.local_chart)
        return "local"

    def mirrored_values(self, ctx: AddonContext) -> dict[str, Any]:
        """Computed values with every image of the pinned chart under the stack's mirror
        (images.mirror, docs/adr/0043; `mirror`)."""
        values = self.values(ctx)
        mirror = ctx.settings.images.mirror
        if mirror is not None and self.chart_pin is not None:
            values = deep_merge(values, self.mirror(ctx.settings, mirror))
        return values

    def mirror(self, settings: Settings, mirror: str) -> dict[str, Any]:
        """Values that point every image of this add-on's chart at `mirror` (`<mirror>/<host>/<repository>`)."""
        out = mirror_values(self.images, mirror)
        if self.mirror_extra is not None:
            out = deep_merge(out, self.mirror_extra(settings, checked_mirror(mirror)))
        return out

    def final_values(self, ctx: AddonContext) -> dict[str, Any]:
        """The mirrored computed values with the stack's `values:` override merged over them."""
        return deep_merge(self.mirrored_values(ctx), self.addon_settings(ctx.settings).values)


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Maps merge key by key; anything else (lists included) in `override` replaces `base`."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def version_tuple(version: str) -> tuple[int, int, int]:
    """`v0.17.0` / `0.4.1-rc.1` -> (0, 17, 0); pins and overrides are exact (checked by settings)."""
    core = version.lstrip("v").split("-")[0].split("+")[0]
    parts = [int(p) for p in core.split(".")[:3]] + [0, 0, 0]
    return parts[0], parts[1], parts[2]

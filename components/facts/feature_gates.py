"""The one table of Kubernetes feature gates and runtime-config the stack's features need, per track.

Every platform (EC2 user-data, kind, the loopback control plane, the node tier's kubelets) asks
`required(settings)`; no other module names a Kubernetes gate (tests/unit/test_feature_gates_one_place.py).
Stages are pkg/features/kube_features.go `defaultVersionedKubernetesFeatureGates` at each minor
(k8s.io/kubernetes v1.32.13 pkg/features/versioned_kube_features.go, v1.33.13, v1.34.4, v1.35.6 in the Go
module cache; 1.36 from its KEPs and k8s.io/api v0.36.4). Readers are the components whose code checks the
gate (`features.<Gate>` under pkg/kubelet, pkg/scheduler, pkg/controller + cmd/kube-controller-manager,
pkg/registry + pkg/api + plugin/pkg/auth for kube-apiserver). Alpha gates are opt-in: ADR 0031.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from ..settings.facts import compute_domains_on, nested, truthy
from ..settings.model import Settings
from ..tables import pins

Component = Literal["kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubelet"]
COMPONENTS: tuple[Component, ...] = ("kube-apiserver", "kube-scheduler", "kube-controller-manager", "kubelet")
CONTROL_PLANE: tuple[Component, ...] = ("kube-apiserver", "kube-scheduler", "kube-controller-manager")
Stage = Literal["alpha", "beta", "GA"]
# What the stack may need of Kubernetes: DRA allocation (GPUs or ComputeDomains through the DRA
# driver), gpuHealth (the driver's device taints honoured), firstAvailable (smoke case, prioritized lists).
Feature = Literal["dra", "gpuHealth", "firstAvailable", "dynamicMig"]
V1ALPHA3 = "resource.k8s.io/v1alpha3"


@dataclass(frozen=True)
class GateStage:
    """One VersionedSpecs entry: from 1.<since> on, the gate has this stage and default."""

    since: int
    stage: Stage
    default: bool


@dataclass(frozen=True)
class Gate:
    name: str
    readers: tuple[Component, ...]
    stages: tuple[GateStage, ...]  # oldest first, as in kube_features.go
    # API versions (runtime-config keys) some component needs served while the gate is on at 1.<minor>,
    # none of them served by default: without them that component's informers never sync.
    apis: tuple[tuple[int, tuple[str, ...]], ...] = ()  # (minor, versions)

    def at(self, minor: int) -> GateStage | None:
        """The stage on 1.<minor>; None where the gate does not exist (yet)."""
        current = None
        for spec in self.stages:
            if spec.since <= minor:
                current = spec
        return current

    def apis_at(self, minor: int) -> tuple[str, ...]:
        return next((versions for m, versions in self.apis if m == minor), ())


# v1.32.13 versioned_kube_features.go:181, v1.33.13 kube_features.go:1165, v1.34.4 :1269, v1.35.6 :1292
# (locked on from 1.35). Read by all four (apiserver resource registry, scheduler DRA plugin, KCM
# resourceclaim controller, kubelet DRA manager). Before GA the beta APIs are switched on
# (pins.DRA_BETA_APIS: v1beta1 on 1.32, v1beta2 + v1beta1 on 1.33).
DYNAMIC_RESOURCE_ALLOCATION = Gate(
    "DynamicResourceAllocation", COMPONENTS,
    (GateStage(26, "alpha", False), GateStage(32, "beta", False), GateStage(34, "GA", True)),
    tuple((m, tuple(sorted(apis))) for m, apis in sorted(pins.DRA_BETA_APIS.items())),
)
# v1.33.13 kube_features.go:1148, v1.34.4 :1215, v1.35.6 :1244: alpha/off 1.33-1.35; beta/on 1.36
# (KEP-5055, kubernetes/enhancements#5055). Readers: apiserver (registry/resource/resourceslice/
# strategy.go), scheduler (scheduler.go, plugins/feature), KCM (app/core.go device-taint-eviction
# controller); no pkg/kubelet code reads it. On 1.33-1.34 the scheduler (pkg/scheduler/scheduler.go:
# 317/329) and KCM (cmd/kube-controller-manager/app/core.go:253) watch v1alpha3 DeviceTaintRules
# whenever it is on, so v1alpha3 must be served; from 1.35 only DRADeviceTaintRules starts that watch.
DRA_DEVICE_TAINTS = Gate(
    "DRADeviceTaints", CONTROL_PLANE, (GateStage(33, "alpha", False), GateStage(36, "beta", True)),
    ((33, (V1ALPHA3,)), (34, (V1ALPHA3,))),
)
# v1.35.6 kube_features.go:1240 (alpha 1.35); 1.36 beta, off by default (KEP-5055), DeviceTaintRule in
# v1beta2 (k8s.io/api v0.36.4 resource/v1beta2/types.go: introduced=1.36). Readers: scheduler
# (scheduler.go:334), KCM (controller/devicetainteviction:748), apiserver (bootstrappolicy/policy.go:649).
# No feature here needs it (the driver taints its own ResourceSlices); listed so a user's gate gets its API.
DRA_DEVICE_TAINT_RULES = Gate(
    "DRADeviceTaintRules", CONTROL_PLANE, (GateStage(35, "alpha", False), GateStage(36, "beta", False)),
    ((35, (V1ALPHA3,)), (36, ("resource.k8s.io/v1beta2",))),
)
# v1.33.13 kube_features.go:1156, v1.34.4 :1227, v1.35.6 :1256: alpha 1.33, beta/on 1.34; GA 1.36 (the
# v1.36 DRA release blog, KEP-4816). Readers: apiserver (resourceclaim(template) strategy.go, api/
# resourceclaimspec), scheduler (plugins/feature), KCM (app/core.go resourceclaim controller PrioritizedList).
DRA_PRIORITIZED_LIST = Gate(
    "DRAPrioritizedList", CONTROL_PLANE,
    (GateStage(33, "alpha", False), GateStage(34, "beta", True), GateStage(36, "GA", True)),
)

# v1.33.13 kube_features.go:1152, v1.34.4 :1223, v1.35.6 :1252: alpha/off 1.33-1.35 (KEP-4815). Readers:
# apiserver (registry/resource/resourceslice/strategy.go drops shared counters and consumesCounters
# without it), scheduler (plugins/feature). On by default from 1.36: dra-driver-nvidia-gpu 95932046
# site/content/docs/guides/gpu-allocation/mig.md ("On Kubernetes v1.36 and later,
# DRAPartitionableDevices is enabled by default"), which the driver's dynamic MIG needs.
DRA_PARTITIONABLE_DEVICES = Gate(
    "DRAPartitionableDevices", ("kube-apiserver", "kube-scheduler"),
    (GateStage(33, "alpha", False), GateStage(36, "beta", True)),
)

GATES: tuple[Gate, ...] = (DYNAMIC_RESOURCE_ALLOCATION, DRA_DEVICE_TAINTS, DRA_DEVICE_TAINT_RULES, DRA_PRIORITIZED_LIST,
                           DRA_PARTITIONABLE_DEVICES)
BY_NAME: Mapping[str, Gate] = MappingProxyType({g.name: g for g in GATES})
# The gates each feature needs on. DRAConsumableCapacity is not one: the smoke cases share GPUs through
# the driver's opaque GpuConfig, never through consumable capacity (allowMultipleAllocations).
FEATURES: Mapping[Feature, tuple[Gate, ...]] = MappingProxyType({
    "dra": (DYNAMIC_RESOURCE_ALLOCATION,),
    "gpuHealth": (DYNAMIC_RESOURCE_ALLOCATION, DRA_DEVICE_TAINTS),
    "firstAvailable": (DYNAMIC_RESOURCE_ALLOCATION, DRA_PRIORITIZED_LIST),
    "dynamicMig": (DYNAMIC_RESOURCE_ALLOCATION, DRA_PARTITIONABLE_DEVICES),
})

# The DRA driver's own gate for MIG instances made on demand from claims (alpha, off: dra-driver-
# nvidia-gpu 95932046 pkg/featuregates/featuregates.go); asking for it asks Kubernetes for
# partitionable devices, the instances being published as counters of their GPU.
DYNAMIC_MIG_FIELD = "gpuStack.addons.draDriver.values.featureGates.DynamicMIG"


# The settings that ask for each feature, as messages name them.
ASKED_BY: Mapping[Feature, str] = MappingProxyType({
    "dra": "gpuStack.allocation dra (or gpuStack.computeDomains)",
    "gpuHealth": "gpuStack.gpuHealth",
    "firstAvailable": "smokeTest.firstAvailable",
    "dynamicMig": DYNAMIC_MIG_FIELD,
})


def track_minor(settings: Settings) -> int:
    return pins.track(settings.kubernetes.track).minor


def on_by_default(gate: Gate, minor: int) -> bool:
    spec = gate.at(minor)
    return bool(spec and spec.default)


def gpu_health_on(settings: Settings) -> bool:
    """Whether GPU health runs: the DRA driver's NVMLDeviceHealthCheck taints unhealthy GPUs in its
    ResourceSlices, which Kubernetes honours only with DRADeviceTaints on.

    gpuStack.gpuHealth when set; else (null) on where DRA allocates the GPUs and the stack's track has
    DRADeviceTaints beta and on by default (1.36), off where it is alpha (1.33-1.35: alpha gates are
    opt-in, ADR 0031) or absent (1.32), and off beside MPS sharing, which the driver's feature-gate
    reference lists as exclusive with NVMLDeviceHealthCheck (site/content/docs/reference/
    feature-gates.md:54; its code does not check the pair). An explicit true where the track lacks the
    gate is refused by components/facts/feature_gate_rules.py, with MPS by components/addons/dra_driver_gates.py.
    """
    explicit = settings.gpu_stack.gpu_health
    if explicit is not None:
        return explicit
    mps = bool(settings.smoke_test.enabled) and settings.smoke_test.sharing == "mps"
    return (settings.gpu_stack.allocation == "dra" and not mps
            and on_by_default(DRA_DEVICE_TAINTS, track_minor(settings)))


def smoke_gpu_health_on(settings: Settings) -> bool:
    """Smoke case gpuHealth: smokeTest.gpuHealth when set, else exactly when gpu health is on."""
    explicit = settings.smoke_test.gpu_health
    return explicit if explicit is not None else gpu_health_on(settings)


def dynamic_mig_on(settings: Settings) -> bool:
    """The DRA driver makes MIG instances on demand: its DynamicMIG gate, an explicit opt-in (an
    alpha feature of the driver, and of Kubernetes before 1.36: ADR 0031)."""
    gate = nested(settings.gpu_stack.addons.dra_driver.values, "featureGates.DynamicMIG")
    return settings.gpu_stack.allocation == "dra" and truthy(gate)


def first_available_on(settings: Settings) -> bool:
    return bool(settings.smoke_test.enabled) and settings.smoke_test.first_available.enabled


def needed(settings: Settings) -> tuple[Feature, ...]:
    """The Kubernetes features this stack uses."""
    found: list[Feature] = []
    if settings.gpu_stack.allocation == "dra" or compute_domains_on(settings):
        found.append("dra")
    if gpu_health_on(settings):
        found.append("gpuHealth")
    if first_available_on(settings):
        found.append("firstAvailable")
    if dynamic_mig_on(settings):
        found.append("dynamicMig")
    return tuple(found)


def needed_gates(settings: Settings) -> tuple[Gate, ...]:
    """Every gate a needed feature requires on, each once."""
    return tuple(dict.fromkeys(g for f in needed(settings) for g in FEATURES[f]))


def user_gates(entries: Iterable[str]) -> dict[str, bool]:
    """kubernetes.featureGates (`Name=true|false`, syntax checked by settings.rules); a later entry wins."""
    out: dict[str, bool] = {}
    for entry in entries:
        name, _, value = entry.partition("=")
        out[name.strip()] = value.strip().lower() == "true"
    return out


@dataclass(frozen=True)
class ClusterGates:
    """What one cluster sets: `--feature-gates` per component (only gates it reads), and the
    kube-apiserver's `--runtime-config` (group/version keys, each `=true`)."""

    gates: Mapping[Component, Mapping[str, bool]]
    runtime_config: tuple[str, ...] = ()

    def of(self, *components: Component) -> dict[str, bool]:
        """The gates of these components together, by name (kind and kwokctl take one set)."""
        merged: dict[str, bool] = {}
        for c in components:
            merged.update(self.gates.get(c, {}))
        return dict(sorted(merged.items()))

    def flag(self, *components: Component) -> str:
        """`--feature-gates` value: `A=true,B=false`; "" when none."""
        return ",".join(f"{k}={str(v).lower()}" for k, v in self.of(*components).items())

    def runtime_config_flag(self) -> str:
        return ",".join(f"{api}=true" for api in self.runtime_config)


def required(settings: Settings, minor: int | None = None) -> ClusterGates:
    """The gates and runtime-config the stack needs on Kubernetes 1.<minor> (default: its track's).

    A needed gate is set only where the minor has it and it is off by default; the user's
    kubernetes.featureGates are merged over that (theirs win; turning a needed gate off is refused by
    components/facts/feature_gate_rules.py), a gate of the table to its readers only, any other to every
    component. runtime-config serves the APIs each gate that ends up on needs at that minor.
    """
    m = track_minor(settings) if minor is None else minor
    per: dict[Component, dict[str, bool]] = {c: {} for c in COMPONENTS}
    for gate in needed_gates(settings):
        spec = gate.at(m)
        if spec is not None and not spec.default:
            for c in gate.readers:
                per[c][gate.name] = True
    user = user_gates(settings.kubernetes.feature_gates)
    for name, value in user.items():
        readers = BY_NAME[name].readers if name in BY_NAME else COMPONENTS
        for c in readers:
            per[c][name] = value
    apis: set[str] = set()
    for gate in GATES:
        on = per[gate.readers[0]].get(gate.name, on_by_default(gate, m))
        if on and gate.at(m) is not None:
            apis.update(gate.apis_at(m))
    gates = MappingProxyType({c: MappingProxyType(dict(sorted(g.items()))) for c, g in per.items() if g})
    return ClusterGates(gates=gates, runtime_config=tuple(sorted(apis)))


def dra_on(settings: Settings, minor: int | None = None) -> bool:
    """Whether the cluster serves DRA: on by default from 1.34, else through the user's gate
    (on 1.32/1.33 DRA stays opt-in, settings.rules refuses allocation dra without it)."""
    m = track_minor(settings) if minor is None else minor
    user = user_gates(settings.kubernetes.feature_gates)
    return user.get(DYNAMIC_RESOURCE_ALLOCATION.name, on_by_default(DYNAMIC_RESOURCE_ALLOCATION, m))


def _cell(gates: ClusterGates) -> str:
    short = {"kube-apiserver": "apiserver", "kube-scheduler": "scheduler", "kube-controller-manager": "KCM",
             "kubelet": "kubelet"}
    names = sorted({g for c in COMPONENTS for g in gates.of(c)})
    parts = [f"`{g}` ({', '.join(short[c] for c in COMPONENTS if g in gates.of(c))})" for g in names]
    parts += [f"`--runtime-config` {', '.join(gates.runtime_config)}"] if gates.runtime_config else []
    return "; ".join(parts) or "nothing: on by default"


def markdown_table() -> str:
    """docs/architecture.md "Kubernetes feature gates per track": per track and feature, what is set."""
    # Each cell: DRA allocation plus that feature, asked for explicitly.
    asks: Mapping[Feature, dict[str, object]] = {
        "dra": {"gpuStack": {"gpuHealth": False}},
        "gpuHealth": {"gpuStack": {"gpuHealth": True}},
        "firstAvailable": {"gpuStack": {"gpuHealth": False}, "smokeTest": {"firstAvailable": {"enabled": True}}},
        "dynamicMig": {"gpuStack": {"gpuHealth": False,
                                    "addons": {"draDriver": {"values": {"featureGates": {"DynamicMIG": True}}}}}},
    }
    head = "| Track | " + " | ".join(FEATURES) + " |"
    rows = [head, "|" + " --- |" * (len(FEATURES) + 1)]
    for name, track in pins.SNAP_TRACKS.items():
        cells = []
        for feature in FEATURES:
            missing = [g.name for g in FEATURES[feature] if g.at(track.minor) is None]
            if missing:
                cells.append(f"refused: no {', '.join(missing)}")
                continue
            s = Settings.model_validate({"platform": "aws", "kubernetes": {"track": name}, **asks[feature]})
            cells.append(_cell(required(s)))
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"

"""The NVIDIA DRA driver's own feature gates: which the stack turns on, and what the driver refuses.

The chart hands `featureGates` (name: bool) to every component as FEATURE_GATES (templates/
kubeletplugin.yaml, controller.yaml); each parses it with component-base's feature gate
(pkg/flags/featuregates.go) and then runs `featuregates.ValidateFeatureGates` before serving
(cmd/gpu-kubelet-plugin/main.go:246, cmd/compute-domain-kubelet-plugin/main.go:230,
cmd/compute-domain-controller/main.go:220). A refused combination is a crash-looping plugin after
a successful Helm release, so `problems` refuses it before anything is registered.
Facts: kubernetes-sigs/dra-driver-nvidia-gpu pkg/featuregates/featuregates.go at v0.4.1 (764900e)
and main 95932046 (chart 0.5.0-dev); ADR 0032.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..facts.feature_gates import gpu_health_on
from ..settings.facts import nested, truthy
from ..settings.model import Settings
from ..settings.problems import ROOT, Problem
from .base import version_tuple

# The driver refuses a GpuConfig sharing strategy whose gate is off ("... is selected as the GPU
# sharing strategy, but the ... feature gate is not enabled": api/nvidia.com/resource/v1beta1/
# validate.go). MPSSupport also grants the kubelet plugin the Deployments it runs MPS control
# daemons as (templates/rbac-kubeletplugin.yaml).
SHARING_FEATURE_GATES: dict[str, str] = {"timeSlicing": "TimeSlicingSettings", "mps": "MPSSupport"}
HEALTH_GATE = "NVMLDeviceHealthCheck"  # cmd/gpu-kubelet-plugin/driver.go:157 starts the NVML monitor
PARTITION_GATE = "FabricManagerPartitioning"  # cmd/gpu-kubelet-plugin/device_state.go:97

# component-base's logging gates every component registers beside the driver's own
# (logsapi.AddFeatureGates; k8s.io/component-base v0.36 logs/api/v1/kube_features.go).
_LOGGING = ("ContextualLogging", "LoggingAlphaOptions", "LoggingBetaOptions", "LoggingStableOptions")
# Default of each driver gate (defaultFeatureGates: v0.4.1 featuregates.go:87, main :116). An
# unknown name fails the component's start: "unrecognized feature gate" (component-base
# featuregate/feature_gate.go unsafeSetFromMap).
_V04 = {
    "TimeSlicingSettings": False, "MPSSupport": False, "IMEXDaemonsWithDNSNames": True, "PassthroughSupport": False,
    "NVMLDeviceHealthCheck": False, "DynamicMIG": False, "ComputeDomainCliques": True,
    "CrashOnNVLinkFabricErrors": True, "DeviceMetadata": False,
}
KNOWN_GATES: dict[tuple[int, int], dict[str, bool]] = {
    (0, 4): _V04,
    (0, 5): {**_V04, "FabricManagerPartitioning": False, "HostManagedIMEXDaemon": False,
             "DRAListTypeAttributes": False, "ConsumableShares": False},
}
# ValidateFeatureGates (v0.4.1 featuregates.go:195, main :252; the same rules in both).
EXCLUSIVE: tuple[tuple[str, str, str], ...] = (
    ("DynamicMIG", "PassthroughSupport", "pkg/featuregates/featuregates.go:258"),
    ("DynamicMIG", "NVMLDeviceHealthCheck", "pkg/featuregates/featuregates.go:262"),
    ("DynamicMIG", "MPSSupport", "pkg/featuregates/featuregates.go:266"),
    ("PassthroughSupport", "NVMLDeviceHealthCheck", "pkg/featuregates/featuregates.go:270"),
    # Documented, not in ValidateFeatureGates at 95932046: site/content/docs/reference/feature-gates.md:54.
    ("MPSSupport", "NVMLDeviceHealthCheck", "site/content/docs/reference/feature-gates.md:54"),
)
REQUIRES: tuple[tuple[str, str, str], ...] = (
    ("ComputeDomainCliques", "IMEXDaemonsWithDNSNames", "pkg/featuregates/featuregates.go:254"),
    ("DeviceMetadata", "PassthroughSupport", "pkg/featuregates/featuregates.go:274"),
)
VALUES_GATES = "gpuStack.addons.draDriver.values.featureGates"


def release_line(version: str) -> tuple[int, int]:
    major, minor, _ = version_tuple(version)
    return major, minor


def wanted(settings: Settings) -> dict[str, str]:
    """Gate -> the settings field that turns it on (only gates this stack switches on)."""
    out: dict[str, str] = {}
    t = settings.smoke_test
    if t.enabled and t.sharing != "none":
        out[SHARING_FEATURE_GATES[t.sharing]] = "smokeTest.sharing"
    if settings.gpu_stack.allocation == "dra" and gpu_health_on(settings):
        out[HEALTH_GATE] = "gpuStack.gpuHealth"
    if settings.gpu_stack.nvlink_partitions:
        out[PARTITION_GATE] = "gpuStack.nvlinkPartitions"
    return out


def feature_gates(settings: Settings) -> dict[str, bool]:
    """The chart's `featureGates`: {} leaves every gate at the driver's default. Compute domains need
    none: ComputeDomainCliques and IMEXDaemonsWithDNSNames are beta and on by default (ADR 0032)."""
    return {gate: True for gate in wanted(settings)}


def _effective(settings: Settings, version: str) -> tuple[dict[str, bool], dict[str, str]]:
    """(gate -> on, gate -> field that set it) as the driver would see them: its defaults, ours, then
    the stack's own `values.featureGates` (deep-merged over ours, so it wins)."""
    overrides = nested(settings.gpu_stack.addons.dra_driver.values, "featureGates") or {}
    fields = {**wanted(settings), **{str(k): f"{VALUES_GATES}.{k}" for k in overrides}}
    on = {**KNOWN_GATES.get(release_line(version), {}), **feature_gates(settings),
          **{str(k): truthy(v) for k, v in overrides.items()}}
    return on, fields


def _name(gate: str, fields: Mapping[str, str]) -> str:
    return f"{gate} ({ROOT}.{fields[gate]})" if gate in fields else f"{gate} (the driver's default)"


def _elsewhere(a: str, b: str, fields: Mapping[str, str]) -> bool:
    """Pairs another rule refuses already, with their own words: one fact, one message."""
    pair = {fields.get(a), fields.get(b)}
    # components/validate.py _smoke_sharing: values.featureGates.DynamicMIG with smokeTest.sharing mps.
    return pair == {"smokeTest.sharing", f"{VALUES_GATES}.DynamicMIG"}


def partition_problems(settings: Settings) -> Iterator[Problem]:
    """gpuStack.nvlinkPartitions with allocation device-plugin: whether or not the driver is installed."""
    if settings.gpu_stack.nvlink_partitions and settings.gpu_stack.allocation != "dra":
        yield (f"{ROOT}.gpuStack.nvlinkPartitions",
               f"needs allocation dra ({ROOT}.gpuStack.allocation is {settings.gpu_stack.allocation}): "
               f"{PARTITION_GATE} partitions the driver's gpu.nvidia.com devices, which the DRA driver "
               "publishes only with allocation dra (cmd/gpu-kubelet-plugin/deviceinfo.go:213)")


def problems(settings: Settings, version: str) -> Iterator[Problem]:
    """What the driver at `version` refuses in the gates this stack would hand it: each a
    (field, reason) naming every field involved."""
    on, fields = _effective(settings, version)
    known = KNOWN_GATES.get(release_line(version))
    for gate, field in fields.items():
        # Any value: the chart renders every key (`name=value,`) and an unknown name fails the parse.
        if known is not None and gate not in known and gate not in _LOGGING:
            yield (f"{ROOT}.{field}", f"sets {gate}, a feature gate dra-driver-nvidia-gpu {version} does not have: "
                                      "its components refuse to start (\"unrecognized feature gate\")")
    for a, b, source in EXCLUSIVE:
        if on.get(a) and on.get(b) and not _elsewhere(a, b, fields):
            first = fields.get(a) or fields.get(b) or VALUES_GATES
            yield (f"{ROOT}.{first}", f"{_name(a, fields)} and {_name(b, fields)} cannot both be on: "
                                      f"the DRA driver refuses them together ({source})")
    for gate, needs, source in REQUIRES:
        if on.get(gate) and known is not None and not on.get(needs):
            first = fields.get(gate) or fields.get(needs) or VALUES_GATES
            yield (f"{ROOT}.{first}", f"{_name(gate, fields)} needs {_name(needs, fields)} on: the DRA driver "
                                      f"refuses to start without it ({source})")
    yield from _consumable_shares(settings, on, fields)


def _consumable_shares(settings: Settings, on: Mapping[str, bool], fields: Mapping[str, str]) -> Iterator[Problem]:
    """Chart value `consumableShares` (0.5.0 values.yaml; CONSUMABLE_SHARES, templates/kubeletplugin.yaml)."""
    shares: Any = nested(settings.gpu_stack.addons.dra_driver.values, "consumableShares")
    if shares in (None, "", "disabled"):
        return
    field = f"{ROOT}.gpuStack.addons.draDriver.values.consumableShares"
    if not on.get("ConsumableShares"):
        # cmd/gpu-kubelet-plugin/main.go:306.
        yield field, "needs the DRA driver's ConsumableShares gate on: its GPU kubelet plugin refuses to start"
    elif on.get("MPSSupport") and settings.smoke_test.sharing == "mps":
        # cmd/gpu-kubelet-plugin/device_state.go:1201, on every MPS claim's prepare.
        yield field, (f"cannot be on with {_name('MPSSupport', fields)}: the driver refuses to prepare an MPS "
                      "claim while consumable shares are on")

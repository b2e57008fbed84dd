"""smokeTest.sharing: NVIDIA's opaque GpuConfig (demo gpu-test5) on the shared cases' claims. Not a
case of its own: it changes how `shared` and `shared-named` hold their GPU, and checks that it took."""

from __future__ import annotations

from typing import Any

from ...settings.model import Settings, SmokeTestSettings
from ..checks.base import Check
from ..expectations import DRIVER, GPU_CONFIG_API, NO_KUBELET, SHARING_STRATEGIES
from ..snapshot import Obj, allocation_results, name
from ..view import SKIPPED, CheckResult, View, outcome, unique
from .base import CaseFamily


def gpu_sharing(t: SmokeTestSettings) -> dict[str, Any]:
    """GpuConfig `sharing` for the shared cases' claims ({}: none), shaped like NVIDIA's GpuSharing
    (dra-driver-nvidia-gpu v0.4.1 api/nvidia.com/resource/v1beta1/sharing.go; demo gpu-test5)."""
    if t.sharing == "timeSlicing":
        # Always explicit: the driver's TimeSlicingConfig.Validate reads the interval through a pointer
        # that only its own default (no timeSlicingConfig at all) fills in (validate.go, gpuconfig.go).
        return {"strategy": SHARING_STRATEGIES[t.sharing],
                "timeSlicingConfig": {"interval": t.time_slicing_interval or "Default"}}
    if t.sharing == "mps":
        mps: dict[str, Any] = {}
        if t.mps_active_thread_percentage is not None:
            mps["defaultActiveThreadPercentage"] = t.mps_active_thread_percentage
        if t.mps_pinned_memory_limit_mib is not None:
            mps["defaultPinnedDeviceMemoryLimit"] = f"{t.mps_pinned_memory_limit_mib}Mi"
        return {"strategy": SHARING_STRATEGIES[t.sharing], "mpsConfig": mps}
    return {}


def values(s: Settings) -> dict[str, Any]:
    return {"sharing": {"driver": DRIVER, "gpuSharing": gpu_sharing(s.smoke_test)}}


def _gpu_configs(claim: Obj, driver: str) -> list[Obj]:
    """The GpuConfig parameters the allocation carries for `driver`'s request `gpu` (the API server
    copies the claim's spec.devices.config there: k8s.io/api resource/v1 DeviceAllocationResult.Config)."""
    out = []
    alloc = claim.get("status", {}).get("allocation") or {}
    for cfg in (alloc.get("devices") or {}).get("config") or []:
        opaque = cfg.get("opaque") or {}
        params = opaque.get("parameters") or {}
        requests = cfg.get("requests") or []
        if (opaque.get("driver") == driver and params.get("apiVersion") == GPU_CONFIG_API
                and params.get("kind") == "GpuConfig" and (not requests or "gpu" in requests)):
            out.append(params)
    return out


def check_sharing(v: View) -> CheckResult:
    """smokeTest.sharing: the shared cases' allocations carry the GpuConfig with the strategy; with MPS
    the containers got the MPS daemon's pipe directory, which only the driver's MPS setup injects."""
    check, hop = "gpu-sharing", "GPU sharing"
    cases = [c for c in v.exp.cases if c.sharing]
    if not cases:
        return CheckResult(check, hop, SKIPPED, "smokeTest.sharing is none")
    problems, judged, strategies = [], 0, sorted({c.sharing for c in cases})
    for case in cases:
        claims: dict[str, Obj | None] = {}
        for pod in v.by_case[case.case]:
            cname, claim = v.claim(pod)
            if cname:
                claims.setdefault(cname, claim)
        if not claims:
            problems.append(f"no claim of case {case.case} to inspect (Job {case.job})")
        for cname, claim in sorted(claims.items()):
            if claim is None or not allocation_results(claim):
                problems.append(f"claim {cname} was never allocated: no configuration to inspect")
                continue
            judged += 1
            found = [(p.get("sharing") or {}).get("strategy") for p in _gpu_configs(claim, v.exp.driver)]
            if case.sharing not in found:
                got = ", ".join(str(f) for f in found) or "none"
                problems.append(f"claim {cname}'s allocation carries no {GPU_CONFIG_API} GpuConfig with sharing "
                                f"strategy {case.sharing} for driver {v.exp.driver} (strategies found: {got})")
        if case.sharing == "MPS" and v.exp.in_container:
            for pod in v.by_case[case.case]:
                for c in case.containers:
                    key = f"{name(pod)}/{c}"
                    if (text := v.snap.logs.get(key)) is None:
                        continue  # container-device reports the missing log
                    out = v.parsed_log(text)
                    if out.mps_pipe is None:
                        problems.append(f"{key} got no MPS pipe directory (CUDA_MPS_PIPE_DIRECTORY unset): the "
                                        "driver did not set up MPS for its claim")
                    elif not out.mps_mounted:
                        problems.append(f"{key}: MPS pipe directory {out.mps_pipe} is not mounted")
    inside = "" if v.exp.in_container or "MPS" not in strategies else f"; MPS in containers not checked: {NO_KUBELET}"
    return outcome(check, hop, unique(problems),
                    f"{judged} claim(s) carry the GpuConfig ({', '.join(strategies)}){inside}")




FAMILY = CaseFamily("sharing", checks=(Check("gpu-sharing", "GPU sharing", check_sharing),), values=values)

"""Refusals of the feature-gate table (components/facts/feature_gates.py): a feature the track cannot give,
or a user gate that takes away what a needed feature requires. Registered in components/validate.py."""

from __future__ import annotations

from collections.abc import Iterator

from ..settings.model import Settings
from ..settings.problems import ROOT, Problem
from ..tables import pins
from . import feature_gates as fg


def _absent(gate: fg.Gate, minor: int) -> bool:
    return gate.at(minor) is None


def feature_gate_problems(s: Settings) -> Iterator[Problem]:
    minor = fg.track_minor(s)
    track = s.kubernetes.track
    if s.gpu_stack.allocation == "dra" and track in pins.SNAP_TRACKS and not fg.dra_on(s):
        # Which add-on values would switch on a second GPU advertiser is components/validate.py's rule.
        yield (f"{ROOT}.gpuStack.allocation",
               f"dra needs track >= 1.34 or kubernetes.featureGates with DynamicResourceAllocation=true "
               f"(track is {track})")
    if s.gpu_stack.gpu_health is True and _absent(fg.DRA_DEVICE_TAINTS, minor):
        yield (f"{ROOT}.gpuStack.gpuHealth",
               f"needs Kubernetes' {fg.DRA_DEVICE_TAINTS.name} (from 1.33); track is {track}")
    if s.smoke_test.gpu_health is True and not fg.gpu_health_on(s):
        yield (f"{ROOT}.smokeTest.gpuHealth",
               "the gpuHealth case needs gpu health on (gpuStack.gpuHealth: true, or a track where "
               f"{fg.DRA_DEVICE_TAINTS.name} is on by default)")
    if fg.first_available_on(s) and _absent(fg.DRA_PRIORITIZED_LIST, minor):
        yield (f"{ROOT}.smokeTest.firstAvailable.enabled",
               f"needs Kubernetes' {fg.DRA_PRIORITIZED_LIST.name} (from 1.33); track is {track}")
    if fg.dynamic_mig_on(s) and _absent(fg.DRA_PARTITIONABLE_DEVICES, minor):
        yield (f"{ROOT}.{fg.DYNAMIC_MIG_FIELD}",
               f"needs Kubernetes' {fg.DRA_PARTITIONABLE_DEVICES.name} (from 1.33): the driver publishes its "
               f"on-demand MIG instances as partitionable devices; track is {track}")
    required = {g.name: f for f in fg.needed(s) for g in fg.FEATURES[f]}
    for i, entry in enumerate(s.kubernetes.feature_gates):
        name, _, value = entry.partition("=")
        if name in required and value.strip().lower() == "false":
            yield (f"{ROOT}.kubernetes.featureGates[{i}]",
                   f"{name}=false turns off what {fg.ASKED_BY[required[name]]} needs")

"""Settings rules: autoscaled node pools (`nodePools[].autoscaling`; docs/autoscaling.md, ADR 0049)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ...tables.instance_types import AUTOSCALER_UNMODELED, gpu_facts
from ..model import DURATION_MAX_HOURS, NodePoolSettings, Settings
from ..problems import ROOT, Problem

# The pool's own size fields: an autoscaled pool's size is autoscaling.minSize..maxSize.
_FIXED_SIZE = (("min_size", "minSize"), ("desired_size", "desiredSize"), ("max_size", "maxSize"))
_DURATION_PART = re.compile(r"([0-9]+)(s|m|h)")
_SECONDS = {"s": 1, "m": 60, "h": 3600}


def duration_seconds(text: str) -> int:
    """Seconds of a Karpenter duration (`1h30m`, already matched by KARPENTER_DURATION)."""
    return sum(int(n) * _SECONDS[unit] for n, unit in _DURATION_PART.findall(text))


def _autoscaling(s: Settings) -> Iterator[Problem]:
    for i, p in enumerate(s.node_pools):
        if p.autoscaling is not None:
            yield from _pool(s, f"{ROOT}.nodePools[{i}]", p)


def _pool(s: Settings, path: str, p: NodePoolSettings) -> Iterator[Problem]:
    a = p.autoscaling
    assert a is not None
    here = f"{path}.autoscaling"
    if s.platform == "existing":
        if s.existing_aws is None:
            # The cluster is not ours: how an instance joins it is the user's to say.
            yield here, ("an existing cluster autoscales only where its nodes are EC2 instances: the autoscaler "
                         "launches EC2 instances, and this program did not make your cluster, so it cannot know "
                         "how one joins it. Set settings.existingAws (clusterEndpoint, nodeRoleArn, "
                         "instanceProfile, amiSelectorTerms, subnetSelectorTerms, securityGroupSelectorTerms, "
                         "userData; docs/autoscaling.md, \"On an existing cluster\")")
            return
        if p.capacity_reservation is not None:
            yield (f"{path}.capacityReservation", "on an existing cluster the pool's node class is "
                   "settings.existingAws's, which names no reservation: a `reserved` NodePool would never launch")
    elif s.traits.cloud != "aws":
        # Karpenter's cloud provider launches EC2 instances; kind and local clusters have none.
        yield here, (f"the {s.platform} platform cannot autoscale: the autoscaler launches EC2 instances that "
                     "join by themselves, which only the aws platform makes (or an existing cluster whose "
                     "nodes are on AWS: settings.existingAws)")
        return
    for field, alias in _FIXED_SIZE:
        if field in p.model_fields_set:
            yield (f"{path}.{alias}", f"an autoscaled pool's size is {here}.minSize..maxSize; remove {alias}, "
                   "which would fix it")
    if p.ignore_scaling_changes:
        yield (f"{path}.ignoreScalingChanges",
               "an autoscaled pool's group is sized by autoscaling.minSize; Karpenter adds nodes beside it")
    if a.min_size > a.max_size:
        yield f"{here}.minSize", f"must be at most maxSize, got {a.min_size} > {a.max_size}"
    for field, value in (("scaleDownAfter", a.scale_down_after), ("expireAfter", a.expire_after)):
        # Karpenter parses it into a Go time.Duration (int64 nanoseconds).
        if value is not None and duration_seconds(value) > DURATION_MAX_HOURS * 3600:
            yield f"{here}.{field}", f"'{value}' is longer than a Go duration holds ({DURATION_MAX_HOURS}h)"
    if p.instance_type in AUTOSCALER_UNMODELED or gpu_facts(p.instance_type) is None:
        yield (f"{path}.instanceType",
               f"the autoscaler (Karpenter's AWS provider at the pin) knows no GPU devices of '{p.instance_type}': "
               "a GPU claim would never launch one; make it a fixed pool")
    if s.gpu_stack.mig_strategy != "none" and (f := gpu_facts(p.instance_type)) is not None and f.mig_capable:
        # The provider models whole GPUs only (nvidiadra.go: one device per physical GPU): a claim
        # for a MIG device never matches a node that does not exist yet.
        yield (here, f"gpuStack.migStrategy {s.gpu_stack.mig_strategy} partitions this pool's GPUs, and the "
               "autoscaler models whole GPUs only: a MIG claim would never launch a node; make it a fixed pool")
    yield from _reservation(path, p)


def _reservation(path: str, p: NodePoolSettings) -> Iterator[Problem]:
    cr = p.capacity_reservation
    if cr is None or not cr.capacity_block:
        if cr is not None and cr.ends_at is not None:
            yield f"{path}.capacityReservation.endsAt", "only a Capacity Block (marketType capacity-block) has an end"
        return
    here = f"{path}.capacityReservation"
    missing = [name for name, value in (("startsAt", cr.starts_at), ("endsAt", cr.ends_at)) if value is None]
    if missing:
        yield (here, f"an autoscaled Capacity Block pool launches only within the block's dates: set "
               f"{' and '.join(missing)}")
    elif cr.starts is not None and cr.ends is not None and cr.ends <= cr.starts:
        yield f"{here}.endsAt", f"must be after startsAt ({cr.starts_at}), got {cr.ends_at}"

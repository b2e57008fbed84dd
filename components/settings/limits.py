"""What the platform can hold (issue 27, docs/adr/0038): sizes, queue numbers and settings a
platform ignores. Pure rules over validated-structure settings; components/validate.py runs them.

The model already caps every size at a cluster's worth (model.py MAX_CLUSTER_NODES), so nothing
that expands by size (kind's node list, the upgrade plan) can run away before these rules judge
the platform's own, smaller bound.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from ..tables import ec2_regional_prices as regional
from ..tables.ec2_instance_types import BOTOCORE, EC2_INSTANCE_TYPES
from .facts import mirrored_pool, pool_gpus
from .model import MAX_CLUSTER_NODES, GpuFactsSettings, Settings
from .problems import ROOT, Problem, cut

# kind: every node is a privileged container on ONE Docker host, each running systemd, containerd
# and a kubelet; kind's Known Issues ("Pod errors due to too many open files") has multi-node
# clusters exhaust the host's default inotify limits. The bound is a laptop's (or a CI runner's:
# 2-4 cores, 7-16 GB) worth of such containers, which is all kind here is for: a preview of the
# GPU path, where two workers already show multi-node scheduling.
KIND_MAX_WORKERS = 8
# KAI v0.17.0 pkg/common/constants/constants.go UnlimitedResourceQuantity: -1 means no bound.
UNLIMITED = -1
# The most GPUs a pool's node may declare (model.py GpuFactsSettings.count's bound).
MAX_GPUS_PER_NODE = next(m.le for m in GpuFactsSettings.model_fields["count"].metadata if hasattr(m, "le"))


def _cluster_size(s: Settings) -> Iterator[Problem]:
    """aws makes every pool's nodes, up to maxSize: together with the control planes, a cluster
    Kubernetes supports (MAX_CLUSTER_NODES)."""
    if s.platform != "aws":
        return
    total = s.control_plane.count + sum(p.max_nodes for p in s.node_pools)
    if total > MAX_CLUSTER_NODES:
        yield (f"{ROOT}.nodePools", f"the pools' maxSize add up to {total - s.control_plane.count} nodes (with "
                                    f"{s.control_plane.count} control plane(s): {total}); Kubernetes supports at most "
                                    f"{MAX_CLUSTER_NODES} nodes in one cluster: split the stack")


def _kind_size(s: Settings) -> Iterator[Problem]:
    if s.platform != "kind" or s.kind.mirror_pool not in (None, *(p.name for p in s.node_pools)):
        return  # a missing mirror pool is the settings' own rule
    pool = mirrored_pool(s)
    if pool.desired_size > KIND_MAX_WORKERS:
        i = s.node_pools.index(pool)
        yield (f"{ROOT}.nodePools[{i}].desiredSize",
               f"{pool.desired_size} kind workers: kind runs each node as a container on this one machine; at most "
               f"{KIND_MAX_WORKERS} (docs/adr/0038). The pool's size matters on aws; kind only previews it")


def ec2_type_problem(instance_type: str) -> str | None:
    """Why `instance_type` is no EC2 instance type (EC2's own list at the pinned botocore,
    components/tables/ec2_instance_types.py), with the nearest real ones; None when it is one. A
    pool's declared GPUs do not make a misspelt type real: AWS refuses it at launch."""
    if instance_type in EC2_INSTANCE_TYPES:
        return None
    near = difflib.get_close_matches(instance_type.strip().lower(), EC2_INSTANCE_TYPES, n=3, cutoff=0.75)
    hint = f"did you mean {', '.join(near)}?" if near else "no close match"
    return (f"'{cut(instance_type)}' is not an EC2 instance type (botocore {BOTOCORE}'s EC2 model lists "
            f"{len(EC2_INSTANCE_TYPES)}): {hint} A type newer than that botocore needs boto3/botocore bumped")


def offering_problem(instance_type: str, region: str) -> str | None:
    """Why EC2 would refuse to launch `instance_type` in `region` because the Region does not offer
    it: AWS's own price list (components/tables/ec2_regional_prices.py, dated) has no On-Demand price
    for it there while it covers the Region and the type's family. None when the table lists it, or
    cannot tell (another family or Region: pre-flight asks EC2's DescribeInstanceTypeOfferings)."""
    if not regional.unlisted_in(instance_type, region):
        return None
    elsewhere = regional.listed_regions(instance_type)
    family = instance_type.split(".")[0]
    size = instance_type.split(".")[1]
    here = sorted(t for t in regional.ON_DEMAND.get(region, {}) if t.split(".") == [t.split(".")[0], size]
                  and t.split(".")[0] != family)
    return (f"{instance_type} is not offered in {region}: AWS's price list of {regional.PRICE_AS_OF} "
            f"({regional.SOURCE_REPOSITORY.removeprefix('github.com/')}@{regional.SOURCE_COMMIT[:7]}) has no "
            f"On-Demand {instance_type} in {regional.LOCATIONS[region]}, so EC2 would refuse the launch. "
            f"Regions that list it: {', '.join(elsewhere) or 'none of the table'}"
            + (f"; sizes {region} lists in other families: {', '.join(here)}" if here else "")
            + " (a newer price list: update components/tables/ec2_regional_prices.py)")


def launched_types(s: Settings) -> list[tuple[str, str]]:
    """Each instance type this stack has EC2 launch, with its field path: on aws the control planes
    and every pool; on an existing cluster on AWS (existingAws) the autoscaled pools, which Karpenter
    launches there. Elsewhere none: the instance types are not ours to launch."""
    if s.platform == "aws":
        return [(s.control_plane.instance_type, f"{ROOT}.controlPlane.instanceType")] + [
            (p.instance_type, f"{ROOT}.nodePools[{i}].instanceType") for i, p in enumerate(s.node_pools)]
    if s.platform == "existing" and s.existing_aws is not None:
        return [(p.instance_type, f"{ROOT}.nodePools[{i}].instanceType") for i, p in enumerate(s.node_pools)
                if p.autoscaling is not None]
    return []


def _instance_types(s: Settings) -> Iterator[Problem]:
    for itype, where in launched_types(s):
        why = ec2_type_problem(itype)  # a misspelt type is named as that, not as one the Region lacks
        if why is None and s.region is not None:
            why = offering_problem(itype, s.region)
        if why is not None:
            yield where, why


def _control_plane(s: Settings) -> Iterator[Problem]:
    """An EC2 type on aws (_instance_types); on the other platforms the EC2-only settings are
    ignored, so a value there (right or wrong) is refused rather than silently dropped."""
    cp, path = s.control_plane, f"{ROOT}.controlPlane"
    if s.platform == "aws":
        return
    ignored = {"instance_type": "instanceType", "root_volume_gib": "rootVolumeGiB",
               "api_load_balancer": "apiLoadBalancer", "ami": "ami"}
    for name, key in ignored.items():
        if name in cp.model_fields_set:
            yield (f"{path}.{key}", f"is ignored on {s.platform}: the program makes no control-plane instance there "
                                    "(only aws does); remove it")


def _queues(s: Settings) -> Iterator[Problem]:
    """KAI's numbers (v0.17.0 pkg/apis/scheduling/v2 resources.go: GPU in fractions, CPU in
    millicpus, memory in MB; -1 unlimited): between -1 and 0 nothing has a meaning, and a GPU quota
    or limit above every GPU the stack can hold can never be met."""
    capacity, holder = _gpu_capacity(s)
    for i, q in enumerate(s.queues):
        for kind, res in (("gpu", q.gpu), ("cpu", q.cpu), ("memory", q.memory)):
            for field, value in (("quota", res.quota), ("limit", res.limit)):
                where = f"{ROOT}.queues[{i}].{kind}.{field}"
                if UNLIMITED < value < 0:
                    yield where, f"{value:g}: -1 means unlimited, otherwise a {field} is 0 or more"
                elif kind == "gpu" and value > capacity:
                    yield (where, f"{value:g} GPUs, but {holder} hold at most {capacity}: it can never be met "
                                  "(-1: unlimited)")


def _gpu_capacity(s: Settings) -> tuple[int, str]:
    """GPUs the stack's nodes can ever hold, and who holds them. aws: its pools at maxSize. The
    other platforms keep the quotas of the aws stack they preview (kind, local) or have pools that
    are not ours to know (existing): there, any cluster (MAX_CLUSTER_NODES of the most GPUs a node
    may declare)."""
    most = MAX_CLUSTER_NODES * MAX_GPUS_PER_NODE
    anywhere = (most, f"any cluster ({MAX_CLUSTER_NODES} nodes of {MAX_GPUS_PER_NODE} GPUs)")
    if s.platform != "aws":
        return anywhere
    total = 0
    for pool in s.node_pools:
        facts = pool_gpus(pool)
        if facts is None:
            return anywhere  # the settings' own rule reports the pool
        total += facts.count * pool.max_nodes
    return total, "the stack's node pools at their maxSize"


RULES = (_cluster_size, _kind_size, _instance_types, _control_plane, _queues)


def limit_problems(s: Settings) -> Iterator[Problem]:
    for rule in RULES:
        yield from rule(s)

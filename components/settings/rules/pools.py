"""Settings rules: node pools: instance types, sizes, images, labels and taints."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ...tables.ec2_instance_types import EC2_INSTANCE_TYPES
from ...tables.instance_types import arch_for_instance_type
from ...tables.labels import DRA_NODE_LABEL, SIMULATED_POOL_LABEL
from .. import k8s_syntax
from ..facts import (
    pool_gpus,
)
from ..model import NodePoolSettings, Settings
from ..problems import ROOT, Problem, cut, path_key

# An EC2 image id: `ami-` and 8 or 17 lowercase hex characters (EC2 User Guide, "Resource IDs":
# 8 before 2016, 17 since; no width in between is ever issued).
AMI_ID = re.compile(r"^ami-([0-9a-f]{8}|[0-9a-f]{17})$")


# An SSM parameter named by its path: `/`-separated levels of a-zA-Z0-9_.- , at most 15 levels, at
# most 1011 characters (SSM API Reference, PutParameter Name: "Naming Constraints").
SSM_PATH = re.compile(r"^(/[a-zA-Z0-9_.-]+){1,15}$")


SSM_PATH_MAX = 1011


# CPU architecture words in AMI parameter paths (Canonical: amd64/arm64; AWS: x86_64/arm64).
PATH_ARCH = {"amd64": "amd64", "x86_64": "amd64", "arm64": "arm64", "aarch64": "arm64"}


# Labels the project sets on pool nodes itself: a stack label with one of these keys would be
# silently replaced. Its own namespace (components/aws/tags.py POOL_TAG lives there) and the GPU
# publishers' selection labels.
RESERVED_LABEL_PREFIX = "ck8s-gpu/"


RESERVED_LABELS = (DRA_NODE_LABEL, SIMULATED_POOL_LABEL)


def _pools(s: Settings) -> Iterator[Problem]:
    seen: set[str] = set()
    for i, p in enumerate(s.node_pools):
        path = f"{ROOT}.nodePools[{i}]"
        if p.name in seen:
            yield f"{path}.name", f"duplicate pool name '{p.name}'"
        seen.add(p.name)
        if not p.min_size <= p.desired_size <= p.max_size:
            yield (f"{path}.desiredSize",
                   f"needs minSize <= desiredSize <= maxSize, got {p.min_size}/{p.desired_size}/{p.max_size}")
        yield from _pool_labels_and_taints(path, p)
        if p.ami is not None:
            yield from ((f"{path}.ami", reason) for reason in ami_problems(p.ami, p.instance_type))
        if pool_gpus(p) is None and not (s.platform == "aws" and p.instance_type not in EC2_INSTANCE_TYPES):
            # (a misspelt type on aws is limits.py's: no GPU declaration makes it real)
            yield (f"{path}.instanceType",
                   f"'{p.instance_type}' is not in the GPU instance-type table; declare its GPUs under "
                   f"{path}.gpu (count, productName, memoryGiB)")
        if s.platform == "aws":  # elsewhere a reservation is refused whole (components/aws/launch_rules.py)
            yield from _reservation_size(path, p)


def _reservation_size(path: str, p: NodePoolSettings) -> Iterator[Problem]:
    """`capacityReservation.instanceCount`, the reservation's declared size (AWS's TotalInstanceCount),
    against the pool. The launch template targets the reservation by id (components/aws/launch.py), and
    a launch into a specified Capacity Reservation that lacks room for it fails rather than falling back
    to On-Demand (EC2 User Guide, capacity-reservations-launch.html, "Specify Capacity Reservation"); a
    Capacity Block launches nowhere else either: a pool larger than its reservation has nodes that never
    launch. The count is one reservation's: a resource group's members each have their own."""
    cr = p.capacity_reservation
    if cr is None or cr.instance_count is None:
        return
    here = f"{path}.capacityReservation.instanceCount"
    if cr.id is None:
        if cr.resource_group_arn is not None:
            yield (here, "is the size of one reservation (AWS's TotalInstanceCount), and a resource group's "
                         "members each have their own: declare it with capacityReservation.id only, or remove it")
        return
    if p.max_nodes > cr.instance_count:
        enlarge = ("buy a block that holds them or target several blocks with resourceGroupArn" if cr.capacity_block
                   else f"enlarge the reservation (aws ec2 modify-capacity-reservation --capacity-reservation-id "
                        f"{cr.id} --instance-count {p.max_nodes}) and set instanceCount: {p.max_nodes}")
        beyond = p.max_nodes - cr.instance_count
        yield (here, f"{cr.id} holds {cr.instance_count} instance(s), but the pool grows to {p.max_nodes_key} "
                     f"{p.max_nodes}: a launch into a reservation without room fails, so {beyond} node(s) could "
                     f"never launch; lower {p.max_nodes_key} to {cr.instance_count}, or {enlarge}")


def _pool_labels_and_taints(path: str, p: NodePoolSettings) -> Iterator[Problem]:
    """Kubernetes' syntax (the API server refuses the node's own label/taint otherwise) and
    NodeRestriction (nodes label themselves with their kubelet's credentials)."""
    for key, value in p.labels.items():
        where = f"{path}.labels{path_key(key)}"
        for reason in k8s_syntax.qualified_name_problems(key):
            yield where, f"label key '{cut(key)}': {reason}"
        for reason in k8s_syntax.label_value_problems(value):
            yield where, f"label value '{cut(value)}': {reason}"
        if not k8s_syntax.kubelet_may_set(key):
            yield (where, "nodes label themselves and NodeRestriction forbids a kubelet kubernetes.io/k8s.io "
                          "labels except node.kubernetes.io/, kubelet.kubernetes.io/ and the well-known ones")
        if key.startswith(RESERVED_LABEL_PREFIX) or key in RESERVED_LABELS:
            yield where, "set by ck8s-gpu itself on every pool node (pool name, GPU publisher selection)"
    seen: set[tuple[str, str]] = set()
    for j, taint in enumerate(p.taints):
        where = f"{path}.taints[{j}]"
        for reason in k8s_syntax.qualified_name_problems(taint.key):
            yield f"{where}.key", f"taint key '{cut(taint.key)}': {reason}"
        for reason in k8s_syntax.label_value_problems(taint.value):
            yield f"{where}.value", f"taint value '{cut(taint.value)}': {reason}"
        if (taint.key, taint.effect) in seen:
            # validateNodeTaints: "taints must be unique by key and effect pair"
            yield where, f"duplicate taint {taint.key}:{taint.effect} (taints must be unique by key and effect)"
        seen.add((taint.key, taint.effect))


def ami_problems(ami: str, instance_type: str) -> list[str]:
    """Why `ami` cannot be a pool's image (`nodePools[].ami`); [] when it can."""
    if ami.startswith("ami-"):
        return [] if AMI_ID.match(ami) else [
            f"'{cut(ami)}' is not an AMI id (ami- and 8 or 17 lowercase hex characters)"]
    if not SSM_PATH.match(ami) or len(ami) > SSM_PATH_MAX:
        return [f"'{cut(ami)}' is neither an AMI id (ami-...) nor an SSM parameter path (/a/b/c: a-zA-Z0-9_.- "
                f"between slashes, at most 15 levels)"]
    try:
        arch = arch_for_instance_type(instance_type)
    except ValueError:
        return []  # an instance type this cannot read is reported by the pool's own rules
    named = {PATH_ARCH[level] for level in ami.split("/") if level in PATH_ARCH}
    if named and arch not in named:
        return [f"the parameter path names an image for {'/'.join(sorted(named))} but {instance_type} is {arch}"]
    return []

"""Cross-field rules. Each rule appends every problem it finds; none stops at the first. The vocabulary
(Problem, field paths) is `problems.py`; `check.py` runs these and the offline rules."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator
from functools import cache
from urllib.parse import urlsplit

from .. import pins
from ..instance_types import arch_for_instance_type
from ..labels import DRA_NODE_LABEL, SIMULATED_POOL_LABEL
from . import k8s_syntax
from .facts import (
    gpus_provided,
    mirrored_pool,
    nested,
    pool_gpus,
    smoke_pools,
    truthy,
)
from .model import PRODUCTION_NAMES, NodePoolSettings, QueueSettings, Settings
from .problems import ROOT, Problem, cut, path_key

Rule = Callable[[Settings], Iterator[Problem]]

REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d$")
# An EC2 image id: `ami-` and 8 or 17 lowercase hex characters (EC2 User Guide, "Resource IDs":
# 8 before 2016, 17 since; no width in between is ever issued).
AMI_ID = re.compile(r"^ami-([0-9a-f]{8}|[0-9a-f]{17})$")
# An SSM parameter named by its path: `/`-separated levels of a-zA-Z0-9_.- , at most 15 levels, at
# most 1011 characters (SSM API Reference, PutParameter Name: "Naming Constraints").
SSM_PATH = re.compile(r"^(/[a-zA-Z0-9_.-]+){1,15}$")
SSM_PATH_MAX = 1011
# CPU architecture words in AMI parameter paths (Canonical: amd64/arm64; AWS: x86_64/arm64).
PATH_ARCH = {"amd64": "amd64", "x86_64": "amd64", "arm64": "arm64", "aarch64": "arm64"}
# A GPU driver branch, as the GPU Operator's precompiled images are tagged (components/pins.py).
DRIVER_BRANCH = re.compile(r"^\d+$")
FEATURE_GATE = re.compile(r"^[A-Za-z0-9]+=(true|false)$")
# The longest cluster name (ck8s-<environment>-<region>) on AWS: a DNS label, as RestoreSource.clusterName
# and Kubernetes-facing names need; every AWS name derived from it fits by hashing (ADR 0042).
CLUSTER_NAME_MAX = 63
# Labels the project sets on pool nodes itself: a stack label with one of these keys would be
# silently replaced. Its own namespace (components/aws/tags.py POOL_TAG lives there) and the GPU
# publishers' selection labels.
RESERVED_LABEL_PREFIX = "ck8s-gpu/"
RESERVED_LABELS = (DRA_NODE_LABEL, SIMULATED_POOL_LABEL)


@cache
def known_regions() -> frozenset[str]:
    """Every region of every partition botocore knows (its endpoints.json; pinned with boto3)."""
    import botocore.loaders

    data = botocore.loaders.create_loader().load_data("endpoints")
    return frozenset(r for partition in data["partitions"] for r in partition["regions"])


def region_problem(region: str) -> str | None:
    """Why `region` cannot be a region to deploy to (None: it can)."""
    if not REGION.match(region):
        return f"'{cut(region)}' is not an AWS region name (like eu-west-1)"
    if region not in known_regions():
        import botocore

        return (f"'{region}' is no AWS region botocore {botocore.__version__} knows (a typo, or a region newer "
                "than the pinned boto3/botocore: update the pin)")
    return None


def _region(s: Settings) -> Iterator[Problem]:
    if s.region is not None and (why := region_problem(s.region)):
        yield f"{ROOT}.region", why
    if s.platform == "aws" and s.region is None:
        yield f"{ROOT}.region", "required when platform is aws"
    if (s.platform == "aws" and s.region is not None and len(s.cluster_name) > CLUSTER_NAME_MAX
            and not region_problem(s.region)):
        fits = CLUSTER_NAME_MAX - len(s.cluster_name) + len(s.environment)
        yield (f"{ROOT}.environment",
               f"'{cut(s.environment)}' is {len(s.environment)} characters; at most {fits} fit in {s.region}: the "
               f"cluster name ck8s-<environment>-<region> must be at most {CLUSTER_NAME_MAX} characters "
               "(a DNS label, as a rebuild's backup.restoreFrom.clusterName must be); "
               "AWS names too long for their limit get a hashed form (docs/adr/0042)")


def _production(s: Settings) -> Iterator[Problem]:
    # The policies judge `production`, never the name; a name that reads as production but leaves
    # the setting out would quietly get none of the production guardrails.
    words = set(s.environment.split("-"))
    if s.production is None and words & set(PRODUCTION_NAMES):
        yield (f"{ROOT}.production",
               f"environment '{s.environment}' reads as production: say production: true (the production "
               "guardrails apply: protection, off-region backups, 3 control planes, no spot) or production: false")


def _control_plane(s: Settings) -> Iterator[Problem]:
    if s.control_plane.count not in (1, 3):
        yield (f"{ROOT}.controlPlane.count",
               f"must be 1 or 3 (etcd quorum), got {s.control_plane.count}")
    if s.platform == "aws" and s.control_plane.count == 3 and s.network.existing is None and s.network.az_count < 3:
        yield (f"{ROOT}.network.azCount",
               "3 control planes need 3 AZs: with 2, losing the AZ holding two etcd members loses quorum")
    if s.platform == "aws" and s.control_plane.api_load_balancer == "internet-facing":
        if not s.network.api_allow_list:
            yield (f"{ROOT}.network.apiAllowList",
                   "an internet-facing API load balancer needs the CIDRs allowed to reach it (empty = nobody)")
        if s.network.existing is not None and not s.network.existing.public_subnet_ids:
            yield (f"{ROOT}.network.existing.publicSubnetIds",
                   "an internet-facing API load balancer needs public subnets")


def _kubernetes(s: Settings) -> Iterator[Problem]:
    k = s.kubernetes
    if k.track not in pins.SNAP_TRACKS:
        yield f"{ROOT}.kubernetes.track", f"unknown track '{k.track}'; known: {', '.join(pins.SNAP_TRACKS)}"
    for i, gate in enumerate(k.feature_gates):
        if not FEATURE_GATE.match(gate):
            yield f"{ROOT}.kubernetes.featureGates[{i}]", f"'{gate}' is not Name=true|false"
    yield from _snap_pin(s)


def _snap_pin(s: Settings) -> Iterator[Problem]:
    """kubernetes.snap (ADR 0039): a patch of the track, and a revision for every CPU architecture
    the stack's nodes have (a node without one would install the channel's patch)."""
    pin, track = s.kubernetes.snap, pins.SNAP_TRACKS.get(s.kubernetes.track)
    if pin is None or track is None:
        return
    if pin.version.split(".")[:2] != track.kubernetes.split(".")[:2]:
        yield (f"{ROOT}.kubernetes.snap.version", f"{pin.version} is not a patch of track {track.track} "
               f"({'.'.join(track.kubernetes.split('.')[:2])}.x): set the version with the track")
    if not s.kubernetes.hold_snap_refresh:
        yield (f"{ROOT}.kubernetes.holdSnapRefresh", "must stay true with kubernetes.snap: snapd refreshes a "
               "revision installed with --revision to the channel's (snapd cmd_snap_op.go, install help)")
    if s.platform != "aws":
        return
    used: dict[str, str] = {}
    for itype, where in [(s.control_plane.instance_type, f"{ROOT}.controlPlane.instanceType")] + [
            (p.instance_type, f"{ROOT}.nodePools[{i}].instanceType") for i, p in enumerate(s.node_pools)]:
        try:
            used.setdefault(arch_for_instance_type(itype), where)
        except ValueError:
            continue  # not an instance type: its own rule (limits.py, _pools) names it
    for arch, where in sorted(used.items()):
        if arch not in pin.revisions:
            yield (f"{ROOT}.kubernetes.snap.revisions.{arch}", f"missing: {where} is {arch}; its nodes would "
                   "install whatever the channel serves (`snap list k8s` on such a node shows its Rev)")


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
        if pool_gpus(p) is None:
            yield (f"{path}.instanceType",
                   f"'{p.instance_type}' is not in the GPU instance-type table; declare its GPUs under "
                   f"{path}.gpu (count, productName, memoryGiB)")


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


def _features(s: Settings) -> Iterator[Problem]:
    f = s.kubernetes.features
    path = f"{ROOT}.kubernetes.features"
    if s.platform == "aws" and not f.network:
        yield (f"{path}.network",
               "must be true: without k8s-snap's CNI no node becomes Ready and no node can join")
    if s.platform == "aws" and f.load_balancer and s.gpu_stack.addons.aws_cloud_controller_manager.enabled is not False:
        yield (f"{path}.loadBalancer",
               "the AWS cloud controller manager serves LoadBalancer Services here; Cilium's L2/BGP load "
               "balancer would race it (and L2 announcements do not work in a VPC)")


def _networks(s: Settings) -> Iterator[Problem]:
    nets: dict[str, ipaddress.IPv4Network | ipaddress.IPv6Network] = {}
    named = {
        f"{ROOT}.kubernetes.podCidr": s.kubernetes.pod_cidr,
        f"{ROOT}.kubernetes.serviceCidr": s.kubernetes.service_cidr,
    }
    if s.platform == "aws" and s.network.existing is None:
        named[f"{ROOT}.network.vpcCidr"] = s.network.vpc_cidr
    for path, cidr in named.items():
        try:
            nets[path] = ipaddress.ip_network(cidr)
        except ValueError:
            yield path, f"'{cidr}' is not a valid CIDR"
    items = list(nets.items())
    for a in range(len(items)):
        for b in range(a + 1, len(items)):
            if items[a][1].overlaps(items[b][1]):
                yield items[b][0], f"{items[b][1]} overlaps {items[a][0]} ({items[a][1]})"
    vpc = nets.get(f"{ROOT}.network.vpcCidr")
    if vpc is not None and (vpc.version != 4 or not 16 <= vpc.prefixlen <= 24):
        # AWS VPC User Guide, "VPC CIDR blocks": IPv4 primary blocks from /16 to /28; the subnet
        # plan (components/aws/network.py plan_subnets) cuts quarters and sixteenths: /24 at most.
        yield (f"{ROOT}.network.vpcCidr", f"{vpc} must be an IPv4 block from /16 to /24 (AWS allows /16-/28 for "
                                          "a VPC; the subnet plan needs at least a /24)")
    if s.platform == "kind":
        for key in ("podCidr", "serviceCidr"):
            net = nets.get(f"{ROOT}.kubernetes.{key}")
            if net is not None and net.version != 4:
                # kind's config (components/kind/config.py) runs ipFamily ipv4: both ranges IPv4.
                yield f"{ROOT}.kubernetes.{key}", f"{net} must be IPv4 on kind (the cluster runs ipFamily ipv4)"
    seen: dict[str, int] = {}
    for i, cidr in enumerate(s.network.api_allow_list):
        try:
            net = ipaddress.ip_network(cidr)
        except ValueError:
            yield f"{ROOT}.network.apiAllowList[{i}]", f"'{cut(cidr)}' is not a valid CIDR"
            continue
        if str(net) in seen:  # one security-group rule per CIDR: a repeat is a second resource, same URN
            yield (f"{ROOT}.network.apiAllowList[{i}]", f"{net} is already allowed by "
                                                        f"apiAllowList[{seen[str(net)]}]")
        seen.setdefault(str(net), i)
    ex = s.network.existing
    if ex is not None and len(ex.private_subnet_ids) < 2:
        yield (f"{ROOT}.network.existing.privateSubnetIds",
               "needs at least 2 private subnets in different availability zones")


def _driver(s: Settings) -> Iterator[Problem]:
    """gpuStack.driver against what the GPU Operator supports and what the nodes hold (docs/adr/0018)."""
    mode = s.gpu_stack.driver
    values = s.gpu_stack.addons.gpu_operator.values
    base = f"{ROOT}.gpuStack.addons.gpuOperator.values.driver"
    # The mode is one setting: a values override must not make the operator do another.
    enabled = nested(values, "driver.enabled")
    if enabled is not None and truthy(enabled) != (mode != "host"):
        yield (f"{base}.enabled", f"contradicts gpuStack.driver {mode}: choose the driver with gpuStack.driver "
                                  "(host: the image has it, the operator installs none)")
    precompiled = nested(values, "driver.usePrecompiled")
    if precompiled is not None and truthy(precompiled) != (mode == "precompiled"):
        yield (f"{base}.usePrecompiled", f"contradicts gpuStack.driver {mode}: choose precompiled drivers with "
                                         "gpuStack.driver precompiled (it also sets driver.version to a branch)")
    if mode == "precompiled":
        yield from _precompiled(values, base)
    if s.platform == "aws" and mode in ("host", "precompiled"):
        why = {
            "host": "gpuStack.driver host on aws needs every pool's image to carry the NVIDIA driver: Canonical's "
                    "Ubuntu AMI has none, so its GPUs would never work. Name an AMI (ami-... or an SSM parameter "
                    "path) with the driver installed and no containerd of its own (docs/adr/0018)",
            "precompiled": "gpuStack.driver precompiled on aws needs every pool's image to run a kernel NVIDIA "
                           "publishes driver images for (Ubuntu 24.04: 6.8 only). Canonical's Ubuntu AMI runs the "
                           "rolling linux-aws kernel, which moves on from 6.8 with each interim release: on a newer "
                           "kernel the driver pod stays in ImagePullBackOff. Name the AMI (docs/adr/0018)",
        }[mode]
        for i, p in enumerate(s.node_pools):
            if p.ami is None:
                yield f"{ROOT}.nodePools[{i}].ami", why


def _toolkit(s: Settings) -> Iterator[Problem]:
    """gpuStack.toolkit against the driver mode and the operator's values (docs/adr/0046)."""
    mode = s.gpu_stack.toolkit
    enabled = nested(s.gpu_stack.addons.gpu_operator.values, "toolkit.enabled")
    if enabled is not None and truthy(enabled) != (mode == "operator"):
        yield (f"{ROOT}.gpuStack.addons.gpuOperator.values.toolkit.enabled",
               f"contradicts gpuStack.toolkit {mode}: choose the toolkit with gpuStack.toolkit (host: the node "
               "image has it, the operator installs none)")
    if mode == "host" and s.gpu_stack.driver != "host":
        # The image that carries the toolkit is the one that carries the driver (components/images):
        # a host toolkit under the operator's driver container would need its runtime pointed at
        # /run/nvidia/driver, which the node script does not do.
        yield (f"{ROOT}.gpuStack.toolkit", f"host needs gpuStack.driver host (is {s.gpu_stack.driver}): the GPU "
                                           "node image carries driver and toolkit together (docs/adr/0046)")


def _precompiled(values: dict[str, object], base: str) -> Iterator[Problem]:
    """NVIDIA/gpu-operator v26.7.0 with driver.usePrecompiled, and the precompiled-drivers page."""
    version = nested(values, "driver.version")
    if version is not None:
        if not DRIVER_BRANCH.match(str(version)):
            # The image is <repository>/<image>:<version>-<kernel>-<os tag> (controllers/object_controls.go
            # resolveDriverTag): a full version or a digest names no image.
            yield (f"{base}.version", f"'{cut(str(version))}' is not a driver branch (like "
                                      f"{pins.GPU_OPERATOR_PRECOMPILED_DRIVER_BRANCH}): with precompiled drivers "
                                      "the version is the branch, the node's kernel completes the image tag")
        elif nested(values, "driver.repository") is None:
            # NVIDIA's registry has the validated branches; a repository of one's own may build any
            # (precompiled-drivers.rst, "Building a Custom Driver Container Image").
            known = sorted({b for branches in pins.GPU_OPERATOR_PRECOMPILED_BRANCHES.values() for b in branches})
            if str(version) not in known:
                yield (f"{base}.version", f"NVIDIA publishes precompiled drivers of branches {', '.join(known)} for "
                                          f"this GPU Operator, not {version} (or set driver.repository to a registry "
                                          "with images you built)")
    # controllers/object_controls.go transformGDSContainer / transformGDRCopyContainer refuse them;
    # precompiled-drivers.rst: "do not support NVIDIA vGPU or GPUDirect Storage (GDS)".
    for key, name in (("gds.enabled", "GPUDirect Storage"), ("gdrcopy.enabled", "GDRCopy"),
                      ("vgpuManager.enabled", "NVIDIA vGPU")):
        if truthy(nested(values, key)):
            yield (f"{ROOT}.gpuStack.addons.gpuOperator.values.{key}",
                   f"{name} does not work with precompiled drivers (gpuStack.driver precompiled)")


def _addon_versions(s: Settings) -> Iterator[Problem]:
    for key, addon in s.gpu_stack.addons.by_key():
        if addon.version is not None and not pins.is_exact_version(addon.version):
            yield (f"{ROOT}.gpuStack.addons.{key}.version",
                   f"'{addon.version}' is not an exact version (no 'latest', ranges or empty)")


MIRROR_SCHEMES = ("https", "http", "oci")


def repository_problems(url: str) -> list[str]:
    """Why `url` cannot be a chart mirror (`gpuStack.addons.<x>.repository`); [] when it can."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number
    except ValueError as exc:
        return [f"'{cut(url)}' is not a URL ({exc})"]
    problems = []
    if parts.scheme not in MIRROR_SCHEMES:
        problems.append(f"'{cut(url)}' must start with https://, http:// or oci:// (a Helm repository "
                        "or an OCI registry path)")
    if not parts.hostname:
        problems.append(f"'{cut(url)}' names no host")
    if parts.username is not None or parts.password is not None:
        problems.append("credentials in the URL would be stored in clear in the Pulumi state: "
                        "configure registry/repository credentials on the deploying machine instead")
    if parts.query or parts.fragment:
        problems.append(f"'{cut(url)}' has a query or fragment: give the repository's base URL")
    return problems


def _addon_repositories(s: Settings) -> Iterator[Problem]:
    for key, addon in s.gpu_stack.addons.by_key():
        if addon.repository is not None:
            for reason in repository_problems(addon.repository):
                yield f"{ROOT}.gpuStack.addons.{key}.repository", reason


def _queues(s: Settings) -> Iterator[Problem]:
    by_name: dict[str, QueueSettings] = {}
    for i, q in enumerate(s.queues):
        if q.name in by_name:
            yield f"{ROOT}.queues[{i}].name", f"duplicate queue name '{q.name}'"
        by_name[q.name] = q
    index = {q.name: i for i, q in enumerate(s.queues)}
    for i, q in enumerate(s.queues):
        if q.parent is not None and q.parent not in by_name:
            yield f"{ROOT}.queues[{i}].parent", f"parent queue '{q.parent}' does not exist"
        if q.gpu.quota != -1 and q.gpu.limit != -1 and q.gpu.limit < q.gpu.quota:
            yield f"{ROOT}.queues[{i}].gpu.limit", f"limit {q.gpu.limit} is below quota {q.gpu.quota}"
    # Cycles: walk up from each queue; revisiting a queue means a loop.
    reported: set[str] = set()
    for q in s.queues:
        seen = [q.name]
        cur = q
        while cur.parent is not None and cur.parent in by_name:
            if cur.parent in seen:
                loop = frozenset(seen[seen.index(cur.parent):])
                if not loop & reported:
                    reported |= loop
                    yield (f"{ROOT}.queues[{index[cur.parent]}].parent",
                           f"queue parents form a cycle: {' -> '.join([*seen[seen.index(cur.parent):], cur.parent])}")
                break
            seen.append(cur.parent)
            cur = by_name[cur.parent]
    for name, parent in by_name.items():
        if parent.gpu.quota == -1:
            continue
        children = [q for q in s.queues if q.parent == name]
        total = sum(c.gpu.quota for c in children if c.gpu.quota != -1)
        unlimited = [c.name for c in children if c.gpu.quota == -1]
        if total > parent.gpu.quota or unlimited:
            detail = f"unlimited children {unlimited}" if unlimited else f"children's quota sums to {total:g}"
            yield (f"{ROOT}.queues[{index[name]}].gpu.quota",
                   f"{detail}, above queue '{name}' GPU quota {parent.gpu.quota:g}")


def leaf_queues(s: Settings) -> set[str]:
    parents = {q.parent for q in s.queues if q.parent is not None}
    return {q.name for q in s.queues if q.name not in parents}


def smoke_quota_problems(s: Settings, needed: int, holder: str, fix: str) -> Iterator[Problem]:
    """The smoke Jobs are non-preemptible under KAI (charts/gpu-smoke-test, ADR 0027), and KAI
    schedules a non-preemptible job only within the quota of its queue and of every ancestor
    (v0.17.0 pkg/scheduler/plugins/proportion/capacity_policy/quota_check.go,
    resultsWithNonPreemptibleOverQuota): a smaller finite GPU quota keeps the case Pending.
    `holder` names what holds `needed` GPUs at once, `fix` the setting to lower instead."""
    by_name = {q.name: q for q in s.queues}
    seen: set[str] = set()
    name: str | None = s.smoke_test.queue
    while name is not None and name in by_name and name not in seen:
        seen.add(name)
        q = by_name[name]
        if q.gpu.quota != -1 and q.gpu.quota < needed:
            yield (f"{ROOT}.queues[{s.queues.index(q)}].gpu.quota",
                   f"queue '{q.name}' has a GPU quota of {q.gpu.quota:g}, but {holder} holds {needed} "
                   "non-preemptible GPU(s) at once, which KAI schedules only within the quota of the queue and "
                   f"each parent: raise the quota (-1 = unlimited) or lower {fix}")
        name = q.parent


def _smoke_queue_quota(s: Settings, path: str) -> Iterator[Problem]:
    t = s.smoke_test
    needed = t.gpus if (t.whole_gpu or t.gang) else 1
    yield from smoke_quota_problems(s, needed, f"the smoke test ({path}.queue '{t.queue}')", "smokeTest.gpus")


def _smoke(s: Settings) -> Iterator[Problem]:
    t = s.smoke_test
    if not t.enabled:
        return
    path = f"{ROOT}.smokeTest"
    # Cases run one after another (components/smoke/run.py): the largest holds `gpus` at a time.
    needed = t.gpus
    known = all(pool_gpus(p) is not None for p in s.node_pools)  # unknown pools are reported already
    mirror_ok = s.platform != "kind" or s.kind.mirror_pool in (None, *(p.name for p in s.node_pools))
    available = gpus_provided(s, smoke_pools(s)) if known and mirror_ok else 0
    if t.whole_gpu and known and mirror_ok and needed > available:
        if s.platform == "kind":
            yield (f"{path}.gpus", f"needs {needed} GPUs but kind simulates only pool '{mirrored_pool(s).name}' "
                                   f"({available} GPUs); set settings.kind.mirrorPool or lower the count")
        elif t.pool is not None:
            yield (f"{path}.gpus", f"needs {needed} GPUs but pool '{t.pool}' (smokeTest.pool) provides {available} "
                                   "at its desired size")
        else:
            yield (f"{path}.gpus", f"needs {needed} GPUs but the node pools provide {available} at their desired size")
    # Whether KAI is there (installed here or declared present) is the add-on graph's rule.
    if t.scheduler == "kai" and t.queue not in leaf_queues(s):
            yield f"{path}.queue", f"'{t.queue}' is not a leaf queue of settings.queues (only leaf queues schedule)"
    if t.scheduler == "kai":
        yield from _smoke_queue_quota(s, path)
    if t.gang and t.scheduler != "kai":
        yield f"{path}.gang", "gang scheduling needs scheduler: kai"
    if s.gpu_stack.allocation != "dra":
        yield (f"{path}.enabled",
               "the smoke test proves the DRA allocation path: it cannot run with allocation device-plugin")
    if t.gang and t.gpus < 2:
        yield f"{path}.gpus", "the gang case needs at least 2 pods (gpus >= 2): a gang of one proves nothing"
    if t.mig and (s.gpu_stack.mig_strategy == "none" or s.gpu_stack.allocation != "dra"):
        yield f"{path}.mig", "the MIG case needs gpuStack.migStrategy single|mixed and allocation dra"
    if t.mig and s.platform in SIMULATED_GPUS:
        yield (f"{path}.mig", f"{SIMULATED_GPUS[s.platform]} publishes whole GPUs only (type gpu): no MIG device "
                              "exists, so the MIG case could never be allocated")
    for i, secret in enumerate(t.image_pull_secrets):
        # Secret names are DNS subdomains (k8s.io/apimachinery validation IsDNS1123Subdomain).
        for reason in k8s_syntax.dns_subdomain_problems(secret):
            yield f"{path}.imagePullSecrets[{i}]", f"'{cut(secret)}' is no Secret name: {reason}"
    yield from _smoke_cases(s)
    yield from _smoke_memory(s)


# Who publishes the GPUs where no NVIDIA driver runs (components/cluster.py simulated_gpus).
SIMULATED_GPUS = {
    # run-ai/fake-gpu-operator v0.2.0 (3a3f644) internal/dra-plugin-gpu/discovery.go: type gpu only.
    "kind": "kind's fake-gpu-operator (its DRA plugin)",
    # tools/dra_publisher.py: devices gpu-<n> of type gpu, DeviceClass gpu.nvidia.com only.
    "local": "local's test publisher (tools/dra_publisher.py)",
}
# Why GPU sharing cannot be shown there: the opaque GpuConfig would be refused or read by nobody.
SHARING_UNSUPPORTED = {
    # internal/dra-plugin-gpu/state.go decodes every opaque config for driver gpu.nvidia.com with
    # sigs.k8s.io/dra-example-driver v0.2.0's strict decoder, which knows only
    # gpu.resource.example.com/v1alpha1 (api/example.com/resource/gpu/v1alpha1/api.go).
    "kind": "kind's fake-gpu-operator (v0.2.0) decodes opaque configs as gpu.resource.example.com/v1alpha1 only: "
            "it fails to prepare a claim carrying NVIDIA's resource.nvidia.com/v1beta1 GpuConfig, so the pods "
            "never start",
    "local": "local's nodes run no NVIDIA kubelet plugin (KWOK nodes none at all, kubelet pools the simulated "
             "one of tools/mod/simgpu, which applies no sharing): nothing would act on the GpuConfig, so the case "
             "would pass without sharing anything",
}
# A MIG profile as the NVIDIA DRA driver publishes it (attribute `profile`): go-nvlib's
# MigProfileInfo.String(), vendored by kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 (764900e,
# vendor/github.com/NVIDIA/go-nvlib/pkg/nvlib/device/mig_profile.go; cmd/gpu-kubelet-plugin/
# nvlib.go sets Profile from it): `[<C>c.]<G>g.<GB>gb`, then `+<attr>[,<attr>]` (me, me.all, gfx)
# or `-<attr>` (what the profile lacks: -me). Attributes as parseMigProfileAttributes allows them.
_MIG_ATTRIBUTE = r"[a-z][a-z0-9]*(\.[a-z0-9]+)*"
MIG_PROFILE = re.compile(rf"(?:([0-9]+)c\.)?([0-9]+)g\.([0-9]+)gb(?:[+-]({_MIG_ATTRIBUTE}(?:,{_MIG_ATTRIBUTE})*))?")


def mig_profile_problems(profile: str) -> list[str]:
    """Why `profile` can never equal a MIG device's published `profile` attribute; [] when it can."""
    m = MIG_PROFILE.fullmatch(profile)  # fullmatch: `$` would let a trailing newline through
    if m is None:
        return [f"'{cut(profile)}' is not a MIG profile as the DRA driver publishes it: [<C>c.]<G>g.<GB>gb with "
                "optional +attributes or -attributes, like 1g.10gb, 1c.2g.20gb, 1g.10gb+me, 1g.12gb-me"]
    c, g, gb, attrs = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
    problems = []
    if g == 0 or gb == 0 or (c is not None and int(c) == 0):
        problems.append(f"'{profile}': slice and memory counts start at 1")
    elif c is not None and int(c) == g:
        # String() leaves out the compute part when it equals the GPU instance's.
        problems.append(f"'{profile}' is published as '{profile.split('.', 1)[1]}' (the driver writes the c. part "
                        "only when the compute instance is smaller than its GPU instance)")
    elif c is not None and int(c) > g:
        # go-nvlib VisitMigProfiles skips such profiles (`if pi.C > pi.G`, pkg/nvlib/device/device.go).
        problems.append(f"'{profile}': a compute instance is part of its GPU instance, so c cannot exceed g")
    if attrs and len(set(attrs.split(","))) != len(attrs.split(",")):
        problems.append(f"'{profile}' repeats an attribute")
    return problems


def _smoke_cases(s: Settings) -> Iterator[Problem]:
    """The cases against each other: at least one runs, none contradicts `wholeGpu`, a MIG profile
    is one the driver can publish (docs/smoke-test.md)."""
    t = s.smoke_test
    path = f"{ROOT}.smokeTest"
    if not any((t.whole_gpu, t.shared_claim, t.shared_named_claim, t.gang, t.mig)):
        yield (f"{path}.wholeGpu", "is false and no other case is on: the smoke test would prove nothing (on a "
                                   "cluster whose GPUs are all MIG-partitioned, turn on the MIG case: mig or "
                                   "migProfile; or set smokeTest.enabled false)")
    if not t.whole_gpu:
        why = ("allocates whole GPUs, and wholeGpu false says the cluster hands out none (all GPUs "
               "MIG-partitioned): turn it off or set wholeGpu true")
        # nvlinkGroup refuses it itself (components/smoke/cases/nvlink_group.py), with its own words.
        for key, on in (("sharedClaim", t.shared_claim), ("sharedNamedClaim", t.shared_named_claim),
                        ("gang", t.gang), ("computeDomain.enabled", t.compute_domain.enabled),
                        ("firstAvailable.enabled", t.first_available.enabled)):
            if on:
                yield f"{path}.{key}", why
        if t.gpus != 1:
            yield f"{path}.gpus", f"is {t.gpus}, but with wholeGpu false no case runs whole-GPU pods to count"
        for key, value in (("productNamePattern", t.product_name_pattern), ("minMemoryGiB", t.min_memory_gib)):
            if value is not None:
                yield f"{path}.{key}", "selects whole GPUs, and with wholeGpu false no case asks for one"
    if t.mig_profile is not None:
        for reason in mig_profile_problems(t.mig_profile):
            yield f"{path}.migProfile", reason
        if not t.mig:
            yield (f"{path}.migProfile", "names the MIG case's profile, but smokeTest.mig is false: remove mig: "
                                         "false (a profile turns the MIG case on) or the profile")


def _smoke_memory(s: Settings) -> Iterator[Problem]:
    """minMemoryGiB becomes `device.capacity[...].memory >= <N>Gi` (charts/gpu-smoke-test): it must
    fit the memory the driver PUBLISHES, NVML's framebuffer, which is below the size on the box (an
    H100 80GB publishes 81559 MiB = 79.6 GiB). Else no device matches and the claims never allocate."""
    want = s.smoke_test.min_memory_gib
    if want is None or not s.traits.knows_node_pools or not s.smoke_test.whole_gpu:
        # existing: the pools are not ours to know; without whole-GPU cases _smoke_cases reports it.
        return
    facts = [(p, f) for p in s.node_pools if (f := pool_gpus(p)) is not None]
    if not facts or len(facts) < len(s.node_pools):
        return  # unknown pools are reported by _pools
    if all(f.memory_mib < want * 1024 for _p, f in facts):
        published = ", ".join(f"{p.name} ({f.product_name}) publishes {f.memory_mib} MiB = "
                              f"{f.memory_mib / 1024:.1f} GiB" for p, f in facts)
        best = max(f.memory_mib for _p, f in facts) // 1024
        yield (f"{ROOT}.smokeTest.minMemoryGiB",
               f"{want} GiB matches no GPU: {published} (the driver publishes NVML's framebuffer, below the size on "
               f"the box; components/instance_types.py); at most {best}")


def _mig(s: Settings) -> Iterator[Problem]:
    if s.gpu_stack.mig_strategy != "none" and not any(
        (f := pool_gpus(p)) is not None and f.mig_capable for p in s.node_pools
    ):
        yield f"{ROOT}.gpuStack.migStrategy", "no node pool has MIG-capable GPUs (A100, H100, H200, B200)"


def _smoke_pool(s: Settings) -> Iterator[Problem]:
    """smokeTest.pool names a pool whose nodes the program labels, and one that runs containers."""
    pool, names = s.smoke_test.pool, [p.name for p in s.node_pools]
    path = f"{ROOT}.smokeTest.pool"
    if pool is None or not s.smoke_test.enabled:
        return
    if not s.traits.knows_node_pools:
        yield path, (f"the {s.platform} platform does not label its nodes by pool: select the GPU nodes with "
                     "smokeTest.productNamePattern instead")
    elif pool not in names:
        yield path, f"'{pool}' is not a node pool ({', '.join(names)})"
    elif s.local.kubelet_pools and pool not in s.local.kubelet_pools:
        yield path, (f"'{pool}' is a KWOK pool: no container runs there, so the in-container checks could never "
                     f"pass; pick a kubelet pool ({', '.join(s.local.kubelet_pools)})")


def _local(s: Settings) -> Iterator[Problem]:
    pools, names = s.local.kubelet_pools, [p.name for p in s.node_pools]
    path = f"{ROOT}.local.kubeletPools"
    if not pools:
        return
    if s.platform != "local":
        yield path, (f"only the local platform runs kubelet nodes of its own (tools/nodetier.py); on {s.platform} "
                     "every node's kubelet is the platform's")
        return
    for i, pool in enumerate(pools):
        if pool not in names:
            yield f"{path}[{i}]", f"'{cut(pool)}' is not a node pool ({', '.join(names)})"
        elif pools.index(pool) != i:
            yield f"{path}[{i}]", f"'{pool}' is listed twice"


def _platform(s: Settings) -> Iterator[Problem]:
    names = [p.name for p in s.node_pools]
    if s.kind.mirror_pool is not None and s.kind.mirror_pool not in names:
        yield f"{ROOT}.kind.mirrorPool", f"'{s.kind.mirror_pool}' is not a node pool ({', '.join(names)})"
    if s.backup is not None:
        if s.backup.region is None:
            yield f"{ROOT}.backup.region", "required: backups go to another region than the cluster's"
        elif s.backup.region == s.region:
            yield f"{ROOT}.backup.region", "must differ from settings.region (a regional disaster takes both)"
        elif why := region_problem(s.backup.region):
            yield f"{ROOT}.backup.region", why


# The settings' own rules. Rules that need the add-on graph, a platform or AWS's naming run in
# components/validate.py, which runs these first: `validate()` is the one gate.
RULES: tuple[Rule, ...] = (
    _region, _production, _control_plane, _kubernetes, _features, _pools, _networks, _driver, _toolkit,
    _addon_versions, _addon_repositories, _queues, _smoke, _smoke_pool, _mig, _platform, _local,
)

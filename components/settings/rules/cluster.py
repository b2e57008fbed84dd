"""Settings rules: region, production, control planes, the Kubernetes track and snap pin, cluster features, platform."""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache

from ...tables import pins
from ...tables.instance_types import arch_for_instance_type
from ..facts import ami_fields
from ..model import PRODUCTION_NAMES, Settings
from ..problems import ROOT, Problem, cut

REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d$")


FEATURE_GATE = re.compile(r"^[A-Za-z0-9]+=(true|false)$")


# The longest cluster name (ck8s-<environment>-<region>) on AWS: a DNS label, as RestoreSource.clusterName
# and Kubernetes-facing names need; every AWS name derived from it fits by hashing (ADR 0042).
CLUSTER_NAME_MAX = 63


@cache
def known_regions() -> frozenset[str]:
    """Every region of every partition botocore knows (its endpoints.json; pinned with boto3)."""
    import botocore.loaders

    data = botocore.loaders.create_loader().load_data("endpoints")
    return frozenset(r for partition in data["partitions"] for r in partition["regions"])


def region_problem(region: str) -> str | None:
    """Why `region` cannot be a region to deploy to (None: it can). Every region botocore knows is one,
    whatever its shape (eusc-de-east-1, the European Sovereign Cloud, has a four-letter prefix)."""
    if region in known_regions():
        return None
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
    yield from _image_tracks(s)


def _image_tracks(s: Settings) -> Iterator[Problem]:
    """An image line carries one track's snap and images: a stack on another track refuses it."""
    for where, ami in ami_fields(s):
        named = image_track(ami)
        if named is not None and named != s.kubernetes.track:
            yield (where, f"'{cut(ami or '')}' names an image line built for track {named} (its k8s snap and "
                   f"images), the stack runs {s.kubernetes.track}: build that track's images (images/Pulumi.*.yaml "
                   f"with kubernetes.track {s.kubernetes.track} and its snap pin; docs/images.md) and name their "
                   "parameter, or keep the track")


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
    for cpu, revision in sorted(pin.revisions.items()):
        if why := snap_revision_problem(pin.version, cpu, revision):
            yield f"{ROOT}.kubernetes.snap.revisions.{cpu}", why
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


# The image program's control-plane parameter ends in k8s-<track> (components/images/settings.py
# control_plane_parameter_name): an image line's snap and images are that track's.
IMAGE_TRACK_LEVEL = re.compile(r"^k8s-(\d+\.\d+-[a-z]+)$")


def image_track(ami: str | None) -> str | None:
    """The track an SSM parameter path's last level names (`.../k8s-1.34-classic`), or None."""
    if not ami or not ami.startswith("/"):
        return None
    m = IMAGE_TRACK_LEVEL.match(ami.rstrip("/").rsplit("/", 1)[-1])
    return m.group(1) if m else None


def snap_revision_problem(version: str, arch: str, revision: int) -> str | None:
    """Why `revision` cannot be k8s `version`'s for `arch`: the store lists it as another version's or
    another architecture's (pins.KNOWN_SNAP_REVISIONS). A revision the table does not know is not judged."""
    for (v, a), rev in sorted(pins.KNOWN_SNAP_REVISIONS.items()):
        if rev == revision and (v, a) != (version, arch):
            mine = pins.KNOWN_SNAP_REVISIONS.get((version, arch))
            return (f"{revision} is the {a} revision of k8s {v}, not {version}'s {arch} one"
                    + (f" ({mine})" if mine else "") + ": a revision is one version on one architecture "
                    "(`snapcraft status k8s`; components/tables/pins.py KNOWN_SNAP_REVISIONS); set the version's "
                    "own revisions with it")
    return None


def _features(s: Settings) -> Iterator[Problem]:
    f = s.kubernetes.features
    path = f"{ROOT}.kubernetes.features"
    if s.platform == "aws" and not f.network:
        yield (f"{path}.network",
               "must be true: without k8s-snap's CNI no node becomes Ready and no node can join")
    ccm = s.gpu_stack.addons.aws_cloud_controller_manager
    if s.platform == "aws" and ccm.enabled is False:
        # What removes the Node of a worker that gave up after it registered (ck8s-node.sh `die`:
        # it powers off, and the launch template terminates it on shutdown). A node cannot delete
        # its own Node: kubernetes v1.34.4 plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go
        # NodeRules grant nodes create/get/list/watch and update/patch, no delete. The cloud node
        # lifecycle controller does: k8s.io/cloud-provider v0.34.4 controllers/nodelifecycle
        # MonitorNodes deletes a NotReady Node whose instance does not exist, and
        # kubernetes/cloud-provider-aws v1.34.0 pkg/providers/v1/aws.go InstanceExistsByProviderID
        # answers false for a terminated instance. It also sets spec.providerID, by which Karpenter
        # ties a NodeClaim to its Node.
        yield (f"{ROOT}.gpuStack.addons.awsCloudControllerManager.enabled",
               "must stay on with platform aws: it sets each Node's providerID (Karpenter ties NodeClaims to "
               "Nodes by it) and deletes the Node of a terminated instance. A worker that gives up after it "
               "registered powers off and is terminated; no node may delete its own Node object, so without the "
               "controller every such boot leaves a NotReady Node behind")
    if s.platform == "aws" and f.load_balancer and ccm.enabled is not False:
        yield (f"{path}.loadBalancer",
               "the AWS cloud controller manager serves LoadBalancer Services here; Cilium's L2/BGP load "
               "balancer would race it (and L2 announcements do not work in a VPC)")


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


# Tag keys the project writes itself (components/aws/tags.py): a stack tag of the same key would be
# overwritten on some resources and kept on others, never reported. `ck8s-gpu/` is the project's
# namespace (the join contract: nodes find their control planes by ck8s-gpu/cluster and /role), in
# any case; `kubernetes.io/cluster/` is the cloud controller manager's ownership tag, which the
# project puts on exactly one security group per instance; `Name` names every resource.
RESERVED_TAG_PREFIXES = ("ck8s-gpu/", "kubernetes.io/cluster/")
RESERVED_TAG_KEYS = ("Name",)


def reserved_tag(key: str) -> str | None:
    """Why the project reserves `key`, or None."""
    low = key.strip().lower()
    for prefix in RESERVED_TAG_PREFIXES:
        if low.startswith(prefix):
            return f"the prefix '{prefix}' is the project's own (it sets those tags itself)"
    if key.strip() in RESERVED_TAG_KEYS:
        return "the project names every resource itself"
    return None


def _reserved_tags(s: Settings) -> Iterator[Problem]:
    for key in s.tags:
        if why := reserved_tag(key):
            yield f"{ROOT}.tags.{key}", f"'{cut(key)}' is reserved: {why}; a stack tag would be overwritten, not kept"


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
        restore = s.backup.restore_from
        if restore is not None and (why := region_problem(restore.region)):
            # The pattern admits any region-shaped name; the rebuild reads a bucket there.
            yield f"{ROOT}.backup.restoreFrom.region", why
    yield from _reserved_tags(s)

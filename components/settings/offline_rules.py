"""Rules of the boot media and image supply: `images`, `kubernetes.snap.fromImage`, `offline`
(docs/adr/0043). Each names the upstream fact it rests on.

- k8s-snap release-1.34 docs/canonicalk8s/snap/howto/install/offline.md: an air-gapped node takes
  the snap as files (`snap ack k8s.assert && snap install ./k8s.snap --classic`), images side-loaded
  into /var/snap/k8s/common/images or from a private mirror (containerd hosts.toml).
- ECR User Guide, pull-through-cache.html: upstreams ECR caches are ECR Public, registry.k8s.io and
  Quay without credentials; Docker Hub and GitHub Container Registry with a Secrets Manager secret
  whose name starts `ecr-pullthroughcache/` (pull-through-cache-creating-secret.html), in the
  registry's Region. nvcr.io is not one of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from .facts import ami_fields
from .model import Settings
from .problems import ROOT, Problem, cut
from .rules.pools import ami_problems

# ECR registry host: <account>.dkr.ecr.<region>.amazonaws.com (.com.cn in the China partition).
ECR_HOST = re.compile(r"^(\d{12})\.dkr\.ecr\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$")
PTC_SECRET = re.compile(r"^arn:aws(-cn|-us-gov)?:secretsmanager:([a-z0-9-]+):(\d{12}):secret:"
                        r"ecr-pullthroughcache/[A-Za-z0-9/_+=.@-]+$")
IMAGE_PROGRAM_PREFIX = "/ck8s-gpu/images/"


@dataclass(frozen=True)
class EcrMirror:
    """images.mirror when it is an ECR registry: `<account>.dkr.ecr.<region>.amazonaws.com[/path]`."""

    account: str
    region: str
    partition: str
    path: str  # the repository prefix after the host ("" for none)


def ecr_mirror(mirror: str | None) -> EcrMirror | None:
    host, _, path = (mirror or "").partition("/")
    m = ECR_HOST.match(host)
    if m is None:
        return None
    region = m.group(2)
    partition = "aws-cn" if m.group(3) else ("aws-us-gov" if region.startswith("us-gov-") else "aws")
    return EcrMirror(m.group(1), region, partition, path)


def _images(s: Settings) -> Iterator[Problem]:
    im, path = s.images, f"{ROOT}.images"
    if s.platform not in ("aws", "existing"):
        for name, key in (("mirror", "mirror"), ("preloaded", "preloaded"), ("pull_through_cache", "pullThroughCache"),
                          ("credentials", "credentials")):
            if name in im.model_fields_set:
                yield (f"{path}.{key}", f"is ignored on {s.platform}: its nodes' runtime is not this program's "
                                        "(aws makes the nodes; existing takes the mirror for chart values)")
        return
    if s.platform == "existing":
        for name, key in (("preloaded", "preloaded"), ("pull_through_cache", "pullThroughCache"),
                          ("credentials", "credentials")):
            if name in im.model_fields_set:
                yield f"{path}.{key}", "is aws only: on existing the program makes no node image and no registry"
    if im.mirror is not None and s.smoke_test.registry is not None:
        yield (f"{ROOT}.smokeTest.registry", "images.mirror names the smoke test's registry too "
                                             "(<mirror>/docker.io/...): keep one of them")
    if im.pull_through_cache == "create":
        ecr = ecr_mirror(im.mirror)
        if im.mirror is None:
            yield (f"{path}.mirror", "required with pullThroughCache create: this account's ECR, "
                                     "<account>.dkr.ecr.<region>.amazonaws.com")
        elif ecr is None or ecr.path:
            yield (f"{path}.mirror", f"'{cut(im.mirror)}' is not an ECR registry host (<account>.dkr.ecr.<region>."
                                     "amazonaws.com, no path: the cache rules' prefixes are the upstream hosts)")
        elif ecr.region != s.region:
            yield f"{path}.mirror", f"the registry is in {ecr.region}; the cache rules are made in {s.region}"
    for upstream, arn in sorted(im.credentials.items()):
        where = f"{path}.credentials.{upstream}"
        if im.pull_through_cache != "create":
            yield where, "only the pull-through cache rules use credentials (pullThroughCache: create)"
            continue
        m = PTC_SECRET.match(arn)
        if m is None:
            yield (where, f"'{cut(arn)}' is not a Secrets Manager secret ARN whose name starts ecr-pullthroughcache/ "
                          "(ECR refuses any other secret for a cache rule)")
        elif m.group(2) != s.region:
            yield where, f"the secret is in {m.group(2)}; ECR reads it in the rule's Region, {s.region}"
    if s.platform == "aws":
        yield from _carried(s)


def _carried(s: Settings) -> Iterator[Problem]:
    """What the node images carry needs node images. The control planes must boot one; a pool
    without its own `ami` (a GB200 pool on Canonical's arm64 AMI: Image Builder cannot launch
    into an UltraServer block) installs the same pinned revision from the store and pulls its
    images, which only `offline` forbids (_offline)."""
    pin = s.kubernetes.snap
    needs = [why for on, why in ((pin is not None and pin.from_image, "kubernetes.snap.fromImage"),
                                 (s.images.preloaded, "images.preloaded")) if on]
    if not needs:
        return
    said = " and ".join(needs)
    if s.control_plane.ami is None:
        yield (f"{ROOT}.controlPlane.ami", f"required with {said}: an image of the image program, role control-plane "
                                           "(images/, docs/images.md); Canonical's AMI carries neither")
    else:
        cp = s.control_plane
        yield from ((f"{ROOT}.controlPlane.ami", r) for r in ami_problems(cp.ami or "", cp.instance_type))
    if s.offline:
        for i, p in enumerate(s.node_pools):
            if p.ami is None:
                yield (f"{ROOT}.nodePools[{i}].ami", f"required offline with {said}: an image of the image program, "
                                                     "role gpu-node (images/, docs/images.md)")


def _offline(s: Settings) -> Iterator[Problem]:
    if not s.offline:
        return
    path = f"{ROOT}.offline"
    if s.platform != "aws":
        yield path, f"is aws only: on {s.platform} the program makes no node and no network"
        return
    pin = s.kubernetes.snap
    if pin is None or not pin.from_image:
        yield (f"{ROOT}.kubernetes.snap", "offline nodes cannot reach the Snap Store: pin the snap (version, "
                                          "revisions) with fromImage: true, and build the node images with it")
    if not s.images.preloaded:
        yield (f"{ROOT}.images.preloaded", "must be true offline: the node images carry every image, "
                                           "so no first pod waits on a registry")
    if s.images.mirror is None:
        yield (f"{ROOT}.images.mirror", "required offline: chart values name every image under it, and it serves "
                                        "whatever the node images do not carry (a private registry, or ECR)")
    if s.network.existing is None and s.network.nat_gateways != "none":
        yield (f"{ROOT}.network.natGateways", f"is {s.network.nat_gateways}: offline means no route to the internet; "
                                              "set none (AWS's APIs come through network.endpoints)")
    if s.network.existing is not None and s.network.endpoints == "off":
        yield (f"{ROOT}.network.endpoints", "offline nodes reach AWS's APIs only through VPC endpoints: create or "
                                            "expect them")
    if s.gpu_stack.driver != "host":
        yield (f"{ROOT}.gpuStack.driver", f"is {s.gpu_stack.driver}: the operator's driver container fetches packages "
                                          "(compiled) or a kernel-specific image (precompiled) from the internet; "
                                          "offline GPU pools boot the driver in their image (host)")
    if s.backup is not None:
        yield (f"{ROOT}.backup", "backups go to another Region's bucket, which an offline VPC cannot reach "
                                 "(an S3 gateway endpoint serves its own Region only)")
    for where, ami in ami_fields(s):
        if ami is not None and ami.startswith("/") and not ami.startswith(IMAGE_PROGRAM_PREFIX):
            yield (where, f"'{cut(ami)}' is not an image of the image program ({IMAGE_PROGRAM_PREFIX}...): "
                          "offline nodes need the snap and the images in it")


OFFLINE_RULES = (_images, _offline)

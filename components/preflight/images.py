"""Do the node images carry what the stack relies on? (pure: settings + facts -> findings)

The image program (images/, docs/images.md) tags every AMI it builds through Image Builder's
amiDistributionConfiguration `amiTags` ("The tags to apply to AMIs distributed to this Region":
EC2 Image Builder API Reference, AmiDistributionConfiguration), and DescribeImages answers them as
`Images[].Tags[] {Key, Value}` (botocore ec2 2016-11-15 model, shape `Image`). What each tag
promises, and who refuses a node whose image breaks the promise:

- `ck8s-gpu:k8s-snap-version`, `ck8s-gpu:k8s-snap-revision`: the k8s snap on the disk. With
  kubernetes.snap.fromImage the node installs that snap and the node script stops unless
  `snap list k8s` shows the pinned version and revision (components/aws/scripts/ck8s-node.sh, the
  CK8S_SNAP_REVISION check); k8sd refuses a control plane on another patch (ADR 0039).
- `ck8s-gpu:images`: how many image tarballs sit in containerd's side-load folder ("0": none).
- `ck8s-gpu:role`: control-plane (the snap and the cluster's images) or gpu-node (the NVIDIA
  driver and the GPU stack's images too).
- `ck8s-gpu:nvidia-container-toolkit` (gpu-node): the NVIDIA Container Toolkit's version in
  /usr/bin. With gpuStack.toolkit host a GPU worker stops at boot without /usr/bin/nvidia-ctk
  (ck8s-node.sh host_toolkit, docs/adr/0046).
- `ck8s-gpu:fabric-manager-mode` (gpu-node): Fabric Manager's FABRIC_MODE in the image
  (full-passthrough or shared-nvswitch, components/images/document.py). gpuStack.nvlinkPartitions
  needs shared-nvswitch on NVSwitch nodes: in full passthrough FM trains the whole fabric at start
  and the DRA driver's FabricManagerPartitioning finds no partition to activate.

EC2 tags belong to the account that made them: an image shared from another account answers with
none of its owner's tags, so such an image reads as untagged here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from ..aws.ami import ssm_parameter
from ..settings.model import Settings
from ..tables import pins
from ..tables.instance_types import Arch, arch_for_instance_type, nvlink_domain
from .facts import RegionFacts
from .findings import Finding

Role = Literal["control-plane", "gpu-node"]
PREFIX = "ck8s-gpu:"
TAG_ROLE = f"{PREFIX}role"
TAG_SNAP_VERSION = f"{PREFIX}k8s-snap-version"
TAG_SNAP_REVISION = f"{PREFIX}k8s-snap-revision"
TAG_IMAGES = f"{PREFIX}images"
TAG_TOOLKIT = f"{PREFIX}nvidia-container-toolkit"
TAG_FABRIC_MODE = f"{PREFIX}fabric-manager-mode"
BUILD = "`pulumi up -C images`, docs/images.md"


@dataclass(frozen=True)
class NodeImage:
    """Which image one kind of node boots and the setting that chooses it."""

    source: str  # SSM parameter path or `ami-` id
    path: str  # the settings path that chooses it
    role: Role
    arch: Arch
    own: bool  # named by the stack (`ami`), not Canonical's public parameter
    instance_types: tuple[str, ...] = ()  # of the pools that boot it (none for control planes)


def node_images(settings: Settings) -> list[NodeImage]:
    """The control planes' image, then each pool's: its own `ami`, else Canonical's Ubuntu
    parameter for the instance type's architecture."""
    cp = settings.control_plane
    arch = arch_for_instance_type(cp.instance_type)
    out = [NodeImage(cp.ami, "settings.controlPlane.ami", "control-plane", arch, True) if cp.ami is not None else
           NodeImage(ssm_parameter(arch), "settings.controlPlane.instanceType", "control-plane", arch, False)]
    for i, pool in enumerate(settings.node_pools):
        arch = arch_for_instance_type(pool.instance_type)
        types = (pool.instance_type,)
        out.append(NodeImage(pool.ami, f"settings.nodePools[{i}].ami", "gpu-node", arch, True, types)
                   if pool.ami is not None else
                   NodeImage(ssm_parameter(arch), f"settings.nodePools[{i}].instanceType", "gpu-node", arch, False,
                             types))
    return out


def _tags(n: NodeImage, facts: RegionFacts) -> dict[str, str] | None:
    """The image's tags; None: unknown (not resolved, or the call failed: reported elsewhere).
    Canonical's images are not asked: they are not the image program's, so carry none of its tags."""
    if not n.own:
        return {}
    return facts.image_tags.get(n.source)


def _named(n: NodeImage, facts: RegionFacts) -> str:
    ami = facts.amis.get(n.source)
    if not n.own:
        return f"Canonical's Ubuntu AMI ({n.source})"
    return n.source if ami in (None, n.source) else f"{n.source} ({ami})"


def _snap(settings: Settings, n: NodeImage, tags: dict[str, str], what: str) -> Iterator[Finding]:
    pin = settings.kubernetes.snap
    if pin is None or not pin.from_image:
        return
    revision = pin.revisions.get(n.arch)
    if revision is None:
        return  # settings refuse a pin without this architecture (settings/rules/cluster.py _snap_pin)
    have_version, have_revision = tags.get(TAG_SNAP_VERSION), tags.get(TAG_SNAP_REVISION)
    if have_version == pin.version and have_revision == str(revision):
        return
    subject = f"{n.path}, settings.kubernetes.snap"
    if have_revision is None:
        carries = f"has no {TAG_SNAP_REVISION} tag, so it carries no pinned k8s snap the image program baked"
    else:
        carries = f"carries k8s {have_version or '(no version tag)'} revision {have_revision}"
    yield Finding("image-snap-mismatch", "error", subject,
                  f"{what} {carries}; kubernetes.snap pins {pin.version} revision {revision} for {n.arch} with "
                  f"fromImage: its nodes stop on the node script's revision check (and k8sd refuses a control "
                  f"plane on another patch): rebuild the image with this pin (the images/ stack file's snap; "
                  f"{BUILD}) or move the pin to the image's")


def _preloaded(settings: Settings, n: NodeImage, tags: dict[str, str], what: str) -> Iterator[Finding]:
    if not settings.images.preloaded:
        return
    count = tags.get(TAG_IMAGES)
    if count is not None and count.isdigit() and int(count) > 0:
        return
    why = f"has no {TAG_IMAGES} tag" if count is None else f"has {TAG_IMAGES}={count}"
    yield Finding("image-not-preloaded", "error", f"{n.path}, settings.images.preloaded",
                  f"{what} {why}: it carries no preloaded images, so its first pods wait on registry pulls "
                  f"(and fail offline): rebuild it with the image program ({BUILD}), or set images.preloaded: "
                  f"false where a mirror or the registries serve the images")


def _toolkit(settings: Settings, n: NodeImage, tags: dict[str, str], what: str) -> Iterator[Finding]:
    if settings.gpu_stack.toolkit != "host" or n.role != "gpu-node":
        return
    have, want = tags.get(TAG_TOOLKIT), pins.NVIDIA_CONTAINER_TOOLKIT.version
    if have is None:
        yield Finding("image-no-toolkit", "error", f"{n.path}, settings.gpuStack.toolkit",
                      f"{what} has no {TAG_TOOLKIT} tag: the image program did not install the NVIDIA Container "
                      f"Toolkit in it, and with gpuStack.toolkit host its GPU nodes stop at boot (no "
                      f"/usr/bin/nvidia-ctk): rebuild it ({BUILD}) or set gpuStack.toolkit operator")
    elif have != want:
        yield Finding("image-toolkit-version", "warning", f"{n.path}, settings.gpuStack.toolkit",
                      f"{what} carries NVIDIA Container Toolkit {have}, the pin is {want} (the GPU Operator's own "
                      f"toolkit version, components/tables/pins.py): rebuild it ({BUILD}) to run the pinned one")


def _fabric_mode(settings: Settings, n: NodeImage, tags: dict[str, str], what: str) -> Iterator[Finding]:
    """nvlinkPartitions on NVSwitch nodes (an NVSwitch fabric inside the node: nvlink_domain) with
    the image's Fabric Manager. Under gpuStack.driver operator the driver container runs FM, not
    the image: nothing here to judge."""
    if not settings.gpu_stack.nvlink_partitions or n.role != "gpu-node" or settings.gpu_stack.driver != "host":
        return
    switched = sorted({t for t in n.instance_types if nvlink_domain(t).nvswitch and nvlink_domain(t).scope
                       == "single-node"})
    have = tags.get(TAG_FABRIC_MODE)
    if not switched or have == "shared-nvswitch":
        return
    now = f"has {TAG_FABRIC_MODE}={have}" if have else f"has no {TAG_FABRIC_MODE} tag (built before the setting)"
    yield Finding("image-fabric-manager-mode", "error", f"{n.path}, settings.gpuStack.nvlinkPartitions",
                  f"{what} {now}: its Fabric Manager trains the whole NVSwitch fabric of {', '.join(switched)} "
                  f"nodes at start, so the DRA driver's FabricManagerPartitioning has no partition to activate and "
                  f"every claim fails at prepare: build the pool's image with fabricManagerMode: shared-nvswitch "
                  f"({BUILD}) or turn gpuStack.nvlinkPartitions off")


def _role(n: NodeImage, tags: dict[str, str], what: str) -> Iterator[Finding]:
    role = tags.get(TAG_ROLE)
    if role is None or role == n.role:
        return
    other = ("it lacks the NVIDIA driver and the GPU stack's images" if n.role == "gpu-node" else
             "it carries the GPU driver and images a control plane never uses")
    yield Finding("image-role", "warning", n.path,
                  f"{what} is a {role} image ({TAG_ROLE}) but this is a {n.role} node: {other}; name the "
                  f"{n.role} image (/ck8s-gpu/images/{n.role}/...)")


def _untagged(n: NodeImage, what: str) -> Finding:
    return Finding("image-untagged", "error", f"{n.path}, settings.offline",
                   f"{what} carries no {PREFIX} tags, so what it holds is unknown, and offline nodes can fetch "
                   f"nothing that is missing: boot an image the image program built in this account ({BUILD}); an "
                   f"image shared from another account shows none of its tags here: copy it into this one")


def check(settings: Settings, facts: RegionFacts) -> list[Finding]:
    """One finding per image and problem, naming every setting that chooses that image."""
    grouped: dict[tuple[str, Role, Arch], list[NodeImage]] = {}
    for n in node_images(settings):
        grouped.setdefault((n.source, n.role, n.arch), []).append(n)
    out: list[Finding] = []
    for nodes in grouped.values():
        n = nodes[0]
        tags = _tags(n, facts)
        if tags is None:
            continue
        n = NodeImage(n.source, ", ".join(m.path for m in nodes), n.role, n.arch, n.own,
                      tuple(t for m in nodes for t in m.instance_types))
        what = _named(n, facts)
        if settings.offline and not any(k.startswith(PREFIX) for k in tags):
            out.append(_untagged(n, what))
            continue  # what it lacks in particular says nothing more
        out += [*_snap(settings, n, tags, what), *_preloaded(settings, n, tags, what),
                *_toolkit(settings, n, tags, what), *_fabric_mode(settings, n, tags, what), *_role(n, tags, what)]
    return out

"""Names, versions, the parent image and the AMI tags of one node image line (pure).

Image Builder names are regional and unique per account; IAM names are global, so the build role
carries the region (one stack of `images/` per region and image line).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..aws.naming import explicit_name
from ..tables import pins, tokens
from .document import component_documents, preloaded, render, semantic_version
from .settings import ImageSettings

TAG = "ck8s-gpu/image"  # on every AMI this builds: what it is, for people and for cleanup
# AWS managed policies a build instance needs (Image Builder user guide, "Prerequisites": the
# instance profile role needs EC2InstanceProfileForImageBuilder and AmazonSSMManagedInstanceCore).
BUILD_INSTANCE_POLICIES = (
    "arn:aws:iam::aws:policy/EC2InstanceProfileForImageBuilder",
    "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore",
)
# Image Builder cron (six fields, UTC): Sundays 04:00. The pipeline then builds whatever Ubuntu's
# archive and Canonical's newest AMI hold that day (EXPRESSION_MATCH_ONLY: no "changed" test).
WEEKLY = "cron(0 4 ? * sun *)"
# What each AMI says it carries; the cluster's preflight reads them (a role, the snap pin, how
# many catalog images: k8s-snap's own are counted only in the image's images.lock).
AMI_TAG_ROLE = "ck8s-gpu:role"
AMI_TAG_SNAP_VERSION = "ck8s-gpu:k8s-snap-version"
AMI_TAG_SNAP_REVISION = "ck8s-gpu:k8s-snap-revision"
AMI_TAG_IMAGES = "ck8s-gpu:images"
AMI_TAG_TOOLKIT = "ck8s-gpu:nvidia-container-toolkit"  # gpu-node: the toolkit's version (docs/adr/0046)
AMI_TAG_FABRIC_MODE = "ck8s-gpu:fabric-manager-mode"  # gpu-node: FABRIC_MODE of its Fabric Manager
# On the first build's Image Builder image (a resource of the stack): the lifecycle policy skips it, so
# Pulumi's state never names an image the policy deleted (docs/adr/0057).
FIRST_BUILD_TAG = {"ck8s-gpu/first-build": "true"}
# The lifecycle policy's execution role (Image Builder user guide, image-lifecycle-prerequisites: a role
# Image Builder assumes, with this AWS managed policy).
LIFECYCLE_POLICY_ARN = "arn:aws:iam::aws:policy/service-role/EC2ImageBuilderLifecycleExecutionPolicy"
# Every version of the line's recipe (a new document is a new version): the API's recipe selection
# takes `x` wildcards (pulumi-aws 7.51.1 LifecyclePolicyResourceSelectionRecipeArgs semantic_version).
ALL_VERSIONS = "x.x.x"
# An AMI an instance launched from within this many weeks is never deleted (LastLaunched: 1-365).
LAST_LAUNCHED_MAX = 365


@dataclass(frozen=True)
class ComponentPlan:
    key: str  # "" for the line's first component (the resource names gpu-node stacks have), else a suffix
    name: str
    document: str  # the component's YAML
    version: str
    description: str


@dataclass(frozen=True)
class ImagePlan:
    base: str  # the Image Builder name of every resource of this line
    role: str  # IAM role and instance profile of the build instance
    parent_image: str  # `ssm:` + Canonical's parameter: the newest Ubuntu 24.04 at each build
    components: tuple[ComponentPlan, ...]  # in build order
    recipe_version: str
    ami_name: str
    parameter: str
    regions: tuple[str, ...]
    ami_tags: dict[str, str]  # besides the stack's tags
    root_volume_gib: int
    build_instance_type: str
    keep_images: int | None  # the lifecycle policy's count; None: no policy
    lifecycle_role: str  # its execution role (IAM names are global: it carries the region like `role`)


def _line(s: ImageSettings) -> str:
    """What tells this line from the others of its region and architecture (Image Builder names
    take no dots: components/aws/naming.py)."""
    if s.role == "control-plane":
        return "k8s-" + s.track.replace(".", "-")
    return f"nvidia-{s.driver_branch}-{s.kernel_modules}"


def image_plan(s: ImageSettings) -> ImagePlan:
    images = preloaded(s)
    if s.role == "control-plane":
        base = f"ck8s-gpu-control-plane-noble-{s.architecture}-{_line(s)}"
        role = f"ck8s-gpu-imgbuild-{s.region}-{s.architecture}-control-plane"
    else:  # the names gpu-node stacks have always had
        base = f"ck8s-gpu-node-noble-{s.architecture}-{_line(s)}"
        role = f"ck8s-gpu-imgbuild-{s.region}-{s.architecture}-{s.driver_branch}-{s.kernel_modules}"
    components = []
    for i, doc in enumerate(component_documents(s, images)):
        text = render(doc)
        key = "" if i == 0 else "-carried"
        description = str(doc["description"])[:1024]  # CreateComponent description: at most 1024
        components.append(ComponentPlan(key, base + key, text, semantic_version(1, text), description))
    parent = "ssm:" + pins.UBUNTU_AMI_SSM_PARAMETER.format(arch=s.architecture)
    recipe_version = semantic_version(1, "\n".join((*(c.version for c in components), parent, str(s.root_volume))))
    pin = s.snap
    return ImagePlan(
        base=base,
        role=role,
        parent_image=parent,
        components=tuple(components),
        recipe_version=recipe_version,
        ami_name=base + "-{{ imagebuilder:buildDate }}",  # AMI names are unique per region: one per build
        parameter=s.parameter,
        regions=s.regions,
        ami_tags={AMI_TAG_ROLE: s.role, AMI_TAG_SNAP_VERSION: pin.version, AMI_TAG_SNAP_REVISION: str(pin.revision),
                  AMI_TAG_IMAGES: str(len(images)),
                  **({AMI_TAG_TOOLKIT: pins.NVIDIA_CONTAINER_TOOLKIT.version,
                      AMI_TAG_FABRIC_MODE: s.fabric_manager_mode} if s.role == "gpu-node" else {})},
        root_volume_gib=s.root_volume,
        build_instance_type=s.build_instance,
        keep_images=s.keep_images,
        lifecycle_role=explicit_name(tokens.AWS_IAM_ROLE, role, "-lifecycle"),
    )

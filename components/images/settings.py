"""Settings of the image program (`images/`): one structured key, `ck8s-gpu-images:image`.

Same contract as the cluster's settings (components/settings/load.py): frozen, unknown keys
refused, and ONE error naming every bad field path before any resource is registered.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import Field, StrictInt, ValidationError

from ..aws.naming import tag_problems
from ..settings.limits import offering_problem
from ..settings.load import SettingsError, pydantic_reason
from ..settings.model import MIRROR, _Model
from ..settings.problems import Problem, cut, field_path
from ..settings.rules.cluster import image_track, region_problem, snap_revision_problem
from ..settings.rules.pools import PATH_ARCH, SSM_PATH, SSM_PATH_MAX
from ..tables import pins
from ..tables.instance_types import gpu_facts

PROJECT = "ck8s-gpu-images"
IMAGE_KEY = f"{PROJECT}:image"
ROOT = "image"

Arch = Literal["amd64", "arm64"]
Role = Literal["gpu-node", "control-plane"]
KernelModules = Literal["open", "proprietary"]
# NVIDIA's open kernel modules support Turing and newer only (NVIDIA/open-gpu-kernel-modules README:
# "supported ... Turing or later GPU architectures"); the instance table names each GPU's architecture.
OPEN_MODULE_ARCHITECTURES = ("Turing", "Ampere", "Ada Lovelace", "Hopper", "Blackwell")
# The DRA driver needs 580 or newer (docs/adr/0007); Ubuntu names branches by three digits.
MIN_DRIVER_BRANCH = 580
SUBNET_ID = re.compile(r"^subnet-([0-9a-f]{8}|[0-9a-f]{17})$")
SG_ID = re.compile(r"^sg-([0-9a-f]{8}|[0-9a-f]{17})$")
# A control plane's image is built and tested on a plain instance: its test reads files, not GPUs.
CONTROL_PLANE_BUILD_INSTANCE = {"amd64": "m7i.large", "arm64": "m7g.large"}
GPU_NODE_BUILD_INSTANCE = "g6.xlarge"
# The root volume carries the snaps and every preloaded image tar (components/images/preload_steps.py).
ROOT_VOLUME_GIB = {"gpu-node": 60, "control-plane": 40}
KEEP_IMAGES_MAX = 1000


class ImageSnapPin(_Model):
    """The k8s snap this image carries: the cluster's `kubernetes.snap` pin (components/settings/
    model.py SnapPinSettings), one revision because one image line is one architecture."""

    version: str = Field(pattern=r"^v\d+\.\d+\.\d+$")  # `snap list k8s`'s Version
    revision: StrictInt = Field(ge=1)  # `snap list k8s`'s Rev on this architecture


class ImageKubernetes(_Model):
    track: str = pins.DEFAULT_TRACK  # components/tables/pins.py SNAP_TRACKS
    snap: ImageSnapPin | None = None  # required: a rule says so, beside every other bad field


class ImageSettings(_Model):
    """One image line: a role and an architecture (for gpu-node a driver branch and its kernel
    module flavour), built in `region` and copied to `distributionRegions` (each gets the AMI and
    the same SSM parameter). Every role carries the k8s snap at `kubernetes.snap` and, with
    `preload`, every image of components/addons/image_catalog.py preload_images."""

    region: str
    # gpu-node: the NVIDIA driver (and EFA) inside; control-plane: no driver, no EFA.
    role: Role = "gpu-node"
    kubernetes: ImageKubernetes | None = None  # required (kubernetes.snap): see _snap_rules
    distribution_regions: tuple[str, ...] = ()  # besides `region`
    architecture: Arch = "amd64"
    driver_branch: str = pins.GPU_NODE_IMAGE_DRIVER_BRANCH
    kernel_modules: KernelModules = "open"
    # AWS's EFA user space (libfabric, rdma-core) and the NCCL OFI plugin, components/images/
    # document.py. On by default: one image line boots EFA pools (P5, P6: components/facts/efa.py)
    # and pools without EFA alike, where it lies unused; false for a smaller image.
    efa: bool | None = None  # None: true for gpu-node, false (and only false) for control-plane
    # Builds AND tests the image: a gpu-node test runs nvidia-smi, so it must have a GPU (default
    # g6.xlarge); a control-plane one must not (default m7i.large, m7g.large on arm64).
    build_instance_type: str | None = None
    # Where each region's newest image id is published; pools name it as `nodePools[].ami`.
    parameter_name: str | None = None
    # Both or neither: without them Image Builder uses the region's default VPC.
    subnet_id: str | None = None
    security_group_ids: tuple[str, ...] = ()
    # weekly: a new image every Sunday with Ubuntu's kernel and security updates; manual: only
    # when `pulumi up` changes the recipe or someone starts the pipeline.
    rebuild: Literal["weekly", "manual"] = "weekly"
    # `pulumi up` builds the first image and waits for it (about half an hour), so the parameter
    # exists when it returns; false leaves it to the pipeline's schedule.
    build_on_up: bool = True
    # AMI lifecycle (docs/adr/0057): an Image Builder lifecycle policy keeps this line's newest
    # `keepImages` AMIs and deletes older ones with their snapshots, in every region. 8: two months of
    # weekly builds. A cluster's launch templates hold the AMI id its last `up` resolved from the
    # parameter (components/aws/ami.py), so an AMI must outlive the time between two `up`s of every
    # cluster booting it: 8 weeks, and the policy never deletes an AMI an instance launched from in
    # that time, nor the first build's (a resource of this stack). Each kept AMI costs its snapshot
    # (at most rootVolumeGib) per region: `ck8s-gpu plan --cost`. null: no policy, every AMI stays.
    # 1-1000: the count filter's range (Image Builder API reference, LifecyclePolicyDetailFilter value).
    keep_images: StrictInt | None = Field(default=8, ge=1, le=KEEP_IMAGES_MAX)
    # None: 60 GiB for gpu-node, 40 for control-plane (the snaps and the image tars, ROOT_VOLUME_GIB).
    root_volume_gib: int | None = Field(default=None, ge=8, le=16384)
    # Fabric Manager's FABRIC_MODE on NVSwitch nodes (NVIDIA Fabric Manager User Guide, "Fabric
    # Manager config options": 0 full passthrough, the package's default; 1 shared NVSwitch
    # multitenancy, where FM activates partitions on request instead of training the whole fabric).
    # shared-nvswitch is what the DRA driver's FabricManagerPartitioning needs
    # (gpuStack.nvlinkPartitions): ck8s-gpu preflight refuses that stack on an image without it.
    fabric_manager_mode: Literal["full-passthrough", "shared-nvswitch"] = "full-passthrough"
    # Every image of the catalog (and k8s-snap's own) exported into the image, for containerd.
    preload: bool = True
    # Export from `<mirror>/<upstream host>/<repository>` instead of the public registry, and name
    # the catalog's tars with that reference: chart values name the mirror when it is on.
    mirror: str | None = Field(default=None, pattern=MIRROR, max_length=255)
    tags: dict[str, str] = Field(default_factory=dict)

    @property
    def regions(self) -> tuple[str, ...]:
        return (self.region, *self.distribution_regions)

    @property
    def parameter(self) -> str:
        if self.parameter_name:
            return self.parameter_name
        if self.role == "control-plane":
            return control_plane_parameter_name(self.architecture, self.track)
        return default_parameter_name(self.architecture, self.driver_branch, self.kernel_modules)

    @property
    def track(self) -> str:
        return self.kubernetes.track if self.kubernetes else pins.DEFAULT_TRACK

    @property
    def snap(self) -> ImageSnapPin:
        """The pin; parse_image_settings refuses settings without one."""
        if self.kubernetes is None or self.kubernetes.snap is None:
            raise ValueError("image.kubernetes.snap is required")
        return self.kubernetes.snap

    @property
    def with_efa(self) -> bool:
        return self.role == "gpu-node" if self.efa is None else self.efa

    @property
    def build_instance(self) -> str:
        if self.build_instance_type:
            return self.build_instance_type
        return GPU_NODE_BUILD_INSTANCE if self.role == "gpu-node" else CONTROL_PLANE_BUILD_INSTANCE[self.architecture]

    @property
    def root_volume(self) -> int:
        return self.root_volume_gib or ROOT_VOLUME_GIB[self.role]


PARAMETER_PREFIX = "/ck8s-gpu/images/"  # ck8s-gpu preflight tells pools under it to run this program


def default_parameter_name(arch: str, branch: str, modules: str) -> str:
    return f"{PARAMETER_PREFIX}gpu-node/ubuntu-24.04/{arch}/nvidia-{branch}-server-{modules}"


def control_plane_parameter_name(arch: str, track: str) -> str:
    return f"{PARAMETER_PREFIX}control-plane/ubuntu-24.04/{arch}/k8s-{track}"


def parameter_name_problems(name: str, arch: str) -> list[str]:
    """AWS SSM PutParameter / Image Builder SsmParameterConfiguration rules for the published name."""
    out: list[str] = []
    if not SSM_PATH.match(name) or len(name) > SSM_PATH_MAX:
        out.append(f"'{cut(name)}' is not an SSM parameter path (/a/b/c: a-zA-Z0-9_.- between slashes, "
                   f"at most 15 levels, {SSM_PATH_MAX} characters)")
        return out
    first = name.split("/")[1].lower()
    if first.startswith(("aws", "ssm")):
        # AWS SSM PutParameter Name: "can't be prefixed with aws or ssm (case-insensitive)".
        out.append(f"'{cut(name)}': parameter names cannot begin with 'aws' or 'ssm' (any case)")
    named = {PATH_ARCH[level] for level in name.split("/") if level in PATH_ARCH}
    if named and arch not in named:
        out.append(f"the path names {'/'.join(sorted(named))} but the image is {arch}: pools check that word "
                   f"against their instance type (nodePools[].ami)")
    return out


def _rules(s: ImageSettings) -> Iterator[Problem]:
    for path, region in [(f"{ROOT}.region", s.region)] + [
            (f"{ROOT}.distributionRegions[{i}]", r) for i, r in enumerate(s.distribution_regions)]:
        if why := region_problem(region):
            yield path, why
    seen = {s.region}
    for i, region in enumerate(s.distribution_regions):
        if region in seen:
            yield f"{ROOT}.distributionRegions[{i}]", f"'{region}' is listed twice (region counts too)"
        seen.add(region)
    if not re.fullmatch(r"\d{3}", s.driver_branch) or int(s.driver_branch) < MIN_DRIVER_BRANCH:
        yield (f"{ROOT}.driverBranch", f"'{cut(s.driver_branch)}' is not a driver branch of {MIN_DRIVER_BRANCH} or "
               "newer (three digits, like 595; DRA needs 580+, docs/adr/0007)")
    if not region_problem(s.region) and (why := offering_problem(s.build_instance, s.region)):
        yield f"{ROOT}.buildInstanceType", why  # Image Builder launches it in the build Region
    if s.role == "control-plane":
        yield from _control_plane_rules(s)
    else:
        yield from _gpu_build_instance_rules(s)
    yield from _snap_rules(s)
    for reason in parameter_name_problems(s.parameter, s.architecture):
        yield f"{ROOT}.parameterName", reason
    if (s.subnet_id is None) != (not s.security_group_ids):
        yield (f"{ROOT}.{'securityGroupIds' if s.subnet_id else 'subnetId'}",
               "subnetId and securityGroupIds go together (Image Builder needs both to place the build "
               "instance; neither uses the region's default VPC)")
    if s.subnet_id is not None and not SUBNET_ID.match(s.subnet_id):
        yield f"{ROOT}.subnetId", f"'{cut(s.subnet_id)}' is not a subnet id (subnet- and 8 or 17 hex characters)"
    for i, sg in enumerate(s.security_group_ids):
        if not SG_ID.match(sg):
            yield f"{ROOT}.securityGroupIds[{i}]", f"'{cut(sg)}' is not a security group id"
    for reason in tag_problems(s.tags):
        yield f"{ROOT}.tags", reason


def _gpu_build_instance_rules(s: ImageSettings) -> Iterator[Problem]:
    facts = gpu_facts(s.build_instance)
    if facts is None:
        yield (f"{ROOT}.buildInstanceType", f"'{cut(s.build_instance)}' is not a GPU instance type of "
               "components/tables/instance_types.py: the image's test phase runs nvidia-smi on it")
        return
    from ..tables.instance_types import arch_for_instance_type, nvlink_domain

    if nvlink_domain(s.build_instance).ultraservers:
        # Sold only in UltraServer Capacity Blocks (components/aws/launch_rules.py [US]), and an
        # infrastructure configuration cannot target a reservation (its placement takes a zone,
        # tenancy or a host only: pulumi-aws imagebuilder InfrastructureConfigurationPlacement).
        yield (f"{ROOT}.buildInstanceType", f"{s.build_instance} launches only into an UltraServer Capacity "
               "Block, which Image Builder cannot launch a build instance into; GB200 pools boot Canonical's "
               "arm64 AMI with gpuStack.driver operator (docs/distributed-training.md)")
    if arch_for_instance_type(s.build_instance) != s.architecture:
        yield (f"{ROOT}.buildInstanceType", f"{s.build_instance} is "
               f"{arch_for_instance_type(s.build_instance)}, the image is {s.architecture}")
    if s.kernel_modules == "open" and facts.architecture not in OPEN_MODULE_ARCHITECTURES:
        yield (f"{ROOT}.kernelModules", f"open kernel modules need a Turing or newer GPU; "
               f"{s.build_instance} has {facts.architecture} (use proprietary)")


def _control_plane_rules(s: ImageSettings) -> Iterator[Problem]:
    """A control plane's image has no NVIDIA driver (nor its Fabric Manager) and no EFA: settings of
    those are mistakes."""
    for name, key in (("driver_branch", "driverBranch"), ("kernel_modules", "kernelModules"),
                      ("fabric_manager_mode", "fabricManagerMode")):
        if name in s.model_fields_set:
            yield f"{ROOT}.{key}", "a control-plane image has no NVIDIA driver (role: control-plane)"
    if s.efa:
        yield f"{ROOT}.efa", "a control-plane image has no EFA software (role: control-plane)"
    from ..tables.instance_types import arch_for_instance_type

    if gpu_facts(s.build_instance) is not None:
        yield (f"{ROOT}.buildInstanceType", f"{s.build_instance} has a GPU; a control-plane image is built and "
               f"tested without one (default {CONTROL_PLANE_BUILD_INSTANCE[s.architecture]})")
        return
    try:
        arch = arch_for_instance_type(s.build_instance)
    except ValueError:
        yield f"{ROOT}.buildInstanceType", f"'{cut(s.build_instance)}' is not an EC2 instance type name"
        return
    if arch != s.architecture:
        yield f"{ROOT}.buildInstanceType", f"{s.build_instance} is {arch}, the image is {s.architecture}"


def _snap_rules(s: ImageSettings) -> Iterator[Problem]:
    where = f"{ROOT}.kubernetes"
    track = pins.SNAP_TRACKS.get(s.track)
    if track is None:
        yield (f"{where}.track",
               f"'{cut(s.track)}' is not a track of components/tables/pins.py ({', '.join(pins.SNAP_TRACKS)})")
    pin = s.kubernetes.snap if s.kubernetes else None
    if pin is None:
        yield (f"{where}.snap", "required: {version, revision}, the cluster's kubernetes.snap pin for this "
               "architecture (every role carries the k8s snap)")
        return
    if track is not None and pin.version.split(".")[:2] != track.kubernetes.split(".")[:2]:
        yield (f"{where}.snap.version", f"{pin.version} is not in track {s.track} "
               f"(Kubernetes {'.'.join(track.kubernetes.split('.')[:2])})")
    if why := snap_revision_problem(pin.version, s.architecture, pin.revision):
        yield f"{where}.snap.revision", why
    named = image_track(s.parameter)
    if named is not None and named != s.track:
        yield (f"{ROOT}.parameterName", f"'{cut(s.parameter)}' names track {named}; this line carries "
               f"{s.track}'s snap: clusters would boot it as {named}'s")


def parse_image_settings(raw: Any, source: str) -> ImageSettings:
    if not isinstance(raw, Mapping):
        raise SettingsError(source, [(ROOT, f"must be a mapping, got {type(raw).__name__}")])
    try:
        settings = ImageSettings.model_validate(raw)
    except ValidationError as exc:
        raise SettingsError(source, [(field_path(e["loc"], ROOT), pydantic_reason(e)) for e in exc.errors()]
                            ) from None
    problems = list(_rules(settings))
    if problems:
        raise SettingsError(source, problems)
    return settings


def image_settings_from_config(config: Mapping[str, Any], source: str) -> ImageSettings:
    """From a stack's `config:` mapping; keys of other namespaces belong to providers."""
    unknown = [k for k in config if k.startswith(f"{PROJECT}:") and k != IMAGE_KEY]
    problems = [(f"config.{k}", f"unknown key; known: {IMAGE_KEY}") for k in unknown]
    if IMAGE_KEY not in config:
        problems.append((f"config.{IMAGE_KEY}", "required"))
    if problems:
        raise SettingsError(source, problems)
    return parse_image_settings(config[IMAGE_KEY], source)


def load_image_settings() -> ImageSettings:
    """From the running program's config; a clean RunError (message only) before any resource."""
    import pulumi

    from ..settings.from_pulumi import project_config

    try:
        return image_settings_from_config(project_config(PROJECT, frozenset({IMAGE_KEY})),
                                          f"stack {pulumi.get_stack()}")
    except SettingsError as exc:
        raise pulumi.RunError(exc.message) from None

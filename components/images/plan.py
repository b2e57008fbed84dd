"""Names, versions and the parent image of one GPU node image line (pure).

Image Builder names are regional and unique per account; IAM names are global, so the build role
carries the region (one stack of `images/` per region and image line).
"""

from __future__ import annotations

from dataclasses import dataclass

from components import pins
from components.images.document import component_document, render, semantic_version
from components.images.settings import ImageSettings

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


@dataclass(frozen=True)
class ImagePlan:
    base: str  # the Image Builder name of every resource of this line
    role: str  # IAM role and instance profile of the build instance
    parent_image: str  # `ssm:` + Canonical's parameter: the newest Ubuntu 24.04 at each build
    document: str  # the component's YAML
    component_version: str
    recipe_version: str
    ami_name: str
    parameter: str
    regions: tuple[str, ...]


def image_plan(s: ImageSettings) -> ImagePlan:
    base = f"ck8s-gpu-node-noble-{s.architecture}-nvidia-{s.driver_branch}-{s.kernel_modules}"
    document = render(component_document(s))
    parent = "ssm:" + pins.UBUNTU_AMI_SSM_PARAMETER.format(arch=s.architecture)
    component_version = semantic_version(1, document)
    recipe_version = semantic_version(1, "\n".join((component_version, parent, str(s.root_volume_gib))))
    return ImagePlan(
        base=base,
        role=f"ck8s-gpu-imgbuild-{s.region}-{s.architecture}-{s.driver_branch}-{s.kernel_modules}",
        parent_image=parent,
        document=document,
        component_version=component_version,
        recipe_version=recipe_version,
        ami_name=base + "-{{ imagebuilder:buildDate }}",  # AMI names are unique per region: one per build
        parameter=s.parameter,
        regions=s.regions,
    )

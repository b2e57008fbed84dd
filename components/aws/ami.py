"""Canonical's Ubuntu 24.04 AMI, resolved per region from its SSM public parameter (never an id).

Pools may name their own image (settings nodePools[].ami; required with gpuStack.driver host or
precompiled on aws, docs/adr/0018)."""

from __future__ import annotations

import re
from typing import Literal

import pulumi
import pulumi_aws as aws

from components import pins

Arch = Literal["amd64", "arm64"]

_FAMILY = re.compile(r"^(?P<family>[a-z]+)(?P<generation>\d+)(?P<attrs>[a-z-]*)")


def arch_for_instance_type(instance_type: str) -> Arch:
    """Graviton families carry a `g` among the attribute letters after the generation (m7g, c7gn,
    g5g, x2gd, im4gn); `a1` is the first Graviton. Everything else here is x86_64 (g6e, p5en, p6-b200)."""
    match = _FAMILY.match(instance_type.split(".")[0])
    if match is None:
        raise ValueError(f"cannot tell the CPU architecture of instance type '{instance_type}'")
    if match["family"] == "a" and match["generation"] == "1":
        return "arm64"
    attrs = match["attrs"].split("-")[0]
    return "arm64" if "g" in attrs else "amd64"


def ssm_parameter(arch: Arch) -> str:
    return pins.UBUNTU_AMI_SSM_PARAMETER.format(arch=arch)


def ubuntu_ami(
    arch: Arch, parent: pulumi.Resource, provider: pulumi.ProviderResource | None = None
) -> pulumi.Output[str]:
    """The current Ubuntu 24.04 AMI id for `arch` in `provider`'s region (else the parent's provider's).

    A pool may name its own image instead (settings nodePools[].ami, checked by settings.rules
    ami_problems): an `ami-` id is used as it is, an SSM parameter path is looked up like this one."""
    return aws.ssm.get_parameter_output(
        name=ssm_parameter(arch), opts=pulumi.InvokeOutputOptions(parent=parent, provider=provider)
    ).value

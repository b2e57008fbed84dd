"""Canonical's Ubuntu 24.04 AMI, resolved per region from its SSM public parameter (never an id).

Pools may name their own image (settings nodePools[].ami; required with gpuStack.driver host or
precompiled on aws, docs/adr/0018)."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from ..tables import pins
from ..tables.instance_types import Arch


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

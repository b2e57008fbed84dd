"""EC2 node policies: IMDSv2, encrypted volumes, no spot capacity in prod.

Input names are pulumi-aws 7.x wire names (camelCase), verified against the installed SDK:
Instance `metadataOptions.httpTokens`, `rootBlockDevice.encrypted`, `ebsBlockDevices[].encrypted`,
`instanceMarketOptions.marketType`; LaunchTemplate `blockDeviceMappings[].ebs.encrypted` (a
STRING "true"/"false" in the provider schema), `instanceMarketOptions.marketType`; Auto Scaling
group `mixedInstancesPolicy.instancesDistribution.onDemandPercentageAboveBaseCapacity`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from ..tables import tokens
from .facts import facts_of
from .props import get, is_unknown, items, truthy_flag

INSTANCE = tokens.AWS_EC2_INSTANCE
LAUNCH_TEMPLATE = tokens.AWS_EC2_LAUNCH_TEMPLATE
SPOT_REQUEST = tokens.AWS_EC2_SPOT_INSTANCE_REQUEST
VOLUME = tokens.AWS_EBS_VOLUME
ASG = tokens.AWS_AUTOSCALING_GROUP
NODE_TYPES = (INSTANCE, LAUNCH_TEMPLATE, SPOT_REQUEST)


def imdsv2_problems(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    if resource_type not in NODE_TYPES:
        return []
    tokens = get(props, "metadataOptions.httpTokens")
    endpoint = get(props, "metadataOptions.httpEndpoint")
    if is_unknown(tokens) or endpoint == "disabled":
        return []
    if tokens != "required":
        # Without session tokens any SSRF in a pod can read the node role's credentials.
        return [f"metadataOptions.httpTokens is {tokens!r}; set it to 'required' (IMDSv2 only)"]
    hops = get(props, "metadataOptions.httpPutResponseHopLimit")
    if not is_unknown(hops) and hops != 1:
        # A token response that survives 2 hops reaches containers behind the node's bridge: every
        # pod could read the node role's credentials (EC2 User Guide, "Configure the instance
        # metadata options": hop limit 1 keeps the token on the host). Unset leaves it to the AMI.
        return [f"metadataOptions.httpPutResponseHopLimit is {hops!r}; set it to 1 so pods cannot fetch the "
                "node role's credentials"]
    return []


# Root device names of the images nodes boot: Canonical's Ubuntu (/dev/sda1) and Amazon Linux /
# most others (/dev/xvda). A mapping for another device leaves the root volume to the AMI.
ROOT_DEVICES = ("/dev/sda1", "/dev/xvda")


def _encrypted(value: Any) -> bool | None:
    """True, False, or None when the plan cannot know (unknown). Absent is False: every volume
    says `encrypted` explicitly (the account's default encryption is a setting someone can turn off)."""
    if is_unknown(value):
        return None
    return truthy_flag(value) is True


def volume_problems(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    if resource_type in (INSTANCE, SPOT_REQUEST):
        root = get(props, "rootBlockDevice")
        if not isinstance(root, Mapping):
            problems.append("no rootBlockDevice: the root volume comes from the AMI snapshot, unencrypted; "
                            "declare rootBlockDevice with encrypted: true")
        elif _encrypted(root.get("encrypted")) is False:
            problems.append("rootBlockDevice.encrypted is not true")
        for i, dev in enumerate(items(props, "ebsBlockDevices")):
            if _encrypted(get(dev, "encrypted")) is False:
                problems.append(f"ebsBlockDevices[{i}].encrypted is not true")
    elif resource_type == LAUNCH_TEMPLATE:
        mappings = items(props, "blockDeviceMappings")
        roots = [m for m in mappings if get(m, "deviceName") in ROOT_DEVICES and get(m, "ebs") is not None]
        if not roots:
            problems.append(f"no blockDeviceMappings entry with ebs for the root device ({' or '.join(ROOT_DEVICES)}): "
                            "the root volume comes from the AMI snapshot, unencrypted; map it with ebs.encrypted: "
                            "'true'")
        for i, mapping in enumerate(mappings):
            ebs = get(mapping, "ebs")
            if isinstance(ebs, Mapping) and _encrypted(ebs.get("encrypted")) is False:
                problems.append(f"blockDeviceMappings[{i}] ({get(mapping, 'deviceName')}).ebs.encrypted is not 'true'")
    elif resource_type == VOLUME and _encrypted(props.get("encrypted")) is False:
        problems.append("encrypted is not true")
    return problems


def spot_problems(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    if resource_type in (INSTANCE, LAUNCH_TEMPLATE) and get(props, "instanceMarketOptions.marketType") == "spot":
        return ["instanceMarketOptions.marketType is 'spot'"]
    if resource_type == SPOT_REQUEST:
        return ["a spot instance request"]
    if resource_type == ASG:
        share = get(props, "mixedInstancesPolicy.instancesDistribution.onDemandPercentageAboveBaseCapacity")
        if isinstance(share, int | float) and share < 100:
            return [f"mixedInstancesPolicy runs {100 - share:g}% of capacity above the base on spot"]
    return []


def _report(problems: list[str], report_violation: ReportViolation) -> None:
    for problem in problems:
        report_violation(problem, None)


def validate_imdsv2(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    _report(imdsv2_problems(args.resource_type, args.props), report_violation)


def validate_encrypted_volumes(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    _report(volume_problems(args.resource_type, args.props), report_violation)


def validate_no_spot_in_prod(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Spot capacity as the resources request it, and as the settings declare it (a pool's
    capacityType), since a platform may map spot pools onto resources in several ways."""
    facts = facts_of(args)
    if facts is None or not facts.prod:
        return
    why = "spot GPUs are reclaimed with two minutes' notice, mid-training or mid-inference"
    for r in args.resources:
        for problem in spot_problems(r.resource_type, r.props):
            report_violation(f"{problem}: {why}", r.urn)
    for pool in facts.spot_pools:
        report_violation(f"node pool {pool} has capacityType spot: {why}", None)


IMDSV2_REQUIRED = ResourceValidationPolicy(
    name="imdsv2-required",
    description="EC2 instances and launch templates require IMDSv2 session tokens.",
    validate=validate_imdsv2,
    enforcement_level=EnforcementLevel.MANDATORY,
)
ENCRYPTED_VOLUMES = ResourceValidationPolicy(
    name="encrypted-volumes",
    description="Every EBS volume (root and data, instances and launch templates) is encrypted.",
    validate=validate_encrypted_volumes,
    enforcement_level=EnforcementLevel.MANDATORY,
)
NO_SPOT_IN_PROD = StackValidationPolicy(
    name="prod-no-spot",
    description="Production node capacity is on-demand, not spot.",
    validate=validate_no_spot_in_prod,
    enforcement_level=EnforcementLevel.ADVISORY,
)

import base64

import pytest

from components.policies.aws_nodes import (
    ENCRYPTED_VOLUMES,
    IMDSV2_REQUIRED,
    INSTANCE,
    LAUNCH_TEMPLATE,
    NO_SPOT_IN_PROD,
    VOLUME,
)
from tests.unit.policies.helpers import facts, res, stack_violations, violations

ENCRYPTED_ROOT = {"deviceName": "/dev/sda1", "ebs": {"volumeSize": 200, "encrypted": "true", "volumeType": "gp3"}}


def launch_template(**over: object) -> dict[str, object]:
    props: dict[str, object] = {
        "metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1},
        "blockDeviceMappings": [ENCRYPTED_ROOT],
        "userData": base64.b64encode(b"#cloud-config\n").decode(),
    }
    props.update(over)
    return props


def test_imdsv2_required_passes_and_violates() -> None:
    assert violations(IMDSV2_REQUIRED, LAUNCH_TEMPLATE, launch_template()) == []
    hardened = {"metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1}}
    assert violations(IMDSV2_REQUIRED, INSTANCE, hardened) == []
    bad = violations(IMDSV2_REQUIRED, LAUNCH_TEMPLATE, launch_template(metadataOptions={"httpTokens": "optional"}))
    assert len(bad) == 1 and "'optional'" in bad[0]
    # Absent metadata options mean AWS's default, which allows IMDSv1.
    assert violations(IMDSV2_REQUIRED, INSTANCE, {"instanceType": "g6.xlarge"})


def test_imdsv2_accepts_a_disabled_endpoint_and_skips_unknowns() -> None:
    assert violations(IMDSV2_REQUIRED, INSTANCE, {"metadataOptions": {"httpEndpoint": "disabled"}}) == []
    assert violations(IMDSV2_REQUIRED, INSTANCE, {"metadataOptions": {"httpTokens": "<computed>"}}) == []
    assert violations(IMDSV2_REQUIRED, VOLUME, {}) == []  # not an instance


def test_launch_template_volumes_must_be_encrypted() -> None:
    assert violations(ENCRYPTED_VOLUMES, LAUNCH_TEMPLATE, launch_template()) == []
    plain = {"deviceName": "/dev/sdb", "ebs": {"volumeSize": 500, "encrypted": "false"}}
    bad = violations(ENCRYPTED_VOLUMES, LAUNCH_TEMPLATE, launch_template(blockDeviceMappings=[ENCRYPTED_ROOT, plain]))
    assert bad == ["blockDeviceMappings[1] (/dev/sdb).ebs.encrypted is not 'true'"]
    # No mapping at all: the AMI's unencrypted snapshot becomes the root volume.
    assert violations(ENCRYPTED_VOLUMES, LAUNCH_TEMPLATE, launch_template(blockDeviceMappings=[]))
    # The provider spells it as a string; a real boolean is accepted too.
    as_bool = {"deviceName": "/dev/sda1", "ebs": {"encrypted": True}}
    assert violations(ENCRYPTED_VOLUMES, LAUNCH_TEMPLATE, launch_template(blockDeviceMappings=[as_bool])) == []


def test_instance_and_volume_encryption() -> None:
    good = {"rootBlockDevice": {"encrypted": True}, "ebsBlockDevices": [{"deviceName": "/dev/sdb", "encrypted": True}]}
    assert violations(ENCRYPTED_VOLUMES, INSTANCE, good) == []
    assert violations(ENCRYPTED_VOLUMES, INSTANCE, {"rootBlockDevice": {"volumeSize": 100}}) == [
        "rootBlockDevice.encrypted is not true"
    ]
    assert violations(ENCRYPTED_VOLUMES, INSTANCE, {"instanceType": "m7i.xlarge"})  # AMI root volume
    assert violations(ENCRYPTED_VOLUMES, VOLUME, {"size": 100}) == ["encrypted is not true"]
    assert violations(ENCRYPTED_VOLUMES, VOLUME, {"size": 100, "encrypted": True}) == []


def test_spot_is_advisory_and_only_in_prod() -> None:
    spot_lt = res(LAUNCH_TEMPLATE, launch_template(instanceMarketOptions={"marketType": "spot"}))
    on_demand = res(LAUNCH_TEMPLATE, launch_template())
    prod = facts(environment="prod", production=True)
    assert stack_violations(NO_SPOT_IN_PROD, [on_demand], prod) == []
    found = stack_violations(NO_SPOT_IN_PROD, [spot_lt], prod)
    assert len(found) == 1 and found[0][1] == spot_lt.urn
    assert stack_violations(NO_SPOT_IN_PROD, [spot_lt], facts(environment="dev")) == []
    asg = res("aws:autoscaling/group:Group", {"mixedInstancesPolicy": {
        "instancesDistribution": {"onDemandPercentageAboveBaseCapacity": 25}}})
    assert "75% of capacity" in stack_violations(NO_SPOT_IN_PROD, [asg], prod)[0][0]
    assert NO_SPOT_IN_PROD.enforcement_level is not None and NO_SPOT_IN_PROD.enforcement_level.value == "advisory"


def test_spot_declared_in_settings_is_reported_without_resources() -> None:
    prod_spot = facts(environment="prod", production=True, nodePools=[{"name": "gpu", "capacityType": "spot"}])
    assert stack_violations(NO_SPOT_IN_PROD, [], prod_spot) == [
        ("node pool gpu has capacityType spot: spot GPUs are reclaimed with two minutes' notice, "
         "mid-training or mid-inference", None)
    ]


@pytest.mark.parametrize("mappings", [
    [{"deviceName": "/dev/sdb", "ebs": {"encrypted": "true", "volumeSize": 500}}],  # data volume only
    [{"deviceName": "/dev/sda1", "noDevice": ""}, {"deviceName": "/dev/sdf", "ebs": {"encrypted": "true"}}],
    [{"deviceName": "/dev/sda1", "ebs": {"volumeSize": 200}}],  # root mapped, encryption left to the account
])
def test_only_an_encrypted_root_mapping_covers_the_root_volume(mappings: list[dict[str, object]]) -> None:
    """Any mapping used to satisfy the rule (issue 14); the root device itself must be mapped and
    encrypted, or the root volume is the AMI's snapshot as it is."""
    assert violations(ENCRYPTED_VOLUMES, LAUNCH_TEMPLATE, launch_template(blockDeviceMappings=mappings))


def test_an_amazon_linux_root_device_counts_too() -> None:
    root = {"deviceName": "/dev/xvda", "ebs": {"encrypted": "true"}}
    assert violations(ENCRYPTED_VOLUMES, LAUNCH_TEMPLATE, launch_template(blockDeviceMappings=[root])) == []


@pytest.mark.parametrize(("hops", "ok"), [(1, True), (2, False), (64, False), (None, False)])
def test_the_metadata_hop_limit_keeps_tokens_on_the_host(hops: object, ok: bool) -> None:
    options: dict[str, object] = {"httpTokens": "required"}
    if hops is not None:
        options["httpPutResponseHopLimit"] = hops
    found = violations(IMDSV2_REQUIRED, LAUNCH_TEMPLATE, launch_template(metadataOptions=options))
    assert (found == []) is ok, found

"""Control-plane instances: 1 or 3, spread over the private subnets (one AZ each), joined one at a time.

Instance 0 bootstraps the cluster; the others are launched as soon as instance 0 is running and
join once it answers (docs/adr/0019): their join loop retries while k8sd refuses a join because
another node is joining, so joins still happen one at a time. Instance 0 launching first matters:
a first control plane joins running peers launched BEFORE it (a replacement) and never bootstraps
beside them (docs/adr/0011), but bootstraps beside peers launched after it. An ApiReady gate per
instance counts Ready nodes with k8sd's control-plane label (workers join beside them); gate n
follows gate n-1, so the last gate means every control plane is in.

AMI and user-data changes are ignored on these instances: a new Ubuntu AMI or a new script must
not replace (or stop/start) a running control plane behind the operator's back. New control
planes get the current ones; replacing one is a deliberate `pulumi up --replace` (see the ADR).
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_aws as aws

from ..k8s_ready import ApiReady
from ..settings.model import Settings
from ..tables import tokens
from .hardening import IMDS, root_volume
from .kubeconfig import API_PORT
from .mint import CONTROL_PLANE_LABEL
from .protection import state_opts
from .tags import node_tags

# A control plane boots, installs the snap and bootstraps/joins in ~5-10 minutes.
READY_TIMEOUT_SECONDS = 1500


def placement(count: int, subnet_count: int) -> list[int]:
    """Subnet index of each control plane: round-robin, so 3 control planes over 3 AZs use all three."""
    if subnet_count < 1:
        raise ValueError("no private subnets for the control planes")
    return [i % subnet_count for i in range(count)]


def waiting_for(name: str, instance_id: str, node_name: str, region: str) -> str:
    """What a control plane's gate names when it fails: the node and where its boot log is."""
    return (
        f"control plane {name} (instance {instance_id}, node {node_name}); its boot log: "
        f"aws ec2 get-console-output --region {region} --instance-id {instance_id} --latest --output text "
        f"| grep -A3 CK8S-GPU-BOOT-FAILED, or /var/log/ck8s-gpu-*.log through SSM"
    )


class ControlPlane(pulumi.ComponentResource):
    """Outputs: `instances`, `gates` (one ApiReady per instance), `ready` (the last gate)."""

    def __init__(
        self,
        name: str,
        settings: Settings,
        *,
        ami: pulumi.Input[str],
        subnet_ids: Sequence[pulumi.Input[str]],
        security_group_ids: Sequence[pulumi.Input[str]],
        instance_profile: aws.iam.InstanceProfile,
        grants: Sequence[pulumi.Resource],
        bootstrap_user_data: pulumi.Input[str],
        join_user_data: pulumi.Input[str],
        target_group_arn: pulumi.Input[str],
        listener: pulumi.Resource,
        kubeconfig: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(tokens.CONTROL_PLANE, name, None, opts)
        cp = settings.control_plane
        self.instances: list[aws.ec2.Instance] = []
        self.gates: list[ApiReady] = []
        previous: list[pulumi.Resource] = []  # the gate before this one
        first: list[pulumi.Resource] = []  # instance 0: launched before every other control plane
        for i, subnet in enumerate(placement(cp.count, len(subnet_ids))):
            node_name = f"{settings.cluster_name}-cp-{i}"
            tags = node_tags(settings, "control-plane", node_name)
            instance = aws.ec2.Instance(
                f"{name}-{i}",
                ami=ami,
                instance_type=cp.instance_type,
                subnet_id=subnet_ids[subnet],
                vpc_security_group_ids=list(security_group_ids),
                iam_instance_profile=instance_profile.id,  # an instance profile's id is its name
                user_data=bootstrap_user_data if i == 0 else join_user_data,
                metadata_options=aws.ec2.InstanceMetadataOptionsArgs(**IMDS),
                root_block_device=aws.ec2.InstanceRootBlockDeviceArgs(**root_volume(cp.root_volume_gib), tags=tags),
                disable_api_termination=settings.protection.protect,
                tags=tags,
                opts=state_opts(
                    settings,
                    pulumi.ResourceOptions(
                        parent=self, depends_on=[*grants, *first], ignore_changes=["ami", "userData"]
                    ),
                ),
            )
            attachment = aws.lb.TargetGroupAttachment(
                f"{name}-{i}-api",
                target_group_arn=target_group_arn,
                target_id=instance.id,
                port=API_PORT,
                opts=pulumi.ResourceOptions(parent=self),
            )
            gate = ApiReady(
                f"{name}-{i}-ready",
                kubeconfig,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[instance, attachment, listener, *previous]),
                timeout_seconds=READY_TIMEOUT_SECONDS,
                min_ready_nodes=i + 1,
                node_selector=CONTROL_PLANE_LABEL,
                waiting_for=pulumi.Output.all(instance.id, instance.private_dns).apply(
                    lambda v, n=node_name: waiting_for(n, v[0], v[1], settings.region or "")
                ),
            )
            self.instances.append(instance)
            self.gates.append(gate)
            previous = [gate]
            first = first or [instance]
        self.ready: ApiReady = self.gates[-1]
        self.register_outputs({"privateIps": [inst.private_ip for inst in self.instances]})

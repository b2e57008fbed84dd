"""A GPU node pool: one launch template + one Auto Scaling group over the private subnets.

Nodes join on their own at boot (the script mints a single-use token), so the group can replace
or add nodes at any time, long after the cluster was made. A launch-template change (new AMI,
new script) applies to nodes launched afterwards; running GPU nodes are never replaced by Pulumi
(no instance refresh: they may be running jobs): a track change upgrades them in place, drained
first (components/upgrade, ADR 0015).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

import pulumi
import pulumi_aws as aws

from ..settings.model import NodePoolSettings, Settings
from ..tables import tokens
from .hardening import IMDS, ROOT_DEVICE, root_volume
from .inventory import launch_template_name
from .launch import HEALTH_CHECK_TYPE, SHUTDOWN_BEHAVIOR, interface_args, launch_plan, placement_args
from .tags import node_tags

# Spot: the allocation strategy AWS recommends for interruption-sensitive fleets.
SPOT_ALLOCATION = "price-capacity-optimized"
CAPACITY_TIMEOUT = "20m"  # GPU capacity can be slow to come: fail `pulumi up` clearly after this


def encode_user_data(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class GpuNodePool(pulumi.ComponentResource):
    """Outputs: `launch_template`, `group`, `placement_group` (or None). `subnet_ids`: the subnets
    it may launch in (one, for a pool in one zone); EFA interfaces carry `security_group_ids`
    plus `efa_security_group_ids` (components/aws/launch.py says what each launch argument is)."""

    def __init__(
        self,
        name: str,
        settings: Settings,
        pool: NodePoolSettings,
        *,
        ami: pulumi.Input[str],
        subnet_ids: Sequence[pulumi.Input[str]],
        security_group_ids: Sequence[pulumi.Input[str]],
        efa_security_group_ids: Sequence[pulumi.Input[str]] = (),
        instance_profile: aws.iam.InstanceProfile,
        grants: Sequence[pulumi.Resource],
        user_data: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """Nothing here waits for the control planes (docs/adr/0019): a new node's join loop waits,
        and the mint document refuses a worker whose minor is above a control plane's."""
        super().__init__(tokens.GPU_NODE_POOL, name, None, opts)
        tags = node_tags(settings, "worker", f"{settings.cluster_name}-{pool.name}", pool=pool.name)
        plan = launch_plan(pool)
        # Several interfaces: each carries the groups; the template's own list must stay empty (RunInstances).
        interfaces = [aws.ec2.LaunchTemplateNetworkInterfaceArgs(**kw) for kw in interface_args(
            plan, [*security_group_ids, *efa_security_group_ids])]
        reservation = None
        if plan.reservation_target is not None:
            reservation = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                    **plan.reservation_target))
        market = (aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type=plan.market_type)
                  if plan.market_type is not None else None)
        self.placement_group: aws.ec2.PlacementGroup | None = None
        group_name: pulumi.Input[str] | None = plan.placement.group_name if plan.placement else None
        if plan.placement is not None and group_name is None:
            self.placement_group = aws.ec2.PlacementGroup(
                f"{name}-pg", **placement_args(plan.placement), tags=tags,
                opts=pulumi.ResourceOptions(parent=self))
        # `<name>-lt` unless its auto-name would not fit: then hashed (ADR 0042), and aliased to the
        # readable name so a stack registered under it keeps its template.
        lt_name, readable_lt = launch_template_name(settings.cluster_name, pool.name), f"{name}-lt"
        self.launch_template = aws.ec2.LaunchTemplate(
            lt_name,
            image_id=ami,
            instance_type=pool.instance_type,
            iam_instance_profile=aws.ec2.LaunchTemplateIamInstanceProfileArgs(arn=instance_profile.arn),
            vpc_security_group_ids=None if interfaces else list(security_group_ids),
            network_interfaces=interfaces or None,
            capacity_reservation_specification=reservation,
            instance_market_options=market,
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(**IMDS),
            # A failed first boot powers the node off; this ends it for its group to replace.
            instance_initiated_shutdown_behavior=SHUTDOWN_BEHAVIOR,
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=ROOT_DEVICE,
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(**root_volume(pool.root_volume_gib)),
                )
            ],
            user_data=pulumi.Output.from_input(user_data).apply(encode_user_data),
            # Provider default tags do not reach instances a group launches: spell them out.
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=tags)
                for kind in ("instance", "volume", "network-interface")
            ],
            update_default_version=True,
            tags=tags,
            opts=pulumi.ResourceOptions(
                parent=self, aliases=[pulumi.Alias(name=readable_lt)] if lt_name != readable_lt else None),
        )
        version = self.launch_template.latest_version.apply(str)
        spec = aws.autoscaling.GroupLaunchTemplateArgs(id=self.launch_template.id, version=version)
        spot = pool.capacity_type == "spot"
        mixed = None
        if spot:
            mixed = aws.autoscaling.GroupMixedInstancesPolicyArgs(
                instances_distribution=aws.autoscaling.GroupMixedInstancesPolicyInstancesDistributionArgs(
                    on_demand_base_capacity=0,
                    on_demand_percentage_above_base_capacity=0,
                    spot_allocation_strategy=SPOT_ALLOCATION,
                ),
                launch_template=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateArgs(
                    launch_template_specification=aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateLaunchTemplateSpecificationArgs(
                        launch_template_id=self.launch_template.id, version=version
                    ),
                    overrides=[
                        aws.autoscaling.GroupMixedInstancesPolicyLaunchTemplateOverrideArgs(
                            instance_type=pool.instance_type
                        )
                    ],
                ),
            )
        self.group = aws.autoscaling.Group(
            f"{name}-asg",
            # An autoscaled pool's group holds its floor (autoscaling.minSize); Karpenter's own
            # nodes for queued work come and go beside it, outside the group.
            min_size=pool.start_size if pool.autoscaling is not None else pool.min_size,
            max_size=pool.start_size if pool.autoscaling is not None else pool.max_size,
            desired_capacity=pool.start_size,
            vpc_zone_identifiers=list(subnet_ids),
            launch_template=None if spot else spec,
            mixed_instances_policy=mixed,
            capacity_rebalance=spot,
            health_check_type=HEALTH_CHECK_TYPE,
            # The group's id IS its name (terraform-provider-aws ec2_placement_group.go: d.SetId(name)).
            placement_group=self.placement_group.id if self.placement_group is not None else group_name,
            wait_for_capacity_timeout=plan.wait_for_capacity_timeout or CAPACITY_TIMEOUT,
            tags=[
                aws.autoscaling.GroupTagArgs(key=k, value=v, propagate_at_launch=False)
                for k, v in sorted(tags.items())
            ],
            # An autoscaler owns the desired capacity: `up` must not scale the pool back.
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(grants),
                                        ignore_changes=["desiredCapacity"] if pool.ignore_scaling_changes else None),
        )
        self.register_outputs({"group": self.group.name, "launchTemplate": self.launch_template.id,
                               "placementGroup": self.placement_group.id if self.placement_group else group_name})

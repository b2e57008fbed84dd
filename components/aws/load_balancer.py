"""The API load balancer: an NLB on 6443 in front of the control planes, internal or internet-facing.

Its DNS name is the cluster's API endpoint (in the kubeconfig and every API server certificate's
SANs), so it is state-bearing: protected by settings, with deletion protection to match.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_aws as aws

from ..settings.model import Settings
from ..tables import tokens
from .inventory import api_lb_name
from .kubeconfig import API_PORT
from .protection import state_opts
from .tags import named


class ApiLoadBalancer(pulumi.ComponentResource):
    """Outputs: `dns_name`, `target_group_arn`, `listener` (the resource targets wait for)."""

    def __init__(
        self,
        name: str,
        settings: Settings,
        vpc_id: pulumi.Input[str],
        private_subnet_ids: Sequence[pulumi.Input[str]],
        public_subnet_ids: Sequence[pulumi.Input[str]],
        security_group_id: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(tokens.API_LOAD_BALANCER, name, None, opts)
        cluster = settings.cluster_name
        internal = settings.control_plane.api_load_balancer == "internal"
        subnets = private_subnet_ids if internal else public_subnet_ids
        if not subnets:
            raise ValueError(
                "settings.network.existing.publicSubnetIds: an internet-facing API load balancer needs public subnets"
            )
        child = pulumi.ResourceOptions(parent=self)
        # Explicit names: pulumi-aws would auto-name the NLB up to 255 chars (AWS allows 32) and the
        # target group's autoname overflows 32 for longer cluster names. A named resource cannot be
        # created before its old copy is gone, hence delete_before_replace.
        aws_name = api_lb_name(cluster)
        named_child = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(delete_before_replace=True))
        lb = aws.lb.LoadBalancer(
            f"{name}-nlb",
            name=aws_name,
            load_balancer_type="network",
            internal=internal,
            subnets=list(subnets),
            security_groups=[security_group_id],
            enable_cross_zone_load_balancing=True,
            enable_deletion_protection=settings.protection.protect,
            tags=named(aws_name),
            opts=state_opts(settings, named_child),
        )
        tg = aws.lb.TargetGroup(
            f"{name}-tg",
            name=aws_name,  # ELBv2 allows a load balancer and a target group the same name
            port=API_PORT,
            protocol="TCP",
            target_type="instance",
            vpc_id=vpc_id,
            deregistration_delay="30",
            health_check=aws.lb.TargetGroupHealthCheckArgs(
                protocol="TCP", port=str(API_PORT), interval=10, healthy_threshold=2, unhealthy_threshold=2
            ),
            tags=named(aws_name),
            opts=named_child,
        )
        self.listener = aws.lb.Listener(
            f"{name}-listener",
            load_balancer_arn=lb.arn,
            port=API_PORT,
            protocol="TCP",
            default_actions=[aws.lb.ListenerDefaultActionArgs(type="forward", target_group_arn=tg.arn)],
            opts=child,
        )
        self.dns_name: pulumi.Output[str] = lb.dns_name
        self.target_group_arn: pulumi.Output[str] = tg.arn
        self.register_outputs({"dnsName": lb.dns_name})

"""Resource options for what a disaster-recovery rebuild must not lose.

State-bearing resources are: the cluster CA and client CA (every kubeconfig trusts them), the
Secrets Manager secrets (join auth token, CA keys), the control-plane instances (etcd lives on
their root volumes), the API load balancer (its DNS name is the endpoint every client uses) and
a VPC this project created. `protection.protect` makes Pulumi refuse to delete or replace them;
`protection.retainOnDelete` leaves the cloud object behind when Pulumi does delete it.
"""

from __future__ import annotations

import pulumi

from ..settings.model import Settings


def state_opts(settings: Settings, opts: pulumi.ResourceOptions | None = None) -> pulumi.ResourceOptions:
    """`opts` plus the stack's protection flags."""
    flags = pulumi.ResourceOptions(
        protect=settings.protection.protect, retain_on_delete=settings.protection.retain_on_delete
    )
    return pulumi.ResourceOptions.merge(opts, flags)

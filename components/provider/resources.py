"""GpuAddons and GpuCluster as the component provider constructs them for any Pulumi language.

Each is the Python API's component (components/api.py: same type token, same children, same
validation) taking the schema's inputs (args.py) instead of the dataclasses. The class names are
the schema's resource names (`ck8s-gpu:index:<class>`); the annotated outputs below are the
schema's outputs, with the string after each as its description (so no `from __future__ import
annotations` here either).
"""

from typing import Any

import pulumi

from .. import api
from .args import GpuAddonsArgs, GpuClusterArgs
from .mapping import addons_args, cluster_args


class GpuAddons(api.GpuAddons):
    """The GPU add-ons (GPU Operator, NVIDIA DRA driver, KAI Scheduler with its queues, monitoring, as
    the settings choose) and the DRA smoke test, on a Kubernetes cluster you already have."""

    kubeconfig: pulumi.Output[str]
    """The admin kubeconfig of the cluster (a secret)."""
    addons: pulumi.Output[list[str]]
    """The add-ons installed, in install order."""
    smoke_report: pulumi.Output[Any]
    """The smoke test's CTRF report (`{"status": "disabled"}` when it is off)."""

    def __init__(self, name: str, args: GpuAddonsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, addons_args(args), opts)


class GpuCluster(api.GpuCluster):
    """Canonical Kubernetes on AWS (control planes, GPU node pools, load balancer, IAM, a VPC unless
    you give yours) with the GPU add-ons and the DRA smoke test."""

    kubeconfig: pulumi.Output[str]
    """The admin kubeconfig of the cluster (a secret)."""
    addons: pulumi.Output[list[str]]
    """The add-ons installed, in install order."""
    smoke_report: pulumi.Output[Any]
    """The smoke test's CTRF report (`{"status": "disabled"}` when it is off)."""

    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(name, cluster_args(args), opts)


COMPONENTS: tuple[type[api.GpuAddons] | type[api.GpuCluster], ...] = (GpuAddons, GpuCluster)

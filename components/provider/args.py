"""The components' inputs as every Pulumi language sees them: the types the provider's schema is
inferred from (docs/components.md says the same of the Python API's dataclasses in components/api.py).

Pulumi's Python component analyzer (pulumi/provider/experimental/analyzer.py of the pinned SDK)
reads these at run time: TypedDicts become schema object types (`NotRequired` = optional), Enums
schema enums, and the string right after each field its description. It reads annotations with
`inspect.get_annotations`, so this module must keep real annotations: no `from __future__ import
annotations` here. Field names are the Python API's (snake_case); the schema camelCases them.
Defaults are the Python API's: components/provider/schema.py appends each one to its description.
"""

from collections.abc import Sequence
from enum import Enum
from typing import Any, NotRequired, TypedDict

import pulumi


class Driver(Enum):
    """Who installs the NVIDIA kernel driver on the GPU nodes (docs/adr/0018)."""

    Operator = "operator"
    """The GPU Operator's driver container compiles it on each node."""
    Precompiled = "precompiled"
    """The GPU Operator's driver container ships it built for the node's kernel."""
    Host = "host"
    """The node image has it already (a GPU node image of images/)."""


class Scheduler(Enum):
    """The scheduler that places the smoke test's pods."""

    Kai = "kai"
    """NVIDIA KAI Scheduler, in its smoke-test queue."""
    Default = "default"
    """The cluster's kube-scheduler (a cluster without KAI, such as simulated GPU nodes)."""


class ControlPlaneCount(Enum):
    """How many control-plane nodes run etcd and the API server."""

    One = 1
    """A single control plane: no quorum to survive its loss."""
    Three = 3
    """Three control planes: an etcd quorum that survives the loss of one."""


class GpuPool(TypedDict):
    """GPU nodes of one instance type. On an existing cluster `nodes` is how many already joined;
    on AWS it is the Auto Scaling group's desired size, between `minNodes` and `maxNodes`."""

    name: str
    """The pool's name, unique in the cluster (node labels and AWS names carry it)."""
    instance_type: str
    """The EC2 instance type of the pool's nodes (e.g. `g6.xlarge`)."""
    nodes: NotRequired[int]
    """On AWS the group's desired size; on your cluster how many nodes of the pool exist."""
    min_nodes: NotRequired[int]
    """AWS: the group's minimum size (default: `nodes`)."""
    max_nodes: NotRequired[int]
    """AWS: the group's maximum size (default: `nodes`)."""
    labels: NotRequired[dict[str, str]]
    """Kubernetes labels on every node of the pool."""
    ami: NotRequired[str]
    """AWS: an AMI id or `ssm:` parameter of a GPU node image (images/); unset: Canonical's
    Ubuntu image."""


class SmokeTest(TypedDict):
    """The DRA smoke test `pulumi up` waits for: `gpus` single-GPU pods that must each get a distinct
    GPU through DRA; `up` fails naming the broken hop (docs/architecture.md)."""

    enabled: NotRequired[bool]
    """`false` turns the smoke test off (its report is then `{"status": "disabled"}`)."""
    gpus: NotRequired[int]
    """How many single-GPU pods, each on a distinct GPU."""
    scheduler: NotRequired[Scheduler]
    """The scheduler that places the pods."""
    timeout_seconds: NotRequired[int]
    """How long `pulumi up` waits for the pods, in seconds."""


class GpuAddonsArgs(TypedDict):
    """Inputs of GpuAddons. `settings` takes any further stack setting (docs/addons.md)."""

    kubeconfig: pulumi.Input[str]
    """The admin kubeconfig of your cluster; kept a secret."""
    pools: Sequence[GpuPool]
    """The GPU nodes that already joined the cluster, by instance type."""
    kubernetes_track: NotRequired[str]
    """The k8s snap track the cluster runs; it decides the DRA API version."""
    driver: NotRequired[Driver]
    """Who installs the NVIDIA driver."""
    smoke_test: NotRequired[SmokeTest]
    """The DRA smoke test; `enabled: false` turns it off."""
    simulated_gpus: NotRequired[bool]
    """The GPU nodes are simulated (no kubelet, published ResourceSlices: CI's local control plane);
    the add-ons that need real GPUs or the internet are left out."""
    environment: NotRequired[str]
    """The environment name in resource names and tags."""
    settings: NotRequired[dict[str, Any]]
    """Further stack settings (camelCase, docs/addons.md), merged over what the other inputs say."""


class GpuClusterArgs(TypedDict):
    """Inputs of GpuCluster. `vpcId` + `privateSubnetIds` (+ `publicSubnetIds` for an
    internet-facing API) place it in your VPC; without them it gets its own."""

    region: str
    """The AWS region."""
    pools: Sequence[GpuPool]
    """The GPU node pools (one Auto Scaling group each)."""
    control_planes: NotRequired[ControlPlaneCount]
    """How many control-plane nodes: 3 for an etcd quorum that survives the loss of one."""
    vpc_id: NotRequired[str]
    """Your VPC; unset: a new VPC."""
    private_subnet_ids: NotRequired[Sequence[str]]
    """Private subnets of your VPC (two at least) for the nodes."""
    public_subnet_ids: NotRequired[Sequence[str]]
    """Public subnets of your VPC, for an internet-facing API load balancer."""
    api_allow_list: NotRequired[Sequence[str]]
    """CIDRs that may reach the Kubernetes API (an internet-facing load balancer)."""
    kubernetes_track: NotRequired[str]
    """The k8s snap track the cluster runs; it decides the DRA API version."""
    driver: NotRequired[Driver]
    """Who installs the NVIDIA driver."""
    smoke_test: NotRequired[SmokeTest]
    """The DRA smoke test; `enabled: false` turns it off."""
    environment: NotRequired[str]
    """The environment name in resource names and tags."""
    production: NotRequired[bool]
    """The production guardrails apply (docs/policies.md)."""
    tags: NotRequired[dict[str, str]]
    """Tags on every AWS resource."""
    settings: NotRequired[dict[str, Any]]
    """Further stack settings (camelCase, docs/addons.md), merged over what the other inputs say."""

"""Karpenter, the autoscaler of autoscaled pools (`nodePools[].autoscaling`; ADR 0049,
docs/autoscaling.md): launches a pool's EC2 instances when pending pods' DRA claims need its GPUs
and removes them once idle. On by default on aws exactly when a pool is autoscaled.

Chart `karpenter` 1.15.0 (oci://public.ecr.aws/karpenter). Values keys read from
github.com/aws/karpenter-provider-aws v1.15.0 charts/karpenter (values.yaml, templates/
deployment.yaml, _helpers.tpl); in that module the chart still carries 1.14.1 in Chart.yaml and
values.yaml (image tag and digest): the published 1.15.0 chart is bumped at release. So the image
tag is set here, to the release CI runs (tools/mod/karpenter), never left to the chart.

- `settings.awsFeatureGates.draNVIDIAGPU: true`: the provider then models the NVIDIA GPU devices of
  each instance type (pkg/providers/nvidiadra) and the chart resolves ignoreDRARequests to false
  (_helpers.tpl: either AWS DRA gate forces it off); without it Karpenter ignores DRA claims and
  never scales for a GPU claim (pkg/operator/options IGNORE_DRA_REQUESTS defaults to true).
- `settings.clusterEndpoint`: set, so the provider never calls eks:DescribeCluster (operator.go
  ResolveClusterEndpoint); the Custom AMI family the classes use never reads it (amifamily/custom.go).
- Runs on the control planes, on the host network: its AWS credentials are the control-plane
  instance role's (components/aws/karpenter.py controller_policy; ADR 0049 says why not a role of
  its own), reached over IMDSv2 with the hop limit of 1 every node has.

On an existing cluster whose nodes are EC2 instances (`settings.existingAws`) it is on by default
exactly when a pool is autoscaled, and runs the same way: on the user's control planes, on the host
network, so its AWS credentials are THEIR instance role's, over IMDS (the AWS SDK's default chain).
The user attaches the policy `ck8s-gpu plan` writes (iam/karpenter-controller-policy.json,
components/aws/karpenter.py existing_controller_policy) to that role; the instance metadata of those
control planes must answer a host-network pod (IMDSv2's default hop limit of 1 does). Chosen over
static keys in a Secret (a credential to rotate and store) and over IRSA (a public OIDC issuer the
cluster may not publish), as on aws. `clusterEndpoint` is `existingAws.clusterEndpoint`.
"""

from __future__ import annotations

from typing import Any

from ..settings.model import Settings
from .base import Addon, AddonContext, Default
from .image_refs import Entry, ImageRef, split_repository

NAME = "karpenter"
NAMESPACE = "karpenter"
VERSION = "1.15.0"  # the controller image the release runs: the chart pin's (components/tables/pins.py)
CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"
# k8s-snap taints control planes only when asked (bootstrap config control-plane-taints); tolerate
# the kubeadm-style key either way so the controller lands there when it is set.
CONTROL_PLANE_TAINT = {"key": CONTROL_PLANE_LABEL, "operator": "Exists", "effect": "NoSchedule"}
# The in-cluster API: never used to bootstrap a node (Custom family), only to skip the EKS lookup.
IN_CLUSTER_ENDPOINT = "https://kubernetes.default.svc"


def autoscaled(settings: Settings) -> bool:
    return any(p.autoscaling is not None for p in settings.node_pools)


def cluster_endpoint(settings: Settings) -> str:
    """settings.clusterEndpoint: an existing cluster's own (`existingAws`), else the in-cluster API."""
    e = settings.existing_aws
    return e.cluster_endpoint if settings.platform == "existing" and e is not None else IN_CLUSTER_ENDPOINT


def on_existing_aws(settings: Settings) -> bool:
    """An existing cluster on AWS that autoscales: a pool is autoscaled and existingAws says how nodes join."""
    return settings.platform == "existing" and settings.existing_aws is not None and autoscaled(settings)


def values(ctx: AddonContext) -> dict[str, Any]:
    s = ctx.settings
    return {
        "replicas": 2 if s.control_plane.count > 1 else 1,
        "hostNetwork": True,
        "dnsPolicy": "Default",  # the VPC's resolver: the AWS APIs, not cluster DNS
        "nodeSelector": {"kubernetes.io/os": "linux", CONTROL_PLANE_LABEL: ""},
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, CONTROL_PLANE_TAINT],
        "controller": {"image": {"repository": _REPOSITORY, "tag": VERSION, "digest": ""}},
        "settings": {
            "clusterName": s.cluster_name,
            "clusterEndpoint": cluster_endpoint(s),
            # No internet, no pricing API: the provider then prices from its built-in table.
            "isolatedVPC": s.offline,
            "awsFeatureGates": {"draNVIDIAGPU": True},
        },
    }


def _check(settings: Settings) -> tuple[str, ...]:
    if not autoscaled(settings):
        return ("no node pool is autoscaled (nodePools[].autoscaling): Karpenter would launch nothing",)
    return ()


def _default(settings: Settings) -> Default:
    """on when a node pool is autoscaled"""
    return "on" if autoscaled(settings) else "off"


def _existing_default(settings: Settings) -> Default:
    """on when a node pool is autoscaled and `existingAws` says how its nodes join"""
    return "on" if on_existing_aws(settings) else "off"


# --- Images: karpenter 1.15.0 -------------------------------------------------------------------
# templates/deployment.yaml: `<controller.image.repository>:<tag>[@<digest>]`; the tag is set above.
_REPOSITORY = "public.ecr.aws/karpenter/controller"
_REGISTRY, _REPO = split_repository(_REPOSITORY)
IMAGES: tuple[Entry, ...] = (
    Entry(NAME, "controller",
          ImageRef(_REGISTRY, _REPO, VERSION, "aws/karpenter-provider-aws v1.15.0 charts/karpenter/values.yaml "
                   "controller.image (repository); tag: components/addons/karpenter.py VERSION"),
          keys=("controller.image.repository", "controller.image.tag"),
          mirror=(("controller.image.repository", _REPO),)),
)

ADDON = Addon(
    name=NAME,
    settings_key="karpenter",
    description="Karpenter: launches autoscaled pools' GPU nodes for pending DRA claims, removes them idle",
    namespace=NAMESPACE,
    # aws launches instances that join by themselves; an existing cluster on AWS says how theirs
    # join (existingAws); settings refuse autoscaling on kind and local.
    platform_defaults={"aws": _default, "existing": _existing_default, "kind": "off", "local": "off"},
    # Host network for the node's IMDS (templates/deployment.yaml hostNetwork): baseline forbids it.
    pod_security="privileged",
    values=values,
    chart_pin=NAME,
    images=IMAGES,
    timeout_seconds=5 * 60,
    # GPU nodes for queued work come from it: the smoke test's own claims wait on it.
    on_gpu_path=True,
    check=_check,
)

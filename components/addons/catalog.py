"""The add-on catalog: every add-on, and which are on by default on each platform.

`settings.gpuStack.addons.<x>.enabled` wins; `null` takes the platform default below. `auto`
means "on exactly when its needs are met" (see graph.select), so e.g. the queues install wherever
KAI's CRDs are, and the observability chart wherever Prometheus Operator CRDs are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..settings.model import Settings
from . import (
    aws_cloud_controller_manager,
    dra_driver,
    efa_device_plugin,
    fake_gpu_operator,
    gang_gate,
    gpu_operator,
    inference_gateway,
    kai_queues,
    kai_scheduler,
    karpenter,
    karpenter_nodepools,
    keda,
    kube_prometheus_stack,
    kuberay_admission,
    kuberay_operator,
    observability,
    velero,
)
from .base import PLATFORMS as PLATFORMS
from .base import Addon, Capability, Default, DefaultRule

# Install order for humans (docs, plan); the real order comes from the dependency graph.
ADDONS: tuple[Addon, ...] = (
    aws_cloud_controller_manager.ADDON,
    gpu_operator.ADDON,
    dra_driver.ADDON,
    efa_device_plugin.ADDON,
    karpenter.ADDON,
    karpenter_nodepools.ADDON,
    gang_gate.ADDON,
    fake_gpu_operator.ADDON,
    kai_scheduler.ADDON,
    kai_queues.ADDON,
    kuberay_operator.ADDON,
    kuberay_admission.ADDON,
    keda.ADDON,
    inference_gateway.ADDON,
    kube_prometheus_stack.ADDON,
    observability.ADDON,
    velero.ADDON,
)
BY_NAME: dict[str, Addon] = {a.name: a for a in ADDONS}

# Rows: add-on; columns: platform; each add-on module declares its own row (`platform_defaults`).
# `local` (KWOK nodes, no internet) installs only this repository's charts, and only when their
# CRDs are present.
PLATFORM_DEFAULTS: dict[str, Mapping[str, DefaultRule]] = {a.name: a.platform_defaults for a in ADDONS}

# Add-ons whose values are completed by the program's wiring (AddonSet `extra_values`), with why
# an AddonSet without them would install something broken (None: the stack brings its own).
WIRED_VALUES: dict[str, Callable[[Settings], str | None]] = {
    a.name: a.wired_values_problem for a in ADDONS if a.wired_values_problem is not None}

# What each platform's cluster brings by itself. `local`: a test publisher writes the
# ResourceSlices of driver gpu.nvidia.com for KWOK nodes (there is no driver at all).
PLATFORM_CAPABILITIES: dict[str, tuple[Capability, ...]] = {
    "aws": (),
    "existing": (),
    "kind": (),
    "local": ("gpu-driver", "dra-gpus"),
}

# Said plainly in docs/addons.md: what each platform leaves out, and why.
LEFT_OUT: dict[str, str] = {
    "aws": "fake-gpu-operator (real GPUs). aws-efa-k8s-device-plugin without an EFA pool. karpenter and "
           "karpenter-nodepools without an autoscaled pool. gang-gate unless enabled (it runs a site-built "
           "image). velero without `backup:` (with it, the program also creates the off-region bucket, key and IAM "
           "user Velero writes with).",
    "existing": "kube-prometheus-stack (declare `clusterProvides: [monitoring-crds]` to use the "
                "cluster's own Prometheus Operator, or enable it); fake-gpu-operator; velero; "
                "aws-efa-k8s-device-plugin (enable it where nodes have EFA). karpenter and "
                "karpenter-nodepools unless a pool is autoscaled and `existingAws` says how an EC2 "
                "instance joins the cluster (its nodes must be on AWS; Karpenter then runs on the "
                "cluster's control planes with their instance role, and `plan` writes the IAM policy "
                "that role needs). gang-gate (aws only).",
    "kind": "GPU Operator and DRA driver (no NVIDIA hardware: fake-gpu-operator simulates the GPUs "
            "with the same DeviceClass and driver name); velero; aws-efa-k8s-device-plugin (no "
            "EFA).",
    "local": "every chart fetched from the internet (GPU Operator, DRA driver, KAI, "
             "fake-gpu-operator, kube-prometheus-stack, EFA device plugin): KWOK nodes run no pods and "
             "the machine has no registry access. kai-queues and observability install only when "
             "their CRDs are declared present (`clusterProvides`).",
}


def platform_default(addon: str, settings: Settings) -> Default:
    rule = PLATFORM_DEFAULTS[addon][settings.platform]
    return rule(settings) if callable(rule) else rule

"""Settings rules: a pool's MIG layout (issue 43, docs/sharing.md). The profile table and the fit
of a layout on one GPU are components/tables/mig_profiles.py's; these say where a layout can be
applied at all."""

from __future__ import annotations

from collections.abc import Iterator

from ...tables.labels import MIG_CONFIG_LABEL
from ...tables.mig_profiles import MIG_PROFILES, layout_problem, named_layout
from ..facts import pool_gpus
from ..model import NodePoolSettings, Settings
from ..problems import ROOT, Problem


def _configs(gpu: str) -> str:
    return ", ".join(["all-disabled", "all-balanced", *(f"all-{p.replace('+', '.')}" for p in MIG_PROFILES[gpu])])


def _layout(path: str, p: NodePoolSettings) -> Iterator[Problem]:
    m = p.mig
    assert m is not None
    if (m.config is None) == (m.devices is None):
        yield path, ("set exactly one of config (a MIG manager config, e.g. all-1g.10gb) or devices (profile: "
                     "instances on each GPU)")
        return
    facts = pool_gpus(p)
    if facts is None:
        return  # the pool's own rule names a type without known GPUs
    gpu = facts.product_name
    if gpu not in MIG_PROFILES:
        yield path, (f"the {gpu} of '{p.instance_type}' has no MIG (MIG GPUs: {', '.join(MIG_PROFILES)}); for small "
                     "work on it use time-slicing or MPS (smokeTest.sharing, docs/sharing.md)")
        return
    if m.config == "all-enabled":
        # dra-driver-nvidia-gpu 95932046 site/content/docs/guides/gpu-allocation/mig.md: a GPU in MIG
        # mode without partitions is stranded (the driver publishes neither it nor a MIG device).
        yield (f"{path}.config", "all-enabled turns MIG mode on and creates no instance: the DRA driver then publishes "
                                 "nothing for those GPUs; name a config or devices that create instances")
    elif m.config is not None and named_layout(gpu, m.config) is None:
        yield f"{path}.config", f"'{m.config}' is not a MIG manager config for the {gpu}: {_configs(gpu)}"
    elif m.devices is not None and (why := layout_problem(gpu, dict(m.devices))) is not None:
        yield f"{path}.devices", why


def _where(s: Settings, path: str, p: NodePoolSettings) -> Iterator[Problem]:
    """Who cuts the pool's GPUs: the GPU Operator's MIG manager on aws; on local the simulated
    driver of the kubelet pools (tools/mod/simgpu), which publishes the layout as cut."""
    if s.platform == "local":
        if p.name not in s.local.kubelet_pools:
            yield path, (f"'{p.name}' is a KWOK pool: its slices come from the test publisher with whole GPUs "
                         "(tests/helpers/node_tier.py start_kwok_pool); only a kubelet pool (local.kubeletPools) "
                         "runs the simulated driver that publishes a MIG layout")
        return
    if s.platform == "kind":
        # run-ai/fake-gpu-operator v0.2.0 internal/dra-plugin-gpu/discovery.go publishes type gpu only.
        yield path, "kind's fake-gpu-operator publishes whole GPUs only: no node of kind can show a MIG layout"
        return
    if s.platform != "aws":
        yield path, (f"on {s.platform} this program makes no node, so none joins with the layout's label "
                     "(nvidia.com/mig.config): label the nodes yourself and leave mig out, or use aws")
        return
    if s.gpu_stack.dra_managed_by == "operator":
        # gpu-operator v26.7.0 api/nvidia/v1alpha1/gpucluster_types.go: no MIG manager under a GPUCluster.
        yield path, ("gpuStack.draManagedBy is operator: a GPUCluster deploys no MIG manager to cut the GPUs; "
                     "use draManagedBy chart")
    if s.gpu_stack.addons.gpu_operator.enabled is False:
        yield path, "needs the GPU Operator's MIG manager: gpuStack.addons.gpuOperator.enabled is false"


def _mig_layouts(s: Settings) -> Iterator[Problem]:
    for i, p in enumerate(s.node_pools):
        if MIG_CONFIG_LABEL in p.labels:
            # With a layout anywhere the MIG manager reads this program's ConfigMap (components/facts/
            # mig.py), where a config named by hand does not exist; without one it is hardware-made.
            yield (f"{ROOT}.nodePools[{i}].labels", f"{MIG_CONFIG_LABEL} is this program's to set: name the layout "
                                                   "in nodePools[].mig (config or devices)")
        if p.mig is None:
            continue
        path = f"{ROOT}.nodePools[{i}].mig"
        yield from _layout(path, p)
        yield from _where(s, path, p)
        if p.autoscaling is not None:
            # The provider models whole GPUs only (components/settings/rules/autoscaling.py says where).
            yield path, ("an autoscaled pool: the autoscaler models whole GPUs only, so a claim for a MIG device "
                         "would never launch a node; make it a fixed pool")
        if s.gpu_stack.allocation == "device-plugin" and s.gpu_stack.mig_strategy == "none":
            yield path, ("with allocation device-plugin the device plugin advertises MIG devices only under "
                         "gpuStack.migStrategy single or mixed")

"""GPU add-ons (GPU Operator, DRA driver, KAI, monitoring) and the DRA smoke test on a cluster you
already run: the only input is its admin kubeconfig, set as a secret."""

import pulumi

from ck8s_gpu import GpuAddons, GpuAddonsArgs, GpuPool, SmokeTestArgs

config = pulumi.Config()
nodes, smoke_gpus = config.get_int("nodes"), config.get_int("smokeGpus")
gpu = GpuAddons("gpu", GpuAddonsArgs(
    kubeconfig=config.require_secret("kubeconfig"),
    pools=[GpuPool(name="gpu", instance_type=config.require("instanceType"), nodes=1 if nodes is None else nodes)],
    smoke_test=SmokeTestArgs(gpus=1 if smoke_gpus is None else smoke_gpus, scheduler=config.get("scheduler") or "kai"),
    # CI's control plane with simulated GPU nodes (no kubelet): leaves out what needs real GPUs.
    simulated_gpus=config.get_bool("simulatedGpus") or False,
))

pulumi.export("addons", gpu.addons)
pulumi.export("smokeReport", gpu.smoke_report)

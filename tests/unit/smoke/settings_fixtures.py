"""Settings for the smoke tests, written like stack files (camelCase), independent of stacks/."""

from __future__ import annotations

from typing import Any

from components.facts.cluster import cluster_facts
from components.settings.model import Settings
from components.smoke.plan import SmokePlan, smoke_plan
from components.tables import pins
from components.validate import parse as parse_settings

AWS: dict[str, Any] = {
    "platform": "aws",
    "region": "eu-north-1",
    "nodePools": [{"name": "l4", "instanceType": "g6.12xlarge", "minSize": 1, "desiredSize": 2, "maxSize": 3}],
    "smokeTest": {"gpus": 2},
}

AWS_ALL_CASES: dict[str, Any] = {
    "platform": "aws",
    "region": "eu-north-1",
    "gpuStack": {"migStrategy": "mixed"},
    "nodePools": [{"name": "h100", "instanceType": "p5.48xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1,
                   "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                              {"key": "dedicated", "value": "training", "effect": "NoExecute"}]}],
    "smokeTest": {"gpus": 4, "sharedClaim": True, "sharedNamedClaim": True, "gang": True, "mig": True,
                  "migProfile": "1g.10gb", "sharing": "timeSlicing", "timeSlicingInterval": "Long",
                  "productNamePattern": "^NVIDIA H100.*'s \\d", "minMemoryGiB": 79,  # an H100 80GB publishes 79.6 GiB
                  "registry": "mirror.internal:5000/dockerhub", "imagePullSecrets": ["mirror-pull"],
                  "timeoutSeconds": 1200, "trigger": "2026-11-30"},
}

# Every GPU MIG-partitioned: no whole-GPU case, the MIG case with a profile proves the path.
# Two pools cut by their MIG layouts (nodePools[].mig): the MIG case asks each for each of its profiles.
AWS_MIG_POOLS: dict[str, Any] = {
    "platform": "aws",
    "region": "eu-north-1",
    "nodePools": [
        {"name": "h100", "instanceType": "p5.48xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1,
         "mig": {"config": "all-balanced"}},
        {"name": "a100", "instanceType": "p4d.24xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1,
         "mig": {"devices": {"3g.20gb": 2}}},
    ],
}
AWS_MIG_ONLY: dict[str, Any] = {
    "platform": "aws",
    "region": "eu-north-1",
    "gpuStack": {"migStrategy": "single"},
    "nodePools": [{"name": "h100", "instanceType": "p5.48xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1}],
    "smokeTest": {"wholeGpu": False, "migProfile": "1g.10gb"},
}

# Two pods on one named claim, shared through MPS (the GpuConfig with every option).
AWS_MPS: dict[str, Any] = {
    "platform": "aws",
    "region": "eu-north-1",
    "nodePools": [{"name": "l4", "instanceType": "g6.12xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1}],
    "smokeTest": {"sharedNamedClaim": True, "sharing": "mps", "mpsActiveThreadPercentage": 50,
                  "mpsPinnedMemoryLimitMiB": 1024},
}

# The allReduce case on two p5.48xlarge nodes with EFA (one zone: EFA's default needs it).
AWS_ALL_REDUCE: dict[str, Any] = {
    "platform": "aws",
    "region": "eu-north-1",
    "network": {"availabilityZones": ["eu-north-1a", "eu-north-1b"]},
    "nodePools": [{"name": "h100", "instanceType": "p5.48xlarge", "minSize": 2, "desiredSize": 2, "maxSize": 2,
                   "availabilityZone": "eu-north-1a"}],
    "smokeTest": {"allReduce": {"enabled": True}},
}

# nvlinkGroup (4 GPUs of one Fabric Manager partition) and gpuHealth on one p5.48xlarge pool.
AWS_NVLINK_GROUP: dict[str, Any] = {
    "platform": "aws",
    "region": "eu-north-1",
    "gpuStack": {"nvlinkPartitions": True, "gpuHealth": True},
    "kubernetes": {"track": "1.35-classic"},
    "nodePools": [{"name": "h100", "instanceType": "p5.48xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1}],
    "smokeTest": {"gpus": 2, "nvlinkGroup": {"enabled": True, "gpus": 4}},
}

LOCAL: dict[str, Any] = {
    "platform": "local",
    "environment": "ci",
    "nodePools": [{"name": "gpu", "instanceType": "g6.12xlarge", "minSize": 2, "desiredSize": 2, "maxSize": 2}],
    "smokeTest": {"gpus": 2, "scheduler": "default", "timeoutSeconds": 300},
}

KIND: dict[str, Any] = {
    "platform": "kind",
    "environment": "preview",
    "nodePools": [{"name": "gpu", "instanceType": "g6.12xlarge", "minSize": 2, "desiredSize": 2, "maxSize": 2}],
    "kind": {"mirrorPool": "gpu"},
    "smokeTest": {"gpus": 2},
}


def settings(raw: dict[str, Any], **smoke: Any) -> Settings:
    doc = {**raw, "smokeTest": {**raw.get("smokeTest", {}), **smoke}}
    return parse_settings(doc, "test")


def plan(raw: dict[str, Any], **smoke: Any) -> SmokePlan:
    s = settings(raw, **smoke)
    return smoke_plan(s, cluster_facts(s), pins.image("smoke-test"))


# The node tier's shape for cases computeDomain and firstAvailable: a pool of simulated GB200
# (multi-node NVLink) and one of simulated H100, both kubelet pools.
LOCAL_CD_FA: dict[str, Any] = {
    "platform": "local",
    "environment": "ci",
    "nodePools": [
        {"name": "gb200", "instanceType": "p6e-gb200.36xlarge", "minSize": 2, "desiredSize": 2, "maxSize": 2},
        {"name": "h100", "instanceType": "p5.48xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1},
    ],
    "local": {"kubeletPools": ["gb200", "h100"]},
    "smokeTest": {"timeoutSeconds": 300, "computeDomain": {"enabled": True, "pool": "gb200"},
                  "firstAvailable": {"enabled": True, "preferredPool": "h100", "fallbackPool": "gb200"}},
}


# Case inference on the node tier's shape: a kubelet pool of simulated L4s, the project-built probe
# image (it carries the model server), a Prometheus on this machine's address.
PROBE_IMAGE = "ck8s-gpu.local/smoke-probe:0123456789ab@sha256:" + "ab" * 32
LOCAL_INFERENCE: dict[str, Any] = {
    "platform": "local",
    "environment": "ci",
    "nodePools": [{"name": "gpu", "instanceType": "g6.12xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1}],
    "local": {"kubeletPools": ["gpu"]},
    "smokeTest": {"scheduler": "default", "timeoutSeconds": 300, "image": PROBE_IMAGE,
                  "inference": {"enabled": True, "prometheusUrl": "http://10.1.2.3:9090"}},
}

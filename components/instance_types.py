"""GPU facts per EC2 instance type: how many GPUs, which model, how much memory per GPU.

The smoke test's expectations (devices per node, product name, minimum memory), the simulated
GPUs of the kind/local stacks and the stack validation all read this one table. Instance types
not listed here must declare their GPU facts in the node pool (`gpu:`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class GpuFacts:
    count: int
    product_name: str  # as nvidia-smi / the DRA driver's `productName` attribute report it
    # Per GPU, as the driver publishes it (NVML's framebuffer, `memory` capacity of the DRA driver's
    # devices): below the marketed size (H100 80GB: 81559 MiB = 79.6 GiB). smokeTest.minMemoryGiB is
    # held against it (components/settings/rules.py _smoke_memory).
    memory_mib: int
    architecture: str
    mig_capable: bool = False
    vcpus: int = 0

    @property
    def memory_gib(self) -> int:
        return self.memory_mib // 1024


# (family, product, MiB per GPU, architecture, MIG) and sizes as (size, GPUs, vCPUs).
_FAMILIES: tuple[tuple[str, str, int, str, bool, tuple[tuple[str, int, int], ...]], ...] = (
    ("g4dn", "Tesla T4", 15360, "Turing", False,
     (("xlarge", 1, 4), ("2xlarge", 1, 8), ("4xlarge", 1, 16), ("8xlarge", 1, 32),
      ("16xlarge", 1, 64), ("12xlarge", 4, 48), ("metal", 8, 96))),
    ("g5", "NVIDIA A10G", 23028, "Ampere", False,
     (("xlarge", 1, 4), ("2xlarge", 1, 8), ("4xlarge", 1, 16), ("8xlarge", 1, 32),
      ("16xlarge", 1, 64), ("12xlarge", 4, 48), ("24xlarge", 4, 96), ("48xlarge", 8, 192))),
    ("g6", "NVIDIA L4", 23034, "Ada Lovelace", False,
     (("xlarge", 1, 4), ("2xlarge", 1, 8), ("4xlarge", 1, 16), ("8xlarge", 1, 32),
      ("16xlarge", 1, 64), ("12xlarge", 4, 48), ("24xlarge", 4, 96), ("48xlarge", 8, 192))),
    ("g6e", "NVIDIA L40S", 46068, "Ada Lovelace", False,
     (("xlarge", 1, 4), ("2xlarge", 1, 8), ("4xlarge", 1, 16), ("8xlarge", 1, 32),
      ("16xlarge", 1, 64), ("12xlarge", 4, 48), ("24xlarge", 4, 96), ("48xlarge", 8, 192))),
    ("p4d", "NVIDIA A100-SXM4-40GB", 40960, "Ampere", True, (("24xlarge", 8, 96),)),
    ("p4de", "NVIDIA A100-SXM4-80GB", 81920, "Ampere", True, (("24xlarge", 8, 96),)),
    ("p5", "NVIDIA H100 80GB HBM3", 81559, "Hopper", True, (("4xlarge", 1, 16), ("48xlarge", 8, 192))),
    ("p5e", "NVIDIA H200", 143771, "Hopper", True, (("48xlarge", 8, 192),)),
    ("p5en", "NVIDIA H200", 143771, "Hopper", True, (("48xlarge", 8, 192),)),
    ("p6-b200", "NVIDIA B200", 183359, "Blackwell", True, (("48xlarge", 8, 192),)),
)

GPU_INSTANCE_TYPES: dict[str, GpuFacts] = {
    f"{family}.{size}": GpuFacts(count, product, mib, arch, mig, vcpus)
    for family, product, mib, arch, mig, sizes in _FAMILIES
    for size, count, vcpus in sizes
}


def gpu_facts(instance_type: str) -> GpuFacts | None:
    return GPU_INSTANCE_TYPES.get(instance_type)


Arch = Literal["amd64", "arm64"]

_FAMILY = re.compile(r"^(?P<family>[a-z]+)(?P<generation>\d+)(?P<attrs>[a-z-]*)")


def arch_for_instance_type(instance_type: str) -> Arch:
    """Graviton families carry a `g` among the attribute letters after the generation (m7g, c7gn,
    g5g, x2gd, im4gn); `a1` is the first Graviton. Everything else here is x86_64 (g6e, p5en, p6-b200)."""
    match = _FAMILY.match(instance_type.split(".")[0])
    if match is None:
        raise ValueError(f"cannot tell the CPU architecture of instance type '{instance_type}'")
    if match["family"] == "a" and match["generation"] == "1":
        return "arm64"
    attrs = match["attrs"].split("-")[0]
    return "arm64" if "g" in attrs else "amd64"

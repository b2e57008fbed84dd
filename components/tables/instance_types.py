"""GPU facts per EC2 instance type: how many GPUs, which model, how much memory per GPU, and the
network a multi-node job gets (EFA, network cards, interfaces, the GPU interconnect).

The smoke test's expectations (devices per node, product name, minimum memory), the simulated
GPUs of the kind/local stacks and the stack validation all read this one table. Instance types
not listed here must declare their GPU facts in the node pool (`gpu:`).

Network sources (AWS documentation, read 2026-12): [AC] the accelerated computing specifications,
https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html (#ac_network: bandwidth, EFA, network
cards, maximum network interfaces; #ac_summary: processor architecture); [EFA] the EFA supported
types, https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html#efa-instance-types ("one EFA per
network card"; single-card types "support only one EFA per instance"); [EFA-ACC] the layouts for
maximum bandwidth, https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html
(P5/P5e: ENA primary on card 0 device 0, EFA-only on card 0 device 1 and on cards 1-31: 32 EFA;
P6-B200: 8 EFA; P6e-GB200: EFA-only on NCIs 1, 5, 9, 13: 4 EFA at 400 Gbps). Where [EFA-ACC] has no
section of its own (P4d/P4de, P5en, g6e.24xlarge/48xlarge) the count is its general rule, one
EFA-only interface per network card, which equals the EC2 API's EfaInfo.MaximumEfaInterfaces.
Interconnect: P4d/P4de 600 GB/s and P5/P5e/P5en 900 GB/s NVSwitch (aws.amazon.com/ec2/instance-types
p4, p5), P6-B200 1800 GB/s GPU peer to peer (AWS News Blog, P6-B200 launch), P6e-GB200 multi-node
NVLink within its UltraServer (EKS user guide, ml-eks-nvidia-ultraserver). AWS documents no GPU
peer-to-peer link for the G families; their GPUs (T4, A10G, L4, L40S) have no NVLink: PCIe.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

# How a node's GPUs reach each other: NVSwitch (all-to-all NVLink inside the node), multi-node
# NVLink (an NVLink domain spanning nodes: GB200 UltraServers), PCIe only, or a single GPU.
Interconnect = Literal["nvswitch", "nvlink-multinode", "pcie", "single"]


@dataclass(frozen=True)
class NetworkFacts:
    """What AWS documents for one instance type's network ([AC], [EFA], [EFA-ACC] above)."""

    efa: bool
    network_cards: int
    max_interfaces: int
    # EFA-only interfaces a node gets in AWS's layout for maximum EFA bandwidth (0 without EFA).
    efa_interfaces: int
    bandwidth_gbps: float  # the baseline AWS lists (burstable types: the baseline)
    interconnect: Interconnect


@dataclass(frozen=True)
class GpuFacts:
    count: int
    product_name: str  # as nvidia-smi / the DRA driver's `productName` attribute report it
    # Per GPU, as the driver publishes it (NVML's framebuffer, `memory` capacity of the DRA driver's
    # devices): below the marketed size (H100 80GB: 81559 MiB = 79.6 GiB). smokeTest.minMemoryGiB is
    # held against it (components/settings/rules/smoke.py _smoke_memory).
    memory_mib: int
    architecture: str
    mig_capable: bool = False
    vcpus: int = 0
    network: NetworkFacts | None = None
    cpu_arch: Literal["amd64", "arm64"] = "amd64"

    @property
    def memory_gib(self) -> int:
        return self.memory_mib // 1024


# (family, product, MiB per GPU, architecture, MIG, interconnect of multi-GPU sizes) and sizes as
# (size, GPUs, vCPUs, EFA interfaces (0: no EFA), network cards, max interfaces, Gbps) from [AC].
_Size = tuple[str, int, int, int, int, int, float]
_FAMILIES: tuple[tuple[str, str, int, str, bool, Interconnect, tuple[_Size, ...]], ...] = (
    ("g4dn", "Tesla T4", 15360, "Turing", False, "pcie",
     (("xlarge", 1, 4, 0, 1, 3, 5), ("2xlarge", 1, 8, 0, 1, 3, 10), ("4xlarge", 1, 16, 0, 1, 3, 20),
      ("8xlarge", 1, 32, 1, 1, 4, 50), ("16xlarge", 1, 64, 1, 1, 4, 50), ("12xlarge", 4, 48, 1, 1, 8, 50),
      ("metal", 8, 96, 1, 1, 15, 100))),
    ("g5", "NVIDIA A10G", 23028, "Ampere", False, "pcie",
     (("xlarge", 1, 4, 0, 1, 4, 2.5), ("2xlarge", 1, 8, 0, 1, 4, 5), ("4xlarge", 1, 16, 0, 1, 8, 10),
      ("8xlarge", 1, 32, 1, 1, 8, 25), ("16xlarge", 1, 64, 1, 1, 8, 25), ("12xlarge", 4, 48, 1, 1, 15, 40),
      ("24xlarge", 4, 96, 1, 1, 15, 50), ("48xlarge", 8, 192, 1, 1, 7, 100))),
    ("g6", "NVIDIA L4", 23034, "Ada Lovelace", False, "pcie",
     (("xlarge", 1, 4, 0, 1, 4, 2.5), ("2xlarge", 1, 8, 0, 1, 4, 5), ("4xlarge", 1, 16, 0, 1, 8, 10),
      ("8xlarge", 1, 32, 1, 1, 8, 25), ("16xlarge", 1, 64, 1, 1, 15, 25), ("12xlarge", 4, 48, 1, 1, 8, 40),
      ("24xlarge", 4, 96, 1, 1, 15, 50), ("48xlarge", 8, 192, 1, 1, 15, 100))),
    ("g6e", "NVIDIA L40S", 46068, "Ada Lovelace", False, "pcie",
     (("xlarge", 1, 4, 0, 1, 4, 2.5), ("2xlarge", 1, 8, 0, 1, 4, 5), ("4xlarge", 1, 16, 0, 1, 8, 20),
      ("8xlarge", 1, 32, 1, 1, 8, 25), ("16xlarge", 1, 64, 1, 1, 15, 35), ("12xlarge", 4, 48, 1, 1, 10, 100),
      ("24xlarge", 4, 96, 2, 2, 20, 200), ("48xlarge", 8, 192, 4, 4, 40, 400))),
    ("p4d", "NVIDIA A100-SXM4-40GB", 40960, "Ampere", True, "nvswitch", (("24xlarge", 8, 96, 4, 4, 60, 400),)),
    ("p4de", "NVIDIA A100-SXM4-80GB", 81920, "Ampere", True, "nvswitch", (("24xlarge", 8, 96, 4, 4, 60, 400),)),
    ("p5", "NVIDIA H100 80GB HBM3", 81559, "Hopper", True, "nvswitch",
     (("4xlarge", 1, 16, 1, 1, 4, 100), ("48xlarge", 8, 192, 32, 32, 64, 3200))),
    ("p5e", "NVIDIA H200", 143771, "Hopper", True, "nvswitch", (("48xlarge", 8, 192, 32, 32, 64, 3200),)),
    ("p5en", "NVIDIA H200", 143771, "Hopper", True, "nvswitch", (("48xlarge", 8, 192, 16, 16, 64, 3200),)),
    ("p6-b200", "NVIDIA B200", 183359, "Blackwell", True, "nvswitch", (("48xlarge", 8, 192, 8, 8, 32, 3200),)),
    # NVIDIA Grace CPUs ([AC] #ac_summary: "NVIDIA Grace (arm64)"); sold only as UltraServers of 9 or
    # 18 instances (EKS user guide, ml-eks-nvidia-ultraserver). Memory per GPU: [AC]'s 185 GiB; the
    # value the driver publishes is not sourced here (the other rows are NVML's): check on a node.
    ("p6e-gb200", "NVIDIA GB200", 185 * 1024, "Blackwell", True, "nvlink-multinode",
     (("36xlarge", 4, 144, 4, 17, 39, 3200),)),
)
_ARM64_FAMILIES = frozenset({"p6e-gb200"})


def _network(count: int, interconnect: Interconnect, size: _Size) -> NetworkFacts:
    _, _, _, efa, cards, interfaces, gbps = size
    return NetworkFacts(efa=efa > 0, network_cards=cards, max_interfaces=interfaces, efa_interfaces=efa,
                        bandwidth_gbps=float(gbps), interconnect=interconnect if count > 1 else "single")


GPU_INSTANCE_TYPES: dict[str, GpuFacts] = {
    f"{family}.{size[0]}": GpuFacts(size[1], product, mib, arch, mig, size[2], _network(size[1], link, size),
                                    "arm64" if family in _ARM64_FAMILIES else "amd64")
    for family, product, mib, arch, mig, link, sizes in _FAMILIES
    for size in sizes
}


def gpu_facts(instance_type: str) -> GpuFacts | None:
    return GPU_INSTANCE_TYPES.get(instance_type)


# EC2 instance topology: the network nodes DescribeInstanceTopology returns for an instance, one per
# layer, by instance type (EC2 User Guide, "Prerequisites for Amazon EC2 topology",
# ec2-instance-topology-prerequisites.html, read 2026-12-05: "Returns 3 network nodes" and "Returns 4
# network nodes"). The AWS cloud controller manager writes one node label per node of the answer,
# topology.k8s.aws/network-node-layer-<1..N> (cloud-provider-aws pkg/providers/v1/
# well_known_labels.go LabelNetworkNodePrefix, instances_v2.go getAdditionalLabels); a type not
# listed gets no answer, so its nodes carry no such label at all.
_TOPOLOGY_3_LAYERS = (
    *(f"g6e.{s}" for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge")),
    *(f"g7e.{s}" for s in ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge")),
    "hpc6a.48xlarge", "hpc6id.32xlarge", "hpc7g.4xlarge", "hpc7g.8xlarge", "hpc7g.16xlarge", "hpc7a.12xlarge",
    "hpc7a.24xlarge", "hpc7a.48xlarge", "hpc7a.96xlarge", "hpc8a.96xlarge",
    "p3dn.24xlarge", "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge",
    "p6e-gb200.36xlarge",
    "trn1.2xlarge", "trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge", "trn2u.48xlarge",
)
_TOPOLOGY_4_LAYERS = ("p6-b200.48xlarge", "p6-b300.48xlarge")
NETWORK_TOPOLOGY_LAYERS: dict[str, int] = {**dict.fromkeys(_TOPOLOGY_3_LAYERS, 3),
                                           **dict.fromkeys(_TOPOLOGY_4_LAYERS, 4)}
NETWORK_LAYER_LABEL = re.compile(r"^topology\.k8s\.aws/network-node-layer-([1-9][0-9]*)$")


def network_topology_layers(instance_type: str) -> int:
    """How many topology.k8s.aws/network-node-layer-N labels a node of this type gets (0: none)."""
    return NETWORK_TOPOLOGY_LAYERS.get(instance_type, 0)


def network_layer(node_label: str) -> int | None:
    """N of a topology.k8s.aws/network-node-layer-N label; None for any other label."""
    m = NETWORK_LAYER_LABEL.match(node_label)
    return int(m.group(1)) if m else None


# The GPUs an NVLink fabric joins: none (PCIe only, or one GPU), the node's own (NVSwitch, or an NVLink
# bridge between GPU pairs), or GPUs on several nodes (an NVL72 rack sold as an EC2 UltraServer).
NvlinkScope = Literal["none", "single-node", "multi-node"]


@dataclass(frozen=True)
class UltraServer:
    """One EC2 UltraServer type: `instances` nodes of one instance type in one NVLink domain."""

    name: str
    instances: int


@dataclass(frozen=True)
class NvlinkDomain:
    scope: NvlinkScope
    # GPUs in the largest NVLink domain a node can be part of: the node's own for single-node, the
    # largest UltraServer's for multi-node, 0 for none.
    gpus: int
    nvswitch: bool  # all-to-all through NVSwitch chips (False: bridge pairs or no NVLink)
    ultraservers: tuple[UltraServer, ...] = ()
    source: str = ""


# UltraServer types per instance type. [US] Capacity Blocks for UltraServers,
# https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html and the EKS user guide,
# https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-nvidia-ultraserver.html: u-p6e-gb200x36 is 9
# p6e-gb200.36xlarge (36 GPUs), u-p6e-gb200x72 is 18 (72 GPUs), one NVLink domain each. P6e-GB300
# (GB300 NVL72) is not in this table: AWS's instance data for it was not available to source here.
_ULTRASERVERS: dict[str, tuple[UltraServer, ...]] = {
    "p6e-gb200.36xlarge": (UltraServer("u-p6e-gb200x36", 9), UltraServer("u-p6e-gb200x72", 18)),
}
_NVLINK_SOURCES: dict[Interconnect, str] = {
    "nvswitch": "https://aws.amazon.com/ec2/instance-types/p5/ (p4, p6: NVSwitch within the node)",
    "nvlink-multinode": "https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-nvidia-ultraserver.html",
    "pcie": "https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html (no GPU peer-to-peer link listed)",
    "single": "https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html (one GPU)",
}


def nvlink_domain(instance_type: str) -> NvlinkDomain:
    """The NVLink domain a node of `instance_type` belongs to. Types not in the table (and pools that
    declare `gpu:`) answer scope "none": nothing is assumed about a fabric no AWS page lists here."""
    facts = GPU_INSTANCE_TYPES.get(instance_type)
    if facts is None or facts.network is None:
        return NvlinkDomain("none", 0, False)
    link = facts.network.interconnect
    source = _NVLINK_SOURCES[link]
    if link == "nvlink-multinode":
        servers = _ULTRASERVERS[instance_type]
        return NvlinkDomain("multi-node", max(u.instances for u in servers) * facts.count, True, servers, source)
    if link == "nvswitch":
        return NvlinkDomain("single-node", facts.count, True, (), source)
    return NvlinkDomain("none", 0, False, (), source)


def ultraserver(instance_type: str, name: str) -> UltraServer | None:
    """The UltraServer type `name` when it is built from `instance_type`, else None."""
    return next((u for u in nvlink_domain(instance_type).ultraservers if u.name == name), None)


Arch = Literal["amd64", "arm64"]

_FAMILY = re.compile(r"^(?P<family>[a-z]+)(?P<generation>\d+)(?P<attrs>[a-z-]*)")


def arch_for_instance_type(instance_type: str) -> Arch:
    """Graviton families carry a `g` among the attribute letters after the generation (m7g, c7gn,
    g5g, x2gd, im4gn); `a1` is the first Graviton. NVIDIA Grace families name the superchip after a
    dash (p6e-gb200, p6e-gb300: [AC] "NVIDIA Grace (arm64)"). Everything else here is x86_64 (g6e,
    p5en, p6-b200)."""
    family = instance_type.split(".")[0]
    known = GPU_INSTANCE_TYPES.get(instance_type)
    if known is not None:
        return known.cpu_arch
    match = _FAMILY.match(family)
    if match is None:
        raise ValueError(f"cannot tell the CPU architecture of instance type '{instance_type}'")
    if re.search(r"-g[bh]\d+$", family):
        return "arm64"  # Grace Blackwell (gb200, gb300) or Grace Hopper (gh200)
    if match["family"] == "a" and match["generation"] == "1":
        return "arm64"
    attrs = match["attrs"].split("-")[0]
    return "arm64" if "g" in attrs else "amd64"


# GPU instance types the autoscaler at the pin cannot model: the AWS provider's DRA device templates
# (github.com/aws/karpenter-provider-aws v1.15.0 pkg/providers/drametadata/zz_generated_gpu_metadata.go,
# read through pkg/providers/nvidiadra) have no entry for them, so a pending pod's GPU claim never
# makes Karpenter launch one (components/settings/rules/autoscaling.py refuses such a pool).
# tests/integration/test_karpenter_local.py holds this set against the built autoscaler's own answer.
AUTOSCALER_UNMODELED: frozenset[str] = frozenset({"p6e-gb200.36xlarge"})

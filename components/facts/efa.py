"""EFA on a pool (pure): whether it is on, and the network interfaces AWS documents per type.

Layouts: AWS EC2 user guide "Maximize network bandwidth on accelerated instances"
(efa-acc-inst-types.html) and "Network cards" (using-eni.html#network-cards), read 2026-12:
- the primary interface (network card 0, device index 0) carries ENA: "You can't use an EFA-only
  interface as the primary network interface". Multi-card types keep it plain ENA; single-card
  types ("support only one EFA per instance") make it their one EFA (ENA + EFA device);
- every further network card gets ONE EFA-only interface at device index 0 (card 0: device index
  1): "one EFA per network card" (efa.html#efa-instance-types), so P5/P5e get 32 EFA in all, P5en 16,
  P6-B200 8, P4d 4;
- P6e-GB200 puts its 4 EFA-only interfaces on network cards 1, 5, 9 and 13 (the cards wired to a
  GPU: efa-acc-inst-types.html "P6e-GB200"), beside ENA-only cards it does not need here.
A launch template with more than one interface cannot use the template's security groups or ask
for a public address (EC2 RunInstances: groups go on each interface; AssociatePublicIpAddress only
for a single interface at device index 0): components/aws/launch_rules.py refuses those offline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..settings.model import NodePoolSettings, PlacementSettings
from ..tables.instance_types import gpu_facts

InterfaceType = Literal["interface", "efa", "efa-only"]

# P6e-GB200: the network cards that carry EFA in AWS's layout (efa-acc-inst-types.html).
_EFA_CARDS: dict[str, tuple[int, ...]] = {"p6e-gb200.36xlarge": (1, 5, 9, 13)}
# Huge pages the EFA user-space stack (libfabric's EFA provider) maps its buffers from: the
# EFA installer's default (aws-efa-installer efa_installer.sh sets vm.nr_hugepages from the
# instance memory; EKS' EFA guide gives EFA pods `hugepages-2Mi: 5120Mi`), per node: 2560 x 2 MiB
# pages = 5 GiB, enough for one EFA pod per GPU's worth of NCCL buffers.
HUGEPAGES_2MI = 2560


@dataclass(frozen=True)
class Interface:
    network_card_index: int
    device_index: int
    interface_type: InterfaceType


def efa_supported(instance_type: str) -> bool:
    facts = gpu_facts(instance_type)
    return bool(facts and facts.network and facts.network.efa)


def efa_enabled(pool: NodePoolSettings) -> bool:
    """`nodePools[].efa`, or its default: on for types with EFA and NVLink between their GPUs (the
    training types: single-card inference types gain one EFA and an open security group for little)
    when the pool may hold more than one node (EFA carries traffic between nodes) and launches in
    one zone (`availabilityZone`): EFA's OS-bypass traffic stays in one subnet (efa.html, "EFA
    limitations"), so a pool over several zones keeps ENA only rather than fail to launch."""
    if pool.efa is not None:
        return pool.efa
    facts = gpu_facts(pool.instance_type)
    if facts is None or facts.network is None or not facts.network.efa:
        return False
    training = facts.network.interconnect in ("nvswitch", "nvlink-multinode")
    return training and pool.max_nodes > 1 and pool.availability_zone is not None


def interfaces(instance_type: str) -> tuple[Interface, ...]:
    """The interfaces of one node with EFA in AWS's layout for maximum EFA bandwidth."""
    facts = gpu_facts(instance_type)
    if facts is None or facts.network is None or not facts.network.efa:
        raise ValueError(f"instance type '{instance_type}' has no EFA in the instance table")
    net = facts.network
    if net.efa_interfaces == 1:
        return (Interface(0, 0, "efa"),)  # single-card types: one EFA, the primary itself
    cards = _EFA_CARDS.get(instance_type, tuple(range(net.efa_interfaces)))
    out = [Interface(0, 0, "interface")]
    out += [Interface(card, 1 if card == 0 else 0, "efa-only") for card in cards]
    return tuple(out)


def efa_device_count(instance_type: str) -> int:
    """EFA devices a node exposes (what the device plugin advertises as vpc.amazonaws.com/efa)."""
    return sum(1 for i in interfaces(instance_type) if i.interface_type != "interface")


def placement(pool: NodePoolSettings) -> PlacementSettings | None:
    """The pool's placement group: its setting, else `cluster` for EFA pools outside a Capacity
    Block (AWS places a block's instances in its own UltraCluster; the launch names no group)."""
    if pool.placement is not None:
        return pool.placement
    on = efa_enabled(pool) and efa_supported(pool.instance_type)  # efa: true on a type without it is refused
    return PlacementSettings() if on and not pool.on_capacity_block else None

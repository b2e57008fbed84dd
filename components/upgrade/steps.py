"""`ck8s-gpu upgrade --plan`: the ordered steps of a track upgrade, the nodes each touches and how
long each should take, computed offline from the stack's settings (and, when known, its nodes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..settings.model import Settings
from ..tables import pins
from . import durations, skew


@dataclass(frozen=True)
class Step:
    number: int
    title: str
    nodes: tuple[str, ...]
    seconds: tuple[int, int]
    does: str


@dataclass(frozen=True)
class Inventory:
    """Node names per control plane and pool; offline, placeholders sized from the settings."""

    control_planes: tuple[str, ...]
    pools: Mapping[str, tuple[str, ...]]

    @staticmethod
    def from_settings(settings: Settings) -> Inventory:
        cps = tuple(f"{settings.cluster_name}-cp-{i}" for i in range(settings.control_plane.count))
        pools = {p.name: tuple(f"{p.name}-node-{i + 1}" for i in range(p.desired_size)) for p in settings.node_pools}
        return Inventory(cps, pools)


class PlanRefused(ValueError):
    pass


def _batches(names: Sequence[str], size: int) -> list[tuple[str, ...]]:
    return [tuple(names[i:i + size]) for i in range(0, len(names), size)]


def upgrade_steps(settings: Settings, deployed: str, target: str, inventory: Inventory | None = None) -> list[Step]:
    """Steps from `deployed` to `target` (one minor: larger jumps are refused with the path)."""
    if target not in pins.SNAP_TRACKS:
        raise PlanRefused(f"unknown track '{target}'; known: {', '.join(pins.SNAP_TRACKS)}")
    problems = skew.track_change_problems(deployed, target)
    if problems:
        raise PlanRefused("; ".join(problems))
    if deployed == target:
        return []
    inv = inventory or Inventory.from_settings(settings)
    policy = settings.kubernetes.upgrade
    node = durations.node_upgrade()
    d = durations.DURATIONS
    channel = f"{target}/stable"
    steps: list[Step] = []

    def add(title: str, nodes: Sequence[str], seconds: tuple[int, int], does: str) -> None:
        steps.append(Step(len(steps) + 1, title, tuple(nodes), seconds, does))

    add("preflight", inv.control_planes, (d["preflight"].low, d["preflight"].high),
        "read every control plane's Node: all Ready, kubelets within the skew policy, etcd keeps a majority")
    for cp in inv.control_planes:
        add(f"control plane {cp}", (cp,), node,
            f"cordon, drain, `snap refresh k8s --channel={channel}`, wait Ready on {target}, uncordon")
    for pool, names in inv.pools.items():
        for batch in _batches(names, policy.max_unavailable):
            add(f"pool {pool}", batch, node,
                f"cordon; running GPU Jobs finish (<= {policy.job_grace_seconds}s); drain (PDBs honoured, <= "
                f"{policy.drain_timeout_seconds}s, then {policy.on_drain_failure}); `snap refresh k8s "
                f"--channel={channel}`; wait Ready; uncordon")
    add("launch templates and add-ons", (), (d["pulumi-up"].low, d["pulumi-up"].high),
        "new pool instances boot on the new track; add-on values for the new track (containerd "
        f"{pins.track(target).containerd_major})")
    add("smoke test", (), (d["smoke"].low, d["smoke"].high), "the DRA allocation path end to end")
    return steps


def worst_case_waits(settings: Settings, steps: Sequence[Step]) -> int:
    """Seconds the bounded waits could add: job grace and drain timeout per pool batch."""
    policy = settings.kubernetes.upgrade
    batches = sum(1 for s in steps if s.title.startswith("pool "))
    cps = sum(1 for s in steps if s.title.startswith("control plane "))
    return batches * (policy.job_grace_seconds + policy.drain_timeout_seconds) + cps * policy.drain_timeout_seconds


def _clock(seconds: int) -> str:
    return f"{seconds // 60}m{seconds % 60:02d}s"


def render(settings: Settings, deployed: str, target: str, steps: Sequence[Step]) -> str:
    lines = [f"upgrade {settings.cluster_name}: {deployed} -> {target} ({len(steps)} steps)", ""]
    for s in steps:
        nodes = f" [{', '.join(s.nodes)}]" if s.nodes else ""
        lines.append(f"{s.number:>3}. {s.title}{nodes}  ~{_clock(s.seconds[0])}-{_clock(s.seconds[1])}")
        lines.append(f"     {s.does}")
    low, high = sum(s.seconds[0] for s in steps), sum(s.seconds[1] for s in steps)
    lines += ["", f"expected: {_clock(low)} to {_clock(high)}; bounded waits could add up to "
                  f"{_clock(worst_case_waits(settings, steps))} (job grace, drain timeouts)",
              "estimates, not measurements: components/upgrade/durations.py says what each rests on"]
    return "\n".join(lines)

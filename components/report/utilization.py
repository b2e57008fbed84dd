"""GPU time paid for, allocated and busy, per node pool and per KAI queue over a window (issue 43).

Pure: the inputs are what sources.py reads (node lifetimes from the API and kube-state-metrics,
device samples from the DCGM exporter through Prometheus); this module only counts.

- **Paid**: each GPU node's lifetime inside the window times its GPUs (the instance type's count,
  components/tables/instance_types.py): what the cloud bills, from registration to deletion.
- **Allocated**: each device sample held by a pod (the DCGM exporter's DRA pod mapping labels the
  series of an allocated device with the pod and claim holding it: dcgm-exporter 4.6.0-4.8.3
  internal/pkg/transformation/const.go), times its share of a GPU: 1 for a whole GPU, a MIG
  instance its compute slices of 7 (`3g.40gb`: 3/7; components/tables/mig_profiles.py). A device
  shared by several pods (time-slicing, MPS) counts once, split between their queues.
- **Busy**: the same samples times the device's activity, DCGM_FI_PROF_GR_ENGINE_ACTIVE (0..1;
  for a MIG instance relative to the instance, hence the same share), or DCGM_FI_DEV_GPU_UTIL / 100
  where the profiling field is absent (NVIDIA/dcgm-exporter#216: no profiling on some parts).
- **Idle but allocated**: allocated samples whose activity is below the idle threshold.

A sample stands for `step` seconds: the figures are exact to one step at each start and end.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..tables.mig_profiles import COMPUTE_SLICES

NO_QUEUE = "(no queue)"
NO_POOL = "(no pool)"
_SLICES = re.compile(r"^(?:\d+c\.)?(\d+)g\.")


def share_of(profile: str) -> float:
    """A device's share of its GPU: 1 for a whole GPU (profile ""), compute slices / 7 for a MIG
    instance (`1g.10gb` 1/7; the `c.` part of a compute-instance profile counts inside its GI)."""
    if not profile:
        return 1.0
    m = _SLICES.match(profile)
    return int(m.group(1)) / COMPUTE_SLICES if m else 1.0


@dataclass(frozen=True)
class NodeSpan:
    """A GPU node's life: from `start` to `end` (None: still there), `gpus` on it."""

    node: str
    pool: str
    gpus: int
    start: float
    end: float | None = None


@dataclass(frozen=True)
class Holder:
    namespace: str
    pod: str


@dataclass(frozen=True)
class DevicePoint:
    """One sample of one device (a whole GPU, or a GPU instance) at time `t`."""

    t: float
    busy: float  # 0..1
    holders: tuple[Holder, ...] = ()


@dataclass(frozen=True)
class DeviceTrack:
    node: str
    uuid: str  # the GPU's
    instance: str  # GPU instance id ("" for a whole GPU)
    profile: str  # MIG profile ("" for a whole GPU)
    points: tuple[DevicePoint, ...]

    @property
    def share(self) -> float:
        return share_of(self.profile)


@dataclass
class Totals:
    paid: float = 0.0
    allocated: float = 0.0
    busy: float = 0.0
    idle_allocated: float = 0.0

    def as_dict(self) -> dict[str, float | None]:
        return {
            "paidGpuHours": round(self.paid, 6),
            "allocatedGpuHours": round(self.allocated, 6),
            "busyGpuHours": round(self.busy, 6),
            "idleAllocatedGpuHours": round(self.idle_allocated, 6),
            "allocatedOfPaid": round(self.allocated / self.paid, 4) if self.paid else None,
            "busyOfAllocated": round(self.busy / self.allocated, 4) if self.allocated else None,
        }


@dataclass(frozen=True)
class IdleDevice:
    """A device allocated at the end of the window and idle for at least the last `idle_seconds`."""

    node: str
    pool: str
    uuid: str
    profile: str
    holders: tuple[Holder, ...]
    queues: tuple[str, ...]
    idle_seconds: float


@dataclass
class UtilizationReport:
    start: float
    end: float
    step: float
    idle_below: float
    pools: dict[str, Totals] = field(default_factory=dict)
    queues: dict[str, Totals] = field(default_factory=dict)
    total: Totals = field(default_factory=Totals)
    idle_now: list[IdleDevice] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {
            "window": {"start": self.start, "end": self.end, "hours": round((self.end - self.start) / 3600, 4),
                       "stepSeconds": self.step},
            "idleBelow": self.idle_below,
            "total": self.total.as_dict(),
            "pools": {name: t.as_dict() for name, t in sorted(self.pools.items())},
            "queues": {name: {k: v for k, v in t.as_dict().items() if k not in ("paidGpuHours", "allocatedOfPaid")}
                       for name, t in sorted(self.queues.items())},
            "idleAllocatedNow": [
                {"node": d.node, "pool": d.pool, "gpu": d.uuid, "profile": d.profile or None,
                 "pods": [f"{h.namespace}/{h.pod}" for h in d.holders], "queues": list(d.queues),
                 "idleMinutes": round(d.idle_seconds / 60, 1)} for d in self.idle_now],
            "notes": list(self.notes),
        }


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def compute(start: float, end: float, step: float, nodes: Sequence[NodeSpan], devices: Sequence[DeviceTrack],
            queue_of: dict[Holder, str], *, idle_below: float = 0.01,
            notes: Iterable[str] = ()) -> UtilizationReport:
    """The report for [start, end): node spans give paid time, device samples the rest."""
    if end <= start or step <= 0:
        raise ValueError(f"empty window [{start}, {end}) or step {step}")
    r = UtilizationReport(start, end, step, idle_below, notes=list(notes))
    pools: dict[str, Totals] = defaultdict(Totals)
    queues: dict[str, Totals] = defaultdict(Totals)
    pool_of = {n.node: n.pool for n in nodes}
    for n in nodes:
        pools[n.pool].paid += n.gpus * _overlap(n.start, n.end if n.end is not None else end, start, end) / 3600
    for d in devices:
        pool = pool_of.get(d.node, NO_POOL)
        idle_since: float | None = None
        for p in d.points:
            if not start <= p.t < end:
                continue
            hours = d.share * min(step, end - p.t) / 3600
            busy = max(0.0, min(1.0, p.busy))
            pools[pool].busy += hours * busy
            pods = tuple(dict.fromkeys(p.holders))
            if not pods:
                idle_since = None
                continue
            idle = busy < idle_below
            pools[pool].allocated += hours
            pools[pool].idle_allocated += hours if idle else 0.0
            for h in pods:
                q = queues[queue_of.get(h, NO_QUEUE)]
                q.allocated += hours / len(pods)
                q.busy += hours * busy / len(pods)
                q.idle_allocated += hours / len(pods) if idle else 0.0
            idle_since = (p.t if idle_since is None else idle_since) if idle else None
        last = next((p for p in reversed(d.points) if start <= p.t < end), None)
        if last is not None and last.holders and idle_since is not None and last.t + 2 * step >= end:
            holders = tuple(dict.fromkeys(last.holders))
            r.idle_now.append(IdleDevice(d.node, pool, d.uuid, d.profile, holders,
                                         tuple(sorted({queue_of.get(h, NO_QUEUE) for h in holders})),
                                         last.t + step - idle_since))
    for t in pools.values():
        r.total.paid += t.paid
        r.total.allocated += t.allocated
        r.total.busy += t.busy
        r.total.idle_allocated += t.idle_allocated
    r.pools, r.queues = dict(pools), dict(queues)
    r.idle_now.sort(key=lambda d: -d.idle_seconds)
    return r


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def render(r: UtilizationReport) -> str:
    """The human form: one table per pool and per queue, then what is idle but held now."""
    hours = (r.end - r.start) / 3600
    lines = [f"GPU utilization over {hours:.2f} h (step {r.step:g} s; idle below {100 * r.idle_below:g}% activity)",
             "", f"{'pool':<24}{'paid':>10}{'allocated':>11}{'busy':>10}{'idle-alloc':>12}{'alloc/paid':>12}"
             f"{'busy/alloc':>12}"]
    rows = [*sorted(r.pools.items()), ("TOTAL", r.total)]
    for name, t in rows:
        ratios = t.as_dict()
        lines.append(f"{name:<24}{t.paid:>10.2f}{t.allocated:>11.2f}{t.busy:>10.2f}{t.idle_allocated:>12.2f}"
                     f"{_pct(ratios['allocatedOfPaid']):>12}{_pct(ratios['busyOfAllocated']):>12}")
    lines += ["", "(GPU-hours; MIG instances count by their share of a GPU)", "",
              f"{'queue':<24}{'allocated':>11}{'busy':>10}{'idle-alloc':>12}{'busy/alloc':>12}"]
    for name, t in sorted(r.queues.items()):
        lines.append(f"{name:<24}{t.allocated:>11.2f}{t.busy:>10.2f}{t.idle_allocated:>12.2f}"
                     f"{_pct(t.as_dict()['busyOfAllocated']):>12}")
    if r.idle_now:
        lines += ["", "allocated and idle now:"]
        for idle in r.idle_now:
            pods = ", ".join(f"{h.namespace}/{h.pod}" for h in idle.holders)
            what = f"{idle.uuid} {idle.profile}".strip()
            lines.append(f"  {idle.node} ({idle.pool}) {what}: {pods} [{', '.join(idle.queues)}] "
                         f"idle {idle.idle_seconds / 60:.0f} min")
    lines += [f"note: {n}" for n in r.notes]
    return "\n".join(lines) + "\n"

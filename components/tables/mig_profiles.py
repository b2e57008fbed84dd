"""MIG GPU-instance profiles per GPU model: what a pool's MIG layout may hold (issue 43).

Every GPU here has 7 compute slices and 8 memory slices. A profile takes a number of each and may
start only at given memory slices; a layout is valid when its instances fit side by side:
compute slices add up to 7 or less, and each instance can be placed at one of its starts without
overlapping another's memory slices (NVML: "Creation of new GPU instance will fail if there is
overlap with the already occupied memory slices", nvmlDeviceGetGpuInstancePossiblePlacements_v2).

Sources:
- [MIG] NVIDIA MIG User Guide, "Supported MIG Profiles" (A100-40GB table: 1g.5gb 1/8 memory, 7
  instances; 1g.5gb+me 1 instance; 2g.10gb 3; 3g.20gb 3/7 SMs, 4/8 memory, 2; 4g.20gb 1; 7g.40gb 1),
  and its note that the 80GB parts rename the same profiles by memory (1g.10gb ... 7g.80gb).
- [NVML] github.com/NVIDIA/go-nvml 2f9e261f pkg/nvml/mock/gpus/a100.go: the A100 placements in
  memory slices, {start}:size: 1g {0..6}:1, 1g double memory {0,2,4,6}:2, 2g {0,2,4}:2, 3g {0,4}:4,
  4g {0}:4, 7g {0}:8; h100.go, h200.go, b200.go: the profiles and counts of those models.
- [OP] NVIDIA/gpu-operator v26.7.0 (10ee5b3638b8) assets/state-mig-manager/0400_configmap.yaml: the
  profile names per model in its `all-<profile>` and `all-balanced` configs (GB200: the only source
  of its set; no NVIDIA table of GB200 profiles was found).
- [DRA] dra-driver-nvidia-gpu 95932046 cmd/gpu-kubelet-plugin/partitions.go: "on a B200 GPU, the
  3g.90gb device consumes 4 out of 8 memory slices in total, but only 3 out of seven SMs".
- [GIP] the GPU instance profile IDs, `nvidia-smi mig -lgip` on an H100 80GB HBM3 (jbarrow.ai field
  notes "Nvidia MIG", 2026-06-11: 1g.10gb 19, 1g.10gb+me 20, 1g.20gb 15, 2g.20gb 14, 3g.40gb 9,
  4g.40gb 5, 7g.80gb 0), the same IDs as the MIG User Guide's A100 listing; the DRA driver's device
  names carry them (mig.go ToCanonicalName `gpu-<minor>-mig-<profile>-<profile ID>-<placement start>`;
  examples in its tree: gpu-0-mig-1g12gb-19-0, gpu-1-mig-2g47gb-14-0).

The placements of the Hopper and Blackwell parts are taken to be the A100's: go-nvml's mocks of
them simplify placements (3g at size 3) and no NVIDIA page lists them; the shapes (slices per
profile, counts) are the same in every source above. A layout this table accepts and the GPU
refuses fails on the node (mig-parted sets nvidia.com/mig.config.state=failed), never silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

COMPUTE_SLICES = 7
MEMORY_SLICES = 8


@dataclass(frozen=True)
class MigShape:
    """A profile's class: slices taken and where in memory it may start (A100 geometry, [NVML])."""

    compute: int
    memory: int
    starts: tuple[int, ...]
    max_count: int
    profile_id: int  # the GPU instance profile ID NVML knows it by ([GIP])
    media_extensions: bool = False  # `+me`: the GPU's one set of decoders/encoders, at most one instance


# The seven classes, in [MIG]'s column order.
ONE = MigShape(1, 1, (0, 1, 2, 3, 4, 5, 6), 7, 19)
ONE_ME = MigShape(1, 1, (0, 1, 2, 3, 4, 5, 6), 1, 20, media_extensions=True)
ONE_DOUBLE = MigShape(1, 2, (0, 2, 4, 6), 4, 15)
TWO = MigShape(2, 2, (0, 2, 4), 3, 14)
THREE = MigShape(3, 4, (0, 4), 2, 9)
FOUR = MigShape(4, 4, (0,), 1, 5)
SEVEN = MigShape(7, 8, (0,), 1, 0)


def _profiles(one: str, one_double: str, two: str, three: str, four: str, seven: str) -> dict[str, MigShape]:
    return {one: ONE, f"{one}+me": ONE_ME, one_double: ONE_DOUBLE, two: TWO, three: THREE, four: FOUR,
            seven: SEVEN}


# productName as NVML reports it (components/tables/instance_types.py) -> profile name -> shape.
MIG_PROFILES: dict[str, dict[str, MigShape]] = {
    "NVIDIA A100-SXM4-40GB": _profiles("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    "NVIDIA A100-SXM4-80GB": _profiles("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "NVIDIA H100 80GB HBM3": _profiles("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "NVIDIA H100 NVL": _profiles("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
    "NVIDIA H200": _profiles("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
    "NVIDIA B200": _profiles("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
    "NVIDIA GB200": _profiles("1g.23gb", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"),
}

# [OP] all-balanced for each model: two of the smallest, one 2g, one 3g.
BALANCED: dict[str, dict[str, int]] = {
    gpu: {names[0]: 2, names[3]: 1, names[4]: 1} for gpu, names in
    ((g, list(p)) for g, p in MIG_PROFILES.items())
}


def layout_problem(gpu: str, devices: dict[str, int]) -> str | None:
    """Why `devices` (profile -> instances on one GPU) does not fit a `gpu`; None when it fits."""
    shapes = MIG_PROFILES.get(gpu)
    if shapes is None:
        return f"no MIG profile table for '{gpu}' (MIG GPUs here: {', '.join(MIG_PROFILES)})"
    unknown = sorted(p for p in devices if p not in shapes)
    if unknown:
        return f"{', '.join(unknown)}: not a MIG profile of the {gpu} (its profiles: {', '.join(shapes)})"
    for name, count in devices.items():
        if count < 1:
            return f"{name}: {count} instances; leave a profile out instead of 0"
        if count > shapes[name].max_count:
            return f"{name}: {count} instances, the {gpu} holds at most {shapes[name].max_count}"
    if sum(shapes[p].media_extensions * n for p, n in devices.items()) > 1:
        return "more than one `+me` instance: a GPU has one set of media engines"
    compute = sum(shapes[p].compute * n for p, n in devices.items())
    if compute > COMPUTE_SLICES:
        return f"{compute} compute slices, a GPU has {COMPUTE_SLICES}"
    if not _placeable([shapes[p] for p, n in devices.items() for _ in range(n)]):
        used = sum(shapes[p].memory * n for p, n in devices.items())
        return (f"these instances cannot be placed side by side in the GPU's {MEMORY_SLICES} memory slices "
                f"({used} needed, each profile only at its own offsets)")
    return None


def _placeable(instances: list[MigShape]) -> bool:
    return _place(instances) is not None


def _place(instances: list[MigShape]) -> list[tuple[MigShape, int]] | None:
    """A start for every instance with no memory slice shared (largest first, backtracking, lowest
    start first), as (shape, start) in placing order; None when there is none."""
    order = sorted(instances, key=lambda s: (-s.memory, len(s.starts)))
    taken = [False] * MEMORY_SLICES
    placed: list[tuple[MigShape, int]] = []

    def place(i: int) -> bool:
        if i == len(order):
            return True
        shape = order[i]
        for start in shape.starts:
            span = range(start, start + shape.memory)
            if span.stop <= MEMORY_SLICES and not any(taken[j] for j in span):
                for j in span:
                    taken[j] = True
                placed.append((shape, start))
                if place(i + 1):
                    return True
                placed.pop()
                for j in span:
                    taken[j] = False
        return False

    return placed if place(0) else None


@dataclass(frozen=True)
class MigInstance:
    """One GPU instance of a layout where it sits: what the DRA driver names and publishes it by."""

    profile: str
    profile_id: int
    start: int  # first memory slice
    size: int  # memory slices

    @property
    def device_suffix(self) -> str:
        """`mig-<profile>-<profile ID>-<start>` of the driver's device name (mig.go ToCanonicalName:
        the profile without dots, made RFC 1123: lower case, other characters than [a-z0-9-] as `-`)."""
        slug = re.sub(r"[^a-z0-9-]", "-", self.profile.replace(".", "").lower()).strip("-")
        return f"mig-{slug}-{self.profile_id}-{self.start}"


def placements(gpu: str, devices: dict[str, int]) -> list[MigInstance]:
    """Where the instances of a valid layout sit on one GPU, by start. The MIG manager leaves the
    choice to NVML (mig-parted creates each instance without a placement); this is one valid
    placement, the one the simulated driver publishes. Raises ValueError for a layout that does
    not fit (layout_problem says why)."""
    if (why := layout_problem(gpu, devices)) is not None:
        raise ValueError(why)
    shapes = MIG_PROFILES[gpu]
    names = {id(shape): name for name, shape in shapes.items()}
    placed = _place([shapes[p] for p, n in sorted(devices.items()) for _ in range(n)])
    assert placed is not None  # layout_problem placed them already
    return sorted((MigInstance(names[id(shape)], shape.profile_id, start, shape.memory) for shape, start in placed),
                  key=lambda m: m.start)


def named_layout(gpu: str, config: str) -> dict[str, int] | None:
    """The devices of one of the MIG manager's named configs on `gpu` ([OP]: all-balanced and
    all-<profile> at the most instances, with `+` spelt `.`); {} for all-disabled; None when the
    name is none of them for this GPU."""
    shapes = MIG_PROFILES.get(gpu, {})
    if config == "all-disabled":
        return {}
    if config == "all-balanced":
        return dict(BALANCED[gpu]) if gpu in BALANCED else None
    for name, shape in shapes.items():
        if config == f"all-{name.replace('+', '.')}":
            return {name: shape.max_count}
    return None

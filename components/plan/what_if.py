"""What-ifs: the same graph with one choice changed (the driver modes of docs/adr/0018), so the plan
can say what each one saves (pure)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from .timeline import Step, Timeline, WhatIf, WhatIfResult, make_timeline


def _driver(mode: str) -> Callable[[list[Step]], list[Step]]:
    def apply(steps: list[Step]) -> list[Step]:
        return [replace(s, key=f"gpu-driver-{mode}", name=re.sub(r"\(\w+\)$", f"({mode})", s.name))
                if s.key.startswith("gpu-driver-") else s for s in steps]
    return apply


def driver_mode_totals(tl: Timeline) -> dict[str, tuple[float, float]]:
    """The same graph with each driver mode: what choosing it alone does to the modeled time."""
    steps = list(tl.steps.values())
    return {mode: make_timeline(tl.stack, _driver(mode)(steps)).total for mode in ("compiled", "precompiled", "host")}


WHAT_IFS: tuple[WhatIf, ...] = (
    WhatIf("precompiled-driver", "settings gpuStack.driver: precompiled (the GPU Operator pulls a driver built "
           "for the node's kernel; only for kernels NVIDIA publishes, docs/adr/0018)", _driver("precompiled")),
    WhatIf("host-driver", "settings gpuStack.driver: host (the driver is in the GPU pools' image, built "
           "ahead by the image program: docs/images.md, docs/adr/0020)", _driver("host")),
)


def what_if_results(stack: str, steps: list[Step], base: tuple[float, float]) -> list[WhatIfResult]:
    """Each what-if that shortens the modeled time, alone (they are alternatives: the driver modes
    exclude each other, so no "all of them" line)."""
    results = []
    for w in WHAT_IFS:
        total = make_timeline(stack, w.apply(steps)).total
        if total[1] >= base[1]:  # only what shortens it (a mode already chosen changes nothing)
            continue
        results.append(WhatIfResult(w, total, (base[0] - total[0], base[1] - total[1])))
    return results

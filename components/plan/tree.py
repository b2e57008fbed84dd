"""Text views of a plan: the resource tree with key inputs, and counts per type (pure)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .mockengine import Recorded
from .portable import portable

# Inputs worth a glance in a tree, in display order; everything else is in resources.json.
KEY_INPUTS = (
    "chart", "version", "namespace", "instanceType", "minSize", "desiredCapacity", "maxSize",
    "cidrBlock", "availabilityZone", "fromPort", "toPort", "protocol", "loadBalancerType", "internal",
    "region", "kind", "timeout", "strategy", "partitionCount", "placementGroup", "waitForCapacityTimeout",
)


def _derived(inputs: dict[str, Any]) -> list[str]:
    """Facts nested in inputs that decide how GPU nodes launch and are placed: EFA interfaces,
    reserved capacity and its market, the KAI Topology a release applies."""
    out: list[str] = []
    nics = inputs.get("networkInterfaces")
    if isinstance(nics, list) and nics:
        types = Counter(str(n.get("interfaceType", "interface")) for n in nics if isinstance(n, dict))
        out.append("interfaces=" + "+".join(f"{n} {t}" for t, n in sorted(types.items())))
    spec = inputs.get("capacityReservationSpecification")
    target = spec.get("capacityReservationTarget") if isinstance(spec, dict) else None
    if isinstance(target, dict):
        for key in ("capacityReservationId", "capacityReservationResourceGroupArn"):
            if isinstance(target.get(key), str):
                out.append(f"reservation={target[key]}")
    market = inputs.get("instanceMarketOptions")
    if isinstance(market, dict) and isinstance(market.get("marketType"), str):
        out.append(f"market={market['marketType']}")
    values = inputs.get("values")
    if isinstance(values, dict) and isinstance(values.get("topologies"), list):
        out += [f"topology={t['name']}" for t in values["topologies"] if isinstance(t, dict) and "name" in t]
    return out


def _key_inputs(r: Recorded) -> str:
    shown = []
    for key in KEY_INPUTS:
        value = r.inputs.get(key)
        if isinstance(value, (str, int, float, bool)) and value != "":
            shown.append(f"{key}={portable(value)}")
    shown += _derived(r.inputs)
    meta = r.inputs.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("name"), str):
        shown.append(f"name={meta['name']}")
    return f"  [{', '.join(shown)}]" if shown else ""


def tree_lines(resources: list[Recorded]) -> list[str]:
    children: dict[str, list[Recorded]] = {}
    urns = {r.urn for r in resources}
    for r in resources:
        parent = r.parent if r.parent in urns else ""
        children.setdefault(parent, []).append(r)
    lines: list[str] = []

    def walk(parent: str, depth: int) -> None:
        # Registration order is async and varies between runs; sorted output diffs cleanly.
        for r in sorted(children.get(parent, []), key=lambda c: (c.type, c.name)):
            flags = "".join(f" ({f})" for f, on in (("protect", r.protect), ("retain", r.retain_on_delete)) if on)
            lines.append(f"{'  ' * depth}{r.type} {r.name}{_key_inputs(r)}{flags}")
            walk(r.urn, depth + 1)

    walk("", 0)
    return lines


def count_lines(resources: list[Recorded]) -> list[str]:
    counts: Counter[str] = Counter(r.type for r in resources)
    width = max((len(t) for t in counts), default=0)
    return [f"{t.ljust(width)}  {n}" for t, n in sorted(counts.items())] + [f"{'total'.ljust(width)}  {len(resources)}"]


def counts(resources: list[Recorded]) -> dict[str, Any]:
    return dict(sorted(Counter(r.type for r in resources).items()))

"""The install graph: which add-ons are enabled, what each waits for, and ONE error for all problems.

Edges come from two places: an add-on's explicit `depends_on`, and its `needs` (a capability an
enabled add-on provides makes that add-on a dependency; one the cluster provides adds no edge).
Nothing else orders installs, so unrelated add-ons install in parallel.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic.alias_generators import to_camel

from ..facts.cluster import ClusterFacts, cluster_facts
from ..settings.model import Settings
from . import advertisers
from .base import Addon, AddonContext, Capability
from .catalog import ADDONS, PLATFORM_CAPABILITIES, platform_default


class AddonGraphError(ValueError):
    """Every problem of the add-on graph at once; `str()` is the whole user-facing message."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = sorted(set(problems))
        n = len(self.problems)
        lines = [f"add-on graph is invalid ({n} problem{'s' if n != 1 else ''}):"]
        lines += [f"  - {p}" for p in self.problems]
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class InstallGraph:
    order: tuple[Addon, ...]  # dependencies first
    edges: dict[str, tuple[str, ...]]  # add-on -> the add-ons it waits for
    capabilities: frozenset[str]  # present once the set is installed
    # add-on -> the add-ons whose CRDs (not workloads) it waits for (Addon.after_crds_of)
    crd_edges: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(a.name for a in self.order)

    def longest_chain(self) -> tuple[str, ...]:
        best: dict[str, tuple[str, ...]] = {}
        for a in self.order:  # dependencies come first, so their chains are known
            deps = [best[d] for d in self.edges[a.name]]
            best[a.name] = (*max(deps, key=len, default=()), a.name)
        return max(best.values(), key=len, default=())


def provided(addons: Iterable[Addon], settings: Settings) -> dict[str, list[str]]:
    """capability -> names of the add-ons providing it."""
    out: dict[str, list[str]] = {}
    for a in addons:
        for cap in a.provides(settings):
            out.setdefault(cap, []).append(a.name)
    return out


def build(addons: Sequence[Addon], settings: Settings, cluster: Iterable[Capability]) -> InstallGraph:
    """Check and order `addons` (the enabled ones). Raises AddonGraphError listing every problem."""
    by_name = {a.name: a for a in addons}
    cluster_caps = frozenset(cluster)
    providers = provided(addons, settings)
    problems: list[str] = []
    edges: dict[str, tuple[str, ...]] = {}
    crd_edges: dict[str, tuple[str, ...]] = {}
    for a in addons:
        deps: list[str] = []
        for d in a.depends_on:
            if d not in by_name:
                problems.append(f"{a.name}: missing dependency '{d}' (not enabled in this stack)")
            else:
                deps.append(d)
        for cap in (*a.needs, *a.uses):
            if cap in providers:
                if cap in a.needs:
                    deps.extend(p for p in providers[cap] if p != a.name)
            elif cap not in cluster_caps:
                problems.append(
                    f"{a.name}: unmet capability '{cap}': no enabled add-on provides it and the cluster "
                    f"does not (settings.gpuStack.clusterProvides)"
                )
        for other in a.conflicts:
            if other in by_name:
                first, second = sorted((a.name, other))  # declared on either side, reported once
                problems.append(f"{first} and {second} cannot both be enabled (they advertise the same GPUs)")
        problems.extend(f"{a.name}: {p}" for p in a.check(settings))
        own = a.addon_settings(settings)
        if a.local_chart is not None and own.version is not None and own.repository is None:
            problems.append(f"{a.name}: version {own.version} needs a repository that serves it "
                            f"(gpuStack.addons.{to_camel(a.settings_key)}.repository): without one the chart "
                            f"installs from this repository's charts/{a.local_chart} at its own version")
        edges[a.name] = tuple(dict.fromkeys(deps))
        crd_edges[a.name] = tuple(dict.fromkeys(
            p for cap in a.after_crds_of if cap not in cluster_caps for p in providers.get(cap, ()) if p != a.name))
    order, cycles = _toposort([a.name for a in addons], edges)
    problems.extend(f"dependency cycle: {' -> '.join(c)}" for c in cycles)
    graph = InstallGraph(
        order=tuple(by_name[n] for n in order),
        edges=edges,
        capabilities=cluster_caps | frozenset(providers),
        crd_edges=crd_edges,
    )
    if not problems:  # values are judged only on an otherwise sound graph
        problems.extend(advertisers.problems(final_values(graph, settings)))
    if problems:
        raise AddonGraphError(problems)
    return graph


def contexts(graph: InstallGraph, settings: Settings, facts: ClusterFacts | None = None) -> dict[str, AddonContext]:
    facts = facts or cluster_facts(settings)
    return {
        a.name: AddonContext(settings, facts, graph.capabilities, graph.names, a.version(settings))
        for a in graph.order
    }


def final_values(graph: InstallGraph, settings: Settings) -> dict[str, dict[str, Any]]:
    """add-on -> the values its release gets (computed, then the stack's overrides)."""
    return {name: by_name_of(graph)[name].final_values(ctx) for name, ctx in contexts(graph, settings).items()}


def by_name_of(graph: InstallGraph) -> dict[str, Addon]:
    return {a.name: a for a in graph.order}


def _toposort(names: list[str], edges: dict[str, tuple[str, ...]]) -> tuple[list[str], list[list[str]]]:
    """Dependencies first (stable by input order); every cycle found, as a closed path."""
    state: dict[str, int] = {}  # 1 visiting, 2 done
    order: list[str] = []
    cycles: list[list[str]] = []
    seen_cycles: set[frozenset[str]] = set()

    def visit(n: str, path: list[str]) -> None:
        if state.get(n) == 2:
            return
        if state.get(n) == 1:
            cycle = [*path[path.index(n):], n]
            if frozenset(cycle) not in seen_cycles:
                seen_cycles.add(frozenset(cycle))
                cycles.append(cycle)
            return
        state[n] = 1
        for d in edges.get(n, ()):
            visit(d, [*path, n])
        state[n] = 2
        order.append(n)

    for n in names:
        visit(n, [])
    return order, cycles


def select(catalog: Sequence[Addon], settings: Settings, cluster: Iterable[Capability]) -> list[Addon]:
    """The enabled add-ons: explicit `enabled` wins, else the platform default; `auto` ones are on
    exactly when each of their needs is met by the cluster or by another enabled add-on."""
    chosen: list[Addon] = []
    auto: list[Addon] = []
    for a in catalog:
        explicit = a.addon_settings(settings).enabled
        mode = ("on" if explicit else "off") if explicit is not None else platform_default(a.name, settings)
        if mode == "on":
            chosen.append(a)
        elif mode == "auto":
            auto.append(a)
    caps = set(cluster) | set(provided(chosen, settings))
    changed = True
    while changed:  # an auto add-on may provide what another auto add-on needs
        changed = False
        for a in list(auto):
            if all(c in caps for c in (*a.needs, *a.uses)):
                chosen.append(a)
                auto.remove(a)
                caps |= set(a.provides(settings))
                changed = True
    names = {a.name for a in chosen}
    return [a for a in catalog if a.name in names]


def cluster_capabilities(settings: Settings) -> frozenset[Capability]:
    return frozenset(PLATFORM_CAPABILITIES[settings.platform]) | frozenset(settings.gpu_stack.cluster_provides)


def install_graph(settings: Settings, catalog: Sequence[Addon] | None = None) -> InstallGraph:
    """The stack's install graph from its settings (what AddonSet builds and the docs describe)."""
    cluster = cluster_capabilities(settings)
    graph = build(select(catalog or ADDONS, settings, cluster), settings, cluster)
    smoke = settings.smoke_test
    if smoke.enabled and smoke.scheduler == "kai" and "kai-crds" not in graph.capabilities:
        raise AddonGraphError([
            "smokeTest.scheduler is kai but KAI is neither installed here (gpuStack.addons.kaiScheduler) "
            "nor declared present (gpuStack.clusterProvides: [kai-crds])"
        ])
    return graph

#!/usr/bin/env python3
"""The layer contract of components/ (docs/architecture.md, "Layers"), checked.

Every module belongs to exactly one layer; a module may import only from its own layer or the
layers below it, and the units of a layer written `a | b` (independent siblings) may not import
each other. No two modules may import each other through any chain (a circle), whatever layer they
are in. The import graph is grimp's (import-linter's engine): absolute and relative imports, and
imports inside functions and `if TYPE_CHECKING:` blocks, all count: a lazy import is still a
dependency, it only moves the failure to run time.

    python scripts/layers.py            # the report; exit 1 on any upward import, circle or stray module
    python scripts/layers.py --table    # the layer table as Markdown (docs/architecture.md)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import grimp

ROOT = "components"

# Bottom to top. Each layer: (name, why it sits there, units). A unit is a module or a package
# (a dotted path under components/, "" for the package face components/__init__.py); a layer's
# units on one line joined by " | " are independent siblings: neither may import the other.
LAYERS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("tables", "facts and locations with no opinion (pins, instance types, label keys, type tokens, names, "
     "paths), and how the package behaves as a process (files written whole, readable errors)",
     ("tables", "runtime")),
    ("settings", "the config boundary: the model, its defaults, its rules and their vocabulary",
     ("settings",)),
    ("derived facts", "what follows from settings for every platform: GPUs per pool, feature gates, node labels, EFA",
     ("facts",)),
    # k8s_ready and k8s_wait stay at the top of the package: their dynamic providers are pickled into
    # deployed stacks' state by module path (docs/adr/0044, 0047).
    ("kube support", "talking to a cluster: client, waits, the readiness gates, charts, the cluster handle",
     ("kube", "k8s_ready", "k8s_wait")),
    ("day-2 engine", "node upgrades and replacement decided from what the cluster says, and their resources",
     ("upgrade",)),
    ("add-ons and platforms", "what runs on a cluster, and how a cluster comes to be: neither imports the other",
     ("addons | aws | kind",)),
    ("assembly", "the cluster per platform (told what the add-ons need), the smoke test, backups",
     ("platforms | smoke | dr",)),
    ("the one gate, the one wiring", "validate(): every rule below, before anything is registered; wire(): "
     "settings to cluster, backups, add-ons, smoke test, for the program and the components alike",
     ("validate | wiring",)),
    ("public face", "the typed components other programs build, and the package that exports them",
     ("api", "")),
    ("operator tools", "offline plan, node images, state repair, the component provider, reports over a "
     "running cluster's history, its conformance evidence",
     ("plan | images | state | provider | report | conformance",)),
    ("tools over plans and images", "the policy pack, region stamping and pre-flight (which checks the node images)",
     ("policies | stamping | preflight",)),
    ("cli", "the `ck8s-gpu` command", ("cli",)),
    ("entry", "`python -m ck8s_gpu`", ("__main__",)),
)


@dataclass(frozen=True)
class Unit:
    path: str  # dotted, relative to ROOT; "" is the package face
    layer: int
    group: int  # units of one `a | b` line share a group: siblings that may not import each other


@dataclass
class Report:
    modules: int
    edges: int
    upward: list[tuple[str, str, str]] = field(default_factory=list)  # importer, imported, why
    circles: list[list[str]] = field(default_factory=list)
    unassigned: list[str] = field(default_factory=list)
    unknown_units: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.upward or self.circles or self.unassigned or self.unknown_units)


def units(layers: Iterable[tuple[str, str, tuple[str, ...]]] = LAYERS) -> list[Unit]:
    out: list[Unit] = []
    group = 0
    for index, (_name, _why, lines) in enumerate(layers):
        for line in lines:
            group += 1
            out.extend(Unit(part.strip(), index, group) for part in line.split("|"))
    return out


def unit_of(module: str, table: list[Unit], root: str = ROOT) -> Unit | None:
    """The most specific unit holding `module` (a full dotted name)."""
    rel = module.removeprefix(root).removeprefix(".")
    best: Unit | None = None
    for u in table:
        if u.path == "":
            if rel == "" and best is None:
                best = u
        elif (rel == u.path or rel.startswith(u.path + ".")) and (best is None or len(u.path) > len(best.path)):
            best = u
    return best


def graph_edges(package: str = ROOT) -> tuple[set[str], dict[str, set[str]]]:
    """(modules, direct imports between them) of `package`, as grimp reads them (must be importable)."""
    g = grimp.build_graph(package, cache_dir=None)
    mods = set(g.modules)
    return mods, {m: {t for t in g.find_modules_directly_imported_by(m) if t in mods} for m in mods}


def circles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def check(modules: set[str], edges: Mapping[str, set[str]], root: str = ROOT,
          layers: Iterable[tuple[str, str, tuple[str, ...]]] = LAYERS) -> Report:
    layers = tuple(layers)
    table = units(layers)
    report = Report(modules=len(modules), edges=sum(len(v) for v in edges.values()))
    for u in table:  # a unit naming nothing would make its rule vacuous
        name = f"{root}.{u.path}" if u.path else root
        if name not in modules:
            report.unknown_units.append(u.path or "(package face)")
    where = {m: unit_of(m, table, root) for m in modules}
    report.unassigned = sorted(m for m, u in where.items() if u is None)
    names = [name for name, _why, _units in layers]
    for importer in sorted(edges):
        a = where.get(importer)
        for imported in sorted(edges[importer]):
            b = where.get(imported)
            if a is None or b is None or a == b:
                continue
            if b.layer > a.layer:
                report.upward.append((importer, imported, f"{names[a.layer]} imports {names[b.layer]}, a layer above"))
            elif b.layer == a.layer and a.group == b.group:
                report.upward.append((importer, imported, f"{a.path} and {b.path} are independent siblings"))
    report.circles = circles(edges)
    return report


def markdown_table(layers: Iterable[tuple[str, str, tuple[str, ...]]] = LAYERS) -> str:
    rows = ["| layer (top imports down) | what | units under components/ |", "|---|---|---|"]
    for i, (name, why, lines) in reversed(list(enumerate(layers))):
        shown = "; ".join(
            " \\| ".join(f"`{p.strip() or '__init__'}`" for p in line.split("|")) for line in lines)
        rows.append(f"| {i}. {name} | {why} | {shown} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", action="store_true", help="print the layer table as Markdown and exit")
    args = parser.parse_args(argv)
    if args.table:
        print(markdown_table())
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    modules, edges = graph_edges()
    r = check(modules, edges)
    print(f"{r.modules} modules, {r.edges} import edges; {len(r.upward)} upward imports, "
          f"{len(r.circles)} circles, {len(r.unassigned)} modules in no layer")
    for importer, imported, why in r.upward:
        print(f"upward: {importer} -> {imported} ({why})")
    for c in r.circles:
        print("circle: " + " -> ".join(c))
    for m in r.unassigned:
        print(f"in no layer: {m} (add it to scripts/layers.py LAYERS and docs/architecture.md)")
    for u in r.unknown_units:
        print(f"unknown unit in LAYERS: {u}")
    return 0 if r.ok else 1


if __name__ == "__main__":
    sys.exit(main())

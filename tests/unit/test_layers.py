"""The packages of components/ import one way: no cycle between them, lazy (function-level)
imports included, so a layer can be read, tested and reused without the ones above it."""

from __future__ import annotations

import ast
from pathlib import Path

from components import PROJECT_DIR

ROOT = PROJECT_DIR / "components"


def package_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def package_graph(root: Path = ROOT) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        module = ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                if name.startswith("components.") and package_of(name) != package_of(module):
                    edges.setdefault(package_of(module), set()).add(package_of(name))
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one package (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_package_imports_back_into_one_that_imports_it() -> None:
    assert cycles(package_graph()) == []


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "components"
    for name, imports in {"a": "from components.b.x import y", "b": "def f():\n    from components.a import z"}.items():
        (pkg / name).mkdir(parents=True)
        (pkg / name / "__init__.py").write_text(imports + "\n")
    assert cycles(package_graph(pkg)) == [["components.a", "components.b"]]


def test_settings_import_nothing_above_them() -> None:
    below = {"components.settings", "components.pins", "components.instance_types", "components.labels"}
    assert package_graph().get("components.settings", set()) <= below


def test_pure_modules_load_no_pulumi_provider_sdk() -> None:
    """Facts, values and the one gate are plain Python: reading them must not load a provider SDK."""
    import subprocess
    import sys

    code = ("import sys, components.cluster_facts, components.smoke.values, components.addons.graph, "
            "components.validate; print(sorted(m for m in ('pulumi_kubernetes', 'pulumi_aws') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_DIR, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr

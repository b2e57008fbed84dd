"""The package is `components` in this checkout and `ck8s_gpu` once installed (ADR 0044): one tree
works under both names only if it never imports itself by either name."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "components"
OWN_NAMES = ("components", "ck8s_gpu")


def _absolute_self_imports(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [(node.lineno, n) for n in names if n.split(".")[0] in OWN_NAMES]
    return found


def test_the_checker_sees_each_spelling() -> None:
    src = "import components\nfrom components.x import y\nimport ck8s_gpu.api as a\nfrom . import pins\n" \
          "from .x import y\nimport componentsx\nfrom pulumi import Output\n"
    assert _absolute_self_imports(src) == [(1, "components"), (2, "components.x"), (3, "ck8s_gpu.api")]


def test_the_package_imports_itself_only_relatively() -> None:
    bad = [f"{path.relative_to(PACKAGE.parent)}:{line}: import {name}"
           for path in sorted(PACKAGE.rglob("*.py"))
           for line, name in _absolute_self_imports(path.read_text())]
    assert not bad, "use a relative import (ADR 0044):\n" + "\n".join(bad)

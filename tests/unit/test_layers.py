"""The layer contract of components/ (scripts/layers.py, docs/architecture.md "Layers"): nothing
imports upward, independent siblings do not import each other, no module circles, every module in
a layer. The checker must see the real graph (relative, function-level and TYPE_CHECKING imports):
the first version of this test matched only absolute `components.` imports and, once every import
became relative (ADR 0044), saw 0 edges and passed whatever the code did."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.tables.paths import PROJECT_DIR
from tests.helpers.tools import load_script

SCRIPT = PROJECT_DIR / "scripts" / "layers.py"


layers = load_script("layers")


@pytest.fixture(scope="module")
def graph() -> tuple[set[str], dict[str, set[str]]]:
    return layers.graph_edges("components")  # type: ignore[no-any-return]


def test_the_tree_keeps_the_contract(graph: tuple[set[str], dict[str, set[str]]]) -> None:
    report = layers.check(*graph)
    assert report.upward == []
    assert report.circles == []
    assert report.unassigned == []
    assert report.unknown_units == []


def test_the_checker_sees_the_real_graph(graph: tuple[set[str], dict[str, set[str]]]) -> None:
    """Not vacuous: hundreds of edges, and each kind of import the contract covers is one of them."""
    modules, edges = graph
    assert len(modules) > 200 and sum(len(v) for v in edges.values()) > 600
    # a relative import at module level (`from .settings.check import check`)
    assert "components.settings.check" in edges["components.validate"]
    # a relative import two packages up (`from ..settings.model import Settings`)
    assert "components.settings.model" in edges["components.addons.base"]
    # a function-level import (make_cluster loads the AWS platform lazily)
    assert "components.aws.cluster" in edges["components.platforms"]
    # an import under `if TYPE_CHECKING:` (the package face names the API for type checkers)
    assert "components.api" in edges["components"]


# --- injected violations: a copy of the tree under another package name, one edit each ---------

NAME = "ck8s_layer_probe"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / NAME
    shutil.copytree(PROJECT_DIR / "components", root, ignore=shutil.ignore_patterns("__pycache__", "*.sh"))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield root
    for m in [m for m in sys.modules if m == NAME or m.startswith(NAME + ".")]:
        del sys.modules[m]


def _append(path: Path, code: str) -> None:
    path.write_text(path.read_text() + "\n\n" + code + "\n")


def _check(root: Path):  # type: ignore[no-untyped-def]
    return layers.check(*layers.graph_edges(NAME), root=NAME)


def test_the_unedited_copy_passes(tree: Path) -> None:
    assert _check(tree).ok


@pytest.mark.parametrize(("file", "code", "expected"), [
    # settings (layer 1) reaching up to the add-ons (layer 5), lazily
    ("settings/model.py", "def _probe() -> None:\n    from ..addons import catalog  # noqa",
     "settings imports add-ons"),
    # a platform importing an add-on: siblings of one layer
    ("aws/tags.py", "from ..addons import base", "aws and addons are independent siblings"),
    # a table importing the settings, absolutely (the installed spelling of the package)
    ("tables/pins.py", f"import {NAME}.settings.model", "tables imports settings"),
    # under TYPE_CHECKING still counts
    ("tables/labels.py", f"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from {NAME}.cli import main",
     "tables imports cli"),
])
def test_an_upward_import_fails(tree: Path, file: str, code: str, expected: str) -> None:
    _append(tree / file, code)
    report = _check(tree)
    assert not report.ok
    assert any(expected in why for _a, _b, why in report.upward), report.upward


def test_a_circle_fails_even_inside_one_layer_and_through_a_lazy_import(tree: Path) -> None:
    # pins and labels are both tables (no upward edge): only the circle check can see this
    _append(tree / "tables" / "labels.py", "from . import pins  # noqa")
    _append(tree / "tables" / "pins.py", "def _probe() -> None:\n    from . import labels  # noqa")
    report = _check(tree)
    assert report.upward == []
    assert [f"{NAME}.tables.labels", f"{NAME}.tables.pins"] in report.circles


def test_a_module_in_no_layer_fails(tree: Path) -> None:
    (tree / "stray.py").write_text("X = 1\n")
    assert _check(tree).unassigned == [f"{NAME}.stray"]


def test_a_layer_naming_nothing_fails(graph: tuple[set[str], dict[str, set[str]]]) -> None:
    table = (*layers.LAYERS, ("ghost", "a unit that no longer exists", ("no_such_module",)))
    assert layers.check(*graph, layers=table).unknown_units == ["no_such_module"]


def test_the_command_reports_and_exits_0() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT)], cwd=PROJECT_DIR, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 upward imports, 0 circles, 0 modules in no layer" in run.stdout


def test_docs_show_the_table_the_test_enforces() -> None:
    doc = (PROJECT_DIR / "docs" / "architecture.md").read_text()
    start = doc.index("<!-- layers:start")
    shown = doc[doc.index("\n", start) + 1:doc.index("<!-- layers:end -->")]
    assert shown.strip() == layers.markdown_table(), "regenerate: python scripts/layers.py --table"


def test_pure_modules_load_no_pulumi_provider_sdk() -> None:
    """Facts, values and the one gate are plain Python: reading them must not load a provider SDK."""
    code = ("import sys, components.facts.cluster, components.smoke.values, components.addons.graph, "
            "components.validate; print(sorted(m for m in ('pulumi_kubernetes', 'pulumi_aws') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_DIR, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr

"""The project's own Helm charts (`charts/`): where they are and how to render them offline.

Rendering uses the real Helm library (helm-python-sdk): `ck8s-gpu plan` writes the manifests a
release would apply, and the chart tests validate them against Kubernetes schemas.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..tables.paths import PACKAGE_DIR, PROJECT_DIR


def _charts_dir() -> Path:
    # An installed wheel carries charts/ as components/_charts (setup.py); a checkout (and an
    # editable install) has it at the top, beside components/.
    packaged = PACKAGE_DIR / "_charts"
    return packaged if packaged.is_dir() else PROJECT_DIR / "charts"


CHARTS_DIR = _charts_dir()


def chart_dir(name: str) -> Path:
    path = CHARTS_DIR / name
    if not (path / "Chart.yaml").is_file():
        raise FileNotFoundError(f"no chart {name} under {CHARTS_DIR}")
    return path


def project_root() -> Path:
    """The Pulumi project's folder (where Pulumi.yaml is): the engine's root directory when a
    program runs, else the working directory."""
    import pulumi.runtime

    root = pulumi.runtime.get_root_directory()
    return Path(root).resolve() if root else Path.cwd().resolve()


def release_chart_path(name: str) -> str:
    """Chart `name` as a Helm release's `chart` input: relative to the Pulumi project when it lies
    below it (state and plans then do not change with where the project or its virtualenv is
    checked out), absolute otherwise. pulumi-kubernetes reads a relative path from the project's
    folder: the engine starts providers there."""
    path = chart_dir(name)
    try:
        return str(path.relative_to(project_root()))
    except ValueError:
        return str(path)


def local_chart_dir(chart: str, root: Path | None = None) -> Path:
    """Where a release's local `chart` input points (the inverse of release_chart_path)."""
    path = Path(chart)
    return path if path.is_absolute() else (root or project_root()) / path


def chart_version(name: str) -> str:
    """The `version` of charts/<name>/Chart.yaml (what a mirror of this chart serves by default)."""
    meta = yaml.safe_load((chart_dir(name) / "Chart.yaml").read_text())
    return str(meta["version"])


def render(name: str, values: dict[str, Any], *, release: str, namespace: str) -> list[dict[str, Any]]:
    """Render chart `name` with `values`; returns the objects in template order (hooks included)."""
    import helm_python  # heavy native library: imported only when rendering

    chart = helm_python.Chart.load(chart_dir(name))
    rendered = chart.render(values, name=release, namespace=namespace, is_install=True)
    objects: list[dict[str, Any]] = []
    for path in sorted(rendered):
        if not path.endswith((".yaml", ".yml", ".json")):
            continue
        objects.extend(doc for doc in yaml.safe_load_all(rendered[path]) if doc)
    return objects

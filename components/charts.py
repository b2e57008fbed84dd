"""The project's own Helm charts (`charts/`): where they are and how to render them offline.

Rendering uses the real Helm library (helm-python-sdk): `ck8s-gpu plan` writes the manifests a
release would apply, and the chart tests validate them against Kubernetes schemas.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from components import PROJECT_DIR

CHARTS_DIR = PROJECT_DIR / "charts"


def chart_dir(name: str) -> Path:
    path = CHARTS_DIR / name
    if not (path / "Chart.yaml").is_file():
        raise FileNotFoundError(f"no chart {name} under {CHARTS_DIR}")
    return path


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

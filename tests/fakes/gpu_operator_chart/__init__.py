"""A stand-in of NVIDIA's gpu-operator chart at the pin (v26.7.0), GPUCluster mode only, for `local`.

`local` installs no internet chart, so the operator-managed DRA test (tests/integration/
test_dra_driver_upgrade_local.py) serves this one from a loopback Helm repo (tests/helpers/
chart_repo.py), named as the pin names it (`gpuStack.addons.gpuOperator.repository`). Written here
from deployments/gpu-operator/ at v26.7.0 (10ee5b3), nothing copied: `crds/` holds the GPUCluster
CRD's shape (group, version, scope, status subresource, the singleton rule), `templates/` renders
the GPUCluster from the values ck8s-gpu sets as templates/gpucluster.yaml does, and refuses
ClusterPolicy mode, which it does not model. No operator runs from it: the controller's behaviour
is tests/fakes/gpu_operator/live.py, beside the API server.
"""

from __future__ import annotations

from pathlib import Path

from components.tables import pins
from tests.helpers import chart_repo

CHART = Path(__file__).resolve().parent / "chart"
VERSION = pins.CHARTS["gpu-operator"].version


def repository(out_dir: Path) -> Path:
    """A Helm repository folder holding the stand-in at the pinned version, with its index.yaml."""
    chart_repo.package(CHART, out_dir, VERSION)
    chart_repo.write_index(out_dir)
    return out_dir

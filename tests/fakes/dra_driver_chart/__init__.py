"""A stand-in of the NVIDIA DRA driver's chart (dra-driver-nvidia-gpu) at 0.4.1 and 0.5.0, for `local`.

`local` installs no internet chart, so its upgrade test serves this one from a loopback Helm repo
(tests/helpers/chart_repo.py). Shaped from upstream's deployments/helm/dra-driver-nvidia-gpu/ at
v0.4.1 (764900e) and main 95932046 (chart 0.5.0-dev), written here, nothing copied:
- `crds/`: ComputeDomain and ComputeDomainClique, the stand-ins of tools/sim/crds/ (written from the
  Go types; upstream's two crds/ files are the same at both versions);
- the DeviceClasses of templates/deviceclass-*.yaml with their names and CEL selectors, written with
  the `resourceApiVersion` value (else the newest served) and `extendedResourceName` on v1 only;
- what templates/validation.yaml (and, at 0.5.0, _helpers.tpl validateIMEXConfig) refuse that this
  project's values could reach.
No controller, kubelet plugin or webhook: `local` has no kubelet (test publishers write the slices).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from tests.helpers import chart_repo

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SIM_CRDS = ROOT / "tools" / "sim" / "crds"
VERSIONS = ("0.4.1", "0.5.0")
CRD_NAMES = ("computedomaincliques.resource.nvidia.com", "computedomains.resource.nvidia.com")


def package(out_dir: Path, version: str) -> Path:
    """`dra-driver-nvidia-gpu-<version>.tgz` in `out_dir`: the base chart, the version's own files, the CRDs."""
    if version not in VERSIONS:
        raise ValueError(f"no stand-in for dra-driver-nvidia-gpu {version}; have {', '.join(VERSIONS)}")
    crds = sorted(SIM_CRDS.glob("resource.nvidia.com_*.yaml"))
    if not crds:
        raise FileNotFoundError(f"no ComputeDomain CRD stand-ins under {SIM_CRDS}")
    with tempfile.TemporaryDirectory() as tmp:
        chart = Path(tmp) / "dra-driver-nvidia-gpu"
        shutil.copytree(HERE / "base", chart)
        shutil.copytree(HERE / version, chart, dirs_exist_ok=True)
        (chart / "crds").mkdir()
        for crd in crds:
            shutil.copy(crd, chart / "crds" / crd.name)
        return chart_repo.package(chart, out_dir, version)


def repository(out_dir: Path) -> Path:
    """A Helm repository folder holding the stand-in at every version, with its index.yaml."""
    for version in VERSIONS:
        package(out_dir, version)
    chart_repo.write_index(out_dir)
    return out_dir

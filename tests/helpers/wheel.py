"""The ck8s-gpu wheel, built from this checkout and installed into a fresh virtualenv outside it.

The build runs on a copy of the sources (no build/ or egg-info left in the checkout) without build
isolation, with the pinned setuptools of the test extras: no network. The fresh virtualenv gets
the wheel by a real `pip install` and reaches the third-party dependencies through a path entry
to this virtualenv's site-packages; that entry is a plain path, so the editable install's finder
there is never activated: `ck8s_gpu` can only come from the wheel.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.tools import copy_parts

# What pyproject.toml, setup.py and MANIFEST.in name: the sdist's inputs.
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "CHANGELOG.md", "components", "charts")


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def site_packages(self) -> Path:
        out = subprocess.run([str(self.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True)
        return Path(out.stdout.strip())


def build_wheel(work: Path) -> Path:
    src = copy_parts(work / "src", SOURCES)
    dist = work / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                    "--disable-pip-version-check", "-q", "-w", str(dist), str(src)], check=True, timeout=600)
    [wheel] = dist.glob("ck8s_gpu-*.whl")
    return wheel


def install(work: Path) -> Installed:
    return fresh_venv(work / "venv", build_wheel(work))


@dataclass(frozen=True)
class Release:
    sdist: Path
    wheel: Path


def build_release(work: Path) -> Release:
    """What a release uploads: `python -m build` makes the sdist, then the wheel FROM that sdist
    (so a file the sdist forgets breaks the wheel), offline with the pinned backend."""
    src = copy_parts(work / "src", SOURCES)
    dist = work / "dist"
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(src)],
                   check=True, timeout=600, capture_output=True)
    [sdist] = dist.glob("ck8s_gpu-*.tar.gz")
    [wheel] = dist.glob("ck8s_gpu-*.whl")
    return Release(sdist, wheel)


def fresh_venv(venv: Path, *wheels: Path) -> Installed:
    """A virtualenv with `wheels` installed (no index) and this one's third-party packages reachable."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    installed = Installed(wheels[0], venv)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(installed.python), "install", "--no-deps",
                    "--no-index", "--disable-pip-version-check", "-q", *map(str, wheels)], check=True, timeout=300)
    # After the install: pip must not see (nor try to replace) this checkout's editable install.
    (installed.site_packages / "ck8s_gpu_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return installed

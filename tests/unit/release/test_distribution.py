"""The release a package index gets: sdist + wheel built by `python -m build`, accepted by twine's
own metadata check, installing one top-level name (`ck8s_gpu`, ADR 0044), beside a decoy
`components` package that neither shadows it nor is shadowed."""

from __future__ import annotations

import email.parser
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from components import PROJECT_DIR
from tests.helpers.wheel import Installed, Release, build_release, fresh_venv

PYPROJECT = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())["project"]
DIST_INFO = f"ck8s_gpu-{PYPROJECT['version']}.dist-info"


@pytest.fixture(scope="module")
def release(tmp_path_factory: pytest.TempPathFactory) -> Release:
    return build_release(tmp_path_factory.mktemp("release"))


def _wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        return z.namelist()


def _metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as z:
        return email.parser.Parser().parsestr(z.read(f"{DIST_INFO}/METADATA").decode())


def test_the_wheel_installs_only_ck8s_gpu(release: Release) -> None:
    tops = {name.split("/")[0] for name in _wheel_names(release.wheel)}
    assert tops == {"ck8s_gpu", DIST_INFO}, tops
    names = set(_wheel_names(release.wheel))
    # The package data the components read at run time travels inside the one name.
    assert {"ck8s_gpu/aws/scripts/ck8s-node.sh", "ck8s_gpu/_charts/gpu-smoke-test/Chart.yaml",
            "ck8s_gpu/py.typed"} <= names
    # Every module of the checkout's package, under the installed name (a folder without an
    # __init__.py would silently stay behind: the CLI once did).
    modules = {f"ck8s_gpu/{p.relative_to(PROJECT_DIR / 'components')}"
               for p in (PROJECT_DIR / "components").rglob("*.py") if "__pycache__" not in p.parts}
    assert "ck8s_gpu/provider/main.py" in modules and "ck8s_gpu/cli/main.py" in modules
    assert modules <= names, sorted(modules - names)


def test_the_metadata_is_what_pyproject_says(release: Release) -> None:
    meta = _metadata(release.wheel)
    assert meta["Name"] == "ck8s-gpu" and meta["Version"] == PYPROJECT["version"]
    assert meta["License-Expression"] == "Apache-2.0" and meta["License-File"] == "LICENSE"
    assert meta["Requires-Python"] == ">=3.11" and meta["Description-Content-Type"] == "text/markdown"
    runtime = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]
    assert sorted(runtime) == sorted(PYPROJECT["dependencies"])
    assert f"{DIST_INFO}/licenses/LICENSE" in _wheel_names(release.wheel)
    with zipfile.ZipFile(release.wheel) as z:
        entry_points = z.read(f"{DIST_INFO}/entry_points.txt").decode()
    assert "ck8s-gpu = ck8s_gpu.cli.main:main" in entry_points
    assert "pulumi-resource-ck8s-gpu = ck8s_gpu.provider.main:main" in entry_points


def test_an_index_accepts_both_files(release: Release) -> None:
    # twine's --strict check is what PyPI's upload refuses on: metadata fields and the README rendering.
    out = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(release.sdist), str(release.wheel)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("PASSED") == 2, out.stdout


def test_the_sdist_carries_the_release_notes_and_no_checkout_extras(release: Release) -> None:
    with tarfile.open(release.sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    assert {"CHANGELOG.md", "LICENSE", "README.md", "setup.py", "pyproject.toml", "MANIFEST.in",
            "charts/gpu-smoke-test/Chart.yaml", "components/api.py"} <= names
    assert not {n for n in names if n.startswith(("tests/", "stacks/", "tools/", ".ci/"))}


def test_the_changelog_names_this_version() -> None:
    assert f"## [{PYPROJECT['version']}]" in (PROJECT_DIR / "CHANGELOG.md").read_text()


DECOY = '''[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"
[project]
name = "decoy-components"
version = "1.0"
[tool.setuptools]
packages = ["components", "components.settings"]
'''


@pytest.fixture(scope="module")
def beside_decoy(release: Release, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The wheel and another distribution's top-level `components` (with a `settings` too) in one venv."""
    work = tmp_path_factory.mktemp("decoy")
    src = work / "decoy"
    (src / "components" / "settings").mkdir(parents=True)
    (src / "pyproject.toml").write_text(DECOY)
    (src / "components" / "__init__.py").write_text("DECOY = True\n")
    (src / "components" / "settings" / "__init__.py").write_text("DECOY_SETTINGS = True\n")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                    "--disable-pip-version-check", "-q", "-w", str(work / "dist"), str(src)], check=True, timeout=300)
    [decoy] = (work / "dist").glob("decoy_components-*.whl")
    return fresh_venv(work / "venv", release.wheel, decoy)


PROBE = """
import sys, components, ck8s_gpu
from ck8s_gpu import GpuAddons, GpuAddonsArgs, GpuPool
from ck8s_gpu.validate import parse
settings = parse({"platform": "existing", "nodePools": [{"name": "l4", "instanceType": "g6.xlarge",
                  "minSize": 1, "desiredSize": 1, "maxSize": 1}]}, "probe")
import components.settings
assert components.DECOY and components.settings.DECOY_SETTINGS, "the decoy was shadowed"
assert not [m for m in sys.modules if m.startswith("components.") and m != "components.settings"], \\
    sorted(m for m in sys.modules if m.startswith("components"))
print(ck8s_gpu.__file__, type(settings).__module__, GpuAddons.TYPE)
"""


def test_the_wheel_works_beside_a_decoy_components_package(beside_decoy: Installed, tmp_path: Path) -> None:
    out = subprocess.run([str(beside_decoy.python), "-c", PROBE], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    file, settings_module, token = out.stdout.split()
    assert Path(file).is_relative_to(beside_decoy.site_packages) and settings_module == "ck8s_gpu.settings.model"
    assert token == "ck8s-gpu:index:GpuAddons"


@pytest.mark.parametrize("command", [["-m", "ck8s_gpu", "--help"], ["bin/ck8s-gpu", "--help"]])
def test_the_cli_runs_from_the_wheel_beside_the_decoy(beside_decoy: Installed, tmp_path: Path,
                                                      command: list[str]) -> None:
    argv = ([str(beside_decoy.venv / command[0])] if command[0].startswith("bin/") else [str(beside_decoy.python)]) \
        + command[1 if command[0].startswith("bin/") else 0:]
    out = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    for sub in ("plan", "smoke", "stamp", "preflight", "upgrade"):
        assert sub in out.stdout, out.stdout

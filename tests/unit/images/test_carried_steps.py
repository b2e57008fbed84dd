"""The snap and preload steps run under bash against stand-ins for snap, unsquashfs, regctl and curl
that behave as their upstream does where the steps rely on it (each stand-in names its source)."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from components.addons.image_refs import ImageRef
from components.images.document import carried_document
from components.images.settings import parse_image_settings
from components.tables import pins

PIN = {"kubernetes": {"track": "1.34-classic", "snap": {"version": "v1.34.4", "revision": 5325}}}
IMAGES = (ImageRef("nvcr.io", "nvidia/gpu-operator", "v26.7.0", "test"),
          ImageRef("docker.io", "library/ubuntu", "24.04", "test", digest="sha256:" + "a" * 64))
FEATURE = "ghcr.io/canonical/k8s-snap/pause:3.10"
MIRROR = "123456789012.dkr.ecr.eu-north-1.amazonaws.com"

# snapd 2.77 cmd/snap/cmd_download.go: --channel with --revision is refused; files are
# <name>_<revision>.snap/.assert in --target-directory. Revision 11 stands for "what the channel has".
SNAP = r"""#!/bin/bash
if [ "$1" = list ]; then exit 1; fi
name=$2 rev=11 dir=. channel=
for arg in "${@:3}"; do case $arg in --revision=*) rev=${arg#*=}; r=1 ;; --channel=*) channel=1 ;;
  --target-directory=*) dir=${arg#*=} ;; esac; done
if [ -n "${r:-}" ] && [ -n "$channel" ]; then echo 'error: cannot specify both channel and revision' >&2; exit 1; fi
echo "$name" > "$dir/${name}_${rev}.snap"; echo assert > "$dir/${name}_${rev}.assert"
"""
# squashfs-tools unsquashfs -cat <image> <file>: the file's content on stdout. The stand-in "snap"
# holds its name; meta/snap.yaml as k8s-snap release-1.34 snap/snapcraft.yaml produces it, snapd's as
# snapd 2.77 build-aux/snap/snapcraft.yaml does (type snapd, no base).
UNSQUASHFS = r"""#!/bin/bash
name=$(cat "$2")
case "$3:$name" in
  meta/snap.yaml:k8s)
    printf 'name: k8s\nversion: v1.34.4\nbase: core22\nconfinement: classic\napps:\n  k8s:\n    base: x\n' ;;
  meta/snap.yaml:aws-cli) printf "name: aws-cli\nversion: '2.31.0'\nbase: core22\nconfinement: classic\n" ;;
  meta/snap.yaml:core22) printf 'name: core22\nversion: "20250101"\ntype: base\n' ;;
  meta/snap.yaml:snapd) printf 'name: snapd\nversion: "2.77"\ntype: snapd\nconfinement: strict\n' ;;
  images.txt:k8s) printf '%s\n' "$FEATURE" ;;
  *) exit 1 ;;
esac
"""
# regclient v0.5.3 cmd/regctl/image.go: `image digest <ref>`, `image export <ref> [file] --name --platform`.
REGCTL = r"""#!/bin/bash
case "$1 $2" in
  "image digest") echo "sha256:$(printf '%s' "$3" | sha256sum | cut -c1-64)" ;;
  "image export") echo "$3 $6 $8" > "$4" ;;
  *) exit 1 ;;
esac
"""


def _tools(tmp: Path) -> dict[str, str]:
    bin_ = tmp / "bin"
    bin_.mkdir()
    for name, text in (("snap", SNAP), ("unsquashfs", UNSQUASHFS), ("regctl", REGCTL), ("apt-get", "#!/bin/sh\n")):
        path = bin_ / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}", "FEATURE": FEATURE}


def _run(step: dict[str, Any], tmp: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = "\n".join(step["inputs"]["commands"]).replace("/var/lib/ck8s-gpu", str(tmp / "root"))
    script = script.replace(f"{tmp}/root/build-tools/regctl image", "regctl image")  # the stand-in runs
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, check=False)


def _steps(settings: Any) -> dict[str, dict[str, Any]]:
    doc = carried_document(settings, IMAGES)
    return {f"{p['name']}.{s['name']}": s for p in doc["phases"] for s in p["steps"]}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "root").mkdir()
    return _tools(tmp_path)


def test_the_pinned_revision_is_downloaded_by_revision_alone_and_snapd_then_bases_come_first(
        tmp_path: Path, env: dict[str, str]) -> None:
    steps = _steps(parse_image_settings({"region": "eu-north-1", **PIN}, "t"))
    download = steps["build.DownloadSnaps"]
    commands = download["inputs"]["commands"]
    assert "snap download k8s --revision=5325 --target-directory=/var/lib/ck8s-gpu/snaps" in commands
    assert not any("download k8s" in c and "--channel" in c for c in commands)  # snapd refuses both
    assert "snap download snapd --target-directory=/var/lib/ck8s-gpu/snaps" in commands
    run = _run(download, tmp_path, env)
    assert run.returncode == 0, run.stderr
    order = (tmp_path / "root/snaps/install-order").read_text().splitlines()
    # snapd first: no `core` base for it (its snap.yaml has none, but it is type snapd, no app)
    assert order == ["snapd 11 strict", "core22 11 strict", "k8s 5325 classic", "aws-cli 11 classic"]
    check = _run(steps["validate.SnapsCarried"], tmp_path, env)
    assert check.returncode == 0, check.stderr
    (tmp_path / "root/snaps/core22_11.assert").unlink()
    check = _run(steps["validate.SnapsCarried"], tmp_path, env)
    assert check.returncode == 1 and "core22_11.assert missing" in check.stderr


def _without_snapd_line(root: Path) -> None:
    order = root / "snaps/install-order"
    order.write_text("".join(line for line in order.read_text().splitlines(True) if not line.startswith("snapd ")))


def _snapd_last(root: Path) -> None:
    order = root / "snaps/install-order"
    lines = order.read_text().splitlines(True)
    order.write_text("".join(lines[1:] + lines[:1]))


@pytest.mark.parametrize(("break_", "message"), [
    (_without_snapd_line, "install-order does not start with snapd <revision> strict"),
    (_snapd_last, "install-order does not start with snapd <revision> strict"),
    (lambda root: (root / "snaps/snapd_11.snap").unlink(), "snaps/snapd_11.snap missing (snapd 11 strict)"),
    (lambda root: (root / "snaps/snapd_11.assert").unlink(), "snaps/snapd_11.assert missing (snapd 11 strict)"),
], ids=["no-snapd-line", "snapd-not-first", "no-snapd-snap", "no-snapd-assert"])
def test_an_image_without_snapd_fails_the_build(tmp_path: Path, env: dict[str, str], break_: Any,
                                               message: str) -> None:
    """Issue 45: a node without the snapd snap fetches it before k8s (snapd 2.77 handlers_prereq.go
    installPrereqs), so an image that cannot install it offline fails here, not at boot."""
    steps = _steps(parse_image_settings({"region": "eu-north-1", **PIN}, "t"))
    assert _run(steps["build.DownloadSnaps"], tmp_path, env).returncode == 0
    break_(tmp_path / "root")
    check = _run(steps["validate.SnapsCarried"], tmp_path, env)
    assert check.returncode == 1 and message in check.stderr, check.stderr


def test_a_snapd_file_of_another_type_fails_the_build(tmp_path: Path, env: dict[str, str]) -> None:
    unsquashfs = Path(env["PATH"].split(":")[0]) / "unsquashfs"
    unsquashfs.write_text(unsquashfs.read_text().replace("type: snapd", "type: app"))
    run = _run(_steps(parse_image_settings({"region": "eu-north-1", **PIN}, "t"))["build.DownloadSnaps"],
               tmp_path, env)
    assert run.returncode == 1 and "snapd_11.snap: not of type snapd" in run.stderr


def test_a_revision_of_another_version_fails_the_build(tmp_path: Path, env: dict[str, str]) -> None:
    other = {"kubernetes": {"snap": {"version": "v1.34.5", "revision": 5400}}}
    run = _run(_steps(parse_image_settings({"region": "eu-north-1", **other}, "t"))["build.DownloadSnaps"],
               tmp_path, env)
    assert run.returncode == 1 and "k8s revision 5400 is v1.34.4, the pin says v1.34.5" in run.stderr


@pytest.mark.parametrize("mirror", [None, MIRROR])
def test_every_image_is_exported_by_digest_with_its_name_and_locked(tmp_path: Path, env: dict[str, str],
                                                                   mirror: str | None) -> None:
    settings = parse_image_settings({"region": "eu-north-1", "architecture": "arm64", "role": "control-plane",
                                     "kubernetes": {"snap": {"version": "v1.34.4", "revision": 5328}},
                                     **({"mirror": mirror} if mirror else {})}, "t")
    steps = _steps(settings)
    assert _run(steps["build.DownloadSnaps"], tmp_path, env).returncode == 0
    run = _run(steps["build.PreloadImages"], tmp_path, env)
    assert run.returncode == 0, run.stderr
    lock = dict(line.split() for line in (tmp_path / "root/images/images.lock").read_text().splitlines())
    prefix = f"{MIRROR}/" if mirror else ""
    operator, ubuntu = f"{prefix}nvcr.io/nvidia/gpu-operator:v26.7.0", f"{prefix}docker.io/library/ubuntu:24.04"
    # Catalog images are named as chart values name them; k8s-snap's keep their upstream names.
    assert set(lock) == {operator, ubuntu, FEATURE}
    assert lock[ubuntu] == "sha256:" + "a" * 64  # a pinned digest is kept, not re-resolved
    tar = tmp_path / "root/images" / (operator.replace("/", "_").replace(":", "_") + ".tar")
    source, name, platform = tar.read_text().split()
    assert (name, platform) == (operator, "linux/arm64")
    assert source == f"{prefix}nvcr.io/nvidia/gpu-operator@{lock[operator]}"  # by digest
    feature = (tmp_path / "root/images" / (FEATURE.replace("/", "_").replace(":", "_") + ".tar")).read_text().split()
    assert feature[0].startswith(f"{prefix}ghcr.io/canonical/k8s-snap/pause@sha256:") and feature[1] == FEATURE
    check = _run(steps["validate.ImagesPreloaded"], tmp_path, env)
    assert check.returncode == 0, check.stderr
    tar.unlink()
    check = _run(steps["validate.ImagesPreloaded"], tmp_path, env)
    assert check.returncode == 1 and f"{operator}:" in check.stderr


def test_regctl_runs_only_with_the_pinned_sha256(tmp_path: Path, env: dict[str, str]) -> None:
    step = _steps(parse_image_settings({"region": "eu-north-1", **PIN}, "t"))["build.InstallRegctl"]
    commands = step["inputs"]["commands"]
    assert pins.REGCTL.url.format(arch="amd64") in " ".join(commands)
    assert any(pins.REGCTL.sha256["amd64"] in c and "sha256sum --check" in c for c in commands)
    curl = Path(env["PATH"].split(":")[0]) / "curl"
    curl.write_text('#!/bin/bash\nwhile [ "$1" != -o ]; do shift; done; echo not-regctl > "$2"\n')
    curl.chmod(0o755)
    run = _run(step, tmp_path, env)
    assert run.returncode != 0 and "FAILED" in run.stdout + run.stderr
    assert not (tmp_path / "root/build-tools/regctl").exists()

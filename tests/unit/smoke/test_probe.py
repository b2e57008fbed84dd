"""The probe script from the rendered chart, run with bash against stand-in `nvidia-smi`s, and
the parser that reads its output."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from components.kube.charts import render
from components.smoke import probe
from tests.helpers.tools import skip_or_fail
from tests.unit.smoke import settings_fixtures as sf

GPU = "GPU-5d7c3b1e-9a8f-4c2d-8e6b-0f1a2b3c4d5e"
MIG = "MIG-1c2d3e4f-5a6b-5c7d-8e9f-0a1b2c3d4e5f"
# `nvidia-smi -L` on a real host (driver 580), whole GPU and MIG formats.
SMI_WHOLE = f"GPU 0: NVIDIA L4 (UUID: {GPU})"
SMI_MIG = f"GPU 0: NVIDIA A100-SXM4-80GB (UUID: {GPU})\n  MIG 1g.10gb     Device  0: (UUID: {MIG})"


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    plan = sf.plan(sf.AWS)
    cm = next(o for o in render("gpu-smoke-test", plan.values, release=plan.release, namespace=plan.namespace)
              if o["kind"] == "ConfigMap")
    path = tmp_path_factory.mktemp("probe") / "probe.sh"
    path.write_text(cm["data"]["probe.sh"])
    return path


def run(script: Path, tmp: Path, *, smi: str | None, rc: int = 0, expect: str = "nvidia-smi",
        env: dict[str, str] | None = None, released: bool = True, timeout: int = 30) -> tuple[int, str]:
    bindir = tmp / "bin"
    bindir.mkdir(exist_ok=True)
    if smi is not None:
        fake = bindir / "nvidia-smi"
        body = smi.replace("'", "'\\''")
        fake.write_text(f"#!/bin/sh\n[ \"$1\" = -L ] || exit 2\nprintf '%s\\n' '{body}'\nexit {rc}\n")
        fake.chmod(0o755)
    annotations = tmp / "annotations"
    annotations.write_text('kai.scheduler/skip-podgrouper="true"\n'
                           + ('ck8s-gpu.io/smoke-release="go"\n' if released else ""))
    tools = {t: shutil.which(t) for t in ("grep", "date", "sleep", "env", "printf")}
    for tool, where in tools.items():
        if where and not (bindir / tool).exists():
            (bindir / tool).symlink_to(where)
    full_env = {"PATH": str(bindir), "SMOKE_POD": "p-1", "SMOKE_CONTAINER": "probe", "SMOKE_NODE": "node-a",
                "SMOKE_CASE": "gpus", "SMOKE_EXPECT": expect, "SMOKE_BARRIER": "true",
                "SMOKE_BARRIER_TIMEOUT": str(timeout), "SMOKE_ANNOTATIONS": str(annotations), **(env or {})}
    bash = shutil.which("bash")
    assert bash
    done = subprocess.run([bash, str(script)], env=full_env, capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout


def test_real_gpu_prints_its_uuid_and_passes_the_barrier(script: Path, tmp_path: Path) -> None:
    rc, out = run(script, tmp_path, smi=SMI_WHOLE)
    assert rc == 0, out
    seen = probe.parse(out)
    assert (seen.began, seen.pod, seen.node, seen.case) == (True, "p-1", "node-a", "gpus")
    assert (seen.nvidia_smi_rc, seen.uuids, seen.end_rc) == (0, [GPU], 0)


def test_mig_lists_parent_and_mig_uuid(script: Path, tmp_path: Path) -> None:
    rc, out = run(script, tmp_path, smi=SMI_MIG)
    seen = probe.parse(out)
    assert rc == 0 and seen.gpu_uuids == [GPU] and seen.mig_uuids == [MIG]


def test_failing_nvidia_smi_fails_the_container(script: Path, tmp_path: Path) -> None:
    rc, out = run(script, tmp_path, smi="NVIDIA-SMI has failed because it couldn't communicate with the driver", rc=9)
    seen = probe.parse(out)
    assert rc == 1 and seen.nvidia_smi_rc == 9 and seen.uuids == [] and seen.end_rc == 1


def test_missing_nvidia_smi_fails_on_a_real_gpu(script: Path, tmp_path: Path) -> None:
    rc, out = run(script, tmp_path, smi=None)
    assert rc == 1 and "CK8S-SMOKE nvidia-smi missing" in out
    assert probe.parse(out).nvidia_smi_rc is None


def test_simulated_driver_env_devices(script: Path, tmp_path: Path) -> None:
    # fake-gpu-operator: a fake nvidia-smi that rejects -L, and GPU_DEVICE_<name with _>=<name>.
    dev = GPU.lower()
    env = {f"GPU_DEVICE_{dev.replace('-', '_')}": dev,
           f"GPU_DEVICE_{dev.replace('-', '_')}_SHARING_STRATEGY": "TimeSlicing"}
    rc, out = run(script, tmp_path, smi="flag provided but not defined: -L", rc=2, expect="env", env=env)
    seen = probe.parse(out)
    assert rc == 0, out
    assert seen.env_devices == [dev]  # the sharing-strategy variable is not a device
    assert seen.nvidia_smi_rc == 2


def test_mps_pipe_directory_is_reported_with_whether_it_is_mounted(script: Path, tmp_path: Path) -> None:
    # NVIDIA's driver injects CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps and mounts the daemon's pipes there.
    pipe = tmp_path / "nvidia-mps"
    pipe.mkdir()
    rc, out = run(script, tmp_path, smi=SMI_WHOLE, env={"CUDA_MPS_PIPE_DIRECTORY": str(pipe)})
    seen = probe.parse(out)
    assert rc == 0 and (seen.mps_pipe, seen.mps_mounted) == (str(pipe), True)
    rc, out = run(script, tmp_path, smi=SMI_WHOLE, env={"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path / "absent")})
    assert (probe.parse(out).mps_pipe, probe.parse(out).mps_mounted) == (str(tmp_path / "absent"), False)
    rc, out = run(script, tmp_path, smi=SMI_WHOLE)
    assert "CK8S-SMOKE mps" not in out and probe.parse(out).mps_pipe is None


def test_barrier_never_released_fails_after_its_timeout(script: Path, tmp_path: Path) -> None:
    rc, out = run(script, tmp_path, smi=SMI_WHOLE, released=False, timeout=1)
    seen = probe.parse(out)
    assert rc == 1 and seen.barrier_timeout and seen.end_rc == 1


def test_parse_ignores_noise_and_keeps_other_lines() -> None:
    seen = probe.parse("starting\r\nCK8S-SMOKE begin pod=a container=b node=c case=gpus\r\n"
                       "CK8S-SMOKE uuid GPU-x\nCK8S-SMOKE env not-a-device\nCK8S-SMOKE end rc=oops\n")
    assert seen.began and seen.uuids == ["GPU-x"] and seen.env == {} and seen.end_rc is None
    assert seen.other_lines == ["starting"]
    assert probe.parse("").began is False


def test_shellcheck_probe_script(script: Path) -> None:
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        skip_or_fail("shellcheck not installed (Debian package shellcheck; scripts/install-debs.sh installs it)")
    done = subprocess.run([shellcheck, "-s", "bash", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_imex_channel_device_nodes_are_reported_one_a_line(script: Path, tmp_path: Path) -> None:
    # The compute-domain plugin injects /dev/nvidia-caps-imex-channels/channel<id> (nvlib.go
    # getNVCapIMEXChannelDeviceInfo); SMOKE_IMEX_DIR stands in for /dev here.
    channels = tmp_path / "imex"
    channels.mkdir()
    (channels / "channel0").touch()
    (channels / "channel7").touch()
    rc, out = run(script, tmp_path, smi=SMI_WHOLE, env={"SMOKE_IMEX_DIR": str(channels)})
    assert rc == 0, out
    assert probe.parse(out).imex_channels == [str(channels / "channel0"), str(channels / "channel7")]
    rc, out = run(script, tmp_path, smi=SMI_WHOLE, env={"SMOKE_IMEX_DIR": str(tmp_path / "absent")})
    assert "CK8S-SMOKE imex" not in out and probe.parse(out).imex_channels == []


def test_parse_reads_imex_channel_lines() -> None:
    seen = probe.parse("CK8S-SMOKE imex channel=/dev/nvidia-caps-imex-channels/channel0\nCK8S-SMOKE imex bogus\n")
    assert seen.imex_channels == ["/dev/nvidia-caps-imex-channels/channel0"]

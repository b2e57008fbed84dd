"""gpuStack.toolkit host on a GPU worker (docs/adr/0046): the node script hooks the image's NVIDIA
Container Toolkit into k8s-snap's containerd before k8sd first starts it, against the k8s-snap fake
(containerd's configuration and unit drop-ins: tests/fakes/k8s_snap/containerd.py) and the
nvidia-ctk fake (tests/fakes/nvidia_ctk.py, checked against the real v1.20.0)."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.addons.gpu_operator import ADDON as GPU_OPERATOR
from tests.fakes.gpu_operator import runtime_classes
from tests.fakes.k8s_snap import containerd
from tests.unit.addons.helpers import final_values
from tests.unit.aws.cluster_sim import TRACKS, SimCluster, simulate
from tests.unit.aws.test_node_scenarios import FAILED, control_planes, ok

# Runs the node scripts in bash against the k8s-snap fake: seconds per case (the `slow` tier;
# `make check` leaves it out, `make test` and CI run it).
pytestmark = pytest.mark.slow

DROP_IN = "10-ck8s-gpu-nvidia-runtime.conf"


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[SimCluster]:
    s = simulate(tmp_path / "w", "aws-dev")
    yield s
    s.fleet.close()


@pytest.mark.parametrize("track", TRACKS)
def test_the_worker_starts_containerd_with_the_nvidia_runtime_and_k8s_snaps_settings(tmp_path: Path,
                                                                                      track: str) -> None:
    s = simulate(tmp_path / "w", "aws-dev", track)
    try:
        cp = control_planes(s)[0]
        w = ok(s.worker())
        unit = (w.root / containerd.UNIT_DROP_INS / DROP_IN).read_text()
        exec_pre = shlex.split(next(x for x in unit.splitlines() if x.startswith("ExecStartPre=")).split("=", 1)[1])
        assert exec_pre[0] == str(w.root / "usr/bin/nvidia-ctk") and "--config-source=file" in exec_pre
        assert "--cdi.enabled" in exec_pre and "--nvidia-set-as-default" not in exec_pre
        state = w.state["node"]["containerd"]
        # every RuntimeClass the operator creates for this stack's values has its handler here
        classes = runtime_classes.created(final_values(GPU_OPERATOR, s.settings))
        assert set(classes) == {"nvidia", "nvidia-cdi", "nvidia-legacy"}
        assert set(classes.values()) <= set(state["runtimes"])
        assert state["runtimes"] == {"runc": "runc", "nvidia": "/usr/bin/nvidia-container-runtime",
                                     "nvidia-cdi": "/usr/bin/nvidia-container-runtime.cdi",
                                     "nvidia-legacy": "/usr/bin/nvidia-container-runtime.legacy"}
        assert state["default_runtime"] == "runc" and state["enable_cdi"] is True  # the operator's CDI mode
        # the copied CRI section keeps what k8sd wrote (containerd replaces a plugin's section whole)
        assert state["sandbox_image"] == containerd.PAUSE_IMAGE
        assert state["systemd_cgroup"] == {"runc": True, "nvidia": True, "nvidia-cdi": True, "nvidia-legacy": True}
        # one drop-in holds all three: the chain's scratch copies stay out of what containerd imports
        assert [f.name for f in (w.root / "etc/containerd/conf.d").glob("*.toml")] == ["99-nvidia.toml"]
        assert (w.root / "etc/containerd/conf.d/99-nvidia.toml").exists()
        assert w.calls("systemctl") == ["systemctl daemon-reload"]  # no containerd restart
        # control planes run no GPU work: k8sd's runtime alone
        assert cp.state["node"]["containerd"]["runtimes"] == {"runc": "runc"}
        assert not (cp.root / containerd.UNIT_DROP_INS).exists()
    finally:
        s.fleet.close()


def test_an_image_without_the_toolkit_fails_before_it_joins(dev: SimCluster) -> None:
    control_planes(dev)
    w = dev.worker()
    (w.root / "usr/bin/nvidia-ctk").unlink()  # an image made before the toolkit was in it
    assert w.run(CK8S_JOIN_ATTEMPTS="1").returncode == 1
    assert f"{FAILED}: worker {w.name}: gpuStack.toolkit host, but the image has no" in w.console
    assert w.calls("k8s join-cluster") == [] and w.state["state"] == "terminated"


def test_a_failing_nvidia_ctk_fails_the_join_at_once_as_containerd_would_not_start(dev: SimCluster) -> None:
    """Issue 45: the node's own services do not start, which no other token fixes: one join attempt,
    one minted token, then the boot gives up (the fleet allows 4 attempts)."""
    control_planes(dev)
    w = dev.worker()
    (w.root / "usr/bin/nvidia-ctk").write_text("#!/bin/sh\necho 'boom' >&2\nexit 3\n")
    assert w.run().returncode == 1
    assert "failed to start worker services: snap.k8s.containerd.service: Control process exited" in w.log
    assert "status=3: boom" in w.log
    assert f"{FAILED}: worker {w.name}: this node's own services do not start (k8sd: failed to start worker " \
           "services" in w.console
    assert len(w.calls("k8s join-cluster")) == 1, w.calls("k8s join-cluster")
    cluster = dev.fleet.cluster
    assert cluster and w.name not in cluster["members"]


def test_without_cdi_nvidia_is_the_default_runtime(tmp_path: Path) -> None:
    s = simulate(tmp_path / "w", "aws-dev", boot_override={"host_toolkit": "default-runtime"})
    try:
        control_planes(s)
        w = ok(s.worker())
        state = w.state["node"]["containerd"]
        assert state["default_runtime"] == "nvidia" and state["enable_cdi"] is False
        # without CDI the operator creates only the `nvidia` RuntimeClass: no mode runtimes
        no_cdi = final_values(GPU_OPERATOR, s.settings) | {"cdi": {"enabled": False}}
        assert runtime_classes.created(no_cdi) == {"nvidia": "nvidia"}
        assert state["runtimes"] == {"runc": "runc", "nvidia": "/usr/bin/nvidia-container-runtime"}
    finally:
        s.fleet.close()


def test_an_unknown_mode_is_refused(dev: SimCluster) -> None:
    control_planes(dev)
    w = dev.worker()
    env = w.root / "etc/ck8s-gpu/node.env"  # what the user-data wrote: the script reads it
    env.write_text(env.read_text().replace("CK8S_HOST_TOOLKIT=cdi", "CK8S_HOST_TOOLKIT=bogus"))
    assert w.run(CK8S_JOIN_ATTEMPTS="1").returncode == 1
    assert "CK8S_HOST_TOOLKIT is 'bogus': expected cdi or default-runtime" in w.console

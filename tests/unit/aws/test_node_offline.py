"""Nodes that boot without the internet (docs/adr/0043): the rendered aws-airgap node scripts on the
k8s-snap fake with the world's network cut (tests/fakes/k8s_snap/network.py). The node images'
media follow the image program's contract: /var/lib/ck8s-gpu/snaps/install-order with
`<name>_<rev>.snap` and `.assert`, /var/lib/ck8s-gpu/images/*.tar (OCI archives) and images.lock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from components.addons.selected import addon_facts
from components.aws import registry
from tests.fakes.k8s_snap import containerd
from tests.fakes.k8s_snap.fleet import Instance
from tests.unit.aws.cluster_sim import SimCluster, simulate
from tests.unit.aws.node_media import PAUSE, media

# Runs the node scripts in bash against the k8s-snap fake: seconds per case (the `slow` tier;
# `make check` leaves it out, `make test` and CI run it).
pytestmark = pytest.mark.slow

FAILED = "CK8S-GPU-BOOT-FAILED"
MIRROR = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
@pytest.fixture
def airgap(tmp_path: Path) -> Iterator[SimCluster]:
    s = simulate(tmp_path / "w", "aws-airgap")
    s.auto_media = False  # each test writes the image's media itself
    with s.fleet.mutate() as state:
        state["network_cut"] = True
    yield s
    s.fleet.close()


def with_mirror_policy(s: SimCluster, inst: Instance) -> Instance:
    """The ECR mirror statements the roles get (components/aws/registry.py)."""
    with s.fleet.mutate() as state:
        state["instances"][inst.id]["role_policies"].append(
            {"Version": "2012-10-17", "Statement": registry.mirror_pull_statements(s.settings)})
    return inst


def boot(s: SimCluster, inst: Instance) -> Instance:
    result = inst.run()
    assert result.returncode == 0, f"{result.stderr[-3000:]}\n--- log ---\n{inst.log[-3000:]}"
    return inst


def test_the_airgap_stack_renders_its_offline_env() -> None:
    from components.aws import userdata as ud
    from tests.unit.aws.conftest import settings_for

    env = ud.supply_env(ud.cluster_boot(airgap := settings_for("aws-airgap"), "arn:x", "doc", addon_facts(airgap)))
    assert env == {"CK8S_SNAP_SOURCE": "image", "CK8S_IMAGES_PRELOADED": "1", "CK8S_REGISTRY_MIRROR": MIRROR,
                   "CK8S_MIRROR_UPSTREAMS": "docker.io ghcr.io nvcr.io public.ecr.aws quay.io registry.k8s.io",
                   "CK8S_MIRROR_AUTH": "ecr", "CK8S_MIRROR_REGION": "us-east-1", "CK8S_OFFLINE": "1"}


def test_a_control_plane_and_a_gpu_worker_boot_offline_and_touch_no_internet(airgap: SimCluster) -> None:
    cp = boot(airgap, with_mirror_policy(airgap, media(airgap.control_plane(0))))
    w = boot(airgap, with_mirror_policy(airgap, media(airgap.worker())))
    world = airgap.fleet.world
    assert world.get("internet_attempts", []) == []
    assert set(world["cluster"]["members"]) == {cp.name, w.name}
    for inst in (cp, w):
        node = inst.state["node"]
        assert node["snap_release"]["k8s"] == {"revision": "5325", "version": "v1.34.4"}
        snaps = inst.root / "var/lib/ck8s-gpu/snaps"
        assert inst.calls("snap install") == [f"snap install {snaps}/snapd_25202.snap",
                                               f"snap install {snaps}/core22_2045.snap",
                                               f"snap install {snaps}/k8s_5325.snap --classic"]
        # side-loaded: imported when containerd started, renamed .loaded
        assert (inst.root / "var/snap/k8s/common/images/pause.tar.loaded").exists()
        assert node["images"] == {PAUSE: "side-loaded"}
        assert inst.pull(PAUSE) == "present"
        # mirror: every upstream's hosts.toml, ECR credentials, renewed by a timer
        hosts = (inst.root / "etc/containerd/hosts.d/docker.io/hosts.toml").read_text()
        assert f'server = "https://{MIRROR}/v2/docker.io"' in hosts and "override_path = true" in hosts
        assert 'authorization = "Basic ' in hosts
        assert node["units"] == {"ck8s-gpu-mirror-auth.timer": "enabled,active"}
        token = hosts.split('authorization = "Basic ')[1].split('"')[0]
        assert token not in inst.log and token not in inst.console  # a credential: never logged
    # an image not preloaded comes from the mirror, with the ECR header, not from the public host
    got = w.pull("docker.io/library/busybox:1.36")
    assert got == f"https://{MIRROR}/v2/docker.io/library/busybox/manifests/1.36"
    assert w.state["node"]["pulls"][-1]["authorization"] is True
    assert airgap.fleet.world.get("internet_attempts", []) == []


def test_the_timer_renews_the_mirror_credentials(airgap: SimCluster) -> None:
    boot(airgap, with_mirror_policy(airgap, media(airgap.control_plane(0))))
    w = boot(airgap, with_mirror_policy(airgap, media(airgap.worker())))
    hosts = w.root / "etc/containerd/hosts.d/ghcr.io/hosts.toml"
    before = hosts.read_text()
    service = (w.root / "etc/systemd/system/ck8s-gpu-mirror-auth.service").read_text()
    exec_start = next(line.split("=", 1)[1] for line in service.splitlines() if line.startswith("ExecStart="))
    assert exec_start.endswith(" mirror-auth")
    import subprocess

    done = subprocess.run(exec_start.split(), env=w.env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert hosts.read_text() != before and 'authorization = "Basic ' in hosts.read_text()


def test_a_missing_snap_file_fails_with_the_boot_marker_and_no_store_attempt(airgap: SimCluster) -> None:
    cp = media(airgap.control_plane(0), skip="k8s")
    assert cp.run().returncode == 1
    assert f"{FAILED}: bootstrap {cp.name}: snap ack" in cp.console and "k8s_5325.assert" in cp.console
    assert airgap.fleet.world.get("internet_attempts", []) == []
    assert airgap.fleet.cluster is None


def test_an_unacked_snap_is_refused_as_snapd_refuses_it(airgap: SimCluster) -> None:
    cp = media(airgap.control_plane(0), ack=False)
    assert cp.run().returncode == 1
    assert 'error: cannot find signatures with metadata for snap/component' in cp.log
    assert f"{FAILED}: bootstrap {cp.name}: could not install" in cp.console


def test_a_missing_base_offline_fails_as_snapd_cannot_fetch_it(airgap: SimCluster) -> None:
    cp = media(airgap.control_plane(0))
    order = cp.root / "var/lib/ck8s-gpu/snaps/install-order"
    order.write_text("snapd 25202 strict\nk8s 5325 classic\n")  # no base first
    assert cp.run().returncode == 1
    assert 'Ensure prerequisites for "k8s" are available (cannot install snap base "core22"' in cp.log
    assert [a["host"] for a in airgap.fleet.world["internet_attempts"]] == ["api.snapcraft.io"]


def test_a_malformed_archive_stays_and_the_node_gives_up_naming_it(airgap: SimCluster) -> None:
    cp = with_mirror_policy(airgap, media(airgap.control_plane(0), archives={"bad.tar": b"not a tar"}))
    assert cp.run().returncode == 1
    assert (cp.root / "var/snap/k8s/common/images/bad.tar").exists()
    assert "containerd did not import" in cp.console and "bad.tar" in cp.console
    assert any("Failed to import images" in line for line in cp.state["node"]["containerd_log"])


def test_offline_without_a_mirror_a_pull_fails_and_is_recorded(airgap: SimCluster) -> None:
    cp = with_mirror_policy(airgap, media(airgap.control_plane(0)))
    boot(airgap, cp)
    import shutil

    shutil.rmtree(cp.root / "etc/containerd/hosts.d")
    with pytest.raises(containerd.PullError, match=r"registry-1\.docker\.io.*i/o timeout"):
        cp.pull("nginx:1.27")
    assert [a["host"] for a in airgap.fleet.world["internet_attempts"]] == ["registry-1.docker.io"]


def test_offline_the_store_is_never_asked(airgap: SimCluster) -> None:
    import dataclasses

    boot_ = dataclasses.replace(airgap.boot, snap_from_image=False)
    w = airgap.worker(boot=boot_)
    assert w.run().returncode == 1
    assert "offline: no Snap Store" in w.console and w.calls("snap install") == []


def test_a_snapd_change_conflict_is_waited_out_not_fatal(airgap: SimCluster) -> None:
    """Issue 45: first boot's auto-refresh holds a change on the snap: snapd refuses the install with
    a change conflict, which passes; the boot retries it and completes."""
    cp = with_mirror_policy(airgap, media(airgap.control_plane(0)))
    with airgap.fleet.mutate() as state:
        state["snap_conflicts"] = {cp.id: 2}
    boot(airgap, cp)
    assert cp.log.count('has "auto-refresh" change in progress') == 2
    assert "snapd_25202.snap: attempt 1 of 8 failed" in cp.log and "snapd_25202.snap: attempt 2 of 8 failed" in cp.log


def test_a_permanent_snap_error_is_not_retried(airgap: SimCluster) -> None:
    """An unacked file fails for good: one attempt, then the boot gives up (no token, no minutes spent)."""
    cp = media(airgap.control_plane(0), ack=False)
    assert cp.run().returncode == 1
    installs = [c for c in cp.calls("snap install") if c.endswith(".snap") or ".snap " in c]
    assert len(installs) == 1, installs
    assert "attempt 1 of 8 failed" not in cp.log and "failed for good (snapd: error: cannot find signatures" in cp.log


SNAPS = "var/lib/ck8s-gpu/snaps"
SEEDED = "latest/stable"  # a snap the AMI seeded (tracks its channel)


def seed(s: SimCluster, inst: Instance, *snaps: str) -> Instance:
    """The host's own snaps before the boot (an AMI's seed)."""
    with s.fleet.mutate() as state:
        state["instances"][inst.id]["node"]["snap"].update({name: SEEDED for name in snaps})
    return inst


@pytest.mark.parametrize(("seeded", "installed"), [
    # snapd 2.77 handlers_prereq.go considerSnapdAsPrereq: without the snapd snap every app fetches it
    ((), ["snapd_25202.snap", "core22_2045.snap", "k8s_5325.snap --classic"]),
    (("core",), ["snapd_25202.snap", "core22_2045.snap", "k8s_5325.snap --classic"]),  # core no longer serves
    (("snapd",), ["core22_2045.snap", "k8s_5325.snap --classic"]),  # the host's snapd is kept
    (("snapd", "core22"), ["core22_2045.snap", "k8s_5325.snap --classic"]),
], ids=["bare", "core", "snapd-seeded", "snapd-and-core22-seeded"])
def test_the_carried_snapd_is_installed_only_where_snapd_would_fetch_it(
        airgap: SimCluster, seeded: tuple[str, ...], installed: list[str]) -> None:
    """Issue 45: offline, snapd cannot fetch its own snap before k8s; the image's is installed first,
    and only where the host lacks one (a seeded, maybe newer, snapd stays)."""
    cp = boot(airgap, with_mirror_policy(airgap, seed(airgap, media(airgap.control_plane(0)), *seeded)))
    assert cp.calls("snap install") == [f"snap install {cp.root / SNAPS}/{f}" for f in installed]
    node = cp.state["node"]
    assert node["snap"]["snapd"] == (SEEDED if "snapd" in seeded else "-")  # "-": from the image's file
    assert ("the snapd snap is installed: " in cp.log) == ("snapd" in seeded)
    assert airgap.fleet.world.get("internet_attempts", []) == []


@pytest.mark.parametrize("seeded", [(), ("core",)], ids=["bare", "core"])
def test_an_image_without_snapd_fails_at_boot_naming_it(airgap: SimCluster, seeded: tuple[str, ...]) -> None:
    """An image built before the image program carried snapd, on a host without the snapd snap: the
    node gives up before any install, naming the missing line, and asks no store."""
    cp = seed(airgap, media(airgap.control_plane(0), snapd_snap=False), *seeded)
    assert cp.run().returncode == 1
    assert f"{FAILED}: bootstrap {cp.name}: no snapd line in {cp.root / SNAPS}/install-order" in cp.console
    assert cp.calls("snap install") == []
    assert airgap.fleet.world.get("internet_attempts", []) == []


def test_an_image_without_snapd_boots_where_the_host_has_the_snapd_snap(airgap: SimCluster) -> None:
    cp = boot(airgap, with_mirror_policy(airgap, seed(airgap, media(airgap.control_plane(0), snapd_snap=False),
                                                      "snapd")))
    assert cp.calls("snap install") == [f"snap install {cp.root / SNAPS}/core22_2045.snap",
                                         f"snap install {cp.root / SNAPS}/k8s_5325.snap --classic"]


def test_without_the_snapd_snap_offline_snapd_refuses_k8s_as_it_cannot_fetch_it(airgap: SimCluster) -> None:
    """The rule the boot follows is snapd's: the image's files without its snapd, installed as
    k8s-snap's offline.md says (core22, then k8s), fail at k8s, which snapd would fetch snapd for."""
    cp = media(airgap.control_plane(0))
    snaps = cp.root / SNAPS
    for argv in (["ack", f"{snaps}/core22_2045.assert"], ["install", f"{snaps}/core22_2045.snap"],
                 ["ack", f"{snaps}/k8s_5325.assert"]):
        assert cp.exec(["snap", *argv]).returncode == 0
    done = cp.exec(["snap", "install", f"{snaps}/k8s_5325.snap", "--classic"])
    assert done.returncode == 1
    assert ('error: cannot perform the following tasks:\n- Ensure prerequisites for "k8s" are available '
            '(cannot install system snap "snapd": Post "https://api.snapcraft.io/v2/snaps/refresh"') in done.stderr
    assert [a["host"] for a in airgap.fleet.world["internet_attempts"]] == ["api.snapcraft.io"]
    assert "k8s" not in cp.state["node"]["snap"]

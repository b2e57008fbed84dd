"""tools/nodetier.py's pure parts and tools/probe_image.py: the configs each node runs with (golden),
that they keep every path and port of a node its own, and the locally built OCI images.

The processes themselves run in tests/integration/test_node_tier.py."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import tomllib
from pathlib import Path

import pytest

from tests.helpers.golden import assert_golden
from tests.helpers.tools import load_tool

nt = load_tool("nodetier")
pi = load_tool("probe_image")

ROOT = Path("/tmp/ck8s-nt-0123456789")
SOCKET_MAX = 107  # sockaddr_un.sun_path is 108 bytes with its NUL


def paths(index: int) -> object:
    return nt.NodePaths(ROOT / str(index), Path("/var/tmp/pytest/node-tier/logs"))


def rendered(index: int) -> dict[str, str]:
    p = paths(index)
    return {
        "containerd.toml": nt.containerd_config(p, sandbox_image="ck8s-gpu.local/pause:abc", stream_port=40000),
        "kubelet.json": json.dumps(nt.kubelet_config(index, p, port=41000, healthz_port=42000,
                                                     cgroups=nt.cgroup_root(f"kubelet-node-{index}")), indent=2)
                        + "\n",
        "cni.conflist": json.dumps(nt.cni_config(index, p), indent=2) + "\n",
    }


@pytest.mark.parametrize("name", ["containerd.toml", "kubelet.json", "cni.conflist"])
def test_node_configs_golden(name: str) -> None:
    assert_golden(Path("nodetier") / name, rendered(0)[name])


def test_containerd_keeps_to_the_node_directory_and_refuses_nothing_cri_needs() -> None:
    p = paths(1)
    conf = tomllib.loads(nt.containerd_config(p, sandbox_image="ck8s-gpu.local/pause:abc", stream_port=1))
    assert conf["version"] == 3
    for key in ("root", "state", "temp"):
        assert conf[key].startswith(f"{ROOT}/1/"), (key, conf[key])
    assert conf["grpc"]["address"] == str(p.socket) and conf["grpc"]["tcp_address"] == ""
    assert len(str(p.socket)) <= SOCKET_MAX and len(conf["ttrpc"]["address"]) <= SOCKET_MAX
    runtime = conf["plugins"]["io.containerd.cri.v1.runtime"]
    assert runtime["enable_cdi"] is True and runtime["cdi_spec_dirs"] == [str(p.cdi)]
    assert runtime["netns_mounts_under_state_dir"] is True and runtime["restrict_oom_score_adj"] is True
    runc = runtime["containerd"]["runtimes"]["runc"]
    assert runc["runtime_type"] == "io.containerd.runc.v2"
    assert runc["options"] == {"BinaryName": nt.RUNC, "Root": str(p.runc_root), "SystemdCgroup": False}
    assert runtime["cni"]["conf_dir"] == str(p.cni_conf)
    images = conf["plugins"]["io.containerd.cri.v1.images"]
    assert images["pinned_images"]["sandbox"] == "ck8s-gpu.local/pause:abc"
    cri = conf["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["stream_server_address"] == nt.LOOPBACK and cri["stream_server_port"] == "1"


def test_two_nodes_share_no_path_port_address_subnet_or_cgroup() -> None:
    a, b = rendered(0), rendered(1)
    ka, kb = json.loads(a["kubelet.json"]), json.loads(b["kubelet.json"])
    assert ka["address"] != kb["address"] and ka["podCIDR"] != kb["podCIDR"]
    assert ka["cgroupRoot"] != kb["cgroupRoot"] and ka["podLogsDir"] != kb["podLogsDir"]
    assert ka["containerRuntimeEndpoint"] != kb["containerRuntimeEndpoint"]
    ca, cb = json.loads(a["cni.conflist"]), json.loads(b["cni.conflist"])
    assert ca["plugins"][0]["bridge"] != cb["plugins"][0]["bridge"]
    assert ca["plugins"][0]["ipam"]["dataDir"] != cb["plugins"][0]["ipam"]["dataDir"]
    # A node's IP is no loopback address (the kubelet refuses one) and no pod's.
    for i in range(2):
        ip = nt.node_ip(i)
        assert not ip.startswith("127.") and not ip.startswith(nt.pod_subnet(i).rsplit(".", 2)[0])


def test_kubelet_sockets_fit_sockaddr_un_even_from_a_deep_test_directory() -> None:
    deep = Path("/tmp/pytest-of-root/pytest-123/test_a_very_long_test_name_that_pytest_makes0/node-tier0")
    root = nt.short_root(deep)
    assert root == nt.short_root(deep), "the same directory must find its leftovers again"
    assert root != nt.short_root(deep / "other")
    registrar = root / "9" / "kubelet" / "root" / "plugins_registry" / "gpu.nvidia.com-reg.sock"
    assert len(str(registrar)) <= SOCKET_MAX, registrar


def test_kubelet_config_keys_are_ones_the_kubelet_reads() -> None:
    """The kubelet ignores unknown keys (lenient decoding): a misspelt one silently does nothing, as
    `podLogsDirectory` once did and two kubelets deleted each other's logs. The names here are the
    json tags of k8s.io/kubelet v0.34.4 config/v1beta1 KubeletConfiguration; the tier also refuses
    to start when the kubelet logs a strict-decoding failure."""
    known = {"apiVersion", "kind", "address", "port", "readOnlyPort", "healthzBindAddress", "healthzPort",
             "authentication", "authorization", "containerRuntimeEndpoint", "cgroupDriver", "cgroupsPerQOS",
             "cgroupRoot", "failSwapOn", "podLogsDir", "podCIDR", "resolvConf", "maxPods", "serializeImagePulls",
             "imageGCHighThresholdPercent", "imageGCLowThresholdPercent", "evictionHard", "protectKernelDefaults",
             "localStorageCapacityIsolation", "nodeStatusUpdateFrequency", "shutdownGracePeriod"}
    conf = nt.kubelet_config(0, paths(0), port=1, healthz_port=2, cgroups="/x")
    assert set(conf) <= known, set(conf) - known


def test_the_tier_names_what_this_machine_lacks(tmp_path: Path) -> None:
    lacking = nt.missing(tmp_path)
    for binary in nt.REQUIRED_BINARIES:
        assert f"{binary} (tools/build.sh)" in lacking


def test_faults_are_the_plugins_own(tmp_path: Path) -> None:
    node = nt.KubeletNode(nt.NodeSpec("n", []), 0, nt.NodePaths(tmp_path, tmp_path / "logs"), tmp_path,
                          tmp_path / "kubeconfig")
    (tmp_path / "gpu").mkdir()
    node.set_fault("wrong-device")
    assert node.paths.fault_file.read_text() == "wrong-device\n"
    node.set_fault(None)
    assert not node.paths.fault_file.exists()
    with pytest.raises(ValueError, match="unknown fault"):
        node.set_fault("melt")


# --- the images ----------------------------------------------------------------------------------


def members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_probe_image_is_a_valid_oci_layout_with_two_names(tmp_path: Path) -> None:
    probe, pause = pi.build(tmp_path)
    files = members(probe.archive)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads(files["index.json"])
    names = [m["annotations"][pi.NAME_ANNOTATION] for m in index["manifests"]]
    assert names == [probe.name, probe.by_digest]
    assert {m["digest"] for m in index["manifests"]} == {probe.digest}
    for path, data in files.items():  # content addressed: every blob is its own digest
        if path.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == path.rsplit("/", 1)[1]
    manifest = json.loads(files[f"blobs/sha256/{probe.digest.split(':')[1]}"])
    config = json.loads(files[f"blobs/sha256/{manifest['config']['digest'].split(':')[1]}"])
    layer = files[f"blobs/sha256/{manifest['layers'][0]['digest'].split(':')[1]}"]
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(layer).hexdigest()]
    assert config["config"]["Entrypoint"] == ["/bin/bash"]
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        entries = {m.name: m for m in tar.getmembers()}
    # What the probe script runs (charts/gpu-smoke-test/templates/configmap-probe.yaml), at the
    # paths it calls them by once /bin is /usr/bin; and no nvidia-smi: CDI brings that.
    assert entries["bin"].issym() and entries["bin"].linkname == "usr/bin"
    for cmd in pi.PROBE_COMMANDS:
        assert f"usr/bin/{cmd}" in entries, cmd
    assert not any(name.endswith("nvidia-smi") for name in entries)
    assert any(name.startswith("usr/lib") and "libc.so" in name for name in entries)
    pause_config = members(pause.archive)
    assert pause.digest != probe.digest and pause.tag == probe.tag
    assert any(b'"Entrypoint": ["/usr/bin/sleep", "infinity"]' in data for data in pause_config.values())


def test_the_model_server_rides_in_the_probe_image_when_given(tmp_path: Path) -> None:
    server = tmp_path / "ck8s-model-server"
    server.write_bytes(b"\x7fELF static stand-in")
    server.chmod(0o755)
    plain, _ = pi.build(tmp_path / "plain")
    probe, _ = pi.build(tmp_path / "with", server)
    assert probe.tag != plain.tag  # the tag is the layer's content: another image, another pin
    files = members(probe.archive)
    manifest = json.loads(files[f"blobs/sha256/{probe.digest.split(':')[1]}"])
    layer = files[f"blobs/sha256/{manifest['layers'][0]['digest'].split(':')[1]}"]
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        member = tar.getmember(pi.MODEL_SERVER)
        assert member.mode & 0o111 and tar.extractfile(member).read() == server.read_bytes()  # type: ignore[union-attr]


def test_probe_image_is_reproducible(tmp_path: Path) -> None:
    first = pi.build(tmp_path / "a")
    again = pi.build(tmp_path / "b")
    assert [i.reference for i in first] == [i.reference for i in again]
    assert first[0].archive.read_bytes() == again[0].archive.read_bytes()


def test_merged_usr_paths() -> None:
    assert pi.in_image(Path("/lib/x86_64-linux-gnu/libc.so.6")) == "usr/lib/x86_64-linux-gnu/libc.so.6"
    assert pi.in_image(Path("/lib64/ld-linux-x86-64.so.2")) == "usr/lib64/ld-linux-x86-64.so.2"
    assert pi.in_image(Path("/usr/bin/bash")) == "usr/bin/bash"


def test_a_lane_without_kubelets_refuses_a_node_tier_before_touching_the_host(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # scripts/all_tiers.sh runs the unmarked integration tests beside the `kubelets` lane: a node tier
    # started there would race the other lane for bridge names and node addresses.
    monkeypatch.setenv(nt.FORBID_ENV, "1")
    tier = nt.NodeTier(tmp_path / "nodes", tmp_path / "kubeconfig", [], bin_dir=tmp_path / "no-bin")
    with pytest.raises(nt.NodeTierError, match="kubelets"):
        tier.up()
    assert list(tmp_path.iterdir()) == []  # nothing created, not even the work dir

"""The fake nvidia-ctk and the fake containerd's config loading against what the real ones did.

tests/data/nvidia-ctk-v1.20.0/ holds what the real nvidia-ctk (built from NVIDIA/nvidia-container-
toolkit tag v1.20.0) wrote for k8s-snap's root config as the fake k8sd writes it (base dir
/tmp/ck8s-ctk-fixture/<case>), and its answer to an unknown flag. The merged views below are what
the real containerd v1.7.34 (k8s-snap release-1.34's, built from its tag) printed with
`containerd --config config.toml config dump` for the same files (docs/adr/0046). chain.out.* is
the node script's CDI chain (ck8s-node.sh host_toolkit) run by the real nvidia-ctk v1.20.0 (2026-12-05)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.fakes import nvidia_ctk
from tests.fakes.k8s_snap import containerd

DATA = Path(__file__).resolve().parents[2] / "data" / "nvidia-ctk-v1.20.0"
RECORDED_BASE = "/tmp/ck8s-ctk-fixture"
CASES = {"cdi": ["--cdi.enabled"], "default-runtime": ["--nvidia-set-as-default"]}


def _configure(root: Path, *flags: str) -> int:
    etc = root / "etc/containerd"
    return nvidia_ctk.main(["--quiet", "runtime", "configure", "--runtime=containerd", f"--config={etc}/config.toml",
                            f"--drop-in-config={etc}/conf.d/99-nvidia.toml", "--config-source=file", *flags])


def _as_recorded(path: Path, base: Path) -> dict:  # type: ignore[type-arg]
    return tomllib.loads(path.read_text().replace(str(base), RECORDED_BASE))


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_fake_writes_what_the_real_one_wrote(tmp_path: Path, case: str) -> None:
    root = tmp_path / case
    containerd.write_config(root)
    assert _as_recorded(root / "etc/containerd/config.toml", tmp_path) == \
        tomllib.loads((DATA / f"{case}.in.config.toml").read_text())  # the same input as the real run
    assert _configure(root, *CASES[case]) == 0
    for name in ("99-nvidia.toml", "config.toml"):
        got = root / "etc/containerd" / ("conf.d/" + name if name.startswith("99") else name)
        assert _as_recorded(got, tmp_path) == tomllib.loads((DATA / f"{case}.out.{name}").read_text()), name


def test_without_a_root_config_it_writes_one_and_a_drop_in_without_systemd_cgroups(tmp_path: Path) -> None:
    root = tmp_path / "no-root"
    assert _configure(root, "--cdi.enabled") == 0
    for name, got in (("99-nvidia.toml", root / "etc/containerd/conf.d/99-nvidia.toml"),
                      ("config.toml", root / "etc/containerd/config.toml")):
        assert _as_recorded(got, tmp_path) == tomllib.loads((DATA / f"no-root.out.{name}").read_text()), name
    options = tomllib.loads((root / "etc/containerd/conf.d/99-nvidia.toml").read_text())
    nvidia = options["plugins"][containerd.CRI]["containerd"]["runtimes"]["nvidia"]["options"]
    assert "SystemdCgroup" not in nvidia  # why the node script runs it only after k8sd wrote the root config


def test_an_unknown_flag_is_refused_as_urfave_cli_does(capsys: pytest.CaptureFixture[str]) -> None:
    assert nvidia_ctk.main(["runtime", "configure", "--bogus"]) == 1
    assert capsys.readouterr().err.splitlines()[0] == (DATA / "unknown-flag.stderr").read_text().strip()
    assert nvidia_ctk.main(["runtime", "configure", "--runtime=crio", "--config=/x", "--drop-in-config=/y"]) == 1


def test_containerd_keeps_k8s_snaps_cri_settings_only_with_the_copied_section(tmp_path: Path) -> None:
    root = tmp_path / "node"
    containerd.write_config(root)
    assert _configure(root, "--cdi.enabled") == 0
    state = containerd.runtime_state(containerd.loaded_config(root))
    # containerd v1.7.34 config dump of the same files
    assert state["runtimes"] == {"runc": "runc", "nvidia": "/usr/bin/nvidia-container-runtime"}
    assert state["default_runtime"] == "runc" and state["enable_cdi"] is True
    assert state["sandbox_image"] == containerd.PAUSE_IMAGE
    assert state["systemd_cgroup"] == {"runc": True, "nvidia": True}
    assert state["registry_config_path"] == f"{root}/etc/containerd/hosts.d"
    # a hand-written drop-in with the CRI key alone replaces k8s-snap's whole CRI section: the real
    # containerd then showed registry.k8s.io/pause:3.8, SystemdCgroup false and no hosts.d
    (root / "etc/containerd/conf.d/99-nvidia.toml").write_text(
        f'version = 2\n[plugins."{containerd.CRI}"]\nenable_cdi = true\n')
    bare = containerd.runtime_state(containerd.loaded_config(root))
    assert bare["enable_cdi"] is True and bare["sandbox_image"] == "" and bare["registry_config_path"] == ""
    assert "runc" not in bare["runtimes"]


def test_the_unit_drop_in_runs_before_containerd_and_a_missing_executable_fails_the_start(tmp_path: Path) -> None:
    root = tmp_path / "node"
    containerd.write_config(root)
    units = root / containerd.UNIT_DROP_INS
    units.mkdir(parents=True)
    (units / "10-x.conf").write_text(f"[Service]\nExecStartPre={root}/usr/bin/nvidia-ctk runtime configure\n")
    me = {"root": str(root), "node": {}}
    with pytest.raises(containerd.StartError, match="Failed to locate executable"):
        containerd.start({"now_offset": 0}, me)
    assert "containerd" not in me["node"]  # it never started


def _chain(root: Path) -> None:
    """The node script's CDI chain (components/aws/scripts/ck8s-node.sh host_toolkit), step by step
    as the real nvidia-ctk ran it for chain.out.*: nvidia from k8sd's root config into
    99-nvidia.toml, then nvidia-cdi and nvidia-legacy each from the drop-in the step before wrote."""
    etc, w = root / "etc/containerd", root / "run/w"
    drop = etc / "conf.d/99-nvidia.toml"
    assert _configure(root, "--nvidia-runtime-path=/usr/bin/nvidia-container-runtime", "--cdi.enabled") == 0
    w.mkdir(parents=True)
    (w / "nvidia.toml").write_bytes(drop.read_bytes())
    for src, mode in ((w / "nvidia.toml", "cdi"), (w / "cdi/99-nvidia.toml", "legacy")):
        assert nvidia_ctk.main(["--quiet", "runtime", "configure", "--runtime=containerd", "--config-source=file",
                                f"--config={src}", f"--drop-in-config={w}/{mode}/99-nvidia.toml",
                                f"--nvidia-runtime-name=nvidia-{mode}",
                                f"--nvidia-runtime-path=/usr/bin/nvidia-container-runtime.{mode}",
                                "--cdi.enabled"]) == 0
    (w / "legacy/99-nvidia.toml").replace(drop)


def test_the_runtime_chain_writes_what_the_real_one_wrote(tmp_path: Path) -> None:
    root = tmp_path / "chain"
    containerd.write_config(root)
    _chain(root)
    for name in ("99-nvidia.toml", "config.toml"):
        got = root / "etc/containerd" / ("conf.d/" + name if name.startswith("99") else name)
        assert _as_recorded(got, tmp_path) == tomllib.loads((DATA / f"chain.out.{name}").read_text()), name
    state = containerd.runtime_state(containerd.loaded_config(root))
    assert state["runtimes"] == {"runc": "runc", "nvidia": "/usr/bin/nvidia-container-runtime",
                                 "nvidia-cdi": "/usr/bin/nvidia-container-runtime.cdi",
                                 "nvidia-legacy": "/usr/bin/nvidia-container-runtime.legacy"}
    assert state["sandbox_image"] == containerd.PAUSE_IMAGE and state["enable_cdi"] is True


def test_two_drop_ins_one_runtime_each_lose_the_first_on_containerd_1_7(tmp_path: Path) -> None:
    """Why the node script chains: a second drop-in written from the root config replaces the
    first's CRI section whole (mergeConfig), and `nvidia` is gone."""
    root = tmp_path / "node"
    containerd.write_config(root)
    etc = root / "etc/containerd"
    assert _configure(root, "--cdi.enabled") == 0
    assert nvidia_ctk.main(["--quiet", "runtime", "configure", "--runtime=containerd", "--config-source=file",
                            f"--config={etc}/config.toml", f"--drop-in-config={etc}/conf.d/99-nvidia.toml.d-cdi.toml",
                            "--nvidia-runtime-name=nvidia-cdi", "--cdi.enabled"]) == 0
    # the second file sorts after 99-nvidia.toml, so containerd imports it last
    assert set(containerd.runtime_state(containerd.loaded_config(root))["runtimes"]) == {"runc", "nvidia-cdi"}

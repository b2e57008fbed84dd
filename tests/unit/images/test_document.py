"""The AWSTOE document the image build runs: golden, shellchecked, and held to AWSTOE's rules."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path

import pytest
import yaml

from components.images.document import (
    EFA_INSTALLER_VERSION,
    EFA_KEY_FINGERPRINT,
    FM_CONFIG,
    component_document,
    component_documents,
    document_problems,
    packages,
    render,
    semantic_version,
)
from components.images.settings import parse_image_settings
from tests.helpers.golden import assert_golden
from tests.unit.aws.tools import shellcheck

PIN = {"kubernetes": {"track": "1.34-classic", "snap": {"version": "v1.34.4", "revision": 5325}}}
DEFAULT = parse_image_settings({"region": "eu-north-1", **PIN}, "test")
CONTROL_PLANE = parse_image_settings({"region": "eu-north-1", "role": "control-plane", **PIN}, "test")
MIRRORED = parse_image_settings({"region": "eu-north-1", "mirror": "123456789012.dkr.ecr.eu-north-1.amazonaws.com",
                                 **PIN}, "test")


def test_the_rendered_documents_are_the_golden_ones() -> None:
    assert_golden(Path("images/gpu-node-component.yaml"), render(component_document(DEFAULT)))
    driver, carried = component_documents(DEFAULT)
    assert driver == component_document(DEFAULT)
    assert_golden(Path("images/gpu-node-carried-component.yaml"), render(carried))
    (only,) = component_documents(CONTROL_PLANE)
    assert_golden(Path("images/control-plane-component.yaml"), render(only))


@pytest.mark.parametrize("settings", [DEFAULT, CONTROL_PLANE, MIRRORED], ids=["gpu-node", "control-plane", "mirror"])
def test_every_bash_step_passes_shellcheck(tmp_path: Path, settings: object) -> None:
    steps = [s for doc in component_documents(settings) for phase in doc["phases"]  # type: ignore[arg-type]
             for s in phase["steps"] if s["action"] == "ExecuteBash"]
    assert len(steps) >= 6
    for step in steps:
        script = tmp_path / f"{step['name']}.sh"
        script.write_text("#!/bin/bash\n" + "\n".join(step["inputs"]["commands"]) + "\n")
        result = shellcheck(script)
        assert result.returncode == 0, f"{step['name']}:\n{result.stdout}"


def test_bash_steps_stop_at_the_first_failing_command(tmp_path: Path) -> None:
    """AWSTOE runs a step's commands as one script and judges its exit code: `set -e` makes a failed
    apt-get fail the step instead of the next line hiding it."""
    for doc in component_documents(DEFAULT) + component_documents(CONTROL_PLANE):
        for phase in doc["phases"]:
            for step in phase["steps"]:
                if step["action"] == "ExecuteBash":
                    assert step["inputs"]["commands"][0] == "set -euo pipefail", step["name"]
    doc = component_document(DEFAULT)
    check = next(s for p in doc["phases"] for s in p["steps"] if s["name"] == "NoContainerdOfItsOwn")
    script = "\n".join(check["inputs"]["commands"]).replace("/run/containerd", str(tmp_path))
    run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
    assert run.returncode == 1 and "k8s-snap runs its own containerd there" in run.stderr


def test_packages_are_ubuntus_signed_modules_for_the_aws_kernel_and_the_same_branch_everywhere() -> None:
    assert packages(DEFAULT).all == (
        "linux-modules-nvidia-595-server-open-aws", "nvidia-headless-no-dkms-595-server-open",
        "nvidia-utils-595-server", "nvidia-fabricmanager-595")
    proprietary = parse_image_settings({"region": "eu-north-1", "kernelModules": "proprietary",
                                        "driverBranch": "580", **PIN}, "t")
    assert packages(proprietary).all == (
        "linux-modules-nvidia-580-server-aws", "nvidia-headless-no-dkms-580-server",
        "nvidia-utils-580-server", "nvidia-fabricmanager-580")
    assert not any("dkms" in p and "no-dkms" not in p for p in packages(DEFAULT).all)  # no compiler on nodes


def test_the_document_passes_awstoe_rules_and_the_rules_refuse_what_awstoe_refuses() -> None:
    for each in component_documents(DEFAULT) + component_documents(CONTROL_PLANE) + component_documents(MIRRORED):
        assert document_problems(each) == []
        assert document_problems(yaml.safe_load(render(each))) == []  # what Image Builder receives
    doc = component_document(DEFAULT)

    def broken(change: str) -> list[str]:
        bad = copy.deepcopy(doc)
        if change == "duplicate phase":
            bad["phases"].append(copy.deepcopy(bad["phases"][0]))
        elif change == "no known phase":
            bad["phases"] = [{"name": "prepare", "steps": bad["phases"][0]["steps"]}]
        elif change == "duplicate step":
            bad["phases"][0]["steps"].append(copy.deepcopy(bad["phases"][0]["steps"][0]))
        elif change == "no commands":
            bad["phases"][0]["steps"][0]["inputs"] = {"commands": []}
        elif change == "unknown action":
            bad["phases"][0]["steps"][0]["action"] = "ExecuteBashScript"
        elif change == "bad step name":
            bad["phases"][0]["steps"][0]["name"] = "upgrade ubuntu"
        elif change == "schema":
            bad["schemaVersion"] = "2.0"
        elif change == "too big":
            bad["phases"][0]["steps"][0]["inputs"]["commands"].append("#" * 16000)
        return document_problems(bad)

    assert "is not unique within the document" in broken("duplicate phase")[0]
    assert "at least one phase must be one of build, validate, test" in broken("no known phase")
    assert "is not unique within its phase" in broken("duplicate step")[0]
    assert "inputs.commands as a non-empty list" in broken("no commands")[0]
    assert "is not one this project uses" in broken("unknown action")[0]
    assert "must be 1-128 letters" in broken("bad step name")[0]
    assert broken("schema") == ["schemaVersion must be 1.0, got '2.0'"]
    assert "at most 16000 of inline component data" in broken("too big")[0]


def test_versions_follow_the_content_within_image_builders_limits() -> None:
    a, b = semantic_version(1, "one"), semantic_version(1, "two")
    assert a != b and a == semantic_version(1, "one")
    for version in (a, b):
        major, minor, patch = (int(x) for x in version.split("."))
        assert major == 1 and minor == 0 and 0 <= patch < 2**30


def _step(doc: dict, name: str) -> dict | None:  # type: ignore[type-arg]
    return next((s for p in doc["phases"] for s in p["steps"] if s["name"] == name), None)


def test_efa_software_is_installed_signed_and_checked_only_when_asked() -> None:
    doc = component_document(DEFAULT)
    install, check = _step(doc, "InstallEfaSoftware"), _step(doc, "EfaSoftwareInstalled")
    assert install is not None and check is not None
    build = [s["name"] for s in doc["phases"][0]["steps"]]
    # After the driver (the installer sees its final kernel), before the packages are held.
    assert build.index("InstallNvidiaDriver") < build.index("InstallEfaSoftware") < build.index("HoldKernelAndDriver")
    script = "\n".join(install["inputs"]["commands"])
    assert f"aws-efa-installer-{EFA_INSTALLER_VERSION}.tar.gz.sig" in script
    assert EFA_KEY_FINGERPRINT == "4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC"  # efa-start-nccl.html
    assert script.index("--verify") < script.index("./efa_installer.sh")  # verified before it runs
    assert "--skip-kmod" in script  # the kernel's signed efa module: no DKMS on nodes
    off = component_document(parse_image_settings({"region": "eu-north-1", "efa": False, **PIN}, "t"))
    assert _step(off, "InstallEfaSoftware") is None and _step(off, "EfaSoftwareInstalled") is None
    assert "EFA" not in off["description"]


def test_efa_check_fails_without_the_nccl_plugin(tmp_path: Path) -> None:
    check = _step(component_document(DEFAULT), "EfaSoftwareInstalled")
    assert check is not None
    lines = [c for c in check["inputs"]["commands"] if "modinfo" not in c and "fi_info" not in c]
    script = "\n".join(lines).replace("/opt/amazon/ofi-nccl", str(tmp_path))
    run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
    assert run.returncode == 1 and "no NCCL OFI plugin" in run.stderr
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libnccl-net-ofi.so").write_text("")
    run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
    assert run.returncode == 0 and "libnccl-net-ofi.so" in run.stdout


# --- the NVIDIA Container Toolkit (gpuStack.toolkit host, docs/adr/0046) ----------------------


def test_the_toolkit_is_installed_at_the_pin_from_nvidias_repository_and_held() -> None:
    from components.addons.gpu_operator import IMAGES as GPU_OPERATOR
    from components.images.document import CTK

    doc = component_document(DEFAULT)
    build = [s["name"] for s in doc["phases"][0]["steps"]]
    assert build.index("InstallNvidiaDriver") < build.index("InstallNvidiaContainerToolkit") < \
        build.index("HoldKernelAndDriver")
    install = "\n".join(_step(doc, "InstallNvidiaContainerToolkit")["inputs"]["commands"])  # type: ignore[index]
    for package in ("nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools",
                    "libnvidia-container1"):  # packaging/debian/control: each at exactly the others' version
        assert f" {package}=1.20.0-1" in install
    assert install.index(CTK.key_fingerprint) < install.index("--dearmor") < install.index("install --no-install")
    assert "signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg" in install
    hold = " ".join(_step(doc, "HoldKernelAndDriver")["inputs"]["commands"])  # type: ignore[index]
    assert all(p in hold.split() for p in CTK.packages)
    assert _step(doc, "ContainerToolkitInstalled") in doc["phases"][1]["steps"]
    assert _step(doc, "ContainerToolkitSeesTheGpus") in doc["phases"][2]["steps"]
    # one toolkit either way: the image's is the one the operator would deploy
    operator = next(e.image for e in GPU_OPERATOR if e.name == "container-toolkit")
    assert operator.tag == f"v{CTK.version}"
    # a control plane's image has none
    assert not any("nvidia-container" in render(d) for d in component_documents(CONTROL_PLANE))


def _key_check(doc: dict, key: Path) -> str:  # type: ignore[type-arg]
    """The install step up to its fingerprint check, the key read from `key` instead of NVIDIA's server."""
    lines = _step(doc, "InstallNvidiaContainerToolkit")["inputs"]["commands"]  # type: ignore[index]
    end = next(i for i, line in enumerate(lines) if line.startswith("if [ \"$fprs\""))
    return "\n".join(f'cp {key} "$work/key"' if line.startswith("curl ") else line for line in lines[:end + 1])


def test_a_key_of_another_fingerprint_adds_no_repository(tmp_path: Path) -> None:
    from components.images.document import CTK

    home = tmp_path / "gnupg"
    home.mkdir(mode=0o700)
    env = {"GNUPGHOME": str(home), "PATH": "/usr/bin:/bin"}
    subprocess.run(["gpg", "--batch", "--passphrase", "", "--quick-gen-key", "Test <t@example.com>", "ed25519",
                    "cert", "never"], env=env, check=True, capture_output=True)
    key = tmp_path / "key.asc"
    key.write_bytes(subprocess.run(["gpg", "--batch", "--armor", "--export"], env=env, check=True,
                                   capture_output=True).stdout)
    listing = subprocess.run(["gpg", "--batch", "--with-colons", "--fingerprint"], env=env, check=True,
                             capture_output=True, text=True).stdout
    mine = next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:"))
    script = _key_check(component_document(DEFAULT), key)
    run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False)
    assert run.returncode == 1 and f"keys {mine}, want {CTK.key_fingerprint}" in run.stderr
    run = subprocess.run(["bash", "-c", script.replace(CTK.key_fingerprint, mine)], capture_output=True, text=True,
                         check=False)
    assert run.returncode == 0, run.stderr


def test_the_toolkit_check_wants_the_pinned_version_and_its_binaries(tmp_path: Path) -> None:
    check = _step(component_document(DEFAULT), "ContainerToolkitInstalled")
    script = "\n".join(check["inputs"]["commands"]).replace("/usr/bin", str(tmp_path))  # type: ignore[index]

    def ctk(version: str) -> None:
        (tmp_path / "nvidia-ctk").write_text(f"#!/bin/sh\necho 'NVIDIA Container Toolkit CLI version {version}'\n")
        (tmp_path / "nvidia-ctk").chmod(0o755)

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=False,
                              env={"PATH": f"{tmp_path}:/usr/bin:/bin"})

    ctk("1.19.0")
    assert run().returncode == 1 and "want 1.20.0" in run().stderr
    ctk("1.20.0")
    assert run().returncode == 1 and "nvidia-container-runtime is missing" in run().stderr
    for f in ("nvidia-container-runtime", "nvidia-container-runtime-hook", "nvidia-cdi-hook", "nvidia-container-cli"):
        (tmp_path / f).write_text("#!/bin/sh\n")
        (tmp_path / f).chmod(0o755)
    # the runtimes behind the operator's nvidia-cdi and nvidia-legacy RuntimeClasses (-operator-extensions)
    assert run().returncode == 1 and "nvidia-container-runtime.cdi is missing" in run().stderr
    for f in ("nvidia-container-runtime.cdi", "nvidia-container-runtime.legacy"):
        (tmp_path / f).write_text("#!/bin/sh\n")
        (tmp_path / f).chmod(0o755)
    assert run().returncode == 0


@pytest.mark.parametrize(("mode", "line"), [("full-passthrough", "FABRIC_MODE=0"),
                                            ("shared-nvswitch", "FABRIC_MODE=1")])
def test_fabric_manager_gets_the_mode_the_image_settings_name(tmp_path: Path, mode: str, line: str) -> None:
    s = parse_image_settings({"region": "eu-north-1", **PIN, "fabricManagerMode": mode}, "test")
    step = _step(component_document(s), "FabricManagerOnlyOnNvswitch")
    cfg = tmp_path / "fabricmanager.cfg"
    script = "\n".join(step["inputs"]["commands"]).replace(FM_CONFIG, str(cfg))  # type: ignore[index]
    script = script.replace("/etc/systemd/system", str(tmp_path)).replace("systemctl enable", "true")

    def run(config: str) -> subprocess.CompletedProcess[str]:
        cfg.write_text(config)
        return subprocess.run(["bash", "-ec", script], capture_output=True, text=True, check=False)

    # the package's file (FM user guide: FABRIC_MODE=0 and its comment lines around it)
    assert run("# Fabric Manager\nLOG_LEVEL=4\n#FABRIC_MODE 0 = ...\nFABRIC_MODE=0\nBIND_INTERFACE_IP=127.0.0.1\n"
               ).returncode == 0
    assert line in cfg.read_text().splitlines() and "LOG_LEVEL=4" in cfg.read_text()
    # a package that no longer has the key, or has it twice: the build fails, never a node
    for broken in ("LOG_LEVEL=4\n", "FABRIC_MODE=0\nFABRIC_MODE=0\n"):
        failed = run(broken)
        assert failed.returncode == 1 and f"no single {line} line" in failed.stderr


def test_a_control_plane_image_has_no_fabric_manager_to_set() -> None:
    from components.settings.load import SettingsError

    with pytest.raises(SettingsError) as err:
        parse_image_settings({"region": "eu-north-1", **PIN, "role": "control-plane",
                              "fabricManagerMode": "shared-nvswitch"}, "test")
    assert "image.fabricManagerMode" in str(err.value)

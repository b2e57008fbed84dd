"""What the image build runs: the AWSTOE component documents of a line (pure), and the rules AWSTOE
holds them to. The driver component is here; the carried one is built from snap_steps.py and
preload_steps.py.

Sources, each rule beside what it models:
- AWSTOE = https://docs.aws.amazon.com/imagebuilder/latest/userguide/toe-use-documents.html
  (document schema, phase and step rules) and .../toe-action-modules.html (ExecuteBash, Reboot).
- UBUNTU = Ubuntu Server documentation, "Install NVIDIA drivers", manual installation: Canonical's
  signed modules `linux-modules-nvidia-<branch>-server[-open]-<kernel flavour>` and the no-DKMS
  userspace, so no compiler and no unsigned module ever reaches the image; package names as
  packages.ubuntu.com lists them for noble (source nvidia-graphics-drivers-595-server,
  linux-restricted-modules-aws, fabric-manager-595).
- NVIDIA = NVIDIA/gpu-driver-container: the driver container starts Fabric Manager only on NVSwitch
  systems (`_assert_nvswitch_system`: /proc/driver/nvidia-nvswitch/devices not empty); its bootc
  images put `ConditionDirectoryNotEmpty=/proc/driver/nvidia-nvswitch/devices` on the unit.
- CTK = NVIDIA/nvidia-container-toolkit v1.20.0: packaging/debian/control (the packages, each
  depending on the others at exactly its version), *.install (nvidia-ctk, nvidia-container-runtime,
  nvidia-cdi-hook in /usr/bin; nvidia-container-runtime.cdi and .legacy from
  -operator-extensions; nvidia-container-runtime-hook; nvidia-container-cli from
  libnvidia-container-tools), and its install guide "With apt": the repository
  nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) (the image line's architecture written
  out), its key /gpgkey, a versioned install of all of them. The key's fingerprint: components/tables/pins.py
  NVIDIA_CONTAINER_TOOLKIT.
- EFA = Amazon EC2 user guide, "Get started with EFA and NCCL" (efa-start-nccl.html, step "Install
  the EFA software"): the installer tarball at efa-installer.amazonaws.com, its detached GPG
  signature `.sig` and key `aws-efa-installer.key` with fingerprint 4E90 91BC BB97 A96B 26B1 5E59
  A054 80B1 DD2D 3CCC; libfabric in /opt/amazon/efa (Ubuntu: lib/), the aws-ofi-nccl plugin in
  /opt/amazon/ofi-nccl, Open MPI in /opt/amazon/openmpi; `--mpi=openmpi4` installs Open MPI 4.1
  only, AWS's advice. "Elastic Fabric Adapter release notes" (efa-changelog.html): installer
  1.51.0 (2026-10-22) ships libfabric 2.7.0amzn2.0, rdma-core 65.0 and the OFI NCCL plugin 1.22.0.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from ..tables import pins
from .preload_steps import images_preloaded_step, install_regctl_step, preload_images_step
from .settings import ImageSettings
from .snap_steps import download_snaps_step, snaps_carried_step

KERNEL_FLAVOUR = "aws"  # Canonical's Ubuntu AMIs on EC2 run linux-aws (both architectures)
CONTAINERD_PATHS = ("/run/containerd", "/var/lib/containerd", "/etc/containerd")  # docs/adr/0018
# First boot: unattended-upgrades may hold the lock; keep the image's own config files on upgrade.
APT = "apt-get -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold -y"
FM_DROP_IN = "/etc/systemd/system/nvidia-fabricmanager.service.d/10-ck8s-gpu-nvswitch-only.conf"
# Fabric Manager's config file and FABRIC_MODE values (NVIDIA Fabric Manager User Guide: the package
# installs /usr/share/nvidia/nvswitch/fabricmanager.cfg; "FABRIC_MODE" 0 full passthrough, 1 shared
# NVSwitch multitenancy). Read at every start of nvidia-fabricmanager.service.
FM_CONFIG = "/usr/share/nvidia/nvswitch/fabricmanager.cfg"
FABRIC_MODES = {"full-passthrough": 0, "shared-nvswitch": 1}
# EFA: the installer release the image carries, where AWS publishes it, and the fingerprint its
# signing key must have (a key swapped on the server fails the build, not just the signature):
# components/tables/pins.py EFA_INSTALLER.
CTK = pins.NVIDIA_CONTAINER_TOOLKIT
CTK_KEYRING = "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"  # CTK install guide
CTK_LIST = "/etc/apt/sources.list.d/nvidia-container-toolkit.list"
EFA_INSTALLER_VERSION = pins.EFA_INSTALLER.version
EFA_INSTALLER_URL = pins.EFA_INSTALLER.url
EFA_KEY_FINGERPRINT = pins.EFA_INSTALLER.key_fingerprint

# AWSTOE rules (AWSTOE "Document schema and definitions", "Rules for phases", "Rules for steps").
PHASES = ("build", "validate", "test")  # at least one; Image Builder runs build+validate, then test
ACTIONS = {"ExecuteBash": ("commands",), "Reboot": ()}  # the modules this document uses: required inputs
STEP_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
ON_FAILURE = ("Abort", "Continue", "Ignore")
# Image Builder API CreateComponent `data` (InlineComponentData): 1 to 16000 characters.
INLINE_DATA_MAX = 16000


@dataclass(frozen=True)
class Packages:
    modules: str  # Canonical-signed modules for the aws kernel flavour (a meta package tracking it)
    userspace: tuple[str, ...]

    @property
    def all(self) -> tuple[str, ...]:
        return (self.modules, *self.userspace)


def packages(s: ImageSettings) -> Packages:
    """UBUNTU: signed modules + headless userspace without DKMS; nvidia-smi; Fabric Manager (same
    branch: a mismatch with the driver fails CUDA on NVSwitch systems)."""
    b = s.driver_branch
    open_ = "-open" if s.kernel_modules == "open" else ""
    return Packages(
        modules=f"linux-modules-nvidia-{b}-server{open_}-{KERNEL_FLAVOUR}",
        userspace=(f"nvidia-headless-no-dkms-{b}-server{open_}", f"nvidia-utils-{b}-server",
                   f"nvidia-fabricmanager-{b}"),
    )


def _bash(name: str, *lines: str) -> dict[str, Any]:
    return {"name": name, "action": "ExecuteBash", "onFailure": "Abort",
            "inputs": {"commands": ["set -euo pipefail", *lines]}}


def efa_build_steps() -> list[dict[str, Any]]:
    """EFA: the installer, verified against AWS's key before it runs. `--skip-kmod`: the kernel's
    own efa module (Canonical's signed linux-aws build) serves, so no DKMS and no compiler reach
    the image, as for the NVIDIA driver."""
    tarball = f"aws-efa-installer-{EFA_INSTALLER_VERSION}.tar.gz"
    return [
        _bash("InstallEfaSoftware",
              "export DEBIAN_FRONTEND=noninteractive",
              "work=$(mktemp -d)",
              "cd \"$work\"",
              f"curl -fsSLO --retry 3 {EFA_INSTALLER_URL}/{tarball}",
              f"curl -fsSLO --retry 3 {EFA_INSTALLER_URL}/{tarball}.sig",
              f"curl -fsSLO --retry 3 {EFA_INSTALLER_URL}/aws-efa-installer.key",
              "export GNUPGHOME=\"$work/gnupg\"",
              "mkdir -m 700 \"$GNUPGHOME\"",
              "gpg --batch --quiet --import aws-efa-installer.key",
              "keys=$(gpg --batch --with-colons --fingerprint)",
              f"grep -q '^fpr:::::::::{EFA_KEY_FINGERPRINT}:$' <<<\"$keys\" || "
              "{ echo 'aws-efa-installer.key is not the key AWS documents' >&2; exit 1; }",
              # VALIDSIG's last field is the primary key's fingerprint: the pinned one, or no install.
              f"signer=$(gpg --batch --status-fd 1 --verify {tarball}.sig {tarball} 2>/dev/null "
              "| awk '$2 == \"VALIDSIG\" {print $NF}')",
              f"if [ \"$signer\" != {EFA_KEY_FINGERPRINT} ]; then echo \"{tarball}: no valid signature "
              "by AWS's EFA key\" >&2; exit 1; fi",
              f"tar -xf {tarball}",
              "cd aws-efa-installer",
              "./efa_installer.sh -y --skip-kmod --mpi=openmpi4",
              "cd /",
              "rm -rf \"$work\""),
    ]


def toolkit_build_step(arch: str) -> dict[str, Any]:
    """CTK: the repository only with the key of the pinned fingerprint (a key swapped on the server
    fails the build), then the packages at the pinned version. The node script hooks it into
    k8s-snap's containerd at boot where the stack says gpuStack.toolkit host (docs/adr/0046)."""
    pinned = " ".join(f"{p}={CTK.deb_version}" for p in CTK.packages)
    return _bash("InstallNvidiaContainerToolkit",
                 "export DEBIAN_FRONTEND=noninteractive",
                 "work=$(mktemp -d)",
                 f"curl -fsSL --retry 3 -o \"$work/key\" {CTK.key_url}",
                 "export GNUPGHOME=\"$work/gnupg\"",
                 "mkdir -m 700 \"$GNUPGHOME\"",
                 # the primary keys' fingerprints (field 10 of the fpr line after each pub)
                 "fprs=$(gpg --batch --with-colons --show-keys \"$work/key\" | "
                 "awk -F: '$1 == \"pub\" {p = 1; next} p && $1 == \"fpr\" {print $10; p = 0}')",
                 f"if [ \"$fprs\" != {CTK.key_fingerprint} ]; then echo \"{CTK.key_url}: keys $fprs, want "
                 f"{CTK.key_fingerprint}\" >&2; exit 1; fi",
                 f"gpg --batch --yes --dearmor -o {CTK_KEYRING} \"$work/key\"",
                 f"echo '{CTK.source_line.format(keyring=CTK_KEYRING, arch=arch)}' > {CTK_LIST}",
                 f"{APT} update",
                 f"{APT} install --no-install-recommends {pinned}",
                 "rm -rf \"$work\"")


def toolkit_validate_step() -> dict[str, Any]:
    """The pinned toolkit and the binaries the node's containerd drop-in and the operator's
    operands name (/usr/bin: CTK *.install; nvidia-cdi-hook for CDI specs; the .cdi and .legacy
    runtimes behind the operator's nvidia-cdi and nvidia-legacy RuntimeClasses)."""
    return _bash("ContainerToolkitInstalled",
                 "version=$(nvidia-ctk --version | sed -n 1p)",  # sed reads it all: no SIGPIPE under pipefail
                 f"case \"$version\" in *' version {CTK.version}') echo \"$version\" ;; "
                 f"*) echo \"nvidia-ctk is '$version', want {CTK.version}\" >&2; exit 1 ;; esac",
                 "for f in nvidia-container-runtime nvidia-container-runtime.cdi nvidia-container-runtime.legacy "
                 "nvidia-container-runtime-hook nvidia-cdi-hook nvidia-container-cli; do",
                 "  [ -x \"/usr/bin/$f\" ] || { echo \"/usr/bin/$f is missing\" >&2; exit 1; }",
                 "done")


def efa_validate_steps() -> list[dict[str, Any]]:
    """EFA software in place for the booted kernel. Image Builder's instances have one ENA interface
    and no EFA device, so `fi_info -p efa` could not find a provider there: files, not devices."""
    return [
        _bash("EfaSoftwareInstalled",
              "modinfo -k \"$(uname -r)\" -F filename efa",
              "/opt/amazon/efa/bin/fi_info --version",
              "plugin=$(find /opt/amazon/ofi-nccl -name 'libnccl-net*.so*' -print -quit)",
              "if [ -z \"$plugin\" ]; then echo 'no NCCL OFI plugin under /opt/amazon/ofi-nccl' >&2; exit 1; fi",
              "echo \"NCCL net plugin: $plugin\""),
    ]


def preloaded(s: ImageSettings) -> tuple[Any, ...]:
    """The catalog images this image line carries (none with `preload: false`)."""
    from ..addons.image_catalog import preload_images

    return tuple(preload_images(s.architecture)) if s.preload else ()


def driver_build_steps(s: ImageSettings) -> list[dict[str, Any]]:
    p = packages(s)
    hold = " ".join((*p.all, *CTK.packages, f"linux-{KERNEL_FLAVOUR}", f"linux-image-{KERNEL_FLAVOUR}",
                     f"linux-headers-{KERNEL_FLAVOUR}"))
    return [
        _bash("InstallNvidiaDriver",
              "export DEBIAN_FRONTEND=noninteractive",
              f"{APT} install --no-install-recommends {' '.join(p.all)}"),
        toolkit_build_step(s.architecture),
        *(efa_build_steps() if s.with_efa else []),
        _bash("FabricManagerOnlyOnNvswitch",
              f"mkdir -p {FM_DROP_IN.rsplit('/', 1)[0]}",
              f"printf '[Unit]\\nConditionDirectoryNotEmpty=/proc/driver/nvidia-nvswitch/devices\\n' > {FM_DROP_IN}",
              *fabric_mode_lines(s),
              "systemctl enable nvidia-fabricmanager.service nvidia-persistenced.service"),
        # Kernel, driver and toolkit change only with a new image: a userspace upgrade under a loaded
        # module breaks NVML ("Driver/library version mismatch"), a new kernel may boot without its
        # modules, and the toolkit stays at the pin its golden documents name.
        _bash("HoldKernelAndDriver", f"apt-mark hold {hold}"),
    ]


def fabric_mode_lines(s: ImageSettings) -> tuple[str, ...]:
    """FABRIC_MODE in Fabric Manager's config as the image settings say, and a check that the file
    now holds exactly that one line (a package that renamed the key fails the build, not a node)."""
    mode = FABRIC_MODES[s.fabric_manager_mode]
    return (f"sed -i 's/^FABRIC_MODE=.*/FABRIC_MODE={mode}/' {FM_CONFIG}",
            f"if [ \"$(grep -c '^FABRIC_MODE=' {FM_CONFIG})\" != 1 ] || ! grep -qx 'FABRIC_MODE={mode}' "
            f"{FM_CONFIG}; then echo '{FM_CONFIG}: no single FABRIC_MODE={mode} line' >&2; exit 1; fi")


def carried_checks(s: ImageSettings, images: Sequence[Any]) -> list[dict[str, Any]]:
    return [snaps_carried_step(s, _bash), *([images_preloaded_step(images, _bash)] if s.preload else [])]


def _upgrade() -> dict[str, Any]:
    return _bash("UpgradeUbuntu",
                 "export DEBIAN_FRONTEND=noninteractive",
                 "cloud-init status --wait >/dev/null || [ $? -eq 2 ]  # 2: finished with recoverable errors",
                 f"{APT} update",
                 f"{APT} full-upgrade")


def _clean() -> dict[str, Any]:
    return _bash("Clean", f"{APT} autoremove --purge", "apt-get clean", "rm -rf /var/lib/apt/lists/*")


def _no_containerd() -> dict[str, Any]:
    return _bash("NoContainerdOfItsOwn",
                 f"for path in {' '.join(CONTAINERD_PATHS)}; do",
                 "  if [ -e \"$path\" ]; then echo \"$path exists: k8s-snap runs its own containerd there "
                 "(docs/adr/0018)\" >&2; exit 1; fi",
                 "done")


REBOOT = {"name": "RebootIntoNewKernel", "action": "Reboot", "onFailure": "Abort", "maxAttempts": 2,
          "inputs": {"delaySeconds": 10}}


def component_documents(s: ImageSettings, images: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """The components of one image line's recipe, in build order: gpu-node the driver, then what it
    carries; control-plane what it carries alone. Two documents, not one: Image Builder takes at most
    16000 characters of inline component data (CreateComponent `data`), and the preload list grows
    with the catalog. `images`: the catalog's preload list (default: the catalog)."""
    images = preloaded(s) if images is None else tuple(images)
    carried = carried_document(s, images)
    return [component_document(s), carried] if s.role == "gpu-node" else [carried]


def carried_document(s: ImageSettings, images: Sequence[Any]) -> dict[str, Any]:
    """The k8s snap (its base, aws-cli) as files and, with `preload`, every image as a tar. A
    control plane's image is this alone, so it upgrades, cleans and reboots itself; its test
    instance has no GPU, so it checks that the snaps and tars survived into the AMI."""
    own = s.role == "control-plane"
    pin = s.snap
    build = [
        *([_upgrade()] if own else []),
        download_snaps_step(s, _bash, APT),
        *([install_regctl_step(s, _bash), preload_images_step(s, images, _bash)] if s.preload else []),
        *([_clean(), REBOOT] if own else
          [_bash("CleanApt", "apt-get clean", "rm -rf /var/lib/apt/lists/*")]),
    ]
    validate = [*([_no_containerd()] if own else []), *carried_checks(s, images)]
    what = f"the k8s snap {pin.version} (revision {pin.revision}) with its base and aws-cli as files" + (
        f", {len(images)} catalog images and k8s-snap's own preloaded" if s.preload else "")
    return {
        "name": "ck8s-gpu-control-plane" if own else "ck8s-gpu-node-carried",
        "description": f"{what}, for Canonical Kubernetes {'control planes' if own else 'GPU nodes'}",
        "schemaVersion": 1.0,
        "phases": [{"name": "build", "steps": build}, {"name": "validate", "steps": validate},
                   {"name": "test", "steps": carried_checks(s, images)}],
    }


def component_document(s: ImageSettings) -> dict[str, Any]:
    """A GPU node's driver (and EFA): upgrade, install, hold, clean, reboot, check."""
    b = s.driver_branch
    build = [_upgrade(), *driver_build_steps(s), _clean(), REBOOT]
    validate = [
        _bash("ModulesForTheBootedKernel",
              "version=$(modinfo -k \"$(uname -r)\" -F version nvidia)",
              f"case \"$version\" in {b}.*) echo \"nvidia $version for $(uname -r)\" ;; "
              f"*) echo \"nvidia module for $(uname -r) is '$version', want {b}.x\" >&2; exit 1 ;; esac"),
        _no_containerd(),
        toolkit_validate_step(),
        *(efa_validate_steps() if s.with_efa else []),
    ]
    test = [
        _bash("DriverSeesTheGpus",
              "nvidia-smi",
              "version=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n1)",
              f"case \"$version\" in {b}.*) ;; *) echo \"driver $version, want {b}.x\" >&2; exit 1 ;; esac",
              "systemctl is-active nvidia-persistenced.service"),
        # libnvidia-container through the driver: what a container on the nvidia runtime gets.
        _bash("ContainerToolkitSeesTheGpus", "nvidia-container-cli info"),
    ]
    return {
        "name": "ck8s-gpu-nvidia-driver",
        "description": f"NVIDIA {b} server driver ({s.kernel_modules} kernel modules) from Ubuntu's archive, "
                       f"NVIDIA Container Toolkit {CTK.version}"
                       + (f", AWS EFA software {EFA_INSTALLER_VERSION} with the NCCL OFI plugin," if s.with_efa else "")
                       + " for Canonical Kubernetes GPU nodes (gpuStack.driver and gpuStack.toolkit: host)",
        "schemaVersion": 1.0,
        "phases": [{"name": "build", "steps": build}, {"name": "validate", "steps": validate},
                   {"name": "test", "steps": test}],
    }


def render(document: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(document), sort_keys=False, width=120)


def semantic_version(major: int, content: str) -> str:
    """Image Builder semantic version `major.minor.patch`, each node 0..2^30-1 (AWS Image Builder
    API CreateComponent / CreateImageRecipe `semanticVersion`). A component or recipe is immutable
    per name and version, so the patch is derived from the content: a changed document is a new
    version, created before the old one is deleted (Pulumi's default replacement order)."""
    patch = int(hashlib.sha256(content.encode()).hexdigest()[:7], 16)  # < 2^28
    return f"{major}.0.{patch}"


def document_problems(document: Any) -> list[str]:
    """Every reason AWSTOE would refuse this document (empty = it would run)."""
    return list(_problems(document))


def _problems(doc: Any) -> Iterator[str]:
    if not isinstance(doc, Mapping):
        yield "the document must be a mapping"
        return
    if (size := len(render(doc))) > INLINE_DATA_MAX:
        yield (f"the document is {size} characters; Image Builder takes at most {INLINE_DATA_MAX} of inline "
               "component data (CreateComponent data)")
    if doc.get("schemaVersion") != 1.0:
        yield f"schemaVersion must be 1.0, got {doc.get('schemaVersion')!r}"
    phases = doc.get("phases")
    if not isinstance(phases, list) or not phases:
        yield "phases must be a non-empty list"
        return
    names = [p.get("name") if isinstance(p, Mapping) else None for p in phases]
    if not set(PHASES) & set(names):
        yield f"at least one phase must be one of {', '.join(PHASES)}"
    for i, phase in enumerate(phases):
        where = f"phases[{i}]"
        if not isinstance(phase, Mapping) or not isinstance(phase.get("steps"), list) or not phase["steps"]:
            yield f"{where}: a phase needs a name and a non-empty steps list"
            continue
        if names.count(phase.get("name")) > 1:
            yield f"{where}: phase name {phase.get('name')!r} is not unique within the document"
        step_names = [st.get("name") if isinstance(st, Mapping) else None for st in phase["steps"]]
        for j, step in enumerate(phase["steps"]):
            yield from _step_problems(f"{where}.steps[{j}]", step, step_names)


def _step_problems(where: str, step: Any, step_names: list[Any]) -> Iterator[str]:
    if not isinstance(step, Mapping):
        yield f"{where}: a step must be a mapping"
        return
    name = step.get("name")
    if not isinstance(name, str) or not STEP_NAME.match(name):
        yield f"{where}: step name {name!r} must be 1-128 letters, digits, - or _"
    elif step_names.count(name) > 1:
        yield f"{where}: step name {name!r} is not unique within its phase"
    action = step.get("action")
    if action not in ACTIONS:
        yield f"{where}: action {action!r} is not one this project uses ({', '.join(ACTIONS)})"
        return
    inputs = step.get("inputs")
    if not isinstance(inputs, Mapping):
        yield f"{where}: {action} needs an inputs mapping"
        return
    for key in ACTIONS[action]:
        value = inputs.get(key)
        if not isinstance(value, list) or not value or not all(isinstance(c, str) for c in value):
            yield f"{where}: {action} needs inputs.{key} as a non-empty list of strings"
    if "onFailure" in step and step["onFailure"] not in ON_FAILURE:
        yield f"{where}: onFailure must be one of {', '.join(ON_FAILURE)}"

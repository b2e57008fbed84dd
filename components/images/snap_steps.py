"""The build and check steps that put the k8s snap, its base and the aws-cli snap on a node image (pure).

The snaps are downloaded as files with their assertions, never installed in the image. Installing
would start k8sd, a microcluster daemon, during the build: at its first start it takes the host's
name as the member name and creates the member's `server.crt`/key in its state directory
(canonical/microcluster v3 e950e52 internal/daemon/daemon.go Daemon.init: os.Hostname, then
lxd util.LoadServerCert, which generates a missing pair), so every instance of the image would boot
with the build host's name and one shared identity. Nodes install the files at boot instead
(`snap ack <file>.assert && snap install <file>.snap [--classic]`: k8s-snap release-1.34
docs/canonicalk8s/snap/howto/install/offline.md), in the order this writes.

Sources:
- SNAPD = canonical/snapd 2.77 (ff6da80) cmd/snap/cmd_download.go: `snap download` takes
  `--revision`, `--channel`, `--basename`, `--target-directory`, and refuses `--channel` with
  `--revision` ("cannot specify both channel and revision"), so the pinned k8s is fetched by
  revision alone; files are `<name>_<revision>.snap` and `.assert` without `--basename`
  (store/tooling/tooling.go DownloadSnap: snap.Info.Filename), for the architecture in
  UBUNTU_STORE_ARCH (tooling.NewToolingStore), else the host's.
- K8S = canonical/k8s-snap release-1.34 (f7e1b7c) snap/snapcraft.yaml: `base: core22`,
  `confinement: classic`, the version from build-scripts/components/kubernetes/version
  (craftctl set version), `k8s list-images > images.txt` in the snap's root.
- SNAPYAML = snapd 2.77 snap/info_snap_yaml.go infoFromSnapYaml: `confinement` absent means
  strict; snap/validate.go: an app snap without `base` runs on `core`; overlord/snapstate/
  check_snap.go checkBases: `base: none` needs no base snap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .settings import ImageSettings

Bash = Callable[..., dict[str, Any]]  # document.py _bash: a step from its name and command lines

SNAP_DIR = "/var/lib/ck8s-gpu/snaps"
INSTALL_ORDER = f"{SNAP_DIR}/install-order"
AWS_CLI_CHANNEL = "v2/stable"  # the aws-cli snap's v2 track (classic confinement, read from its snap.yaml)

# Bash helper: one top-level key of a snap's meta/snap.yaml, quotes dropped (SNAPYAML). The file
# is read whole before it is parsed, so an early exit cannot cut unsquashfs's pipe.
SNAP_FIELD = ("snap_field() { local meta; meta=$(unsquashfs -cat \"$1\" meta/snap.yaml); "
              "sed -n \"s/^$2: *//p\" <<<\"$meta\" | head -n1 | tr -d \"\\\"'\"; }")


def snap_file(name: str, revision: int | str) -> str:
    return f"{SNAP_DIR}/{name}_{revision}.snap"  # SNAPD: <name>_<revision> without --basename


def download_snaps_step(s: ImageSettings, bash: Bash, apt: str) -> dict[str, Any]:
    """k8s at the pinned revision (SNAPD: by revision only), aws-cli from its channel, and the bases
    both name; install-order lists bases first, then the apps, as `<name> <revision> <confinement>`."""
    pin = s.snap
    k8s = snap_file("k8s", pin.revision)
    return bash(
        "DownloadSnaps",
        "export DEBIAN_FRONTEND=noninteractive",
        f"{apt} update  # the lists may be gone (a GPU node's driver component cleans them)",
        f"{apt} install --no-install-recommends squashfs-tools  # unsquashfs -cat reads files of a snap",
        f"mkdir -p {SNAP_DIR}",
        f"export UBUNTU_STORE_ARCH={s.architecture}  # the store serves this architecture's revision",
        SNAP_FIELD,
        # SNAPD: --channel with --revision is refused; the revision names one build of one arch.
        f"snap download k8s --revision={pin.revision} --target-directory={SNAP_DIR}",
        f"version=$(snap_field {k8s} version)",
        f"if [ \"$version\" != {pin.version} ]; then echo \"k8s revision {pin.revision} is $version, "
        f"the pin says {pin.version}\" >&2; exit 1; fi",
        f"snap download aws-cli --channel={AWS_CLI_CHANNEL} --target-directory={SNAP_DIR}",
        f"apps=({k8s} {SNAP_DIR}/aws-cli_*.snap)",
        "bases=()",
        "for app in \"${apps[@]}\"; do",
        "  base=$(snap_field \"$app\" base)",
        "  base=${base:-core}  # no base: the core snap; none: no base snap (SNAPYAML)",
        "  case \" none ${bases[*]} \" in *\" $base \"*) ;; *) bases+=(\"$base\") ;; esac",
        "done",
        "for base in \"${bases[@]}\"; do",
        f"  snap download \"$base\" --target-directory={SNAP_DIR}",
        "done",
        f": > {INSTALL_ORDER}",
        "for base in \"${bases[@]}\"; do",
        f"  files=({SNAP_DIR}/\"$base\"_*.snap)",
        "  rev=${files[0]##*_}",
        f"  echo \"$base ${{rev%.snap}} strict\" >> {INSTALL_ORDER}",
        "done",
        "for app in \"${apps[@]}\"; do",
        "  name=$(snap_field \"$app\" name)",
        "  confinement=$(snap_field \"$app\" confinement)",
        "  confinement=${confinement:-strict}",
        "  case \"$confinement\" in classic|strict) ;; *) echo \"$app: confinement $confinement\" >&2; exit 1 ;; esac",
        "  rev=${app##*_}",
        f"  echo \"$name ${{rev%.snap}} $confinement\" >> {INSTALL_ORDER}",
        "done",
        f"cat {INSTALL_ORDER}",
    )


def snaps_carried_step(s: ImageSettings, bash: Bash, name: str = "SnapsCarried") -> dict[str, Any]:
    """Every install-order line has its snap and assertion; k8s is the pinned revision, classic; and
    no snap of them is installed (k8sd would have started: the module docstring)."""
    pin = s.snap
    return bash(
        name,
        f"test -s {INSTALL_ORDER}",
        f"grep -qx 'k8s {pin.revision} classic' {INSTALL_ORDER} || "
        f"{{ echo 'install-order has no k8s {pin.revision} classic' >&2; exit 1; }}",
        "while read -r snap rev confinement; do",
        f"  for file in {SNAP_DIR}/\"${{snap}}_${{rev}}\".snap {SNAP_DIR}/\"${{snap}}_${{rev}}\".assert; do",
        "    if [ ! -s \"$file\" ]; then echo \"$file missing ($snap $rev $confinement)\" >&2; exit 1; fi",
        "  done",
        f"done < {INSTALL_ORDER}",
        "if snap list k8s >/dev/null 2>&1; then",
        "  echo 'k8s is installed in the image: k8sd ran at build' >&2; exit 1",
        "fi",
    )

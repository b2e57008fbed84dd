"""The build and check steps that put the k8s snap, its base and the aws-cli snap on a node image (pure).

The snaps are downloaded as files with their assertions, never installed in the image. Installing
would start k8sd, a microcluster daemon, during the build: at its first start it takes the host's
name as the member name and creates the member's `server.crt`/key in its state directory
(canonical/microcluster v3 e950e52 internal/daemon/daemon.go Daemon.init: os.Hostname, then
lxd util.LoadServerCert, which generates a missing pair), so every instance of the image would boot
with the build host's name and one shared identity. Nodes install the files at boot instead
(`snap ack <file>.assert && snap install <file>.snap [--classic]`: k8s-snap release-1.34
docs/canonicalk8s/snap/howto/install/offline.md), in the order this writes.

The image carries the snapd snap too, first in that order. That page lists only core22 and k8s: it
relies on the host already having the snapd snap. snapd on a classic, seeded system fetches the
snapd snap from the store as a prerequisite of any app snap while that snap is not installed
(PREREQ), so a host without it cannot install k8s offline; the node installs the carried snapd
only then (components/aws/scripts/ck8s-node.sh install_snap_files), so a newer seeded snapd is kept.

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
- PREREQ = snapd 2.77 overlord/snapstate/handlers_prereq.go: doPrerequisites skips snaps of type
  snapd, os, base, kernel, gadget; for the others installPrereqs fetches the base, then, where
  considerSnapdAsPrereq (classic, seeded, the snapd snap not installed), the snapd snap from the
  store; unreachable -> `cannot install system snap "snapd": ...` (prereqError). Since snapd 2.66
  (#14173); before it (handlers.go installPrereqs) only where the base is not `core` and neither
  the snapd nor the core snap was installed. spread test tests/main/snapd-snap-auto-install ("Ensure
  the snapd gets auto installed when needed"). The snapd snap has `type: snapd` and no base
  (snapd's build-aux/snap/snapcraft.yaml).
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
    """The snapd snap (PREREQ), k8s at the pinned revision (SNAPD: by revision only), aws-cli from
    its channel, and the bases both name; install-order lists snapd first, then the bases, then the
    apps, as `<name> <revision> <confinement>`. snapd is no app: its missing base is no `core`."""
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
        # PREREQ: a host without the snapd snap fetches it before any app; offline it has to be here.
        f"snap download snapd --target-directory={SNAP_DIR}",
        f"snapd=({SNAP_DIR}/snapd_*.snap)",
        "if [ \"$(snap_field \"${snapd[0]}\" type)\" != snapd ]; then",
        "  echo \"${snapd[0]}: not of type snapd\" >&2; exit 1",
        "fi",
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
        "rev=${snapd[0]##*_}",
        f"echo \"snapd ${{rev%.snap}} strict\" > {INSTALL_ORDER}  # first: PREREQ, before any app",
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
    """install-order starts with the snapd snap (PREREQ: a node without it fetches it from the store
    before k8s); every line has its snap and assertion; k8s is the pinned revision, classic; and no
    snap of them is installed (k8sd would have started: the module docstring)."""
    pin = s.snap
    return bash(
        name,
        f"test -s {INSTALL_ORDER} || {{ echo '{INSTALL_ORDER} missing or empty' >&2; exit 1; }}",
        f"first=$(head -n1 {INSTALL_ORDER})",
        "grep -Eqx 'snapd [0-9]+ strict' <<<\"$first\" || "
        "{ echo 'install-order does not start with snapd <revision> strict: a node without the snapd snap "
        "would fetch it from the store' >&2; exit 1; }",
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

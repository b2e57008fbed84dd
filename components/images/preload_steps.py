"""The build and check steps that export every preloaded container image into a node image (pure).

Sources:
- OFFLINE = canonical/k8s-snap release-1.34 (f7e1b7c) docs/canonicalk8s/snap/howto/install/
  offline.md, "Side-load images": `regctl image export <ref> --name <ref> --platform=...`; "The
  flag `--name` is essential" (without it containerd imports the image by hash only and k8s does
  not find the tag); the tars go to /var/snap/k8s/common/images, which containerd imports at start.
- REGCTL = regclient/regclient v0.5.3 (63bcd1a) cmd/regctl/image.go: `image digest <ref>` prints
  the digest of the reference (the index of a multi-platform image; `--list` on by default);
  `image export <ref> [filename]` with `--platform` picks that platform's manifest from an index,
  and `--name` is ONE string (StringVar "Name of image to embed for docker load"): a tar carries
  one name.
- K8S = k8s-snap release-1.34 snap/snapcraft.yaml: `k8s list-images > images.txt` in the snap's
  root, the images its features (network, DNS, storage, metrics) run.

Naming: a catalog image is named with the mirrored reference when `mirror` is set (chart values
then name the mirror: components/addons/image_catalog.py mirror_values), else with its upstream one.
k8s-snap's own images keep their upstream names (its charts name them so; a mirror reaches them
through containerd's hosts.toml), and are exported from the mirror when one is set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..tables import pins
from .settings import ImageSettings
from .snap_steps import Bash, snap_file

IMAGE_DIR = "/var/lib/ck8s-gpu/images"
LOCK = f"{IMAGE_DIR}/images.lock"  # `<ref> <digest>`: the name containerd will know, what it holds
PRELOAD_LIST = f"{IMAGE_DIR}/preload.list"  # `<upstream ref> <digest or -> <catalog|k8s>`
TOOLS = "/var/lib/ck8s-gpu/build-tools"  # regctl lives here for the build only
REGCTL = f"{TOOLS}/regctl"
# One tar per name: every character outside [A-Za-z0-9._-] becomes `_` (bash, the same in the checks).
SAFE_NAME = "safe_name() { printf '%s' \"$1\" | tr -c 'A-Za-z0-9._-' '_'; }"


class Ref(Protocol):  # components/addons/image_catalog.py ImageRef
    registry: str
    repository: str
    tag: str
    digest: str

    def ref(self) -> str: ...

    def mirrored(self, mirror: str) -> str: ...


def preload_lines(images: Sequence[Ref]) -> list[str]:
    """`<upstream ref> <digest or -> catalog` per catalog image; the step puts the mirror in front
    (the same `<mirror>/<host>/<repository>:<tag>` as ImageRef.mirrored), so the document's size
    does not grow with the mirror's name (Image Builder: 16000 characters a component)."""
    return sorted({f"{image.ref()} {image.digest or '-'} catalog" for image in images})


def install_regctl_step(s: ImageSettings, bash: Bash) -> dict[str, Any]:
    """regctl's release binary, run only when its sha256 is the pinned one (components/tables/pins.py REGCTL)."""
    url = pins.REGCTL.url.format(arch=s.architecture)
    sha = pins.REGCTL.sha256[s.architecture]
    return bash(
        "InstallRegctl",
        f"mkdir -p {TOOLS}",
        f"curl -fsSL --retry 3 -o {REGCTL}.download {url}",
        f"echo '{sha}  {REGCTL}.download' | sha256sum --check --strict -",
        f"install -m 0755 {REGCTL}.download {REGCTL}",
        f"rm -f {REGCTL}.download",
        f"{REGCTL} version",
    )


def preload_images_step(s: ImageSettings, images: Sequence[Ref], bash: Bash) -> dict[str, Any]:
    """Every catalog image and every image of k8s-snap's images.txt, digest resolved once, exported by
    digest for this architecture with its name, and locked as `<name> <digest>`."""
    k8s = snap_file("k8s", s.snap.revision)
    return bash(
        "PreloadImages",
        f"mkdir -p {IMAGE_DIR}",
        SAFE_NAME,
        f"mirror='{s.mirror.rstrip('/') if s.mirror else ''}'",
        f"cat > {PRELOAD_LIST} <<'EOF'",
        *preload_lines(images),
        "EOF",
        # K8S: the snap's own list; each reference is fully qualified (host first).
        f"feature_images=$(unsquashfs -cat {k8s} images.txt)",
        "while read -r ref; do",
        "  [ -n \"$ref\" ] || continue",
        "  case \"${ref%%/*}\" in *.*|*:*) ;; *) echo \"images.txt: $ref names no registry host\" >&2; exit 1 ;; esac",
        f"  echo \"$ref - k8s\" >> {PRELOAD_LIST}",
        "done <<<\"$feature_images\"",
        f"sort -u -k1,1 -o {PRELOAD_LIST} {PRELOAD_LIST}  # one export per reference",
        f": > {LOCK}",
        "while read -r ref pinned kind; do",
        "  src=$ref name=$ref",
        "  if [ -n \"$mirror\" ]; then",
        "    src=$mirror/$ref",
        "    if [ \"$kind\" = catalog ]; then name=$src; fi  # chart values name the mirror; k8s-snap's keep theirs",
        "  fi",
        "  repo=${src%@*}",
        "  case \"${repo##*/}\" in *:*) repo=${repo%:*} ;; esac  # the tag, not a registry port",
        "  digest=$pinned",
        f"  if [ \"$digest\" = - ]; then digest=$({REGCTL} image digest \"$src\"); fi",
        "  case \"$digest\" in sha256:*) ;; *) echo \"$src: no digest ('$digest')\" >&2; exit 1 ;; esac",
        # OFFLINE: --name or containerd knows the image by hash only; REGCTL: one name per tar.
        f"  {REGCTL} image export \"$repo@$digest\" \"{IMAGE_DIR}/$(safe_name \"$name\").tar\" "
        f"--name \"$name\" --platform linux/{s.architecture}",
        f"  echo \"$name $digest\" >> {LOCK}",
        f"done < {PRELOAD_LIST}",
        f"rm -rf {TOOLS}",
        f"echo \"$(wc -l < {LOCK}) images in {IMAGE_DIR}\"",
    )


def images_preloaded_step(images: Sequence[Ref], bash: Bash, name: str = "ImagesPreloaded") -> dict[str, Any]:
    """Every lock line has its tar; the lock holds at least the catalog's images, each by digest."""
    return bash(
        name,
        SAFE_NAME,
        f"test -s {LOCK}",
        f"count=$(wc -l < {LOCK})",
        f"if [ \"$count\" -lt {len(images)} ]; then echo \"{LOCK}: $count images, the catalog has "
        f"{len(images)}\" >&2; exit 1; fi",
        "while read -r ref digest; do",
        "  case \"$digest\" in sha256:*) ;; *) echo \"$ref: '$digest' is not a digest\" >&2; exit 1 ;; esac",
        f"  tar=\"{IMAGE_DIR}/$(safe_name \"$ref\").tar\"",
        "  if [ ! -s \"$tar\" ]; then echo \"$ref: $tar missing\" >&2; exit 1; fi",
        f"done < {LOCK}",
    )

"""Image references and the mirror mechanism (pure): what an image of a chart is (`Entry`), how to
parse one, how to point a chart's image values at a registry mirror, and how to find public ones.
Each add-on module owns the entries of its chart (`IMAGES`, read at the pin); the catalog of the
whole stack is components/addons/image_catalog.py.

One table serves two offline mechanisms: node images preload `preload_images` into containerd,
and with a private mirror `mirror_values` rewrites each chart's image values to
`<mirror>/<upstream registry host>/<repository>:<tag>` (the path layout of an ECR pull-through
cache and of k8s-snap's containerd hosts.toml mirrors), so no rendered object names a public
registry. Every entry names the upstream file it was read from at the pin (`source`); an entry
whose upstream could not be read at the pin says so (`verified=False`, `note`).

The catalog describes the PINNED chart versions (components/tables/pins.py CHARTS): a stack that
overrides an add-on's version gets the pin's list (`catalog_version_mismatches` names them).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..settings.model import Settings

# Registry hosts a pod must not pull from with the mirror on (the offline policy refuses them).
# Docker Hub answers under three names; a reference without a host means Docker Hub.
PUBLIC_HOSTS: frozenset[str] = frozenset({
    "nvcr.io", "ghcr.io", "registry.k8s.io", "quay.io", "docker.io", "public.ecr.aws",
    "registry-1.docker.io", "index.docker.io", "k8s.gcr.io", "gcr.io",
})
ARCHITECTURES = ("amd64", "arm64")  # components/images/settings.py Arch
# GPU nodes run Canonical's Ubuntu 24.04 (components/aws/ami.py); the GPU Operator appends the
# node's OS tag (NFD os_release ID + VERSION_ID) to driver image tags.
NODE_OS_TAG = "ubuntu24.04"


@dataclass(frozen=True)
class ImageRef:
    registry: str  # "nvcr.io", "ghcr.io", "registry.k8s.io", "quay.io", "docker.io", "public.ecr.aws"
    repository: str  # "nvidia/gpu-operator"
    tag: str
    source: str  # the upstream file (repo, path, tag/commit) the reference was read from
    digest: str = ""  # "sha256:..." where the pin table records one
    verified: bool = True  # False: not read from upstream at the pin (see note)
    note: str = ""

    def ref(self) -> str:
        """`nvcr.io/nvidia/gpu-operator:v26.7.0`; docker.io stays explicit."""
        return f"{self.registry}/{self.repository}:{self.tag}"

    def mirrored(self, mirror: str) -> str:
        return f"{mirror.rstrip('/')}/{self.registry}/{self.repository}:{self.tag}"

    def pull_ref(self) -> str:
        """The reference with its digest where one is pinned (what a node should pull)."""
        return f"{self.ref()}@{self.digest}" if self.digest else self.ref()


def always(_s: Settings) -> bool:
    return True


def never(_s: Settings) -> bool:
    return False


@dataclass(frozen=True)
class Entry:
    """One image of one chart: the values keys that build it, the ones `mirror_values` rewrites
    (`mirror`: path -> suffix after `<mirror>/<registry>`), and whether it runs for a stack.
    `runs=never`: rendered into an object (a ClusterPolicy field, an operator flag, a Helm test)
    but no pod runs it at our values: mirrored, never preloaded."""

    chart: str
    name: str
    image: ImageRef
    keys: tuple[str, ...]
    mirror: tuple[tuple[str, str], ...]
    runs: Callable[[Settings], bool] = always
    # The GPU Operator's precompiled driver: the operator appends `-<node kernel>-<os tag>`, so
    # the full tag exists only where the node's kernel is known (the image program).
    kernel_tagged: bool = False

    @property
    def can_run(self) -> bool:
        return self.runs is not never


def unique_sorted(refs: Iterator[ImageRef] | tuple[ImageRef, ...] | list[ImageRef]) -> tuple[ImageRef, ...]:
    seen: dict[str, ImageRef] = {}
    for r in refs:
        seen.setdefault(r.pull_ref(), r)
    return tuple(seen[k] for k in sorted(seen))


def parse_ref(reference: str, source: str) -> ImageRef:
    """`[host/]repository:tag[@sha256:...]` as an ImageRef (no host: Docker Hub, `library/` for one part)."""
    m = _REF.fullmatch(reference)
    if m is None or not m.group("tag"):
        raise ValueError(f"{reference!r} is not an image reference with a tag")
    host, path = m.group("host"), m.group("path")
    if host is None:
        host, path = "docker.io", path if "/" in path else f"library/{path}"
    return ImageRef(host, path, m.group("tag"), source, digest=m.group("digest") or "")


_MIRROR = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?(/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*/?$")


def _set(out: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = out
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value


def mirror_values(images: tuple[Entry, ...], mirror: str) -> dict[str, Any]:
    """Values that point every image of `images` (one chart's) at `mirror` (`<mirror>/<host>/<repository>`),
    for the caller to merge over the add-on's values and under the stack's own `values:`."""
    m = checked_mirror(mirror)
    out: dict[str, Any] = {}
    for e in images:
        for path, rest in e.mirror:
            _set(out, path, f"{m}/{e.image.registry}" + (f"/{rest}" if rest else ""))
    return out


def checked_mirror(mirror: str) -> str:
    """The mirror without its trailing slash; a ValueError naming the shape for anything else."""
    if not _MIRROR.match(mirror):
        raise ValueError(f"mirror {mirror!r}: expected a registry host with an optional path, "
                         "no scheme (e.g. 123456789012.dkr.ecr.eu-west-1.amazonaws.com)")
    return mirror.rstrip("/")


def split_repository(repository: str) -> tuple[str, str]:
    """`public.ecr.aws/eks/x` -> (`public.ecr.aws`, `eks/x`)."""
    host, _, rest = repository.partition("/")
    return host, rest


def mirrored_ref(reference: str, mirror: str) -> str:
    r = parse_ref(reference, "")
    return r.mirrored(mirror) + (f"@{r.digest}" if r.digest else "")


# An image reference: optional host (has a dot or port, or is localhost), lower-case path, then a
# tag and/or a digest (distribution/reference grammar, simplified).
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REF = re.compile(
    rf"(?:(?P<host>(?:[a-zA-Z0-9-]+\.[a-zA-Z0-9.-]+|localhost)(?::[0-9]+)?)/)?"
    rf"(?P<path>{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?"
    r"(?:@(?P<digest>sha256:[0-9a-f]{64}))?"
)


def _public(value: str) -> bool:
    if value in PUBLIC_HOSTS:  # a bare registry value (kube-prometheus-stack `registry: quay.io`)
        return True
    m = _REF.fullmatch(value)
    if m is None:
        return False
    host = m.group("host")
    if host is not None:
        return host in PUBLIC_HOSTS
    # No host means Docker Hub, but only a tag or digest makes a word or path an image reference;
    # a first component of digits and dots is an address (10.0.0.1:6443), not a repository.
    first = m.group("path").split("/")[0]
    return bool(m.group("tag") or m.group("digest")) and not re.fullmatch(r"[0-9.]+", first)


def public_image_refs(obj: Any) -> list[tuple[str, str]]:
    """(path, value) of every string in `obj` that names an image, or a registry, on a public host."""
    out: list[tuple[str, str]] = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, str):
            if _public(node):
                out.append((path or "$", node))
        elif isinstance(node, Mapping):
            for k, v in node.items():
                walk(v, f"{path}.{k}" if path else str(k))
        elif isinstance(node, (list, tuple)):
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]")

    walk(obj, "")
    return out

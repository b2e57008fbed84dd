"""`offline-images`: an offline or mirrored stack (settings.offline, settings.images.mirror, docs/adr/0043)
takes every image it renders into the cluster, Helm values and Kubernetes objects, from its mirror.

Judged by where a reference resolves, not by a list of known public hosts: any registry other than
`images.mirror` is one the nodes may not reach (a vendor's, a regional one, a host with a port,
another account's ECR, localhost) or one the stack did not choose. A reference resolves as
distribution/reference reads it (github.com/distribution/reference normalize.go
splitDockerDomain: the first path component is a registry when it has a `.` or a `:` or is
`localhost`; otherwise, and with no component at all, the registry is docker.io).

Where a string counts as a reference:
- at an image field (`image`, `repository`, `registry`, `imageRepository`, a key ending `Image`):
  a reference with or without a registry, and a bare registry (a chart's `registry: quay.io`);
- anywhere: a full reference with a registry and a tag or digest (`host/path:tag`), or with a
  registry on the known public list (kept as a second net for tag-less strings);
- split over the keys of one mapping (`registry`/`repository`/`image`/`tag`/`version`, as charts and
  custom resources such as the GPU Operator's ClusterPolicy carry them): composed as the consumer
  composes it, so the part that names the registry is judged, and a mapping whose registry and
  repository are empty resolves to docker.io through its `image`.
AWS objects are out of scope: a pull-through cache rule names its upstream by design.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, ResourceValidationArgs, ResourceValidationPolicy

from ..addons.image_refs import PUBLIC_HOSTS
from ..tables import tokens
from .facts import facts_of
from .props import is_unknown

IMAGE_KEYS = frozenset({"image", "repository", "registry", "imagerepository"})
SPLIT_KEYS = ("registry", "repository")  # the keys of a split reference that may carry its registry
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
# A registry: a name with a dot or a port, or localhost (splitDockerDomain); then the path.
_REGISTRY = r"(?:[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+(?::[0-9]+)?|[a-zA-Z0-9-]+:[0-9]+|localhost)"
_HOSTED = re.compile(rf"^(?P<host>{_REGISTRY})/[a-z0-9]")
_FULL = re.compile(rf"^(?P<host>{_REGISTRY})/{_COMPONENT}(?:/{_COMPONENT})*"
                   r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?$")
_BARE_REGISTRY = re.compile(rf"^{_REGISTRY}$")
_BARE = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?"
                   r"(?:@sha256:[0-9a-f]{64})?$")


def _image_key(key: str) -> bool:
    return key.lower() in IMAGE_KEYS or key.endswith("Image")


def registry_of(value: str, at_image_key: bool) -> str | None:
    """The registry `value` pulls from when it is an image reference there; None when it is not one."""
    if is_unknown(value) or value.startswith("sha256:") or not value:
        return None
    m = _HOSTED.match(value)
    if m is not None:
        full = _FULL.match(value)
        if at_image_key or (full is not None and (full.group("tag") or full.group("digest"))):
            return m.group("host").lower()
        return m.group("host") if m.group("host") in PUBLIC_HOSTS else None
    if not at_image_key:
        return None
    if _BARE_REGISTRY.match(value) and ("." in value or ":" in value or value == "localhost"):
        return value.lower()  # a bare registry value (`registry: quay.io`, `registry: harbor:5000`)
    return "docker.io" if _BARE.match(value) and not re.fullmatch(r"[0-9.:]+", value) else None


def _under(value: str, host: str, mirror: str | None) -> bool:
    if mirror is None:
        return False
    m = mirror.rstrip("/").lower()
    return value.lower().startswith(m + "/") or host == m or value.lower() == m


def findings(props: Any, mirror: str | None) -> Iterator[tuple[str, str, str]]:
    """(path, value, registry) of every image reference in `props` that does not resolve to `mirror`."""
    def judge(value: str, path: str, at_image_key: bool) -> Iterator[tuple[str, str, str]]:
        host = registry_of(value, at_image_key)
        if host is not None and not _under(value, host, mirror):
            yield path, value, host

    def walk(node: Any, path: str, key: str) -> Iterator[tuple[str, str, str]]:
        if isinstance(node, str):
            yield from judge(node, path, _image_key(key))
        elif isinstance(node, Mapping):
            lower = {str(k).lower(): k for k in node}
            carriers = [lower[k] for k in SPLIT_KEYS if k in lower and isinstance(node[lower[k]], str)]
            named = [k for k in carriers if node[k]]
            image = lower.get("image")
            for k, v in node.items():
                here = f"{path}.{k}" if path else str(k)
                if isinstance(v, str) and carriers and k in (*carriers, image):
                    # A split reference: the first non-empty registry/repository names the registry,
                    # the other parts are path pieces; with none named, the image alone is the reference.
                    if (named and k == named[0]) or (not named and k == image):
                        yield from judge(v, here, True)
                    continue
                yield from walk(v, here, str(k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from walk(v, f"{path}[{i}]", key)
    yield from walk(props, "", "")


def unset_images(props: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(values path, the chart default's public reference) for each image of a pinned chart
    (components/addons/image_catalog.py) whose values leave it at the chart's default: what the
    values do not name, the chart pulls from its upstream."""
    from ..addons.image_catalog import entries
    from .helm import chart_ref

    ref = chart_ref(props)
    values = props.get("values")
    if ref is None or not isinstance(values, Mapping):
        return
    try:
        known = entries(ref.name)
    except KeyError:
        return  # not a chart the catalog knows (a local chart: its images are in its objects)
    for e in known:
        for path, _ in e.mirror:
            node: Any = values
            for part in path.split("."):
                node = node.get(part) if isinstance(node, Mapping) else None
            if node is None:
                yield f"values.{path}", e.image.ref()


def validate_offline_images(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    facts = facts_of(args)
    if facts is None or not (facts.offline or facts.mirror) or not args.resource_type.startswith("kubernetes:"):
        return
    if args.resource_type == tokens.K8S_HELM_V3_RELEASE:
        for path, default in unset_images(args.props):
            report_violation(f"{path} is unset, so the chart pulls its default {default}: offline stacks name "
                             "every image of a pinned chart under images.mirror (docs/adr/0043)", None)
    for path, value, host in findings(args.props, facts.mirror):
        where = f"under {facts.mirror}" if facts.mirror else "in the node images or under images.mirror"
        report_violation(f"{path} = {value!r} pulls from {host}, not the mirror: offline and mirrored stacks name "
                         f"every image {where} (docs/adr/0043)", None)


OFFLINE_IMAGES = ResourceValidationPolicy(
    name="offline-images",
    description="An offline or mirrored stack takes every image in its Helm values and Kubernetes objects from its "
                "mirror.",
    validate=validate_offline_images,
    enforcement_level=EnforcementLevel.MANDATORY,
)

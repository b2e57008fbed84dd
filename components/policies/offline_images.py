"""`offline-images`: an offline stack (settings.offline, docs/adr/0043) names no image on a public
registry in anything it renders into the cluster: Helm values and Kubernetes objects.

An image reference is judged where it is: a string with a public host before its path
(`nvcr.io/nvidia/...`) anywhere; at an image field (`image`, `repository`, `registry`, a key ending
`Image`), also a reference without a host (Docker Hub, distribution/reference's default) and a bare
public host (a chart's `registry: quay.io`). The stack's mirror (`images.mirror`) is what it must
use instead. AWS objects are out of scope: a pull-through cache rule names its upstream by design.
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
_HOSTED = re.compile(r"^(?P<host>[a-z0-9-]+(?:\.[a-z0-9-]+)+(?::[0-9]+)?)/[a-z0-9]")
_BARE = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?$")


def _image_key(key: str) -> bool:
    return key.lower() in IMAGE_KEYS or key.endswith("Image")


def public_reference(value: str, at_image_key: bool) -> str | None:
    """The public registry `value` pulls from, or None."""
    if is_unknown(value) or value.startswith("sha256:"):
        return None
    m = _HOSTED.match(value)
    if m is not None:
        return m.group("host") if m.group("host") in PUBLIC_HOSTS else None
    if not at_image_key or not value:
        return None
    if value in PUBLIC_HOSTS:
        return value
    if "/" in value:
        first = value.split("/")[0]
        if "." in first or ":" in first or first == "localhost":
            return None  # a host of its own (a mirror), not Docker Hub
    return "docker.io" if _BARE.match(value) and not re.fullmatch(r"[0-9.:]+", value) else None


def path_piece(key: str, split: set[Any]) -> bool:
    """Whether `key` holds only a piece of a reference split over its mapping's keys."""
    low = key.lower()
    return (low == "image" and bool(split)) or (low == "repository" and "registry" in {str(k).lower() for k in split})


def findings(props: Any, mirror: str | None) -> Iterator[tuple[str, str, str]]:
    """(path, value, public host) of every public image reference in `props`."""
    def walk(node: Any, path: str, key: str) -> Iterator[tuple[str, str, str]]:
        if isinstance(node, str):
            if mirror is not None and node.startswith(mirror.rstrip("/") + "/"):
                return
            host = public_reference(node, _image_key(key))
            if host is not None:
                yield path, node, host
        elif isinstance(node, Mapping):
            # A reference split over keys (registry / repository / image / tag): the parts without
            # a host are path pieces of the part that has one, judged there.
            split = {k for k in node if str(k).lower() in ("registry", "repository")}
            for k, v in node.items():
                part = path_piece(str(k), split) and isinstance(v, str) and _HOSTED.match(v) is None
                yield from walk(v, f"{path}.{k}" if path else str(k), "" if part else str(k))
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
    if facts is None or not facts.offline or not args.resource_type.startswith("kubernetes:"):
        return
    if args.resource_type == tokens.K8S_HELM_V3_RELEASE:
        for path, default in unset_images(args.props):
            report_violation(f"{path} is unset, so the chart pulls its default {default}: offline stacks name "
                             "every image of a pinned chart under images.mirror (docs/adr/0043)", None)
    for path, value, host in findings(args.props, facts.mirror):
        where = f"under {facts.mirror}" if facts.mirror else "in the node images or under images.mirror"
        report_violation(f"{path} = {value!r} pulls from {host}: offline stacks name every image {where} "
                         "(docs/adr/0043)", None)


OFFLINE_IMAGES = ResourceValidationPolicy(
    name="offline-images",
    description="An offline stack names no image on a public registry in any Helm value or Kubernetes object.",
    validate=validate_offline_images,
    enforcement_level=EnforcementLevel.MANDATORY,
)

"""Image references for the smoke chart's values: pinned by digest, the registry replaceable (pure)."""

from __future__ import annotations

from typing import Any

from ..tables import pins


def image_values(pin: pins.ImagePin, registry: str | None = None, mirror: str | None = None) -> dict[str, Any]:
    """Split a pinned image into registry and repository so a mirror can replace the registry only.
    `registry` (smokeTest.registry) replaces the host; `mirror` (images.mirror, docs/adr/0043) puts
    the host under it, `<mirror>/<host>/<repository>`, as every chart's images are."""
    head, _, rest = pin.repository.partition("/")
    # A first path part with a dot or port is a registry host (docker.io, ghcr.io, mirror:5000).
    own_registry, repository = (head, rest) if rest and ("." in head or ":" in head) else ("", pin.repository)
    if registry is None and mirror is not None:
        registry = f"{mirror.rstrip('/')}/{own_registry or 'docker.io'}"
    return {
        "registry": registry if registry is not None else own_registry,
        "repository": repository,
        "tag": pin.tag,
        "digest": pin.digest,
        "pullPolicy": "IfNotPresent",
    }


def pinned_image(ref: str | None, pinned: pins.ImagePin) -> pins.ImagePin:
    """An image setting (`<repository>:<tag>@sha256:<hex>`, syntax checked by the settings) or the pin."""
    if ref is None:
        return pinned
    ref, _, digest = ref.partition("@")
    repository, _, tag = ref.rpartition(":")
    return pins.ImagePin(repository, tag, digest)

"""The image catalog of a stack (pure): every image the add-ons' pinned charts run, which of them a
stack's pods run, and what a node image carries.

One table serves two offline mechanisms: node images preload `preload_images` into containerd,
and with a private mirror each add-on's `Addon.mirror` rewrites its chart's image values to
`<mirror>/<upstream registry host>/<repository>:<tag>` (the path layout of an ECR pull-through
cache and of k8s-snap's containerd hosts.toml mirrors), so no rendered object names a public
registry. Each add-on module owns its chart's entries (`IMAGES`), each naming the upstream file it
was read from at the pin (`source`); an entry whose upstream could not be read at the pin says so
(`verified=False`, `note`). The mechanism (references, mirrors) is components/addons/image_refs.py.

The catalog describes the PINNED chart versions (components/tables/pins.py CHARTS): a stack that
overrides an add-on's version gets the pin's list (`catalog_version_mismatches` names them).
"""

from __future__ import annotations

import re

from ..settings.model import Settings
from ..tables import pins
from .catalog import ADDONS
from .graph import cluster_capabilities, select
from .image_refs import ARCHITECTURES, NODE_OS_TAG, Entry, ImageRef, parse_ref, unique_sorted

CATALOG: tuple[Entry, ...] = tuple(e for a in ADDONS for e in a.images)
# Charts that never run on aws (the kind-only simulator): not in node images.
NOT_ON_AWS = frozenset({"fake-gpu-operator"})


def entries(chart: str) -> tuple[Entry, ...]:
    if chart not in pins.CHARTS:
        raise KeyError(f"unknown chart {chart!r}: not in components/tables/pins.py CHARTS")
    return tuple(e for e in CATALOG if e.chart == chart)


def chart_images(chart: str, settings: Settings) -> tuple[ImageRef, ...]:
    """What this chart's pods run for these settings (the precompiled driver, whose tag names the
    node's kernel, is left to `precompiled_driver_image`)."""
    return unique_sorted([e.image for e in entries(chart) if e.runs(settings) and not e.kernel_tagged])


def precompiled_driver_image(kernel: str, os_tag: str = NODE_OS_TAG) -> ImageRef:
    """The precompiled driver a node with `kernel` (uname -r) pulls: `<branch>-<kernel>-<os tag>`."""
    if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+-[0-9]+-[a-z0-9]+", kernel):
        raise ValueError(f"kernel {kernel!r} is not a kernel release like 6.8.0-1024-aws")
    base = next(e.image for e in entries("gpu-operator") if e.kernel_tagged)
    return ImageRef(base.registry, base.repository, f"{base.tag}-{kernel}-{os_tag}", base.source,
                    note="NVIDIA publishes it only for the newest kernels of each OS (components/tables/pins.py)")


def _addon_charts(settings: Settings) -> list[str]:
    return [a.chart_pin for a in select(ADDONS, settings, cluster_capabilities(settings)) if a.chart_pin]


def catalog_version_mismatches(settings: Settings) -> tuple[str, ...]:
    """Add-ons this stack installs at a version other than the pin: the catalog lists the pin's images."""
    charts = set(_addon_charts(settings))
    return tuple(sorted(a.name for a in ADDONS if a.chart_pin in charts
                        and a.version(settings) != pins.CHARTS[a.chart_pin].version))


def _smoke_images(settings: Settings) -> list[ImageRef]:
    smoke = settings.smoke_test
    if not smoke.enabled:
        return []
    pin = pins.IMAGES["smoke-test"]
    out = [parse_ref(smoke.image, "settings.smokeTest.image") if smoke.image
           else parse_ref(pin.ref, "components/tables/pins.py IMAGES smoke-test")]
    if smoke.all_reduce.enabled:
        out.append(parse_ref(smoke.all_reduce.image, "settings.smokeTest.allReduce.image")
                   if smoke.all_reduce.image
                   else parse_ref(pins.IMAGES["nccl-tests"].ref, "components/tables/pins.py IMAGES nccl-tests"))
    return out


def stack_images(settings: Settings) -> tuple[ImageRef, ...]:
    """Every image the stack's enabled add-ons run, plus the smoke test's: sorted, unique."""
    refs = [r for chart in _addon_charts(settings) for r in chart_images(chart, settings)]
    return unique_sorted(refs + _smoke_images(settings))


def preload_images(architecture: str, kernel: str | None = None) -> tuple[ImageRef, ...]:
    """What a node image carries: every image any aws stack can run from every chart pin, and the
    smoke-test image. Not kind-node or the fake GPU operator (never on aws), not nccl-tests (opt-in,
    several GB). With `kernel`, the precompiled driver for it too. The same list for both
    architectures: the image program exports each reference's `architecture` variant."""
    if architecture not in ARCHITECTURES:
        raise ValueError(f"architecture {architecture!r}: expected one of {', '.join(ARCHITECTURES)}")
    refs = [e.image for e in CATALOG if e.chart not in NOT_ON_AWS and e.can_run and not e.kernel_tagged]
    smoke = pins.IMAGES["smoke-test"]
    refs.append(parse_ref(smoke.ref, "components/tables/pins.py IMAGES smoke-test"))
    if kernel is not None:
        refs.append(precompiled_driver_image(kernel))
    return unique_sorted(refs)


"""The pin table: exact versions only, no duplicates, and nothing else in the code pins a version."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components.addons.catalog import ADDONS
from components.tables import pins

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("version", ["latest", "", "^1.2.0", ">=1.2", "1.2", "1.x", "~1.2.3", "v1"])
def test_floating_versions_are_rejected(version: str) -> None:
    assert not pins.is_exact_version(version)


@pytest.mark.parametrize("version", ["1.2.3", "v26.7.0", "v0.17.0", "0.4.1", "v1.2.3-rc.1"])
def test_exact_versions_are_accepted(version: str) -> None:
    assert pins.is_exact_version(version)


def test_every_chart_is_pinned_exactly_once() -> None:
    for key, chart in pins.CHARTS.items():
        assert chart.name == key
        assert pins.is_exact_version(chart.version), f"{key}: {chart.version}"
        assert chart.repo.startswith(("https://", "oci://")), chart.repo
    refs = [(c.repo, c.name) for c in pins.CHARTS.values()]
    assert len(refs) == len(set(refs)), "a chart is pinned twice"


def test_every_image_has_an_exact_tag_and_a_digest() -> None:
    for key, image in pins.IMAGES.items():
        assert image.tag and image.tag != "latest", key
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", image.digest), f"{key}: digest {image.digest!r}"
        assert "@sha256:" in image.ref
    repos = [i.repository for i in pins.IMAGES.values()]
    assert len(repos) == len(set(repos))


def test_snap_tracks_are_classic_and_consistent() -> None:
    assert pins.DEFAULT_TRACK in pins.SNAP_TRACKS
    for name, track in pins.SNAP_TRACKS.items():
        assert re.fullmatch(r"1\.\d+-classic", name)
        assert track.kubernetes.startswith(f"v{name.split('-')[0]}.")
        assert track.channel == f"{name}/stable"
        assert track.dra_ga == (track.minor >= 34)


def test_no_version_is_hard_coded_outside_the_pin_table() -> None:
    """Chart versions and image tags appear in components/ only through components/tables/pins.py."""
    pinned = {c.version for c in pins.CHARTS.values()} | {i.tag for i in pins.IMAGES.values() if "." in i.tag}
    pinned |= {t.kubernetes for t in pins.SNAP_TRACKS.values()}
    # An add-on module records the tags its PINNED chart decides (its values.yaml at the pin, sourced
    # per entry of its IMAGES): facts, not choices. Only those, and only in that module, may name a
    # version; one of them may equal an unrelated pin's tag (CCM v1.34.0 = kind-node).
    chart_facts = {a.values.__module__.replace(".", "/") + ".py": {e.image.tag for e in a.images}
                   for a in ADDONS if a.images}
    assert len(chart_facts) == len([a for a in ADDONS if a.images]) >= 8  # one module per chart with images
    offenders = []
    for path in (ROOT / "components").rglob("*.py"):
        if path.name == "pins.py":
            continue
        text = path.read_text()
        own = chart_facts.get(path.relative_to(ROOT).as_posix(), set())
        for version in pinned - own:
            if re.search(rf"['\"]{re.escape(version)}['\"]", text):
                offenders.append(f"{path.relative_to(ROOT)}: {version}")
        offenders += [f"{path.relative_to(ROOT)}: {m}" for m in re.findall(r"['\"][\w./-]+:v?\d+\.\d+\.\d+['\"]", text)]
    assert offenders == []

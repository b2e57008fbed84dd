"""docs/addons.md is generated from the pin table and the catalog; stale docs fail here."""

from __future__ import annotations

import dataclasses

import pytest

from components.addons import docs
from components.tables import pins


def test_docs_are_current() -> None:
    assert docs.DOC.read_text() == docs.render(), "docs/addons.md is stale: run `python -m components.addons.docs`"
    assert docs.main(["--check"]) == 0


def test_docs_follow_the_pin_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """A version bump without regenerating the docs must make the check above fail."""
    bumped = dataclasses.replace(pins.CHARTS["gpu-operator"], version="v99.0.0")
    monkeypatch.setitem(pins.CHARTS, "gpu-operator", bumped)
    assert "`v99.0.0`" in docs.render()
    assert docs.main(["--check"]) == 1


def test_docs_name_every_addon_and_platform() -> None:
    text = docs.render()
    for name in ("gpu-operator", "dra-driver", "fake-gpu-operator", "kai-scheduler", "kai-queues",
                 "kube-prometheus-stack", "observability", "velero"):
        assert f"| `{name}` |" in text
    for platform in ("aws", "existing", "kind", "local"):
        assert f"- **{platform}**:" in text

"""The stack file's track changes alone, comments kept, and the write is atomic."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from components.upgrade import stackfile

ROOT = Path(__file__).resolve().parents[3]


def test_every_committed_aws_stack_changes_its_track_line_only() -> None:
    for name in ("aws-dev", "aws-prod"):
        text = (ROOT / "stacks" / f"Pulumi.{name}.yaml").read_text()
        out = stackfile.with_track(text, "1.35-classic")
        changed = [(a, b) for a, b in zip(text.splitlines(), out.splitlines(), strict=True) if a != b]
        assert changed == [("      track: 1.34-classic", "      track: 1.35-classic")], name


def test_a_missing_track_line_is_added_under_kubernetes() -> None:
    text = "config:\n  ck8s-gpu:settings:\n    platform: aws\n    kubernetes:\n      features: {gateway: false}\n"
    out = stackfile.with_track(text, "1.35-classic")
    assert "    kubernetes:\n      track: 1.35-classic\n      features: {gateway: false}\n" in out


def test_a_track_elsewhere_is_not_touched() -> None:
    text = ("config:\n  ck8s-gpu:settings:\n    platform: aws\n    kubernetes:\n      track: 1.34-classic  # pinned\n"
            "    tags:\n      track: 1.34-classic\n")
    out = stackfile.with_track(text, "1.35-classic")
    assert "      track: 1.35-classic  # pinned\n" in out
    assert out.endswith("    tags:\n      track: 1.34-classic\n")


def test_no_kubernetes_block_is_refused() -> None:
    with pytest.raises(stackfile.StackFileError, match="no `kubernetes:` block"):
        stackfile.with_track("config:\n  ck8s-gpu:settings:\n    platform: aws\n", "1.35-classic")


def test_a_flow_mapping_is_refused_rather_than_half_edited() -> None:
    text = "config:\n  ck8s-gpu:settings:\n    platform: aws\n    kubernetes: {track: 1.34-classic}\n"
    with pytest.raises(stackfile.StackFileError):
        stackfile.with_track(text, "1.35-classic")


def test_write_atomic_replaces_the_file_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text("old\n")
    path.chmod(0o640)
    stackfile.write_atomic(path, "new\n")
    assert path.read_text() == "new\n"
    assert path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["Pulumi.x.yaml"]


def test_an_interrupted_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text("old\n")

    def interrupted(_fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)  # components/runtime/atomic.py does the write
    with pytest.raises(KeyboardInterrupt):
        stackfile.write_atomic(path, "new\n")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["Pulumi.x.yaml"]

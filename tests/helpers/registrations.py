"""Watch what a program registers with the mock engine (for "bad input registers nothing" tests)."""

from __future__ import annotations

import pytest

from components.plan.mockengine import RecordingMonitor


def watch_registrations(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every RegisterResource request from now on (the stack itself included), in order."""
    recorded: list[object] = []
    original = RecordingMonitor.RegisterResource

    def spy(self: RecordingMonitor, request: object) -> object:
        recorded.append(request)
        return original(self, request)

    monkeypatch.setattr(RecordingMonitor, "RegisterResource", spy)
    return recorded


def resources_only(recorded: list[object]) -> list[object]:
    return [r for r in recorded if getattr(r, "type", "") != "pulumi:pulumi:Stack"]

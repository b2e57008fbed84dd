"""Failures read cleanly: a PlainError loses its Python stack in Pulumi's provider host only, and
the engine-shutdown line is dropped (components/runtime/plain_errors.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import traceback

import pytest

from components import PROJECT_DIR
from components.runtime.plain_errors import (
    MONITOR_GONE,
    PlainError,
    install_in_provider_host,
    plain_format_exc,
    quiet_engine_shutdown,
)


def formatted(exc: Exception) -> str:
    fmt = plain_format_exc(traceback.format_exc)
    try:
        raise exc
    except Exception:
        return str(fmt())


def test_a_plain_error_is_its_message_and_a_bug_keeps_its_stack() -> None:
    assert formatted(PlainError("GPU smoke test failed: table")) == "GPU smoke test failed: table"
    bug = formatted(KeyError("runId"))
    assert bug.startswith("Traceback (most recent call last):") and "KeyError: 'runId'" in bug


def test_nothing_is_patched_outside_the_provider_host() -> None:
    before = traceback.format_exc
    install_in_provider_host()
    assert traceback.format_exc is before


def test_in_the_provider_host_the_smoke_failure_has_no_stack() -> None:
    """Run as Pulumi's host runs (`python -m pulumi.dynamic`'s module name): loading our provider
    module installs the hook, and the host's own wrapper then sends the message alone."""
    script = textwrap.dedent("""
        import sys, types, traceback
        sys.modules["__main__"].__spec__ = types.SimpleNamespace(name="pulumi.dynamic.__main__")
        from components.smoke.provider import SmokeTestFailed
        try:
            raise SmokeTestFailed("GPU smoke test failed: resource-slices")
        except Exception:
            print(traceback.format_exc())
        try:
            raise RuntimeError("a bug")
        except Exception:
            print(traceback.format_exc())
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_DIR, capture_output=True, text=True,
                         check=True, timeout=120).stdout
    first, second = out.split("\n", 1)
    assert first == "GPU smoke test failed: resource-slices"
    assert "Traceback" in second and "RuntimeError: a bug" in second


def test_only_the_engine_shutdown_line_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    import pulumi

    sent: list[str] = []
    monkeypatch.setattr(pulumi.log, "error", lambda msg, *a, **k: sent.append(msg))
    quiet_engine_shutdown()
    quiet_engine_shutdown()  # idempotent: one wrapper
    pulumi.log.error("a real error")
    pulumi.log.error(MONITOR_GONE)
    pulumi.log.error(f"{MONITOR_GONE} and more")
    assert sent == ["a real error", f"{MONITOR_GONE} and more"]

"""Failures read cleanly under the real engine: the message, the failed hop and the next step.

Two places in Pulumi's Python SDK (the pin in pyproject.toml) wrap a readable failure in noise:

- The dynamic-provider host answers a failed create/update with `traceback.format_exc()`
  (pulumi/dynamic/__main__.py `_abort_with_traceback`), so a smoke test that fails as designed
  reads as a crash. In that process only, `format_exc` returns the message alone for a
  `PlainError`; any other exception (a bug) keeps its stack.
- When the engine stops an update, it shuts the resource monitor down while the program still
  has RPCs in flight: the program's exec wrapper logs "Resource monitor has terminated, shutting
  down" (pulumi-language-python-exec: `except pulumi.RunError: pulumi.log.error(str(e))`, the
  RunError from pulumi/runtime/settings.py `grpc_error_to_exception` on UNAVAILABLE). The engine
  has already reported the real error then; that one line is dropped. (asyncio's "Task was
  destroyed but it is pending!" lines are silenced by the host itself, upstream's and ours.)
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

MONITOR_GONE = "Resource monitor has terminated, shutting down"
_DYNAMIC_HOST = "pulumi.dynamic.__main__"


class PlainError(Exception):
    """An expected failure whose message says everything: shown without a Python stack."""


def plain_format_exc(original: Any) -> Any:
    def format_exc(limit: int | None = None, chain: bool = True) -> str:
        exc = sys.exc_info()[1]
        if isinstance(exc, PlainError):
            return str(exc)
        return str(original(limit, chain))

    format_exc.ck8s_plain = True  # type: ignore[attr-defined]
    return format_exc


def in_dynamic_provider_host() -> bool:
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) == _DYNAMIC_HOST


def install_in_provider_host() -> None:
    """Called when a dynamic provider module loads; a no-op outside Pulumi's provider host."""
    if in_dynamic_provider_host() and not getattr(traceback.format_exc, "ck8s_plain", False):
        traceback.format_exc = plain_format_exc(traceback.format_exc)


def quiet_engine_shutdown() -> None:
    """Called once by the program: drop the engine-shutdown line described above."""
    import pulumi

    original = pulumi.log.error
    if getattr(original, "ck8s_quiet", False):
        return

    def error(msg: str, *args: Any, **kwargs: Any) -> None:
        if msg == MONITOR_GONE:
            return
        original(msg, *args, **kwargs)

    error.ck8s_quiet = True  # type: ignore[attr-defined]
    pulumi.log.error = error

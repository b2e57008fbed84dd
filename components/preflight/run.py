"""Pre-flight of one stack against its region (the glue CLI commands call)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from ..settings.model import Settings
from .aws import AwsRegion, collect
from .checks import Finding, check

SessionFactory = Callable[[], Any]  # -> boto3.Session (tests: a session whose clients are stubbed)


def default_session(profile: str | None = None) -> SessionFactory:
    def make() -> Any:
        try:
            import boto3
        except ModuleNotFoundError:
            raise RuntimeError("boto3 is not installed: `pip install boto3` (pre-flight talks to AWS)") from None
        return boto3.Session(profile_name=profile)

    return make


def preflight(settings: Settings, session: SessionFactory,
              clock: Callable[[], datetime] | None = None) -> list[Finding]:
    """Findings for settings.region; an unexpected failure (no credentials, no network) is a
    `could-not-check` error, never a pass. `clock`: now, for reservation windows (tests fix it)."""
    if settings.platform != "aws" or settings.region is None:
        return [Finding("could-not-check", "error", "settings.platform",
                        f"pre-flight checks AWS regions; this stack's platform is {settings.platform}")]
    try:
        facts = collect(settings, AwsRegion(session(), settings.region, clock))
    except Exception as exc:  # credentials, endpoint, anything the boundary could not answer
        return [Finding("could-not-check", "error", settings.region, f"{type(exc).__name__}: {exc}")]
    return check(settings, facts)

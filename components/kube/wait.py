"""Polling until a condition holds: the one loop behind the readiness gates (ApiReady, WaitFor).

A probe returns an Observation per attempt; `poll` sleeps on a capped exponential backoff, never
past the deadline, and stops early when waiting cannot help. Clock and sleep are injectable, so
tests drive it without sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .errors import ApiFailure

# A credentials or TLS failure seen this many times in a row will not go away by waiting.
PERMANENT_AFTER = 3


@dataclass(frozen=True)
class Observation:
    """One poll attempt's verdict: `detail` says what was seen, for progress and timeout messages."""

    done: bool
    detail: str
    # True when waiting is unlikely to help (bad credentials, TLS mismatch, wrong scope).
    permanent: bool = False
    # True when waiting cannot help at all: stop at once.
    fatal: bool = False
    # What the probe measured, for its caller: WaitFor's field value, ApiReady's count of Ready nodes.
    value: str = ""

    @classmethod
    def failed(cls, failure: ApiFailure, prefix: str = "") -> Observation:
        """The verdict on a failed REST call, its detail after `prefix` (e.g. what was asked)."""
        return cls(False, prefix + failure.detail(), permanent=failure.permanent)


class WaitTimeout(Exception):
    """The awaited condition did not hold in time; `str()` is the whole user-facing message."""


def backoff_delays(first: float = 1.0, factor: float = 2.0, cap: float = 15.0) -> Iterator[float]:
    """Seconds to sleep between attempts: 1, 2, 4, 8, 15, 15, ... (bounded by the deadline in `poll`)."""
    delay = first
    while True:
        yield min(delay, cap)
        delay = min(delay * factor, cap)


def poll(
    probe: Callable[[], Observation],
    *,
    timeout_seconds: float,
    describe_timeout: Callable[[float, int, Observation], str],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    delays: Iterator[float] | None = None,
) -> tuple[Observation, int]:
    """Call `probe` until it reports done; returns (last observation, attempts).

    Raises WaitTimeout with `describe_timeout(elapsed, attempts, last)` when the deadline passes,
    when an observation is fatal, or when PERMANENT_AFTER permanent observations come in a row.
    The last attempt happens at the deadline, never after a sleep that overshoots it.
    """
    delays = delays if delays is not None else backoff_delays()
    start = clock()
    deadline = start + timeout_seconds
    attempts = 0
    permanent_streak = 0
    while True:
        attempts += 1
        obs = probe()
        if obs.done:
            return obs, attempts
        permanent_streak = permanent_streak + 1 if obs.permanent else 0
        remaining = deadline - clock()
        if obs.fatal or permanent_streak >= PERMANENT_AFTER or remaining <= 0:
            raise WaitTimeout(describe_timeout(clock() - start, attempts, obs))
        sleep(min(next(delays), remaining))

"""Durations as people read them (pure): the timeline, its warnings and its views all print these."""

from __future__ import annotations


def clock(seconds: float) -> str:
    """`1h02m03s`, `4m05s`, `7s`."""
    s = round(seconds)
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    if h:
        return f"{h}h{m:02d}m{sec:02d}s"
    return f"{m}m{sec:02d}s" if m else f"{sec}s"


def span(low: float, high: float) -> str:
    return clock(low) if low == high else f"{clock(low)}-{clock(high)}"

"""Generated sections of docs/benchmarks.md: each benchmark script owns the text between its markers."""

from __future__ import annotations

from pathlib import Path


def write_marked_section(path: Path, start: str, end: str, section: str, heading: str) -> None:
    """Replace the text from `start` through `end` with `section` (which carries both markers), or
    append it under `## heading` when the file has no such section yet."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    if start in text and end in text.split(start, 1)[1]:
        head, rest = text.split(start, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + f"\n\n## {heading}\n\n" + section + "\n"
    path.write_text(text)

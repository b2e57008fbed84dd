"""Files the CLI writes appear whole or not at all: temp file in the same directory, fsync, rename.

A Ctrl-C or a crash mid-write leaves the previous file (or none), never a truncated one; a
0-byte stack file would lose its encryption salt on the next `ck8s-gpu stamp` (issue 14).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_text_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` atomically (POSIX rename), keeping an existing file's mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

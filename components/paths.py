"""Where the project's files are: the checkout (or installed tree) holding `__main__.py`, `charts/`
and `stacks/`. A leaf (standard library only) so that every layer can locate files without
importing the package face (`components/__init__.py`), which lazily re-exports the public API."""

from __future__ import annotations

from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent

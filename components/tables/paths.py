"""Where the project's files are: the checkout (or installed tree) holding `__main__.py`, `charts/`
and `stacks/`, and the package itself. A leaf (standard library only) so that every layer can
locate files without importing the package face (`components/__init__.py`), which lazily
re-exports the public API."""

from __future__ import annotations

from pathlib import Path

# components/ (ck8s_gpu/ installed). Not resolved: a virtualenv reached through a symlink keeps its
# path, so a release's chart input stays relative to the project that holds it.
PACKAGE_DIR = Path(__file__).parent.parent
PROJECT_DIR = Path(__file__).resolve().parent.parent.parent

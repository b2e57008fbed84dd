"""ck8s-gpu: Pulumi components for GPU Kubernetes on Canonical Kubernetes.

Installed, this package is `ck8s_gpu` (in this checkout it is `components`: ADR 0044). Programs
import the typed components from the top: `from ck8s_gpu import GpuAddons, GpuAddonsArgs, GpuPool`
(docs/components.md). They load on first use, so the CLI and the settings stay free of Pulumi's
resource machinery until a component is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

# Re-exported for programs and tests that locate the checkout from the package; the package's own
# modules import it from the leaf `paths` (never from this face, which loads the API).
from .tables.paths import PROJECT_DIR

_API = ("GpuAddons", "GpuAddonsArgs", "GpuCluster", "GpuClusterArgs", "GpuPool", "SmokeTestArgs")
__all__ = ["PROJECT_DIR", "GpuAddons", "GpuAddonsArgs", "GpuCluster", "GpuClusterArgs", "GpuPool", "SmokeTestArgs"]

if TYPE_CHECKING:
    from .api import GpuAddons, GpuAddonsArgs, GpuCluster, GpuClusterArgs, GpuPool, SmokeTestArgs


def __getattr__(name: str) -> Any:
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

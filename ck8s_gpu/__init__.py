"""ck8s-gpu's components for other Pulumi programs: `import ck8s_gpu` (docs/components.md).

The implementation lives in the `components` package this wheel also installs; this name is the
stable one to import from.
"""

from components.api import (
    GpuAddons,
    GpuAddonsArgs,
    GpuCluster,
    GpuClusterArgs,
    GpuPool,
    SmokeTestArgs,
)

__all__ = ["GpuAddons", "GpuAddonsArgs", "GpuCluster", "GpuClusterArgs", "GpuPool", "SmokeTestArgs"]

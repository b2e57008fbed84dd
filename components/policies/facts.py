"""What policies need to know about the stack beyond one resource: its settings, condensed.

Offline (the plan) the facts come from the validated settings the plan ran with. In the real
policy pack they come from the stack's own config: the engine hands every policy pack process the
stack config as `PULUMI_CONFIG` (pulumi sdk/go/common/resource/plugin/analyzer_plugin.go,
`constructEnv`), so `ck8s-gpu:settings` is readable there without any extra configuration.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from ..settings.load import SETTINGS_KEY, SettingsError
from ..settings.model import Settings

API_PORT = 6443  # Canonical Kubernetes' kube-apiserver port, the only port an allow-list opens


@dataclass(frozen=True)
class StackFacts:
    environment: str
    platform: str
    api_allow_list: tuple[str, ...]
    control_plane_count: int
    spot_pools: tuple[str, ...]
    gpu_pools: tuple[str, ...]
    dra: bool  # GPUs are allocated through DRA (what the smoke test proves)
    smoke_enabled: bool
    smoke_namespace: str
    protect: bool
    retain_on_delete: bool
    backup_region: str | None
    # Chart mirrors the stack declares (gpuStack.addons.<x>.repository): allowed like the pins'.
    chart_mirrors: tuple[str, ...] = ()
    production: bool = False  # settings.production, or the environment name (Settings.is_production)
    offline: bool = False  # settings.offline (docs/adr/0043)
    mirror: str | None = None  # settings.images.mirror

    @property
    def prod(self) -> bool:
        return self.production

    @property
    def gpu_stack(self) -> bool:
        return bool(self.gpu_pools)

    @classmethod
    def from_settings(cls, s: Settings) -> StackFacts:
        return cls(
            environment=s.environment,
            platform=s.platform,
            api_allow_list=tuple(s.network.api_allow_list),
            control_plane_count=s.control_plane.count,
            spot_pools=tuple(p.name for p in s.node_pools if p.capacity_type == "spot"),
            gpu_pools=tuple(p.name for p in s.node_pools),
            dra=s.gpu_stack.allocation == "dra",
            smoke_enabled=bool(s.smoke_test.enabled),
            smoke_namespace=s.smoke_test.namespace,
            protect=s.protection.protect,
            retain_on_delete=s.protection.retain_on_delete,
            backup_region=s.backup.region if s.backup else None,
            chart_mirrors=tuple(sorted({a.repository for _, a in s.gpu_stack.addons.by_key()
                                        if a.repository is not None})),
            production=s.is_production,
            offline=s.offline,
            mirror=s.images.mirror,
        )


def facts_of(args: Any) -> StackFacts | None:
    """The facts attached by the offline adapter, else the running stack's config; None if neither."""
    attached = getattr(args, "facts", None)
    if isinstance(attached, StackFacts):
        return attached
    return facts_from_config_env()


def facts_from_config_env() -> StackFacts | None:
    import pulumi.runtime  # the policy pack process has it; imported late to keep this module light

    raw = pulumi.runtime.get_config_env().get(SETTINGS_KEY)
    return _facts_from_json(raw) if isinstance(raw, str) else None


@functools.lru_cache(maxsize=8)
def _facts_from_json(raw: str) -> StackFacts | None:
    try:
        from ..validate import parse  # the program's own gate: the same settings it ran with

        return StackFacts.from_settings(parse(json.loads(raw), "policy pack config"))
    except (json.JSONDecodeError, SettingsError):
        # The program refuses such a stack before registering anything; nothing to judge.
        return None

"""A pool's MIG layout as the GPU Operator's MIG manager applies it (pure; issue 43, docs/sharing.md).

Each MIG pool gets its own config, `ck8s-<pool>-<hash of the layout>`, in one ConfigMap the
operator's chart creates (values migManager.config: name, create, data["config.yaml"],
deployments/gpu-operator/values.yaml at v26.7.0); its nodes join with nvidia.com/mig.config=<that
name>. The hash is why a changed layout cannot reach a running node by surprise: the MIG manager
applies a config when the node's label changes, so under a constant name the node would keep its
old cut while the ConfigMap says another, until the manager restarted (an operator upgrade, a
reboot) and re-cut GPUs under running pods. With the layout in the name, a running node's label
names a config that is gone: its manager fails (nvidia.com/mig.config.state=failed) and touches
nothing; new nodes join with the new layout, and a drained node takes it when relabelled
(docs/sharing.md, "Changing a pool's layout"). A custom config replaces the one
mig-manager v0.15.0 would generate from the hardware, so the ConfigMap also carries all-disabled,
the config the operator gives MIG-capable nodes without the label. One config per pool needs no
device filter: a pool's nodes all have its instance type's GPU. Format: mig-parted's `version: v1`
with `mig-configs: {name: [{devices: all, mig-enabled, mig-devices}]}` (the chart's example).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..settings.facts import pool_gpus
from ..settings.model import NodePoolSettings, Settings
from ..tables.mig_profiles import named_layout

CONFIG_MAP = "ck8s-gpu-mig-parted-config"
DISABLED = "all-disabled"


def config_name(pool: NodePoolSettings) -> str:
    """`ck8s-<pool>-<8 hex of the layout>`, at most 63 characters (a label value)."""
    layout = json.dumps(pool_mig_devices(pool) or {}, sort_keys=True)
    return f"ck8s-{pool.name[:49].rstrip('-')}-{hashlib.sha256(layout.encode()).hexdigest()[:8]}"


def pool_mig_devices(pool: NodePoolSettings) -> dict[str, int] | None:
    """The instances on each GPU of the pool: profile -> count ({} for all-disabled); None without
    a layout, or where the settings' rules refuse it (components/settings/rules/mig.py)."""
    if pool.mig is None:
        return None
    if pool.mig.devices is not None:
        return dict(pool.mig.devices)
    facts = pool_gpus(pool)
    if facts is None or pool.mig.config is None:
        return None
    return named_layout(facts.product_name, pool.mig.config)


def mig_pools(settings: Settings) -> list[NodePoolSettings]:
    return [p for p in settings.node_pools if p.mig is not None]


def mig_parted_config(settings: Settings) -> dict[str, Any] | None:
    """mig-parted's configuration for every MIG pool of the stack; None when no pool has a layout."""
    pools = mig_pools(settings)
    if not pools:
        return None
    configs: dict[str, Any] = {DISABLED: [{"devices": "all", "mig-enabled": False}]}
    for pool in pools:
        devices = pool_mig_devices(pool) or {}
        entry: dict[str, Any] = {"devices": "all", "mig-enabled": bool(devices)}
        if devices:
            entry["mig-devices"] = dict(sorted(devices.items()))
        configs[config_name(pool)] = [entry]
    return {"version": "v1", "mig-configs": configs}

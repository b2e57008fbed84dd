"""Names and tags every AWS resource of a cluster derives from (pure).

Two tag families with different jobs:
- `ck8s-gpu/*` tags identify what this project made; nodes find their control planes by them
  (`ck8s-gpu/cluster` + `ck8s-gpu/role`), so they are part of the join contract.
- `kubernetes.io/cluster/<name>=owned` is the AWS cloud controller manager's ownership tag. It goes
  on instances, subnets and exactly ONE security group per instance (the CCM refuses to work when
  an instance has several tagged groups), so it is never a provider default tag.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from ..settings.model import Settings
from ..tables.labels import CLUSTER_TAG, POOL_TAG, ROLE_TAG

Role = Literal["control-plane", "worker"]


def ownership_tag(cluster_name: str) -> dict[str, str]:
    return {f"kubernetes.io/cluster/{cluster_name}": "owned"}


def default_tags(settings: Settings) -> dict[str, str]:
    """Provider default tags: the stack's tags plus the cluster id (never the CCM ownership tag)."""
    return {**settings.tags, CLUSTER_TAG: settings.cluster_name}


def node_tags(settings: Settings, role: Role, name: str, pool: str | None = None) -> dict[str, str]:
    """Tags of a node instance and its volumes. Launch templates need them spelled out: provider
    default tags do not reach instances an Auto Scaling group launches."""
    tags = {
        **default_tags(settings),
        **ownership_tag(settings.cluster_name),
        "Name": name,
        ROLE_TAG: role,
    }
    if pool is not None:
        tags[POOL_TAG] = pool
    return tags


def named(name: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    return {"Name": name, **(extra or {})}

"""KAI Scheduler (kai-scheduler/KAI-Scheduler): gang scheduling, hierarchical queues, DRA-aware.

Values keys verified against kai-scheduler/KAI-Scheduler v0.17.0 (commit f218c69,
deployments/kai-scheduler/values.yaml, templates/kai-config.yaml, templates/default-queue.yaml).
"""

from __future__ import annotations

from typing import Any

from ..settings.model import Settings
from .base import Addon, AddonContext, Capability, version_tuple

NAMESPACE = "kai-scheduler"
SCHEDULER_NAME = "kai-scheduler"
QUEUE_LABEL = "kai.scheduler/queue"
# The queue KAI's podgrouper gives a workload without a queue label (KAI v0.17.0
# pkg/podgrouper/podgrouper/plugins/constants/constants.go DefaultQueueName, used by
# defaultgrouper/default_grouper.go CalcPodGroupQueue). Its chart would create it (values
# defaultQueue.createDefaultQueue), but we leave the tree to kai-queues: components/addons/kai_queues.py
# adds this leaf when settings.queues has none, so unlabelled pods are scheduled, not stuck Pending.
FALLBACK_QUEUE = "default-queue"
# From v0.17 the kai-config Config object can be a regular release object instead of the
# post-install hook's out-of-release apply.
INLINE_CONFIG_SINCE = (0, 17, 0)


def values(ctx: AddonContext) -> dict[str, Any]:
    out: dict[str, Any] = {
        # The queue tree is the kai-queues chart's (settings.queues); the chart's own default
        # queues are created once, kept forever and never updated: leave them out.
        "defaultQueue": {"createDefaultQueue": False},
        # GPU fractions are not supported for DRA-managed GPUs.
        "global": {"gpuSharing": False},
    }
    if version_tuple(ctx.version) >= INLINE_CONFIG_SINCE:
        # A tracked release object: drift shows in `helm get manifest`, uninstall removes it. On
        # older versions the post-install hook creates it (helm.v3.Release runs hooks).
        out["kaiConfig"] = {"render": True}
        out["kaiConfigDeployer"] = {"enabled": False}
    return out


def _provides(_settings: Settings) -> tuple[Capability, ...]:
    return ("kai-crds",)


ADDON = Addon(
    name="kai-scheduler",
    settings_key="kai_scheduler",
    description="KAI scheduler: gang scheduling, hierarchical GPU queues, DRA-aware quota",
    namespace=NAMESPACE,
    pod_security="baseline",
    values=values,
    chart_pin="kai-scheduler",
    provides=_provides,
    timeout_seconds=10 * 60,
)

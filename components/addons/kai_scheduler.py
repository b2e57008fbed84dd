"""KAI Scheduler (kai-scheduler/KAI-Scheduler): gang scheduling, hierarchical queues, DRA-aware.

Values keys verified against kai-scheduler/KAI-Scheduler v0.17.0 (commit f218c69,
deployments/kai-scheduler/values.yaml, templates/kai-config.yaml, templates/default-queue.yaml).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..kube.helm_values import renders_true
from ..settings.model import Settings
from ..tables import pins
from .base import Addon, AddonContext, Capability, version_tuple
from .image_refs import Entry, ImageRef, always, never

NAMESPACE = "kai-scheduler"
SCHEDULER_NAME = "kai-scheduler"
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


def _check(settings: Settings) -> tuple[str, ...]:
    """GPU fractions (global.gpuSharing) on a stack whose GPUs DRA publishes: KAI v0.17.0 refuses
    every fractional pod on a node with DRA GPUs (pkg/scheduler/api/node_info/node_info.go:317-319,
    PredicateByNodeResourcesType: "fractional/shared GPU pods are not yet supported on DRA-only
    nodes"), and with allocation dra every GPU node is one. The switch would start the binder's
    reservation pods and the GPU-sharing plugins for pods that can never be placed."""
    glob = settings.gpu_stack.addons.kai_scheduler.values.get("global")
    if (isinstance(glob, dict) and renders_true(glob.get("gpuSharing"))
            and settings.gpu_stack.allocation == "dra"):
        return ("gpuStack.addons.kaiScheduler.values.global.gpuSharing: KAI v0.17.0 refuses fractional GPU pods on "
                "nodes whose GPUs DRA publishes (\"fractional/shared GPU pods are not yet supported on DRA-only "
                "nodes\", pkg/scheduler/api/node_info/node_info.go), and every GPU node of this stack is one "
                "(gpuStack.allocation dra): share through a pool's MIG layout (nodePools[].mig) or a shared claim "
                "with time-slicing or MPS (docs/sharing.md)",)
    return ()


def _provides(_settings: Settings) -> tuple[Capability, ...]:
    return ("kai-crds",)


# --- Images: KAI Scheduler v0.17.0 -------------------------------------------------------------------
# kai-scheduler/KAI-Scheduler tag v0.17.0 (commit f218c69). Every image is
# `<global.registry>/<component>.image.name:<tag>` (deployments/kai-scheduler/templates/
# _helpers.tpl, services/operator.yaml, hooks/*; the operator builds its operands the same way from
# MS_REPOSITORY/MS_TAG, pkg/apis/kai/v1/common/image.go Url). The released chart's global.registry
# is ghcr.io/kai-scheduler/kai-scheduler (.github/workflows/push-artifacts.yaml seds it in) and its
# appVersion the tag (`helm package --app-version $PACKAGE_VERSION`, = GITHUB_REF_NAME).
_KAI = "kai-scheduler/KAI-Scheduler v0.17.0 (f218c69) deployments/kai-scheduler/values.yaml"
_KAI_TAG = pins.CHARTS["kai-scheduler"].version
_KAI_REPO = "kai-scheduler/kai-scheduler"


def _kai(name: str, key: str, image: str, runs: Callable[[Settings], bool] = always) -> Entry:
    return Entry("kai-scheduler", name, ImageRef("ghcr.io", f"{_KAI_REPO}/{image}", _KAI_TAG, _KAI),
                 keys=("global.registry", f"{key}.name", f"{key}.tag", "global.tag"),
                 mirror=(("global.registry", _KAI_REPO),), runs=runs)


IMAGES: tuple[Entry, ...] = (
    _kai("operator", "operator.image", "operator"),
    _kai("podgrouper", "podgrouper.image", "podgrouper"),
    _kai("podgroupcontroller", "podgroupcontroller.image", "podgroupcontroller"),
    _kai("binder", "binder.image", "binder"),
    # The binder's GPU reservation pods (binder.resourceReservationImage; name `resourcereservation`
    # as the Makefile SERVICE_NAMES builds it).
    _kai("resource-reservation", "binder.resourceReservationImage", "resourcereservation"),
    _kai("scheduler", "scheduler.image", "scheduler"),
    _kai("queuecontroller", "queuecontroller.image", "queuecontroller"),
    _kai("admission", "admission.image", "admission"),
    # The CRD upgrade pre-hook, the topology-migration pre-hook and the post-delete cleanup
    # (crdupgrader, topologyMigration, postCleanup; kaiConfigDeployer is off in our values).
    _kai("crd-upgrader", "crdupgrader.image", "crd-upgrader"),
    # Enabled `auto` (pkg/apis/kai/v1/numa_placement_exporter: nil = auto) on nodes NFD labels
    # feature.node.kubernetes.io/memory-numa=true: multi-socket GPU instances.
    _kai("numa-placement-exporter", "numaPlacementExporter.image", "numa-placement-exporter"),
    # Only with global.clusterAutoscaling (false): named in the kai-config Config object.
    _kai("nodescaleadjuster", "nodescaleadjuster.image", "nodescaleadjuster", runs=never),
    _kai("scalingpod", "nodescaleadjuster.scalingPodImage", "scalingpod", runs=never),
)


ADDON = Addon(
    name="kai-scheduler",
    settings_key="kai_scheduler",
    description="KAI scheduler: gang scheduling, hierarchical GPU queues, DRA-aware quota",
    namespace=NAMESPACE,
    platform_defaults={"aws": "on", "existing": "on", "kind": "on", "local": "off"},
    pod_security="baseline",
    values=values,
    chart_pin="kai-scheduler",
    images=IMAGES,
    provides=_provides,
    check=_check,
    timeout_seconds=10 * 60,
)

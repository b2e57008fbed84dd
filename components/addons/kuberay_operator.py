"""KubeRay's operator, the AI operator of the stack (ADR 0050, docs/ai-operator.md): RayCluster,
RayJob and RayService custom resources for distributed training, batch inference and serving.

Chart `kuberay-operator` 1.5.2 (https://ray-project.github.io/kuberay-helm/). Values keys read from
ray-project/kuberay v1.5.2 helm-chart/kuberay-operator (values.yaml, templates/deployment.yaml); the
operator's behaviour from ray-operator v1.5.2, the module CI builds and runs
(tests/integration/test_kuberay_local.py):

- `batchScheduler` stays off, KAI or not: the operator's KAI plugin (`--batch-scheduler=kai-scheduler`)
  refuses every RayJob at v1.5.2 (controllers/ray/batchscheduler/kai-scheduler/kai_scheduler.go
  DoBatchSchedulingOnSubmission: "currently only RayCluster is supported"; rayjob_controller.go
  requeues on it before creating the cluster), so RayJobs would never start. Pod templates name
  KAI and their queue themselves (examples/ray-gpu-cluster.yaml); KAI's pod grouper gangs them
  either way. ADR 0050 weighs it.
- `configuration.enabled` stays false: with `--config` the manager ignores every other flag
  (main.go), `--enable-metrics` included.
- GPUs: nothing here. Worker pod templates carry their ResourceClaims and the operator copies them
  as they are (controllers/ray/common/pod.go); examples/ray-gpu-cluster.yaml shows the shape.
- Webhooks: the chart has none at 1.5.2 (no webhook template, no value to mount a certificate), so
  the operator's RayCluster validator does not run in the cluster. Its rules do: the
  kuberay-admission add-on (components/addons/kuberay_admission.py) restates them as a
  ValidatingAdmissionPolicy, which needs no server. ADR 0050.
"""

from __future__ import annotations

from typing import Any

from ..kube.helm_values import helm_truthy
from ..settings.model import Settings
from ..tables import pins
from .base import Addon, AddonContext
from .image_refs import Entry, ImageRef, split_repository

NAME = "kuberay-operator"
NAMESPACE = "kuberay"


def values(ctx: AddonContext) -> dict[str, Any]:
    return {
        "image": {"repository": _REPOSITORY, "tag": _TAG},
        # Explicitly the chart's defaults (see above): no batch-scheduler plugin.
        "batchScheduler": {"enabled": False, "name": ""},
        # Off-GPU: the operator is CPU-only; tolerate the system-add-on taint like the others.
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
        "metrics": {"enabled": True, "serviceMonitor": {"enabled": "monitoring-crds" in ctx.capabilities}},
    }


def _check(settings: Settings) -> tuple[str, ...]:
    config = settings.gpu_stack.addons.kuberay_operator.values.get("configuration")
    if isinstance(config, dict) and helm_truthy(config.get("enabled")):
        # templates/deployment.yaml renders `--config` and the flags; main.go then ignores the flags.
        return ("gpuStack.addons.kuberayOperator.values.configuration.enabled: with a config file the operator "
                "ignores every command-line flag (ray-operator v1.5.2 main.go), so --enable-metrics, --qps, "
                "--watch-namespace and the chart's other settings would silently drop; leave it off and set "
                "those values instead",)
    return ()


# --- Images: kuberay-operator 1.5.2 -----------------------------------------------------------
# templates/deployment.yaml: `<image.repository>:<image.tag>`; the chart's own tag is v1.5.2.
_REPOSITORY = "quay.io/kuberay/operator"
_TAG = "v" + pins.CHARTS[NAME].version
_REGISTRY, _REPO = split_repository(_REPOSITORY)
IMAGES: tuple[Entry, ...] = (
    Entry(NAME, "operator",
          ImageRef(_REGISTRY, _REPO, _TAG, "ray-project/kuberay v1.5.2 helm-chart/kuberay-operator/values.yaml image"),
          keys=("image.repository", "image.tag"), mirror=(("image.repository", _REPO),)),
)

ADDON = Addon(
    name=NAME,
    settings_key="kuberay_operator",
    description="KubeRay operator: RayCluster/RayJob/RayService; GPU workers by DRA claims, scheduled by KAI",
    namespace=NAMESPACE,
    # Opt-in: stacks for ML work switch it on (aws-elastic does).
    platform_defaults={"aws": "off", "existing": "off", "kind": "off", "local": "off"},
    # values.yaml securityContext: non-root, no privilege escalation, all capabilities dropped,
    # RuntimeDefault seccomp: what `restricted` asks.
    pod_security="restricted",
    values=values,
    chart_pin=NAME,
    images=IMAGES,
    # Its ServiceMonitor (values metrics.serviceMonitor.enabled) needs the CRD first.
    after_crds_of=("monitoring-crds",),
    timeout_seconds=5 * 60,
    # Not on the smoke test's path: a Ray operator does not gate a GPU pod.
    on_gpu_path=False,
    check=_check,
)

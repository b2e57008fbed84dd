"""KubeRay's RayCluster admission rules in the cluster, without a webhook server (chart
`charts/kuberay-admission`, ADR 0050): a ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1,
GA since Kubernetes 1.30) with the rules of the operator's validating webhook.

The 1.5.2 chart cannot serve that webhook (no template, no certificate mount: components/addons/
kuberay_operator.py), and one of its rules runs nowhere else: the controller's own reconcile-time
checks (controllers/ray/utils/validation.go ValidateRayClusterSpec) never compare group names.
So the rules are restated here, each from its file in ray-operator v1.5.2:

- pkg/webhooks/v1/raycluster_webhook.go validateWorkerGroups: worker group names unique;
- controllers/ray/utils/validation.go ValidateRayClusterMetadata: the name at most
  MaxRayClusterNameLength (53, utils/constant.go) characters and a DNS-1035 label.

The webhook's match is kept: RayCluster, CREATE and UPDATE, ray.io/v1 (a v1alpha1 request is
converted and judged too: matchPolicy Equivalent, the default). tests/integration/
test_kuberay_local.py judges the same objects by the operator's real webhook and by this policy on a
real API server.
"""

from __future__ import annotations

from typing import Any

from ..settings.model import Settings
from .base import Addon, AddonContext, Default
from .kuberay_operator import NAME as OPERATOR
from .kuberay_operator import NAMESPACE

NAME = "kuberay-admission"
POLICY = "kuberay-raycluster"
MAX_NAME = 53  # ray-operator v1.5.2 controllers/ray/utils/constant.go MaxRayClusterNameLength
DNS_1035 = "^[a-z]([-a-z0-9]*[a-z0-9])?$"  # k8s.io/apimachinery validation.IsDNS1035Label

# (CEL expression, message): the message says what the operator's own check says.
RULES: tuple[tuple[str, str], ...] = (
    ("!has(object.spec.workerGroupSpecs) || object.spec.workerGroupSpecs.all(g, "
     "object.spec.workerGroupSpecs.exists_one(h, h.groupName == g.groupName))",
     "spec.workerGroupSpecs: worker group names must be unique"),
    (f"object.metadata.name.size() <= {MAX_NAME}",
     f"metadata.name: RayCluster name should be no more than {MAX_NAME} characters"),
    (f"object.metadata.name.matches('{DNS_1035}')",
     "metadata.name: RayCluster name should be a valid DNS1035 label (lower case letters, digits and '-', "
     "starting with a letter)"),
)


def policy_objects() -> list[dict[str, Any]]:
    """The policy and its binding (cluster-scoped both)."""
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["ray.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                "resources": ["rayclusters"]}]},
            "validations": [{"expression": e, "message": m, "reason": "Invalid"} for e, m in RULES],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": POLICY},
        "spec": {"policyName": POLICY, "validationActions": ["Deny"]},
    }
    return [policy, binding]


def values(_ctx: AddonContext) -> dict[str, Any]:
    return {"objects": policy_objects()}


def _default(settings: Settings) -> Default:
    """on with the kuberay-operator add-on"""
    return "on" if settings.gpu_stack.addons.kuberay_operator.enabled else "off"


ADDON = Addon(
    name=NAME,
    settings_key="kuberay_admission",
    description="KubeRay's RayCluster admission rules as a ValidatingAdmissionPolicy (this repository's chart)",
    namespace=NAMESPACE,  # cluster-scoped objects; the release lives next to the operator
    platform_defaults={p: _default for p in ("aws", "existing", "kind", "local")},
    pod_security="restricted",  # the operator's namespace (no pod of its own)
    values=values,
    local_chart=NAME,
    depends_on=(OPERATOR,),
    timeout_seconds=2 * 60,
    on_gpu_path=False,
)

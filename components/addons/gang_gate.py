"""The gang gate (chart `charts/gang-gate`, ADR 0058): a KAI gang on autoscaled pools gets all of
its nodes or none.

Karpenter v1.15 knows no PodGroup. It provisions for each pod whose PodScheduled condition is
False with reason Unschedulable (sigs.k8s.io/karpenter v1.15.0 pkg/utils/pod/scheduling.go
IsProvisionable, FailedToSchedule), so a gang whose pods need more nodes than a pool can still add
gets part of them, and those nodes idle until the pool's scaleDownAfter. Pods created with the
scheduling gate GANG_GATE are SchedulingGated, not Unschedulable: neither Karpenter nor KAI
(KAI-Scheduler pkg/scheduler/api/pod_info/pod_info.go, gated pods are not ready to schedule) acts on
them. The controller `ck8s-gang-gate` (tools/mod/ganggate, this project's own) judges each gang
(KAI's PodGroup, minMember) against the pools: free GPUs on their nodes, and the nodes each
NodePool may still add (spec.limits.nodes less its NodeClaims), holding back the demand of pods
already released and not yet bound. When the whole gang fits it removes the gate from every pod
of the gang at once; when not, none, and a Warning event on each pod names the pool, what the gang
needs and what the pool can add.

What it needs from the workload: the gate in the pod template (`schedulingGates: [{name:
ck8s-gpu.io/gang}]`): a gate can only be set when a pod is created, and KAI's podgrouper names the
pod's PodGroup only after that (pkg/podgrouper/pod_controller.go). Pods without it are not judged.

Its role may update any pod (no narrower verb removes a gate), so a ValidatingAdmissionPolicy binds
its service account to removing GANG_GATE and nothing else (pod_update_policy).

This project publishes no image: the site builds one carrying the binary (tools/probe_image.py
--gang-gate), pushes it, and names it by digest (`image`). Off unless enabled.
"""

from __future__ import annotations

from typing import Any

from ..settings.model import Settings
from ..tables.instance_types import gpu_facts
from ..tables.labels import GANG_GATE, POD_GROUP_ANNOTATION
from .base import Addon, AddonContext
from .karpenter import CONTROL_PLANE_LABEL, CONTROL_PLANE_TAINT, NAMESPACE, autoscaled

NAME = "gang-gate"
BINARY = "/usr/bin/ck8s-gang-gate"  # tools/probe_image.py GANG_GATE
DEVICE_CLASS = "gpu.nvidia.com"  # NVIDIA's DRA driver's DeviceClass and driver name (dra_driver.py)
INTERVAL = "2s"
# A gang is judged once its newest pod is this old, so pods created one by one are judged together.
SETTLE = "3s"


def pools(settings: Settings) -> list[tuple[str, int]]:
    """(NodePool name, GPUs on each of its nodes) of every autoscaled pool (its instance type's)."""
    out = []
    for p in settings.node_pools:
        facts = gpu_facts(p.instance_type)
        if p.autoscaling is not None and facts is not None:
            out.append((p.name, facts.count))  # NodePool name = pool name (facts/autoscaling.py)
    return out


def args(settings: Settings) -> list[str]:
    return [f"--pool={name}={gpus}" for name, gpus in pools(settings)] + [
        f"--gate={GANG_GATE}", f"--device-class={DEVICE_CLASS}", f"--driver={DEVICE_CLASS}",
        f"--pod-group-annotation={POD_GROUP_ANNOTATION}", f"--interval={INTERVAL}", f"--settle={SETTLE}"]


# What the controller reads and writes, and nothing else: it updates pods (to remove its gate;
# the API allows removing a gate, never adding one) and records events.
RULES: tuple[dict[str, Any], ...] = (
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "update"]},
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims", "resourceclaimtemplates", "resourceslices"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["karpenter.sh"], "resources": ["nodepools", "nodeclaims"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["scheduling.run.ai"], "resources": ["podgroups"], "verbs": ["get", "list", "watch"]},
)


# The role's `update` on pods reaches every mutable field of every pod in the cluster: a container's
# image (the API allows changing it), labels, annotations, tolerations. The controller only ever
# removes its own gate. This policy holds its service account to exactly that, on a real API server
# (admissionregistration.k8s.io/v1, GA since 1.30), so a stolen token of it cannot swap a privileged
# pod's image or move a pod between Services. Each field the API lets an update change
# (k8s.io/kubernetes pkg/apis/core/validation ValidatePodUpdate: images, activeDeadlineSeconds,
# tolerations, schedulingGates; metadata) must stay as it was, and the gates left must be the old
# ones less GANG_GATE.
POD_UPDATE_POLICY = "ck8s-gang-gate-pod-updates"
SERVICE_ACCOUNT_USER = f"system:serviceaccount:{NAMESPACE}:{NAME}"
_UNCHANGED = ("spec.containers", "spec.initContainers", "spec.tolerations", "spec.activeDeadlineSeconds",
              "metadata.labels", "metadata.annotations", "metadata.ownerReferences", "metadata.finalizers")


def _unchanged(field: str) -> str:
    """CEL: `field` is present in both or neither, and equal where present."""
    parent, _, leaf = field.rpartition(".")
    new, old = f"object.{parent}", f"oldObject.{parent}"
    return (f"has({new}.{leaf}) == has({old}.{leaf}) && (!has({new}.{leaf}) || "
            f"{new}.{leaf} == {old}.{leaf})")


def pod_update_policy() -> list[dict[str, Any]]:
    """The ValidatingAdmissionPolicy and its binding that hold the controller's pod updates to
    removing GANG_GATE."""
    gates_left = (f"has(oldObject.spec.schedulingGates) && (has(object.spec.schedulingGates) ? "
                  f"object.spec.schedulingGates == oldObject.spec.schedulingGates.filter(g, g.name != '{GANG_GATE}') "
                  f": oldObject.spec.schedulingGates.all(g, g.name == '{GANG_GATE}'))")
    validations = [{"expression": _unchanged(f), "reason": "Forbidden",
                    "message": f"the gang gate may only remove its scheduling gate ({GANG_GATE}): {f} changed"}
                   for f in _UNCHANGED]
    validations.append({"expression": gates_left, "reason": "Forbidden",
                        "message": f"the gang gate may only remove its scheduling gate ({GANG_GATE}), nothing else"})
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POD_UPDATE_POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                    "operations": ["UPDATE"], "resources": ["pods"]}]},
            "matchConditions": [{"name": "the-gang-gate",
                                 "expression": f"request.userInfo.username == '{SERVICE_ACCOUNT_USER}'"}],
            "validations": validations,
        },
    }
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": POD_UPDATE_POLICY},
               "spec": {"policyName": POD_UPDATE_POLICY, "validationActions": ["Deny"]}}
    return [policy, binding]


def objects(settings: Settings) -> list[dict[str, Any]]:
    image = settings.gpu_stack.addons.gang_gate.image
    labels = {"app.kubernetes.io/name": NAME}
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": NAME, "namespace": NAMESPACE}}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": NAME},
            "rules": [dict(r) for r in RULES]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": NAME},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
               "subjects": [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": {
            # One judge: two would each count the same free capacity. Recreate: never two at once.
            "replicas": 1, "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": NAME,
                    # Beside Karpenter, on the control planes: never waits for the capacity it judges.
                    "nodeSelector": {CONTROL_PLANE_LABEL: ""},
                    "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, CONTROL_PLANE_TAINT],
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532,
                                        "seccompProfile": {"type": "RuntimeDefault"}},
                    "containers": [{
                        "name": NAME, "image": image, "command": [BINARY], "args": args(settings),
                        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                            "capabilities": {"drop": ["ALL"]}},
                        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
                    }],
                },
            },
        },
    }
    return [*pod_update_policy(), account, role, binding, deployment]


def values(ctx: AddonContext) -> dict[str, Any]:
    return {"objects": objects(ctx.settings)}


def _check(settings: Settings) -> tuple[str, ...]:
    out = []
    if settings.platform != "aws":
        out.append(f"gpuStack.addons.gangGate: runs only on platform aws (this stack is {settings.platform}): it "
                   "judges Karpenter's NodePools, which only aws stacks have")
    elif not autoscaled(settings):
        out.append("gpuStack.addons.gangGate: no node pool is autoscaled (nodePools[].autoscaling): there is no "
                   "NodePool to judge")
    if settings.gpu_stack.addons.gang_gate.image is None:
        out.append("gpuStack.addons.gangGate.image: required: this project publishes no image; build one carrying "
                   "the controller (python tools/probe_image.py --gang-gate <ck8s-gang-gate>), push it and name it "
                   "by digest")
    return tuple(out)


ADDON = Addon(
    name=NAME,
    settings_key="gang_gate",
    description="keeps a KAI gang's pods gated until the autoscaled pools can hold the whole gang (this "
                "repository's chart and controller)",
    namespace=NAMESPACE,  # beside Karpenter, whose NodePools it reads
    platform_defaults={"aws": "off", "existing": "off", "kind": "off", "local": "off"},
    pod_security="privileged",  # Karpenter's namespace; its own pod is restricted
    values=values,
    local_chart=NAME,
    depends_on=("karpenter-nodepools",),
    check=_check,
    timeout_seconds=3 * 60,
)

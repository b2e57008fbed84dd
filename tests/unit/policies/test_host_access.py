"""`workload-host-access` (issue 45, "privileged workloads"): a pod that reaches into its node is
refused wherever it sits and whatever waives it elsewhere (a privileged or system namespace, an
image pinned by digest), in every spelling the API server accepts for each Pod Security `baseline`
breach; what baseline admits passes. Only an add-on named for the object is a waiver."""

from __future__ import annotations

from itertools import product
from typing import Any

import pytest

from components.policies import host_access
from components.policies.host_access import WORKLOAD_HOST_ACCESS, breaches
from tests.unit.policies.helpers import res, stack_violations

DIGEST = "sha256:" + "a" * 64
APP = {"name": "app", "image": f"registry.example.com/app@{DIGEST}"}

# (pod spec changes, container changes): each row one breach of baseline, in a spelling of its own.
CAUGHT: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "privileged": ({}, {"securityContext": {"privileged": True}}),
    "privileged as a string": ({}, {"securityContext": {"privileged": "True"}}),
    "hostNetwork": ({"hostNetwork": True}, {}),
    "hostPID": ({"hostPID": True}, {}),
    "hostIPC": ({"hostIPC": "true"}, {}),
    "hostPath": ({"volumes": [{"name": "dev", "hostPath": {"path": "/dev"}}]}, {}),
    "hostPath, empty": ({"volumes": [{"name": "root", "hostPath": {}}]}, {}),
    "capability": ({}, {"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}),
    "capability, CAP_ and lower case": ({}, {"securityContext": {"capabilities": {"add": ["cap_net_admin"]}}}),
    "capability NET_RAW (not in baseline)": ({}, {"securityContext": {"capabilities": {"add": ["NET_RAW"]}}}),
    "capability ALL": ({}, {"securityContext": {"capabilities": {"add": ["ALL"]}}}),
    "hostPort": ({}, {"ports": [{"containerPort": 80, "hostPort": 8080}]}),
    "procMount": ({}, {"securityContext": {"procMount": "Unmasked"}}),
    "seccomp on the pod": ({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}, {}),
    "seccomp on the container": ({}, {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
    "AppArmor": ({}, {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}),
    "SELinux type": ({"securityContext": {"seLinuxOptions": {"type": "spc_t"}}}, {}),
    "SELinux user": ({}, {"securityContext": {"seLinuxOptions": {"user": "system_u"}}}),
}
PASS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "nothing": ({}, {}),
    "false flags": ({"hostNetwork": False, "hostPID": "false"}, {"securityContext": {"privileged": False}}),
    "baseline capabilities, drop ALL": ({}, {"securityContext": {"capabilities": {"add": ["CHOWN", "NET_BIND_SERVICE"],
                                                                                  "drop": ["ALL"]}}}),
    "emptyDir and a projected token": ({"volumes": [{"name": "t", "emptyDir": {}},
                                                    {"name": "s", "projected": {"sources": []}}]}, {}),
    "a container port": ({}, {"ports": [{"containerPort": 8080}]}),
    "defaults spelled out": ({"securityContext": {"seccompProfile": {"type": "RuntimeDefault"},
                                                  "seLinuxOptions": {"type": "container_t", "level": "s0:c1,c2"}}},
                             {"securityContext": {"procMount": "Default", "runAsNonRoot": True,
                                                  "allowPrivilegeEscalation": False}}),
}


def spec(pod: dict[str, Any], c: dict[str, Any], where: str) -> dict[str, Any]:
    return {**pod, "containers": [APP], where: [{"name": "x", "image": f"registry.example.com/x@{DIGEST}", **c}]}


def place(kind: str, pod_spec: dict[str, Any], namespace: str) -> list[Any]:
    meta = {"name": "w", "namespace": namespace}
    template = {"metadata": {"labels": {"a": "b"}}, "spec": pod_spec}
    if kind == "Pod":
        return [res("kubernetes:core/v1:Pod", {"metadata": meta, "spec": pod_spec}, name="w")]
    if kind == "CronJob":
        return [res("kubernetes:batch/v1:CronJob", {"metadata": meta, "spec": {
            "schedule": "@daily", "jobTemplate": {"spec": {"template": template}}}}, name="w")]
    if kind == "manifest":
        doc = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta,
               "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template}}
        return [res("kubernetes:yaml/v2:ConfigGroup", {"objs": [doc]}, name="objs")]
    return [res("kubernetes:apps/v1:DaemonSet", {"metadata": meta, "spec": {
        "selector": {"matchLabels": {"a": "b"}}, "template": template}}, name="w")]


# Where the pod sits: kind, container list, namespace (a system one, a privileged GPU one).
WHERE = [("DaemonSet", "containers", "gpu-operator"), ("Pod", "initContainers", "kube-system"),
         ("Pod", "ephemeralContainers", "apps"), ("CronJob", "containers", "default"),
         ("manifest", "containers", "nvidia-dra-driver-gpu")]


@pytest.mark.parametrize(("breach", "where"), list(product(CAUGHT, WHERE)))
def test_every_breach_is_refused_wherever_the_pod_sits(breach: str, where: tuple[str, str, str]) -> None:
    kind, lst, ns = where
    pod, c = CAUGHT[breach]
    found = stack_violations(WORKLOAD_HOST_ACCESS, place(kind, spec(pod, c, lst), ns))
    assert len(found) == 1 and "reaches into its node" in found[0][0], found


@pytest.mark.parametrize(("case", "where"), list(product(PASS, WHERE)))
def test_what_baseline_admits_passes(case: str, where: tuple[str, str, str]) -> None:
    kind, lst, ns = where
    pod, c = PASS[case]
    assert stack_violations(WORKLOAD_HOST_ACCESS, place(kind, spec(pod, c, lst), ns)) == []


def test_each_breach_is_named() -> None:
    found = breaches(spec({"hostPID": True, "volumes": [{"name": "dev", "hostPath": {"path": "/dev"}}]},
                          {"securityContext": {"capabilities": {"add": ["sys_admin"]}}}, "containers"))
    assert found == ["spec.hostPID", "hostPath volume dev (/dev)", "container x adds SYS_ADMIN"]


def test_only_an_add_on_named_for_the_object_waives_it(monkeypatch: pytest.MonkeyPatch) -> None:
    resources = place("DaemonSet", spec({"hostNetwork": True}, {}, "containers"), "gpu-operator")
    assert len(stack_violations(WORKLOAD_HOST_ACCESS, resources)) == 1
    monkeypatch.setitem(host_access.NEEDS_HOST_ACCESS, ("gpu-operator", "DaemonSet", "w"), "node agent")
    assert stack_violations(WORKLOAD_HOST_ACCESS, resources) == []


def test_objects_this_projects_charts_render_are_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    """A release of one of charts/ is rendered offline (namespaces.rendered_objects) and its pods
    judged like the program's own; the committed stacks' plans pass (tests/unit/policies/test_stacks.py)."""
    template = {"metadata": {"labels": {"a": "b"}}, "spec": spec({"hostPID": True}, {}, "containers")}
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "obs"},
          "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template}}
    monkeypatch.setattr(host_access, "rendered_objects", lambda props: [ds] if props.get("name") == "obs" else [])
    release = res("kubernetes:helm.sh/v3:Release", {"name": "obs", "chart": "charts/gpu-observability",
                                                    "namespace": "obs", "values": {}}, name="obs")
    found = stack_violations(WORKLOAD_HOST_ACCESS, [release])
    assert len(found) == 1 and "DaemonSet obs/agent reaches into its node (spec.hostPID)" in found[0][0], found

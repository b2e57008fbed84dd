"""`workload-host-access`: no pod the stack registers reaches into its node unless an add-on of this
stack that needs it is named for it, in any namespace and whatever its images.

Host access is what the Pod Security Standards' `baseline` level forbids (kubernetes.io/docs/
concepts/security/pod-security-standards, "Baseline"): privileged containers; host namespaces
(`hostNetwork`, `hostPID`, `hostIPC`); `hostPath` volumes; capabilities beyond the baseline set; host
ports; `procMount` other than Default; seccomp `Unconfined`; AppArmor `unconfined`; SELinux types
outside container_t/container_init_t/container_kvm_t and any SELinux user or role. Namespaces get
Pod Security labels (`gpu-namespace-pod-security`), but a label is a setting of the cluster: this
policy judges the pods themselves, so a privileged namespace, a pinned image or a system namespace
waives nothing.

Judged on every object the program registers with a pod template (typed resources, objects of
`helm.sh/v4` Charts, manifests) and on the objects this project's own charts render. Third-party
Helm releases are opaque here: their need is the chart table of components/policies/namespaces.py
(PRIVILEGED_CHARTS), judged by `gpu-namespace-pod-security`. Objects that do need host access are
named below with the add-on they belong to and why; none does today.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy

from .helm import HELM_TYPES
from .k8s_objects import CONTAINER_LISTS, K8sObject, objects, pod_spec
from .namespaces import rendered_objects
from .props import get, is_unknown, items

# Pod Security Standards, Baseline, "Capabilities": what a container may add.
BASELINE_CAPABILITIES = frozenset({"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                                   "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})
BASELINE_SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})
# (add-on, kind, name) -> why it needs host access: the only waiver.
NEEDS_HOST_ACCESS: dict[tuple[str, str, str], str] = {}


def _cap(name: Any) -> str:
    # The API server accepts capabilities with or without the CAP_ prefix, in any case.
    return str(name).upper().removeprefix("CAP_")


def _context_breaches(sc: Any, where: str) -> Iterator[str]:
    if not isinstance(sc, Mapping):
        return
    if _flag(sc.get("privileged")):
        yield f"{where} is privileged"
    added = [c for c in items(sc.get("capabilities") or {}, "add") if _cap(c) not in BASELINE_CAPABILITIES]
    if added:
        yield f"{where} adds {', '.join(sorted({_cap(c) for c in added}))}"
    proc = sc.get("procMount")
    if isinstance(proc, str) and proc not in ("", "Default"):
        yield f"{where} procMount {proc}"
    seccomp = get(sc, "seccompProfile.type")
    if isinstance(seccomp, str) and seccomp.lower() == "unconfined":
        yield f"{where} seccomp Unconfined"
    apparmor = get(sc, "appArmorProfile.type")
    if isinstance(apparmor, str) and apparmor.lower() == "unconfined":
        yield f"{where} AppArmor Unconfined"
    se = sc.get("seLinuxOptions")
    if isinstance(se, Mapping):
        if se.get("type") not in (None, *BASELINE_SELINUX_TYPES):
            yield f"{where} SELinux type {se.get('type')}"
        for key in ("user", "role"):
            if se.get(key):
                yield f"{where} SELinux {key} {se.get(key)}"


def _flag(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def breaches(spec: Mapping[str, Any]) -> list[str]:
    """What in one pod spec the `baseline` level forbids (empty: baseline admits it)."""
    out = [f"spec.{k}" for k in ("hostNetwork", "hostPID", "hostIPC") if _flag(spec.get(k))]
    out += [f"hostPath volume {v.get('name')} ({get(v, 'hostPath.path')})" for v in items(spec, "volumes")
            if isinstance(v, Mapping) and v.get("hostPath") is not None]
    out += list(_context_breaches(spec.get("securityContext"), "the pod"))
    for key in CONTAINER_LISTS:
        for c in items(spec, key):
            if not isinstance(c, Mapping):
                continue
            where = f"{key.removesuffix('s')} {c.get('name')}"
            out += list(_context_breaches(c.get("securityContext"), where))
            out += [f"{where} hostPort {p.get('hostPort')}" for p in items(c, "ports")
                    if isinstance(p, Mapping) and p.get("hostPort") not in (None, 0)
                    and not is_unknown(p.get("hostPort"))]
    return out


def host_access_problems(objs: Iterable[K8sObject]) -> list[tuple[str, str]]:
    """(urn, message) for each pod-carrying object with host access no add-on is named for."""
    out: list[tuple[str, str]] = []
    for o in objs:
        spec = pod_spec(o)
        if spec is None:
            continue
        found = breaches(spec)
        if not found:
            continue
        named = [why for (_, kind, name), why in NEEDS_HOST_ACCESS.items() if kind == o.kind and name == o.name]
        if named:
            continue
        out.append((o.urn, f"{o} reaches into its node ({'; '.join(found)}): no add-on of this stack is named for "
                           "it (components/policies/host_access.py NEEDS_HOST_ACCESS), and neither a privileged "
                           "namespace nor a pinned image waives that"))
    return out


def _own_chart_objects(resources: Iterable[Any]) -> list[K8sObject]:
    out: list[K8sObject] = []
    for r in resources:
        if r.resource_type in HELM_TYPES:
            for d in rendered_objects(r.props):
                if isinstance(d, Mapping) and isinstance(d.get("kind"), str):
                    out.append(K8sObject(str(d["kind"]), d, r.urn, in_chart=True))
    return out


def validate_host_access(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    resources = list(args.resources)
    objs, _ = objects(resources)
    for urn, message in host_access_problems([*objs, *_own_chart_objects(resources)]):
        report_violation(message, urn)


WORKLOAD_HOST_ACCESS = StackValidationPolicy(
    name="workload-host-access",
    description="No pod the stack registers, or renders from this project's charts, is privileged or uses host "
                "namespaces, host paths, host ports or extra capabilities unless an add-on is named for it.",
    validate=validate_host_access,
    enforcement_level=EnforcementLevel.MANDATORY,
)

"""Namespaces: Pod Security labels everywhere, privileged only for NVIDIA-style node agents; the
smoke-test namespace isolated by a default-deny NetworkPolicy.

Pod Security admission (Kubernetes docs, "Pod Security Standards"): `baseline` already forbids
privileged containers, hostPath volumes, host network/PID: exactly what driver containers,
container-toolkit installers, device/DRA kubelet plugins and node exporters need. So only the
charts below may get `privileged`, and only in the namespace they are released into.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy

from ..tables import tokens
from .facts import facts_of
from .helm import HELM_TYPES, chart_ref
from .network import is_world
from .props import get, helm_truthy, is_unknown, items, plain

NAMESPACE = tokens.K8S_CORE_V1_NAMESPACE
NETWORK_POLICY = tokens.K8S_NETWORKING_V1_NETWORK_POLICY
ENFORCE = "pod-security.kubernetes.io/enforce"
LEVELS = ("restricted", "baseline", "privileged")
# Charts whose pods need host access (why), and the values switch that turns those pods on
# (None: always). Velero's node-agent (chart default `deployNodeAgent: false`, vmware-tanzu
# helm-charts charts/velero) mounts the kubelet's pod volumes from the host for file backups.
PRIVILEGED_CHARTS: dict[str, tuple[str, str | None]] = {
    "gpu-operator": ("driver container, container toolkit, validators: privileged + hostPath", None),
    "dra-driver-nvidia-gpu": ("DRA kubelet plugin: privileged, kubelet plugin hostPaths", None),
    "nvidia-dra-driver-gpu": ("DRA kubelet plugin (pre-0.4 chart name)", None),
    "nvidia-device-plugin": ("device plugin socket hostPath", None),
    "fake-gpu-operator": ("simulated device/DRA plugins use kubelet hostPaths", None),
    "dcgm-exporter": ("reads GPUs and kubelet pod-resources through hostPath", None),
    "kube-prometheus-stack": ("node-exporter: host network, PID and root filesystem", None),
    "aws-cloud-controller-manager": ("host network on control planes", None),
    "velero": ("node-agent: kubelet pod volumes through hostPath", "deployNodeAgent"),
    # aws/eks-charts stable/aws-efa-k8s-device-plugin templates/daemonset.yaml (chart v0.5.30).
    "aws-efa-k8s-device-plugin": ("privileged, host network, /dev/infiniband and device-plugin hostPaths", None),
    # aws/karpenter-provider-aws v1.15.0 charts/karpenter templates/deployment.yaml: `hostNetwork`
    # (components/addons/karpenter.py sets it: the control plane's IMDS with a hop limit of 1).
    "karpenter": ("host network on control planes, for the instance role's credentials", "hostNetwork"),
}


def needs_privileged(props: Mapping[str, Any]) -> str | None:
    """The chart name when this release runs pods that need a privileged namespace."""
    ref = chart_ref(props)
    if ref is None or ref.name not in PRIVILEGED_CHARTS:
        return None
    switch = PRIVILEGED_CHARTS[ref.name][1]
    if switch is not None:
        values = props.get("values")
        if not isinstance(values, Mapping) or not helm_truthy(get(values, switch)):
            return None
    return ref.name


SYSTEM_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease", "default"})


def _ns_name(props: Mapping[str, Any], resource_name: str) -> str:
    name = get(props, "metadata.name")
    return name if isinstance(name, str) and not is_unknown(name) else resource_name


def pod_security_problems(resources: Iterable[tuple[str, str, str, Mapping[str, Any]]]) -> list[tuple[str, str]]:
    """(urn, message) for namespaces without a valid enforce level, privileged without need, and
    releases that let Helm create an unlabeled namespace. Input: (type, name, urn, props)."""
    namespaces: dict[str, tuple[str, Mapping[str, Any]]] = {}
    privileged_need: dict[str, list[str]] = {}
    releases: list[tuple[str, Mapping[str, Any]]] = []
    for rtype, name, urn, props in resources:
        if rtype == NAMESPACE:
            namespaces[_ns_name(props, name)] = (urn, props)
        elif rtype in HELM_TYPES:
            releases.append((urn, props))
            chart = needs_privileged(props)
            ns = props.get("namespace")
            if chart is not None and isinstance(ns, str):
                privileged_need.setdefault(ns, []).append(chart)
    problems: list[tuple[str, str]] = []
    for ns, (urn, props) in sorted(namespaces.items()):
        labels = get(props, "metadata.labels")  # label keys contain dots: no dotted path here
        level = labels.get(ENFORCE) if isinstance(labels, Mapping) else None
        if is_unknown(level):
            continue
        if level not in LEVELS:
            problems.append((urn, f"namespace {ns}: label {ENFORCE} is {level!r}; set restricted, baseline or "
                                  "privileged (privileged only for node agents that need host access)"))
        elif level == "privileged" and ns not in privileged_need:
            problems.append((urn, f"namespace {ns} is privileged but runs none of the charts that need it "
                                  f"({', '.join(sorted(PRIVILEGED_CHARTS))}); use baseline or restricted"))
    for urn, props in releases:
        ns = props.get("namespace")
        if props.get("createNamespace") is True and isinstance(ns, str) and ns not in namespaces \
                and ns not in SYSTEM_NAMESPACES:
            problems.append((urn, f"release creates namespace {ns} through Helm (createNamespace): it gets no Pod "
                                  "Security labels; declare it as a Namespace resource with labels instead"))
    return problems


def validate_pod_security(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    resources = [(r.resource_type, r.name, r.urn, r.props) for r in args.resources]
    for urn, message in pod_security_problems(resources):
        report_violation(message, urn)


# --- smoke-test isolation ----------------------------------------------------------------------

def _selects_all(obj: Mapping[str, Any]) -> bool:
    selector = get(obj, "spec.podSelector")
    return selector is None or (isinstance(selector, Mapping) and not any(selector.values()))


def is_default_deny(obj: Mapping[str, Any]) -> bool:
    """A NetworkPolicy selecting every pod of its namespace for both ingress and egress AND allowing
    nothing: rules are allow-lists (networking.k8s.io/v1 NetworkPolicySpec), so `ingress: [{}]` with
    the same selector and types is allow-all, not deny-all."""
    types = set(items(obj, "spec.policyTypes"))
    return (_selects_all(obj) and {"Ingress", "Egress"} <= types
            and not items(obj, "spec.ingress") and not items(obj, "spec.egress"))


def _peer_is_anyone(peer: Any) -> bool:
    """A peer that matches everything: `namespaceSelector: {}` alone (every pod of every namespace)
    or an ipBlock of the whole internet (components/policies/network.py is_world)."""
    if not isinstance(peer, Mapping):
        return False
    ns, pods, block = peer.get("namespaceSelector"), peer.get("podSelector"), peer.get("ipBlock")
    if isinstance(block, Mapping):
        return isinstance(block.get("cidr"), str) and is_world(block["cidr"]) and not block.get("except")
    return isinstance(ns, Mapping) and not any(ns.values()) and not (isinstance(pods, Mapping) and any(pods.values()))


def opens_up(obj: Mapping[str, Any]) -> str | None:
    """Why this NetworkPolicy lets traffic into or out of the namespace from anywhere (None: it does
    not). Policies are additive: one such rule undoes a default-deny beside it."""
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(items(obj, f"spec.{direction}")):
            peers = items(rule, peers_key) if isinstance(rule, Mapping) else []
            if not peers:
                return f"spec.{direction}[{i}] has no `{peers_key}`: every source is allowed"
            if any(_peer_is_anyone(p) for p in peers):
                return f"spec.{direction}[{i}] allows every namespace or the whole internet"
    return None


def rendered_objects(props: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """Objects a release of one of THIS project's charts applies (rendered offline by the Helm
    library). Remote charts are not rendered: no network, and they are not ours to isolate."""
    ref = chart_ref(props)
    if ref is None or ref.local_path is None:
        return []
    from ..kube.charts import CHARTS_DIR, render

    if ref.local_path.parent != CHARTS_DIR.resolve():
        return []
    values = props.get("values")
    ns = props.get("namespace")
    name = props.get("name")
    return render(
        ref.local_path.name,
        plain(values) if isinstance(values, Mapping) else {},
        release=name if isinstance(name, str) else ref.name,
        namespace=ns if isinstance(ns, str) else "default",
    )


def smoke_isolation_problem(resources: Iterable[tuple[str, Mapping[str, Any]]], namespace: str) -> str | None:
    """None when `namespace` has a default-deny NetworkPolicy, as a resource or inside a release
    of a local chart into that namespace. Input: (type, props)."""
    policies: list[Mapping[str, Any]] = []
    for rtype, props in resources:
        if rtype == NETWORK_POLICY and get(props, "metadata.namespace") == namespace:
            policies.append(props)
        if rtype in HELM_TYPES and props.get("namespace") == namespace:
            policies += [obj for obj in rendered_objects(props) if obj.get("kind") == "NetworkPolicy"]
    for obj in policies:
        if (why := opens_up(obj)) is not None:
            name = get(obj, "metadata.name")
            return (f"NetworkPolicy {name} opens the smoke-test namespace {namespace}: {why} (policies add up: "
                    "it undoes the default-deny)")
    if any(is_default_deny(obj) for obj in policies):
        return None
    return (f"no default-deny NetworkPolicy (podSelector {{}}, policyTypes Ingress+Egress, no rules) in the "
            f"smoke-test namespace {namespace}: its pods hold GPUs and need no network")


def validate_smoke_isolation(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    facts = facts_of(args)
    if facts is None:
        args.not_applicable("stack settings (ck8s-gpu:settings) unavailable: smoke namespace unknown")
        return
    if not facts.smoke_enabled:
        return  # smoke-test-required reports that
    problem = smoke_isolation_problem(((r.resource_type, r.props) for r in args.resources), facts.smoke_namespace)
    if problem:
        report_violation(problem, None)


GPU_NAMESPACE_POD_SECURITY = StackValidationPolicy(
    name="gpu-namespace-pod-security",
    description="Every namespace carries a Pod Security enforce label; privileged only where NVIDIA-style "
                "node agents run.",
    validate=validate_pod_security,
    enforcement_level=EnforcementLevel.MANDATORY,
)
SMOKE_TEST_ISOLATED = StackValidationPolicy(
    name="smoke-test-isolated",
    description="The smoke-test namespace has a default-deny NetworkPolicy.",
    validate=validate_smoke_isolation,
    enforcement_level=EnforcementLevel.MANDATORY,
)

"""Kubernetes' own syntax rules for label keys, label values and taints (pure).

Modelled on k8s.io/apimachinery/pkg/util/validation/validation.go at v0.34 (IsQualifiedName,
IsValidLabelValue, IsDNS1123Subdomain) and on kubernetes pkg/apis/core/validation/validation.go
(validateNodeTaints: key IsQualifiedName, value IsValidLabelValue). The API server refuses a Node
update that breaks them, so a node's label or taint step would fail for good at boot: refuse them
in settings instead.

NodeRestriction (plugin/pkg/admission/noderestriction/admission.go, getForbiddenLabels) refuses a
kubelet's change of any label under kubernetes.io or k8s.io except the kubelet's own set
(k8s.io/kubelet/pkg/apis/well_known_labels.go: IsKubeletLabel), and anything under
node-restriction.kubernetes.io. Nodes label themselves with their kubelet's credentials, so the
same rule applies here.
"""

from __future__ import annotations

import re

QUALIFIED_NAME_MAX = 63  # validation.go qualifiedNameMaxLength
LABEL_VALUE_MAX = 63  # validation.go LabelValueMaxLength
DNS1123_SUBDOMAIN_MAX = 253  # validation.go DNS1123SubdomainMaxLength

_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")  # qualifiedNameFmt
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")  # labelValueFmt
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

# k8s.io/kubelet/pkg/apis/well_known_labels.go: labels and namespaces a kubelet may set itself.
KUBELET_LABELS = frozenset({
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
    "kubernetes.io/os",
    "kubernetes.io/arch",
})
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")
NODE_RESTRICTION_NAMESPACE = "node-restriction.kubernetes.io"


def qualified_name_problems(value: str) -> list[str]:
    """Why `value` is not a qualified name ([prefix/]name), as the API server would say it."""
    parts = value.split("/")
    if len(parts) == 1:
        prefix, name = "", parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
    else:
        return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', with an optional "
                "DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    out: list[str] = []
    if prefix:
        if len(prefix) > DNS1123_SUBDOMAIN_MAX:
            out.append(f"prefix part must be no more than {DNS1123_SUBDOMAIN_MAX} characters")
        if not _DNS1123_SUBDOMAIN.match(prefix):
            out.append("prefix part must be a lowercase DNS subdomain (e.g. 'example.com')")
    if not name:
        return [*out, "name part must be non-empty"]
    return out + _format_problems(name, QUALIFIED_NAME_MAX, _QUALIFIED_NAME, "name part ",
                                  "name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                                  "start and end with an alphanumeric character")


def dns_subdomain_problems(value: str) -> list[str]:
    """Why `value` is not a DNS-1123 subdomain (validation.go IsDNS1123Subdomain): Secret names, ..."""
    return _format_problems(value, DNS1123_SUBDOMAIN_MAX, _DNS1123_SUBDOMAIN, "",
                            "must consist of lowercase alphanumeric characters, '-' or '.', and must start and end "
                            "with an alphanumeric character")


def label_value_problems(value: str) -> list[str]:
    return _format_problems(value, LABEL_VALUE_MAX, _LABEL_VALUE, "",
                            "a label value must be empty or consist of alphanumeric characters, '-', '_' or '.', "
                            "and must start and end with an alphanumeric character")


def _format_problems(value: str, limit: int, pattern: re.Pattern[str], what: str, shape: str) -> list[str]:
    """validation.go's two checks of a name-like value: its length, then its format."""
    out = [f"{what}must be no more than {limit} characters"] if len(value) > limit else []
    return out + ([] if pattern.match(value) else [shape])


def label_namespace(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else ""


def kubelet_may_set(key: str) -> bool:
    """NodeRestriction's verdict on a kubelet setting label `key` on its own Node."""
    namespace = label_namespace(key)
    if namespace == NODE_RESTRICTION_NAMESPACE or namespace.endswith("." + NODE_RESTRICTION_NAMESPACE):
        return False
    kubernetes = namespace in ("kubernetes.io", "k8s.io") or namespace.endswith((".kubernetes.io", ".k8s.io"))
    if not kubernetes:
        return True
    if key in KUBELET_LABELS:
        return True
    return namespace in KUBELET_LABEL_NAMESPACES or namespace.endswith(
        tuple("." + n for n in KUBELET_LABEL_NAMESPACES)
    )

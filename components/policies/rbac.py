"""Who may read each Secret: the RBAC objects a stack registers (typed resources, objects of
`kubernetes:yaml` ConfigFile/ConfigGroup manifests, objects rendered by a Helm chart component:
components/policies/k8s_objects.py).

Reading a Secret is a rule matching a verb `get`, `list` or `watch`, the core API group `""` and
the resource `secrets`, each either named or `*`: RBAC compares exact strings and knows `*` only
as a whole element (k8s.io/kubernetes pkg/apis/rbac/v1/evaluation_helpers.go `VerbMatches`,
`APIGroupMatches`, `ResourceMatches`). `resourceNames` narrows a rule to the Secrets it names;
`nonResourceURLs` never reach a Secret. A role grants its rules; an aggregated ClusterRole
(`aggregationRule`) also grants the rules of every ClusterRole its selectors match, the stack's
own and the built-ins (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/cluster-roles.yaml:
`cluster-admin`, `admin` and `edit` (through `system:aggregate-to-edit`), `system:node` and
`system:kube-controller-manager` read Secrets; `view` does not). Unknown counts as may-read: a
role a binding names that is neither in the stack nor a built-in, and an aggregation selector
other than the built-in `aggregate-to-admin|edit|view` labels (ClusterRoles outside the stack may
carry its labels). Unknown values (a preview's computed names) are not judged.

Forbidden:
1. any binding that lets a broad subject read any Secret, even one named: the groups
   `system:authenticated`, `system:unauthenticated`, `system:serviceaccounts`,
   `system:serviceaccounts:<ns>`, the user `system:anonymous`, and the `default` ServiceAccount
   of any namespace (every pod that names none runs as it), as a ServiceAccount or as the user
   `system:serviceaccount:<ns>:default` (k8s.io/apiserver pkg/authentication/serviceaccount).
   A Secret everyone may read is no secret: public data belongs in a ConfigMap;
2. a ClusterRoleBinding that lets a person (a User or Group) read every Secret of every namespace
   (cluster-admin, admin, edit or an equivalent, bound cluster-wide). People read a namespace's
   Secrets through a RoleBinding; cluster-wide, the admin kubeconfig (`system:masters`, which
   RBAC never limits; docs/adr/0012) is the break-glass. Named ServiceAccounts may: operators
   such as Velero need it;
3. a ClusterRole that reads Secrets and is labelled `rbac.authorization.k8s.io/aggregate-to-view:
   "true"`: it would make the built-in `view`, bound widely because it reads no Secret, read them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import EnforcementLevel, ReportViolation, StackValidationArgs, StackValidationPolicy

from .k8s_objects import K8sObject, Unreadable, objects
from .props import get, is_unknown, items

NONE, NAMED, MAY, ALL = range(4)  # how much of a scope's Secrets a role reads, in rising order
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"
BROAD_GROUPS = frozenset({"system:authenticated", "system:unauthenticated", "system:serviceaccounts"})
READ_VERBS = frozenset({"get", "list", "watch", "*"})


@dataclass(frozen=True)
class Grant:
    level: int
    why: str = ""


@dataclass(frozen=True)
class RoleDef:
    kind: str
    name: str
    labels: Mapping[str, Any]
    rules: Sequence[Any]
    selectors: Sequence[Any] | None = None  # aggregationRule.clusterRoleSelectors


def _builtin(name: str, rules: Sequence[Any] = (), labels: Mapping[str, Any] | None = None,
             aggregates: str | None = None) -> RoleDef:
    selectors = [{"matchLabels": {AGGREGATE + aggregates: "true"}}] if aggregates else None
    return RoleDef("ClusterRole", name, labels or {}, rules, selectors)


_READ_SECRETS = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch"]}
# The bootstrap ClusterRoles (cluster-roles.yaml above), reduced to what decides Secret reads.
BUILTIN_CLUSTER_ROLES: dict[str, RoleDef] = {r.name: r for r in (
    _builtin("cluster-admin", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
    _builtin("admin", aggregates="admin"),
    _builtin("edit", labels={AGGREGATE + "admin": "true"}, aggregates="edit"),
    _builtin("view", labels={AGGREGATE + "edit": "true"}, aggregates="view"),
    _builtin("system:aggregate-to-admin", labels={AGGREGATE + "admin": "true"}),
    _builtin("system:aggregate-to-edit", [_READ_SECRETS], labels={AGGREGATE + "edit": "true"}),
    _builtin("system:aggregate-to-view", labels={AGGREGATE + "view": "true"}),
    _builtin("system:kube-controller-manager", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["list", "watch"]}]),
    _builtin("system:node", [_READ_SECRETS]),
    *(_builtin(name) for name in (
        "system:auth-delegator", "system:basic-user", "system:discovery", "system:heapster",
        "system:kube-aggregator", "system:kube-dns", "system:kube-scheduler", "system:kubelet-api-admin",
        "system:monitoring", "system:node-bootstrapper", "system:node-problem-detector", "system:node-proxier",
        "system:persistent-volume-provisioner", "system:public-info-viewer",
        "system:service-account-issuer-discovery", "system:volume-scheduler",
        "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
        "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
        "system:certificates.k8s.io:kube-apiserver-client-approver",
        "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
        "system:certificates.k8s.io:kubelet-serving-approver",
        "system:certificates.k8s.io:legacy-unknown-approver",
    )),
)}


def _strings(rule: Any, key: str) -> list[Any] | None:
    """The rule's list at `key`; None when any element is unknown."""
    values = items(rule, key)
    return None if any(is_unknown(v) for v in values) else values


def rule_grant(rule: Any) -> int:
    """NONE, NAMED or ALL for one PolicyRule (`*` only counts as a whole element, as RBAC does)."""
    if not isinstance(rule, Mapping):
        return NONE
    verbs, groups, resources = (_strings(rule, k) for k in ("verbs", "apiGroups", "resources"))
    if verbs is None or groups is None or resources is None:
        return NONE
    if READ_VERBS.isdisjoint(verbs) or not {"", "*"} & set(groups) or not {"secrets", "*"} & set(resources):
        return NONE
    return NAMED if items(rule, "resourceNames") else ALL


def selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """metav1.LabelSelector semantics; the empty selector selects everything."""
    match = selector.get("matchLabels")
    if isinstance(match, Mapping) and any(labels.get(k) != v for k, v in match.items()):
        return False
    for expr in items(selector, "matchExpressions"):
        key, op, values = get(expr, "key"), get(expr, "operator"), items(expr, "values")
        present = key in labels
        if (op == "In" and not (present and labels[key] in values)) or (op == "NotIn" and present and
                                                                          labels[key] in values):
            return False
        if (op == "Exists" and not present) or (op == "DoesNotExist" and present):
            return False
    return True


def _builtin_family(selector: Mapping[str, Any]) -> bool:
    """A selector of one of the built-in aggregation labels, which the built-ins above model."""
    match = selector.get("matchLabels")
    return (not items(selector, "matchExpressions") and isinstance(match, Mapping) and len(match) == 1
            and next(iter(match.items())) in {(AGGREGATE + a, "true") for a in ("admin", "edit", "view")})


class Roles:
    """The ClusterRoles (built-in and the stack's) and Roles a binding can name."""

    def __init__(self, objs: Iterable[K8sObject]) -> None:
        self.cluster: dict[str, list[RoleDef]] = {n: [r] for n, r in BUILTIN_CLUSTER_ROLES.items()}
        self.namespaced: dict[tuple[str, str], list[RoleDef]] = {}
        self.of: dict[int, RoleDef] = {}  # id(object) -> its role
        for o in objs:
            if o.kind not in ("Role", "ClusterRole"):
                continue
            labels = get(o.obj, "metadata.labels")  # label keys contain dots: no dotted path into them
            selectors = get(o.obj, "aggregationRule.clusterRoleSelectors")
            role = self.of[id(o)] = RoleDef(
                o.kind, o.name, labels if isinstance(labels, Mapping) else {}, items(o.obj, "rules"),
                None if selectors is None else items(o.obj, "aggregationRule.clusterRoleSelectors"))
            if o.kind == "ClusterRole":
                self.cluster.setdefault(o.name, []).append(role)
            else:
                self.namespaced.setdefault((o.namespace or "default", o.name), []).append(role)

    def grant(self, role: RoleDef, seen: frozenset[str] = frozenset()) -> Grant:
        best = Grant(NONE)
        for i, rule in enumerate(role.rules):
            level = rule_grant(rule)
            if level > best.level:
                named = " (named Secrets)" if level == NAMED else ""
                best = Grant(level, f"{role.kind} {role.name} rules[{i}]{named}")
        for selector in role.selectors or ():
            if not isinstance(selector, Mapping):
                best = max(best, Grant(MAY, f"{role.kind} {role.name}: an unknown aggregation selector"),
                           key=lambda g: g.level)
                continue
            for name, defs in self.cluster.items():
                for other in defs:
                    if other is not role and name not in seen and selects(selector, other.labels):
                        best = max(best, self.grant(other, seen | {role.name}), key=lambda g: g.level)
            if not _builtin_family(selector) and best.level < MAY:
                best = Grant(MAY, f"{role.kind} {role.name} aggregates ClusterRoles by labels that roles outside "
                                  "this stack may carry")
        return best

    def bound(self, binding: K8sObject) -> tuple[str, Grant] | None:
        """(`ClusterRole edit`, what it grants) for a binding's roleRef; None when unknown."""
        kind, name = get(binding.obj, "roleRef.kind"), get(binding.obj, "roleRef.name")
        if not isinstance(kind, str) or not isinstance(name, str) or is_unknown(name) or is_unknown(kind):
            return None
        if kind == "ClusterRole":
            defs = self.cluster.get(name, [])
        elif kind == "Role" and binding.kind == "RoleBinding":
            defs = self.namespaced.get((binding.namespace or "default", name), [])
        else:
            return None
        if not defs:
            return f"{kind} {name}", Grant(MAY, f"{kind} {name} is neither in this stack nor a Kubernetes built-in")
        return f"{kind} {name}", max((self.grant(d) for d in defs), key=lambda g: g.level)


def broad(subject: Any, namespace: str) -> str | None:
    """The subject, spelled out, when it stands for (nearly) everyone; else None."""
    if not isinstance(subject, Mapping):
        return None
    kind, name = subject.get("kind"), subject.get("name")
    if not isinstance(name, str):
        return None
    if kind == "Group" and (name in BROAD_GROUPS or name.startswith("system:serviceaccounts:")):
        return f"Group {name}"
    if kind == "User" and (name == "system:anonymous" or (name.startswith("system:serviceaccount:")
                                                          and name.endswith(":default") and name.count(":") == 3)):
        return f"User {name}"
    if kind == "ServiceAccount" and name == "default":
        return f"ServiceAccount {subject.get('namespace') or namespace}/default (every pod that names no account)"
    return None


def _person(subject: Any) -> str | None:
    if not isinstance(subject, Mapping) or subject.get("kind") not in ("User", "Group"):
        return None
    name = subject.get("name")
    if not isinstance(name, str) or name == "system:masters" or name.startswith("system:serviceaccount:"):
        return None
    return f"{subject['kind']} {name}"


def reader_problems(objs: Sequence[K8sObject], unreadable: Iterable[Unreadable] = ()) -> list[tuple[str, str]]:
    """(urn, message) for every binding and ClusterRole that hands Secrets to the wrong readers."""
    problems = [(u.urn, f"manifests cannot be reviewed ({u.why}): who may read Secrets is unknown")
                for u in unreadable]
    roles = Roles(objs)
    for o in objs:
        role_def = roles.of.get(id(o))
        if role_def and role_def.kind == "ClusterRole" and role_def.labels.get(AGGREGATE + "view") == "true":
            grant = roles.grant(role_def)
            if grant.level >= NAMED:
                problems.append((o.urn, f"{o} reads Secrets ({grant.why}) and aggregates into the built-in view "
                                        "role, which is bound widely because it reads none"))
        if o.kind not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        bound = roles.bound(o)
        if bound is None or bound[1].level == NONE:
            continue
        role, grant = bound
        scope = f"in namespace {o.namespace or 'default'}" if o.kind == "RoleBinding" else "in every namespace"
        verb = "may read" if grant.level == MAY else "reads"
        for subject in items(o.obj, "subjects"):
            if (who := broad(subject, o.namespace or "default")) is not None:
                problems.append((o.urn, f"{o} lets {who} read Secrets {scope} through {role} ({verb}: {grant.why}); "
                                        "grant them to named ServiceAccounts only"))
            elif o.kind == "ClusterRoleBinding" and grant.level >= MAY and (who := _person(subject)) is not None:
                problems.append((o.urn, f"{o} lets {who} read every Secret {scope} through {role} ({verb}: "
                                        f"{grant.why}); bind it per namespace with a RoleBinding"))
    return problems


def validate_secret_readers(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    objs, unreadable = objects(args.resources)
    for urn, message in reader_problems(objs, unreadable):
        report_violation(message, urn)


SECRET_READERS_LEAST_PRIVILEGE = StackValidationPolicy(
    name="secret-readers-least-privilege",
    description="No RBAC binding lets everyone (authenticated, anonymous, all or default service accounts) read "
                "Secrets, nor a person read every Secret cluster-wide; nothing makes `view` read Secrets.",
    validate=validate_secret_readers,
    enforcement_level=EnforcementLevel.MANDATORY,
)

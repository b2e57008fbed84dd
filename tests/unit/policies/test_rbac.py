"""secret-readers-least-privilege: who may read each Secret, however the grant is spelled."""

from itertools import product
from typing import Any

import pytest

from components.policies.rbac import SECRET_READERS_LEAST_PRIVILEGE
from tests.unit.policies.helpers import res, stack_violations

RBAC = "kubernetes:rbac.authorization.k8s.io/v1"
AGG = "rbac.authorization.k8s.io/aggregate-to-"


def cluster_role(name: str, *rules: dict[str, Any], labels: dict[str, str] | None = None,
                 selectors: list[Any] | None = None) -> Any:
    props: dict[str, Any] = {"metadata": {"name": name, "labels": labels or {}}, "rules": list(rules)}
    if selectors is not None:
        props["aggregationRule"] = {"clusterRoleSelectors": selectors}
    return res(f"{RBAC}:ClusterRole", props, name=f"cr-{name}")


def rule(groups: list[str], resources: list[str], verbs: list[str], **extra: Any) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs, **extra}


def binding(kind: str, role_kind: str, role: str, subject: dict[str, Any], namespace: str = "apps") -> Any:
    meta: dict[str, Any] = {"name": "b"} if kind == "ClusterRoleBinding" else {"name": "b", "namespace": namespace}
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role}
    return res(f"{RBAC}:{kind}", {"metadata": meta, "subjects": [subject], "roleRef": ref}, name=f"{kind}-{role}")


def group(name: str) -> dict[str, Any]:
    return {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": name}


def user(name: str) -> dict[str, Any]:
    return {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}


def sa(name: str, namespace: str | None = "apps") -> dict[str, Any]:
    return {"kind": "ServiceAccount", "name": name, **({"namespace": namespace} if namespace else {})}


# Everyone, however it is spelled.
BROAD = {
    "authenticated": group("system:authenticated"),
    "unauthenticated": group("system:unauthenticated"),
    "all service accounts": group("system:serviceaccounts"),
    "a namespace's service accounts": group("system:serviceaccounts:apps"),
    "anonymous": user("system:anonymous"),
    "default SA": sa("default"),
    "default SA, namespace implied": sa("default", None),
    "default SA as a user": user("system:serviceaccount:apps:default"),
}

SECRET = rule([""], ["secrets"], ["get"])
# (what the binding names, the resources that define it): every way of granting Secret reads.
READERS: dict[str, tuple[str, str, list[Any]]] = {
    "built-in cluster-admin": ("ClusterRole", "cluster-admin", []),
    "built-in admin": ("ClusterRole", "admin", []),
    "built-in edit": ("ClusterRole", "edit", []),
    "built-in system:aggregate-to-edit": ("ClusterRole", "system:aggregate-to-edit", []),
    "built-in system:node": ("ClusterRole", "system:node", []),
    "get secrets": ("ClusterRole", "r", [cluster_role("r", SECRET)]),
    "list secrets": ("ClusterRole", "r", [cluster_role("r", rule([""], ["secrets"], ["list"]))]),
    "watch secrets": ("ClusterRole", "r", [cluster_role("r", rule([""], ["secrets"], ["watch"]))]),
    "verb *": ("ClusterRole", "r", [cluster_role("r", rule([""], ["secrets"], ["*"]))]),
    "resource *": ("ClusterRole", "r", [cluster_role("r", rule([""], ["*"], ["get"]))]),
    "apiGroup *": ("ClusterRole", "r", [cluster_role("r", rule(["*"], ["secrets"], ["list"]))]),
    "all wildcards": ("ClusterRole", "r", [cluster_role("r", rule(["*"], ["*"], ["*"]))]),
    "among other verbs and resources": ("ClusterRole", "r", [cluster_role("r", rule(
        ["apps", ""], ["configmaps", "secrets"], ["create", "watch"]))]),
    "one named Secret": ("ClusterRole", "r", [cluster_role("r", rule([""], ["secrets"], ["get"],
                                                                      resourceNames=["db-password"]))]),
    "aggregated from a reader in the stack": ("ClusterRole", "agg", [
        cluster_role("agg", selectors=[{"matchLabels": {"team": "x"}}]),
        cluster_role("reader", SECRET, labels={"team": "x"})]),
    "aggregated by matchExpressions": ("ClusterRole", "agg", [
        cluster_role("agg", selectors=[{"matchExpressions": [{"key": "team", "operator": "In", "values": ["x"]}]}]),
        cluster_role("reader", SECRET, labels={"team": "x"})]),
    "aggregated from the built-in edit family": ("ClusterRole", "agg", [
        cluster_role("agg", selectors=[{"matchLabels": {f"{AGG}edit": "true"}}])]),
    "aggregated by the empty selector (everything)": ("ClusterRole", "agg", [cluster_role("agg", selectors=[{}])]),
    "aggregated from labels outside the stack (unknown)": ("ClusterRole", "agg", [
        cluster_role("agg", selectors=[{"matchLabels": {"vendor.example/aggregate": "true"}}])]),
    "a ClusterRole neither here nor built-in (unknown)": ("ClusterRole", "installed-by-someone-else", []),
    "a Role in the stack": ("Role", "r", [res(f"{RBAC}:Role", {"metadata": {"name": "r", "namespace": "apps"},
                                                               "rules": [SECRET]}, name="role-r")]),
    "a Role not in the stack (unknown)": ("Role", "elsewhere", []),
}


@pytest.mark.parametrize(("subject", "reader"), list(product(BROAD, READERS)))
def test_no_broad_subject_reads_any_secret(subject: str, reader: str) -> None:
    role_kind, role, defined = READERS[reader]
    kinds = ["RoleBinding"] + ([] if role_kind == "Role" else ["ClusterRoleBinding"])
    for kind in kinds:
        bind = binding(kind, role_kind, role, BROAD[subject])
        found = stack_violations(SECRET_READERS_LEAST_PRIVILEGE, [*defined, bind])
        assert [u for _, u in found] == [bind.urn], (kind, found)
        assert "read Secrets" in found[0][0]


NOT_READERS: dict[str, tuple[str, list[Any]]] = {
    "built-in view": ("view", []),
    "built-in system:basic-user": ("system:basic-user", []),
    "built-in system:discovery": ("system:discovery", []),
    "configmaps only": ("r", [cluster_role("r", rule([""], ["configmaps"], ["get", "list", "watch"]))]),
    "write-only secrets": ("r", [cluster_role("r", rule([""], ["secrets"], ["create", "update", "delete"]))]),
    "every resource of another group": ("r", [cluster_role("r", rule(["apps"], ["*"], ["*"]))]),
    "case differs (RBAC is exact)": ("r", [cluster_role("r", rule([""], ["Secrets"], ["GET"]))]),
    "a pattern is not a wildcard": ("r", [cluster_role("r", rule([""], ["secret*"], ["get"]))]),
    "non-resource URLs": ("r", [cluster_role("r", {"nonResourceURLs": ["*"], "verbs": ["*"]})]),
    "aggregated from the built-in view family": ("agg", [
        cluster_role("agg", selectors=[{"matchLabels": {f"{AGG}view": "true"}}])]),
}


@pytest.mark.parametrize(("subject", "role"), list(product(BROAD, NOT_READERS)))
def test_broad_subjects_may_hold_roles_that_read_no_secret(subject: str, role: str) -> None:
    name, defined = NOT_READERS[role]
    bind = binding("ClusterRoleBinding", "ClusterRole", name, BROAD[subject])
    assert stack_violations(SECRET_READERS_LEAST_PRIVILEGE, [*defined, bind]) == []


PEOPLE = {"user": user("alice@example.com"), "group": group("platform-admins"), "nodes": group("system:nodes")}
CLUSTER_WIDE = ["built-in cluster-admin", "built-in admin", "built-in edit", "all wildcards",
                "aggregated from labels outside the stack (unknown)",
                "a ClusterRole neither here nor built-in (unknown)"]


@pytest.mark.parametrize(("person", "reader"), list(product(PEOPLE, CLUSTER_WIDE)))
def test_no_person_reads_every_secret_of_the_cluster(person: str, reader: str) -> None:
    _, role, defined = READERS[reader]
    bind = binding("ClusterRoleBinding", "ClusterRole", role, PEOPLE[person])
    found = stack_violations(SECRET_READERS_LEAST_PRIVILEGE, [*defined, bind])
    assert [u for _, u in found] == [bind.urn] and "every Secret" in found[0][0], found
    # The same role bound in one namespace is how people get Secrets.
    assert stack_violations(SECRET_READERS_LEAST_PRIVILEGE, [*defined, binding("RoleBinding", "ClusterRole", role,
                                                                               PEOPLE[person])]) == []


@pytest.mark.parametrize(("subject", "reader"), [
    (sa("velero", "velero"), "built-in cluster-admin"),  # an operator's own account
    (user("system:serviceaccount:monitoring:prometheus-operator"), "all wildcards"),  # the same, as a user
    (group("system:masters"), "built-in cluster-admin"),  # RBAC never limits it anyway
    (group("platform-admins"), "one named Secret"),  # not every Secret
    (group("platform-admins"), "write-only"),
])
def test_named_accounts_and_narrow_grants_pass(subject: dict[str, Any], reader: str) -> None:
    _, role, defined = READERS.get(reader, ("ClusterRole", "w", [cluster_role("w", rule([""], ["secrets"],
                                                                                          ["create"]))]))
    bind = binding("ClusterRoleBinding", "ClusterRole", role, subject)
    assert stack_violations(SECRET_READERS_LEAST_PRIVILEGE, [*defined, bind]) == []


def test_a_secret_reader_aggregated_into_view_violates_and_widens_view() -> None:
    widening = cluster_role("leaky", SECRET, labels={f"{AGG}view": "true"})
    found = stack_violations(SECRET_READERS_LEAST_PRIVILEGE, [widening])
    assert [u for _, u in found] == [widening.urn] and "view" in found[0][0]
    # ... and view, now reading Secrets, may no longer go to everyone.
    everyone = binding("ClusterRoleBinding", "ClusterRole", "view", group("system:authenticated"))
    assert everyone.urn in {u for _, u in stack_violations(SECRET_READERS_LEAST_PRIVILEGE, [widening, everyone])}
    # A harmless role in the view family changes nothing.
    harmless = cluster_role("crds-view", rule(["example.com"], ["widgets"], ["get"]), labels={f"{AGG}view": "true"})
    assert stack_violations(SECRET_READERS_LEAST_PRIVILEGE, [harmless, everyone]) == []


def test_bindings_inside_manifests_count() -> None:
    crb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "oops"},
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
           "subjects": [{"kind": "Group", "name": "system:serviceaccounts"}]}
    group_objs = res("kubernetes:yaml/v2:ConfigGroup", {"objs": [{"kind": "List", "items": [crb]}]}, name="objs")
    text = res("kubernetes:yaml/v2:ConfigFile", {"file": "<computed>"}, name="file")  # unknown: not judged
    found = stack_violations(SECRET_READERS_LEAST_PRIVILEGE, [group_objs, text])
    assert [u for _, u in found] == [group_objs.urn]
    unreadable = res("kubernetes:yaml/v2:ConfigGroup", {"yaml": "a: &x [1]\nb: *x\n"}, name="aliases")
    assert "cannot be reviewed" in stack_violations(SECRET_READERS_LEAST_PRIVILEGE, [unreadable])[0][0]


def test_unknown_role_names_are_not_judged() -> None:
    bind = binding("ClusterRoleBinding", "ClusterRole", "<computed>", group("system:authenticated"))
    assert stack_violations(SECRET_READERS_LEAST_PRIVILEGE, [bind]) == []

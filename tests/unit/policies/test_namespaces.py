from typing import Any

import pytest

from components.policies import namespaces
from components.policies.helm import PROJECT_DIR, RELEASE
from components.policies.namespaces import (
    GPU_NAMESPACE_POD_SECURITY,
    NAMESPACE,
    NETWORK_POLICY,
    SMOKE_TEST_ISOLATED,
)
from tests.unit.policies.helpers import facts, res, stack_violations


def ns(name: str, level: str | None) -> Any:
    labels = {} if level is None else {"pod-security.kubernetes.io/enforce": level}
    return res(NAMESPACE, {"metadata": {"name": name, "labels": labels}}, name=f"ns-{name}")


def rel(chart: str, namespace: str, **over: Any) -> Any:
    props = {"chart": chart, "version": "1.0.0", "repositoryOpts": {"repo": "https://x"}, "namespace": namespace}
    return res(RELEASE, {**props, **over}, name=f"{chart}-{namespace}")


def test_labelled_namespaces_pass() -> None:
    resources = [ns("gpu-operator", "privileged"), rel("gpu-operator", "gpu-operator"),
                 ns("kai-scheduler", "baseline"), rel("kai-scheduler", "kai-scheduler"),
                 ns("gpu-smoke-test", "restricted")]
    assert stack_violations(GPU_NAMESPACE_POD_SECURITY, resources) == []


def test_missing_or_invalid_labels_violate() -> None:
    unlabeled = ns("gpu-smoke-test", None)
    found = stack_violations(GPU_NAMESPACE_POD_SECURITY, [unlabeled, ns("x", "permissive")])
    assert [u for _, u in found] == [unlabeled.urn, found[1][1]]
    assert "is None" in found[0][0] and "'permissive'" in found[1][0]


def test_privileged_only_where_a_node_agent_chart_runs() -> None:
    found = stack_violations(GPU_NAMESPACE_POD_SECURITY, [ns("kai-scheduler", "privileged"),
                                                          rel("kai-scheduler", "kai-scheduler")])
    assert len(found) == 1 and "privileged but runs none" in found[0][0]
    # The same chart in another namespace does not make this one privileged-worthy.
    assert stack_violations(GPU_NAMESPACE_POD_SECURITY, [ns("apps", "privileged"),
                                                         rel("gpu-operator", "gpu-operator")])
    oci_dra = rel("oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu", "nvidia-dra-driver-gpu",
                  repositoryOpts=None)
    assert stack_violations(GPU_NAMESPACE_POD_SECURITY, [ns("nvidia-dra-driver-gpu", "privileged"), oci_dra]) == []


def test_velero_is_privileged_only_with_its_node_agent() -> None:
    plain_velero = rel("velero", "velero", values={"deployNodeAgent": False})
    assert stack_violations(GPU_NAMESPACE_POD_SECURITY, [ns("velero", "privileged"), plain_velero])
    assert stack_violations(GPU_NAMESPACE_POD_SECURITY, [ns("velero", "baseline"), plain_velero]) == []
    agent = rel("velero", "velero", values={"deployNodeAgent": True})
    assert stack_violations(GPU_NAMESPACE_POD_SECURITY, [ns("velero", "privileged"), agent]) == []


def test_helm_created_namespaces_have_no_labels() -> None:
    creating = rel("velero", "velero", createNamespace=True)
    found = stack_violations(GPU_NAMESPACE_POD_SECURITY, [creating])
    assert found == [(found[0][0], creating.urn)] and "createNamespace" in found[0][0]
    # Declared alongside: Helm's create is a no-op, the declared labels apply.
    assert stack_violations(GPU_NAMESPACE_POD_SECURITY, [creating, ns("velero", "baseline")]) == []


DENY_ALL = {"metadata": {"name": "deny-all", "namespace": "gpu-smoke-test"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}}


def test_smoke_namespace_with_default_deny_passes() -> None:
    assert stack_violations(SMOKE_TEST_ISOLATED, [res(NETWORK_POLICY, DENY_ALL)], facts()) == []


@pytest.mark.parametrize(
    "policy",
    [
        {**DENY_ALL, "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}},  # egress open
        {**DENY_ALL, "spec": {"podSelector": {"matchLabels": {"app": "x"}}, "policyTypes": ["Ingress", "Egress"]}},
        {**DENY_ALL, "metadata": {"name": "deny-all", "namespace": "other"}},
    ],
)
def test_partial_or_misplaced_policies_violate(policy: dict[str, Any]) -> None:
    found = stack_violations(SMOKE_TEST_ISOLATED, [res(NETWORK_POLICY, policy)], facts())
    assert len(found) == 1 and "gpu-smoke-test" in found[0][0]


ALLOW_ALL_SPELLINGS = [
    {"ingress": [{}], "egress": [{}]},  # the deny-all shape with empty rules: allow-all
    {"ingress": [{"from": [{"namespaceSelector": {}}]}]},
    {"egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}]},
    {"egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/1"}}, {"ipBlock": {"cidr": "128.0.0.0/1"}}]}]},
]


@pytest.mark.parametrize("rules", ALLOW_ALL_SPELLINGS)
def test_a_policy_that_allows_everything_is_no_default_deny(rules: dict[str, Any]) -> None:
    """Rules are allow-lists and policies add up: an allow-all beside (or instead of) the deny-all
    opens the namespace, however it is spelled (issue 14)."""
    allow = {"metadata": {"name": "allow", "namespace": "gpu-smoke-test"},
             "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], **rules}}
    alone = stack_violations(SMOKE_TEST_ISOLATED, [res(NETWORK_POLICY, allow)], facts())
    beside = stack_violations(SMOKE_TEST_ISOLATED, [res(NETWORK_POLICY, DENY_ALL), res(NETWORK_POLICY, allow)],
                              facts())
    for found in (alone, beside):
        assert len(found) == 1 and "gpu-smoke-test" in found[0][0], found


def test_a_narrow_allow_rule_beside_the_deny_all_is_fine() -> None:
    dns = {"metadata": {"name": "dns", "namespace": "gpu-smoke-test"},
           "spec": {"podSelector": {}, "policyTypes": ["Egress"], "egress": [{"to": [
               {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}]}]}}
    assert stack_violations(SMOKE_TEST_ISOLATED, [res(NETWORK_POLICY, DENY_ALL), res(NETWORK_POLICY, dns)],
                            facts()) == []


def test_a_local_chart_release_may_carry_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[tuple[str, str]] = []

    def fake_render(name: str, values: dict[str, Any], *, release: str, namespace: str) -> list[dict[str, Any]]:
        rendered.append((name, namespace))
        return [{"kind": "NetworkPolicy", **DENY_ALL}]

    monkeypatch.setattr("components.kube.charts.render", fake_render)
    smoke = res(RELEASE, {"name": "smoke", "chart": str(PROJECT_DIR / "charts" / "gpu-smoke-test"),
                          "namespace": "gpu-smoke-test", "values": {}})
    assert stack_violations(SMOKE_TEST_ISOLATED, [smoke], facts()) == []
    assert rendered == [("gpu-smoke-test", "gpu-smoke-test")]
    # A remote chart is never rendered (no network) and does not count.
    remote = res(RELEASE, {"chart": "x", "repositoryOpts": {"repo": "https://x"}, "namespace": "gpu-smoke-test"})
    assert stack_violations(SMOKE_TEST_ISOLATED, [remote], facts())
    assert len(rendered) == 1


def test_smoke_isolation_follows_the_configured_namespace_and_switch() -> None:
    moved = facts(smokeTest={"namespace": "gpu-checks"})
    assert "gpu-checks" in stack_violations(SMOKE_TEST_ISOLATED, [res(NETWORK_POLICY, DENY_ALL)], moved)[0][0]
    # Disabled smoke tests are smoke-test-required's business, not this policy's.
    assert stack_violations(SMOKE_TEST_ISOLATED, [], facts(smokeTest={"enabled": False})) == []


def test_real_chart_rendering_is_wired() -> None:
    # The offline renderer is the project's (helm-python-sdk): a real local chart renders through it.
    objects = namespaces.rendered_objects({"name": "q", "chart": str(PROJECT_DIR / "charts" / "kai-queues"),
                                            "namespace": "kai-scheduler", "values": {"queues": []}})
    assert isinstance(objects, list)

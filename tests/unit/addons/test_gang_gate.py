"""The gang gate add-on (components/addons/gang_gate.py, ADR 0058): off unless asked, refused where
it has nothing to judge or no image, and rendered as a controller that can remove its gate from pods
and do nothing else. The controller itself runs against the real Karpenter in
tests/integration/test_karpenter_local.py."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.addons import gang_gate
from components.addons.graph import AddonGraphError, final_values, install_graph
from components.plan.run import PROJECT_DIR
from components.settings import parse_settings
from components.settings.load import SettingsError, read_stack_file
from components.settings.model import Settings
from components.tables.instance_types import gpu_facts
from components.tables.labels import GANG_GATE

IMAGE = "registry.example.internal/ck8s-gpu/probe:0a1b2c3d4e5f@sha256:" + "c" * 64


def _elastic(gate: dict[str, Any] | None = None) -> Settings:
    raw = copy.deepcopy(read_stack_file(PROJECT_DIR / "stacks" / "Pulumi.aws-elastic.yaml")["ck8s-gpu:settings"])
    if gate is not None:
        raw.setdefault("gpuStack", {}).setdefault("addons", {})["gangGate"] = gate
    return parse_settings(raw)


def _objects(s: Settings) -> dict[str, dict[str, Any]]:
    out: list[dict[str, Any]] = final_values(install_graph(s), s)[gang_gate.NAME]["objects"]
    return {o["kind"]: o for o in out}


def test_off_unless_a_stack_asks_for_it() -> None:
    assert gang_gate.NAME not in install_graph(_elastic()).names


def test_it_judges_every_autoscaled_pool_with_its_gpus_per_node_after_the_nodepools() -> None:
    s = _elastic({"enabled": True, "image": IMAGE})
    graph = install_graph(s)
    assert graph.edges[gang_gate.NAME] == ("karpenter-nodepools",)
    autoscaled = [p for p in s.node_pools if p.autoscaling is not None]
    assert len(autoscaled) >= 2  # the stack's H100 and L4 pools
    expected = []
    for p in autoscaled:
        facts = gpu_facts(p.instance_type)
        assert facts is not None
        expected.append(f"--pool={p.name}={facts.count}")
    [container] = _objects(s)["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert container["image"] == IMAGE and container["command"] == ["/usr/bin/ck8s-gang-gate"]
    assert [a for a in container["args"] if a.startswith("--pool=")] == expected
    assert f"--gate={GANG_GATE}" in container["args"] and "--pod-group-annotation=pod-group-name" in container["args"]
    assert "--pool=h100=8" in container["args"]  # p5.48xlarge: 8 H100s (instance_types.py)


def test_its_role_reads_and_may_only_update_pods_and_record_events() -> None:
    role = _objects(_elastic({"enabled": True, "image": IMAGE}))["ClusterRole"]
    writes = {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
              for v in rule["verbs"] if v not in ("get", "list", "watch")}
    assert writes == {("", "pods", "update"), ("", "events", "create"), ("", "events", "patch"),
                      ("events.k8s.io", "events", "create"), ("events.k8s.io", "events", "patch")}


def test_one_replica_never_two_and_a_restricted_pod() -> None:
    d = _objects(_elastic({"enabled": True, "image": IMAGE}))["Deployment"]
    assert d["spec"]["replicas"] == 1 and d["spec"]["strategy"] == {"type": "Recreate"}
    pod = d["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    [c] = pod["containers"]
    assert c["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]}}


@pytest.mark.parametrize(("raw", "says"), [
    ({"stack": "aws-elastic", "gate": {"enabled": True}}, "gpuStack.addons.gangGate.image: required"),
    ({"stack": "aws-dev", "gate": {"enabled": True, "image": IMAGE}}, "no node pool is autoscaled"),
])
def test_refused_without_an_image_or_without_an_autoscaled_pool(raw: dict[str, Any], says: str) -> None:
    doc = copy.deepcopy(read_stack_file(PROJECT_DIR / "stacks" / f"Pulumi.{raw['stack']}.yaml")["ck8s-gpu:settings"])
    doc.setdefault("gpuStack", {}).setdefault("addons", {})["gangGate"] = raw["gate"]
    with pytest.raises(AddonGraphError) as err:
        install_graph(parse_settings(doc))
    assert says in str(err.value)


def test_an_image_not_pinned_by_digest_is_refused_by_the_settings() -> None:
    with pytest.raises(SettingsError) as err:
        _elastic({"enabled": True, "image": "registry.example.internal/ck8s-gpu/probe:latest"})
    assert "settings.gpuStack.addons.gangGate.image:" in str(err.value)


def test_the_elastic_stack_with_the_gate_plans_and_passes_the_policy_pack() -> None:
    from components.plan.run import plan_config
    from components.policies.offline import evaluate_plan

    config = copy.deepcopy(read_stack_file(PROJECT_DIR / "stacks" / "Pulumi.aws-elastic.yaml"))
    config["ck8s-gpu:settings"].setdefault("gpuStack", {}).setdefault("addons", {})["gangGate"] = {
        "enabled": True, "image": IMAGE}
    plan = plan_config(config, "aws-elastic-gate", "aws-elastic (gangGate on)")
    assert [r.name for r in plan.resources if r.type == "kubernetes:helm.sh/v3:Release"
            and r.name.endswith(gang_gate.NAME)] == [f"gpu-stack-{gang_gate.NAME}"]
    result = evaluate_plan(plan)
    assert result.mandatory == [], [str(f) for f in result.mandatory]


def test_a_policy_holds_its_service_account_to_removing_its_gate() -> None:
    """The role's pod `update` reaches images and labels of every pod: the policy (judged on a real
    API server in tests/integration/test_karpenter_local.py) binds exactly the controller's account."""
    objs = _objects(_elastic({"enabled": True, "image": IMAGE}))
    policy, binding = objs["ValidatingAdmissionPolicy"], objs["ValidatingAdmissionPolicyBinding"]
    account = objs["ServiceAccount"]["metadata"]
    assert policy["spec"]["matchConditions"] == [{
        "name": "the-gang-gate",
        "expression": f"request.userInfo.username == 'system:serviceaccount:{account['namespace']}:{account['name']}'"}]
    assert policy["spec"]["matchConstraints"]["resourceRules"] == [
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods"]}]
    checked = " ".join(v["expression"] for v in policy["spec"]["validations"])
    for field in ("containers", "initContainers", "tolerations", "activeDeadlineSeconds", "labels", "annotations"):
        assert f"object.spec.{field} ==" in checked or f"object.metadata.{field} ==" in checked, field
    assert binding["spec"] == {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}
    assert policy["spec"]["failurePolicy"] == "Fail"

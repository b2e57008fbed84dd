"""The AI operator add-on's values (components/addons/kuberay_operator.py, ADR 0050): no batch-scheduler
plugin even with KAI (at v1.5.2 KAI's plugin refuses every RayJob), the pinned image, its
ServiceMonitor exactly where the CRD is, and the `configuration` switch that would silently drop
every flag refused. The operator itself runs in
tests/integration/test_kuberay_local.py with these flags."""

from __future__ import annotations

from typing import Any

import pytest

from components.addons import kuberay_admission, kuberay_operator
from components.addons.graph import AddonGraphError, final_values, install_graph
from components.settings import parse_settings
from components.settings.model import Settings
from components.tables import pins

AWS: dict[str, Any] = {"platform": "aws", "environment": "dev", "region": "eu-west-1",
                       "network": {"availabilityZones": ["eu-west-1a", "eu-west-1b"]}}
EXISTING: dict[str, Any] = {"platform": "existing", "environment": "dev"}


def stack(base: dict[str, Any], addons: dict[str, Any] | None = None, **gpu_stack: Any) -> Settings:
    return parse_settings({**base, "gpuStack": {
        **gpu_stack, "addons": {"kuberayOperator": {"enabled": True}, **(addons or {})}}})





def values(s: Settings) -> dict[str, Any]:
    out: dict[str, Any] = final_values(install_graph(s), s)[kuberay_operator.NAME]
    return out


def test_off_unless_a_stack_asks_for_it() -> None:
    for base in (AWS, EXISTING):
        assert kuberay_operator.NAME not in install_graph(parse_settings(base)).names


def test_no_batch_scheduler_plugin_even_with_kai_and_the_pinned_image() -> None:
    s = stack(AWS)
    assert "kai-scheduler" in install_graph(s).names
    v = values(s)
    # Both spellings off: `enabled` is the deprecated volcano switch, `name: kai-scheduler` the plugin
    # that refuses RayJobs (kai_scheduler.go DoBatchSchedulingOnSubmission).
    assert v["batchScheduler"] == {"enabled": False, "name": ""}
    assert v["image"] == {"repository": "quay.io/kuberay/operator",
                          "tag": f"v{pins.CHARTS[kuberay_operator.NAME].version}"}
    assert v["metrics"]["serviceMonitor"]["enabled"] is True  # kube-prometheus-stack is on on aws
    assert "configuration" not in v


@pytest.mark.parametrize(("provides", "monitor"), [(["monitoring-crds"], True), ([], False)])
def test_its_servicemonitor_exactly_where_the_crd_is(provides: list[str], monitor: bool) -> None:
    v = values(stack(EXISTING, clusterProvides=provides))
    assert v["metrics"]["serviceMonitor"]["enabled"] is monitor


@pytest.mark.parametrize("enabled", [True, "true", "false", 1, "yes"])
def test_a_config_file_that_would_drop_the_flags_is_refused(enabled: Any) -> None:
    # Go templates take any non-empty string as true: "false" renders --config too.
    s = stack(AWS, {"kuberayOperator": {"enabled": True, "values": {"configuration": {"enabled": enabled}}}})
    with pytest.raises(AddonGraphError) as err:
        install_graph(s)
    assert "gpuStack.addons.kuberayOperator.values.configuration.enabled" in str(err.value)
    assert "ignores every command-line flag" in str(err.value)


@pytest.mark.parametrize("enabled", [False, 0, "", None])
def test_a_config_file_left_off_is_fine(enabled: Any) -> None:
    s = stack(AWS, {"kuberayOperator": {"enabled": True, "values": {"configuration": {"enabled": enabled}}}})
    assert values(s)["configuration"]["enabled"] == enabled


def test_the_admission_policy_comes_and_goes_with_the_operator() -> None:
    on = stack(AWS)
    assert kuberay_admission.NAME in install_graph(on).names
    assert install_graph(on).edges[kuberay_admission.NAME] == (kuberay_operator.NAME,)
    assert kuberay_admission.NAME not in install_graph(parse_settings(AWS)).names
    policy, binding = final_values(install_graph(on), on)[kuberay_admission.NAME]["objects"]
    # the operator's webhook match (config/webhook/manifests.yaml vraycluster.kb.io), denied, failing closed
    assert policy["spec"]["matchConstraints"]["resourceRules"] == [{
        "apiGroups": ["ray.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
        "resources": ["rayclusters"]}]
    assert policy["spec"]["failurePolicy"] == "Fail"
    assert binding["spec"] == {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}
    # (the rules themselves are judged by a real API server: tests/integration/test_kuberay_local.py)

"""The project's own charts: real Helm lint and render (helm-python-sdk), strict schema validation
against Kubernetes 1.34-1.36, golden files of the rendered manifests, and the charts' guards."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

# helm-python-sdk is a pinned dependency (pyproject.toml): its absence is a broken install, never a skip.
import helm_python
import kubernetes_validate
import pytest
import yaml

from components.addons import observability
from components.addons.graph import final_values, install_graph
from components.kube.charts import chart_dir, render
from tests.helpers.golden import assert_golden
from tests.helpers.k8s_schema import VERSIONS, schema_errors
from tests.unit.addons.helpers import settings

# Custom resources with no upstream schema; every other kind must validate strictly.
CRD_KINDS = {("scheduling.run.ai/v2", "Queue"), ("kai.scheduler/v1alpha1", "Topology"),
             ("monitoring.coreos.com/v1", "PrometheusRule"),
             ("monitoring.coreos.com/v1", "ServiceMonitor")}


def _defaults(chart: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((chart_dir(chart) / "values.yaml").read_text())
    return loaded


def _stack_values(addon_name: str, **raw: Any) -> dict[str, Any]:
    s = settings(**raw)
    return final_values(install_graph(s), s)[addon_name]


EDGE_QUEUES = {"queues": [
    {"name": "org", "displayName": "Org \"quoted\" & ünïcode", "priority": -5,
     "resources": {"gpu": {"quota": 0.5, "limit": 1.5, "overQuotaWeight": 0},
                   "memory": {"quota": 1000000, "limit": 2000000}}},
    {"name": "a" * 63, "parent": "org", "resources": {}},
    {"name": "leaf", "parent": "a" * 63},
]}

CASES: dict[str, tuple[str, str, dict[str, Any]]] = {
    # name: (chart, namespace, values)
    "kai-queues-default": ("kai-queues", "kai-scheduler", _defaults("kai-queues")),
    "kai-queues-stack": ("kai-queues", "kai-scheduler", _stack_values("kai-queues")),
    "kai-queues-edge": ("kai-queues", "kai-scheduler", EDGE_QUEUES),
    "kai-queues-empty": ("kai-queues", "kai-scheduler", {"queues": []}),
    "gpu-observability-default": ("gpu-observability", observability.NAMESPACE, _defaults("gpu-observability")),
    "gpu-observability-kind": ("gpu-observability", observability.NAMESPACE,
                               _stack_values("observability", platform="kind")),
    "gpu-observability-edge": ("gpu-observability", observability.NAMESPACE, {
        "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}, "interval": "1m30s"},
        "rules": {"labels": {"release": "prom"}, "gpuTemperatureCelsius": 110},
        "dashboard": {"labels": {"grafana_dashboard": "1", "team": "ml"}},
    }),
    "gpu-observability-off": ("gpu-observability", observability.NAMESPACE,
                              {"dashboard": {"enabled": False}, "rules": {"enabled": False}}),
}


@pytest.mark.parametrize("chart", ["kai-queues", "gpu-observability"])
def test_helm_lint(chart: str) -> None:
    result = helm_python.lint(str(chart_dir(chart)))
    assert result["errors"] == []
    assert [m for m in result["messages"] if m["severity"] > 1] == []  # INFO (icon) only
    assert (chart_dir(chart) / "values.schema.json").is_file()


@pytest.mark.parametrize("case", sorted(CASES))
def test_render_validates_and_matches_golden(case: str) -> None:
    chart, namespace, values = CASES[case]
    objects = render(chart, copy.deepcopy(values), release=chart, namespace=namespace)
    for obj in objects:
        key = (obj["apiVersion"], obj["kind"])
        for version in VERSIONS:
            if key in CRD_KINDS:
                with pytest.raises(kubernetes_validate.SchemaNotFoundError):
                    kubernetes_validate.validate(obj, version, strict=True)
                continue
            assert schema_errors(obj, version) is None, (version, schema_errors(obj, version))
    text = yaml.safe_dump_all(objects, sort_keys=True, allow_unicode=True)
    assert_golden(Path("charts") / chart / f"{case}.yaml", text)


def test_queue_objects_follow_the_settings() -> None:
    objects = render("kai-queues", _stack_values("kai-queues", queues=[
        {"name": "org", "gpu": {"quota": 4}},
        {"name": "smoke-test", "parent": "org", "priority": 100, "gpu": {"quota": 1, "limit": 2}},
    ]), release="kai-queues", namespace="kai-scheduler")
    by_name = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Queue"}
    assert set(by_name) == {"org", "smoke-test", "default-queue"}  # KAI's fallback leaf joins the tree
    assert by_name["default-queue"]["spec"]["parentQueue"] == "org"
    assert by_name["smoke-test"]["spec"]["parentQueue"] == "org"
    assert by_name["smoke-test"]["spec"]["priority"] == 100
    assert by_name["smoke-test"]["spec"]["resources"]["gpu"] == {"quota": 1, "limit": 2, "overQuotaWeight": 1}
    assert "parentQueue" not in by_name["org"]["spec"]


def test_the_topology_follows_the_settings_broadest_level_first() -> None:
    """On aws with KAI: one Topology of the levels the CCM labels (a p5.48xlarge pool: 3 network
    layers); off, or elsewhere, none."""
    objects = render("kai-queues", _stack_values("kai-queues", platform="aws", region="us-east-1",
                                                 nodePools=[{"name": "train", "instanceType": "p5.48xlarge"}]),
                     release="kai-queues", namespace="kai-scheduler")
    [topology] = [o for o in objects if o["kind"] == "Topology"]
    assert topology["apiVersion"] == "kai.scheduler/v1alpha1" and topology["metadata"]["name"] == "aws-network"
    labels = [lv["nodeLabel"] for lv in topology["spec"]["levels"]]
    assert labels[0] == "topology.kubernetes.io/zone" and labels[-1] == "kubernetes.io/hostname"
    assert "topology.k8s.aws/network-node-layer-3" in labels
    off = render("kai-queues", _stack_values("kai-queues", platform="aws", region="us-east-1",
                                             gpuStack={"topology": {"enabled": False}}),
                 release="kai-queues", namespace="kai-scheduler")
    assert not [o for o in off if o["kind"] == "Topology"]
    kind = render("kai-queues", _stack_values("kai-queues", platform="kind"), release="kai-queues",
                  namespace="kai-scheduler")
    assert not [o for o in kind if o["kind"] == "Topology"]


def test_dashboard_and_alerts_cover_the_metrics() -> None:
    objects = render("gpu-observability", _defaults("gpu-observability"), release="o", namespace="o")
    dashboard = next(o for o in objects if o["kind"] == "ConfigMap")["data"]["gpu-overview.json"]
    for metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE",
                   "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS", "label_kai_scheduler_queue"):
        assert metric in dashboard
    rules = next(o for o in objects if o["kind"] == "PrometheusRule")["spec"]["groups"][0]["rules"]
    assert {r["alert"] for r in rules} == {"GPUFallenOffTheBus", "GPUXidError", "GPUTemperatureHigh",
                                           "GPUExporterDown"}


@pytest.mark.parametrize(("chart", "values", "message"), [
    ("kai-queues", {"queues": [{"name": "a"}, {"name": "a"}]}, "listed twice"),
    ("kai-queues", {"queues": [{"name": "a", "parent": "nope"}]}, "parent"),
    ("kai-queues", {"queues": [{"name": "A_bad"}]}, "pattern"),
    ("kai-queues", {"queues": [{"name": "a", "resources": {"gpu": {"quota": -2}}}]}, "minimum"),
    ("kai-queues", {"queues": [{"name": "a", "typo": 1}]}, "typo"),
    ("gpu-observability", {"rules": {"gpuTemperatureCelsius": 500}}, "maximum"),
    ("gpu-observability", {"serviceMonitor": {"interval": "soon"}}, "pattern"),
    ("gpu-observability", {"unknown": True}, "unknown"),
])
def test_bad_values_fail_rendering(chart: str, values: dict[str, Any], message: str) -> None:
    with pytest.raises(Exception, match=message):
        render(chart, values, release=chart, namespace="x")

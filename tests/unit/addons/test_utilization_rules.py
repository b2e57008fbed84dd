"""The utilization rules and the exporter's DRA pod mapping (issue 43, docs/utilization.md): who
turns the mapping on, what the observability chart then grants and alerts on, per pool."""

from __future__ import annotations

from typing import Any

import pytest

from components.addons.graph import final_values, install_graph
from components.kube.charts import render
from tests.unit.aws.conftest import settings_for


def values(stack: str, change: Any = None) -> dict[str, Any]:
    s = settings_for(stack, change)
    return final_values(install_graph(s), s)


def rules(obs: dict[str, Any]) -> list[dict[str, Any]]:
    objs = render("gpu-observability", obs, release="observability", namespace="gpu-observability")
    rule = next(o for o in objs if o["kind"] == "PrometheusRule")
    return [r for g in rule["spec"]["groups"] for r in g["rules"]]


def test_a_chart_mode_dra_stack_maps_pods_and_grants_the_exporter_resourceslices() -> None:
    v = values("aws-dev")
    dcgm = v["gpu-operator"]["dcgmExporter"]
    assert {"name": "KUBERNETES_ENABLE_DRA", "value": "true"} in dcgm["env"] and dcgm["enablePodUID"] is True
    rbac = v["observability"]["dcgmExporter"]["draRbac"]
    assert rbac == {"enabled": True, "serviceAccount": "nvidia-dcgm-exporter", "namespace": "gpu-operator"}
    objs = render("gpu-observability", v["observability"], release="o", namespace="gpu-observability")
    role = next(o for o in objs if o["kind"] == "ClusterRole")
    assert role["rules"] == [{"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
                              "verbs": ["get", "list", "watch"]}]


@pytest.mark.parametrize("change", [
    lambda raw: raw.setdefault("gpuStack", {}).update(draManagedBy="operator"),  # the GPUCluster's exporter maps DRA
    lambda raw: raw.setdefault("gpuStack", {}).update(allocation="device-plugin", migStrategy="none"),
], ids=["gpucluster", "device-plugin"])
def test_where_the_operators_exporter_has_no_dra_pods_to_map_nothing_is_added(change: Any) -> None:
    v = values("aws-dev", change)
    assert "env" not in v["gpu-operator"]["dcgmExporter"]
    assert v["observability"]["dcgmExporter"]["draRbac"]["enabled"] is False


def test_each_pool_gets_its_idle_node_alert_after_its_own_delay() -> None:
    v = values("aws-elastic")["observability"]["utilization"]
    s = settings_for("aws-elastic")
    for pool in s.node_pools:
        entry = next(p for p in v["pools"] if p["name"] == pool.name)
        if pool.autoscaling is None:
            assert entry["idleFor"] == "24h"
        else:  # the autoscaler should have removed it by scaleDownAfter; 5 minutes' grace
            minutes = int(pool.autoscaling.scale_down_after.removesuffix("m"))
            assert entry["idleFor"] == f"{minutes * 60 + 300}s"
    alerts = [r for r in rules(values("aws-elastic")["observability"]) if r.get("alert") == "GPUNodeUnallocated"]
    assert sorted(a["labels"]["pool"] for a in alerts) == sorted(p["name"] for p in v["pools"])
    assert all(f'pool="{a["labels"]["pool"]}"' in a["expr"] for a in alerts)


def test_the_idle_gpu_alert_waits_its_hour_and_names_the_holder() -> None:
    (idle,) = [r for r in rules(values("aws-dev")["observability"]) if r.get("alert") == "GPUAllocatedButIdle"]
    assert idle["for"] == "1h" and "< 0.01" in idle["expr"]
    assert "{{ $labels.holder_namespace }}/{{ $labels.holder_pod }}" in idle["annotations"]["summary"]


def test_no_rule_reads_the_node_from_one_spelling_of_the_exporters_label_only() -> None:
    # dcgm-exporter 4.8.3 writes `hostname`, earlier ones and the fake-gpu-operator `Hostname`.
    for r in rules(values("aws-dev")["observability"]):
        text = str(r)
        if "Hostname" in text:
            assert "hostname" in text.replace("Hostname", ""), r

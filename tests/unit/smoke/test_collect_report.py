"""Collection pieces (claim recorder, DCGM lookup) and the report (CTRF shape, table, diagnostics)."""

from __future__ import annotations

import copy
import json
from typing import Any

from components.smoke import report
from components.smoke.collect import ClaimRecorder, dcgm_metrics
from components.smoke.gateway import KubeError
from components.smoke.verifier import verify
from tests.unit.smoke import fixtures as fx


class Stub:
    """Just the Gateway calls dcgm_metrics and ClaimRecorder.sync make."""

    def __init__(self, lists: dict[str, list[dict[str, Any]]], texts: dict[str, str]) -> None:
        self.lists, self.texts, self.paths = lists, texts, []

    def list(self, api_version: str, kind: str, namespace: str | None = None, **kw: str) -> Any:
        return copy.deepcopy(self.lists.get(kind, [])), "1"

    def get_text(self, api_path: str) -> str:
        self.paths.append(api_path)
        if api_path not in self.texts:
            raise KubeError(503, "no endpoints available")
        return self.texts[api_path]


def _exporter(nodes: dict[str, str]) -> Stub:
    svc = {"metadata": {"name": "nvidia-dcgm-exporter", "namespace": "gpu-operator"},
           "spec": {"ports": [{"name": "gpu-metrics", "port": 9400, "targetPort": 9400}]}}
    eps = [{"nodeName": n, "targetRef": {"kind": "Pod", "name": p}} for n, p in nodes.items()]
    texts = {f"/api/v1/namespaces/gpu-operator/pods/{p}:9400/proxy/metrics": fx.dcgm_metrics(n, [fx.gpu_uuid(n, 0)])
             for n, p in nodes.items() if p != "broken"}
    return Stub({"Service": [svc], "EndpointSlice": [{"endpoints": eps}]}, texts)


def test_dcgm_metrics_per_node_through_the_pod_proxy() -> None:
    gw = _exporter({fx.NODES[0]: "dcgm-a", fx.NODES[1]: "dcgm-b", "cpu-node": "dcgm-c"})
    metrics, note = dcgm_metrics(gw, set(fx.NODES))  # type: ignore[arg-type]
    assert metrics is not None and set(metrics) == set(fx.NODES)
    assert f'UUID="{fx.gpu_uuid(fx.NODES[0], 0)}"' in metrics[fx.NODES[0]]
    assert note == "nvidia-dcgm-exporter in gpu-operator"
    assert not any("dcgm-c" in p for p in gw.paths)  # only nodes holding the test's GPUs


def test_dcgm_unreadable_endpoint_is_noted_and_missing_service_is_none() -> None:
    metrics, note = dcgm_metrics(_exporter({fx.NODES[0]: "broken"}), {fx.NODES[0]})  # type: ignore[arg-type]
    assert metrics == {} and "unreadable" in note and "503: no endpoints available" in note
    assert dcgm_metrics(Stub({}, {}), {fx.NODES[0]}) == (None, "no nvidia-dcgm-exporter Service found")  # type: ignore[arg-type]


def test_recorder_keeps_the_allocation_after_release_and_deletion() -> None:
    claim = fx.claim("p", fx.NODES[0], "gpu-0")
    rec = ClaimRecorder(Stub({"ResourceClaim": []}, {}), "ns", "resource.k8s.io/v1")  # type: ignore[arg-type]
    claim["metadata"]["resourceVersion"] = "1"
    rec.record(claim, "ADDED")
    released = copy.deepcopy(claim)
    released["status"] = {}
    released["metadata"]["resourceVersion"] = "2"
    rec.record(released, "MODIFIED")
    rec.record(released, "DELETED")
    assert rec.claims()[0]["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert [h["type"] for h in rec.history()] == ["ADDED", "MODIFIED", "DELETED"]
    rec.record(released, "MODIFIED")  # same version again (a list after the watch): not history
    assert len(rec.history()) == 3
    assert rec.wait_for({"p-gpu-9sd8f"}, 0.01) is True
    assert rec.wait_for({"other"}, 0.01) is False


def test_ctrf_document_shape() -> None:
    w = fx.real_world()
    results = verify(w.exp, w.snap)
    doc = report.build(results, w.exp, start_ms=1000, stop_ms=4500, phases=[{"case": "gpus"}])
    assert doc["reportFormat"] == "CTRF" and doc["specVersion"] == "0.0.0"
    r = doc["results"]
    assert r["tool"] == {"name": "ck8s-gpu-smoke"}
    s = r["summary"]
    assert (s["tests"], s["passed"], s["failed"], s["skipped"], s["pending"], s["other"]) == (27, 11, 0, 16, 0, 0)
    assert (s["start"], s["stop"]) == (1000, 4500)
    assert {t["status"] for t in r["tests"]} <= {"passed", "failed", "skipped"}
    assert all(isinstance(t["duration"], float) for t in r["tests"])
    assert report.passed(doc)
    json.dumps(doc)


def test_nothing_passed_is_not_a_pass() -> None:
    doc = {"results": {"summary": {"failed": 0, "passed": 0}}}
    assert report.passed(doc) is False


def test_table_and_failure_message_name_the_broken_hop() -> None:
    w = fx.real_world()
    w.snap.device_classes = []
    results = verify(w.exp, w.snap)
    doc = report.build(results, w.exp, start_ms=0, stop_ms=2000, diagnostics=report.diagnostics(w.snap, w.exp))
    table = report.table(doc, width=100)
    lines = table.splitlines()
    assert lines[0].split() == ["CHECK", "HOP", "RESULT", "MS", "DETAIL"]
    assert any(line.startswith("device-class") and " FAIL " in line for line in lines)
    assert all(len(line) <= 100 for line in lines[:-1])
    assert lines[-1] == f"10 passed, 1 failed, 16 skipped in 2.0s (run {fx.RUN})"
    msg = report.failure_message(doc)
    assert msg.splitlines()[0] == f"GPU smoke test failed: 1 check(s) failed (run {fx.RUN}, namespace {fx.NS})"
    assert "  device-class [DeviceClass]:" in msg and "DeviceClass gpu.nvidia.com does not exist" in msg
    diag = doc["results"]["extra"]["diagnostics"]
    assert diag["deviceClasses"] == [] and len(diag["pods"]) == 2 and diag["slices"][0]["devices"][0]["uuid"]
    assert diag["logs"][f"{w.pods[0]}/probe"][-1] == "CK8S-SMOKE end rc=0"
    json.dumps(doc)


def test_failure_message_caps_long_problem_lists() -> None:
    w = fx.real_world()
    results = verify(w.exp, w.snap)
    results[0].status, results[0].details = "failed", [f"problem {i}" for i in range(20)]
    doc = report.build(results, w.exp, start_ms=0, stop_ms=1)
    msg = report.failure_message(doc, limit=5)
    assert "    - problem 4" in msg and "problem 5" not in msg and "    - ... 15 more" in msg


def test_every_check_has_a_next_step_and_the_failure_message_ends_with_them() -> None:
    from components.smoke.next_steps import NEXT_STEP, RERUN

    w = fx.real_world()
    results = verify(w.exp, w.snap)
    assert {r.name for r in results} <= set(NEXT_STEP), {r.name for r in results} - set(NEXT_STEP)
    w.snap.device_classes = []
    doc = report.build(verify(w.exp, w.snap), w.exp, start_ms=0, stop_ms=1)
    tail = report.failure_message(doc).splitlines()[-3:]
    assert tail == ["Next:", "  device-class: " + NEXT_STEP["device-class"].format(ns=fx.NS), RERUN]

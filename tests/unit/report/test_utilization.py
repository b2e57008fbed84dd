"""The utilization report's counting (components/report): known workloads give known GPU-hours."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest

from components.cli import report as cli
from components.report import sources
from components.report.utilization import NO_QUEUE, DevicePoint, DeviceTrack, Holder, NodeSpan, compute, share_of

H = 3600.0
STEP = 60.0
A, B = Holder("team-a", "train-0"), Holder("team-b", "serve-0")


def track(node: str, uuid: str, points: list[tuple[float, float, tuple[Holder, ...]]], profile: str = "",
          gi: str = "") -> DeviceTrack:
    return DeviceTrack(node, uuid, gi, profile, tuple(DevicePoint(t, b, h) for t, b, h in points))


def minutes(first: int, last: int, busy: float, *holders: Holder) -> list[tuple[float, float, tuple[Holder, ...]]]:
    return [(m * STEP, busy, holders) for m in range(first, last)]


def test_a_known_day_gives_known_gpu_hours_per_pool_and_queue() -> None:
    # Window: 2 hours. Pool `h100`: one 8-GPU node all along; pool `l4`: one 4-GPU node for the 2nd hour.
    nodes = [NodeSpan("n1", "h100", 8, -5 * H), NodeSpan("n2", "l4", 4, 1 * H, None)]
    devices = [
        # GPU 0 of n1: team-a trains for an hour at 80 %, then it sits allocated and idle for 30 min.
        track("n1", "GPU-0", minutes(0, 60, 0.8, A) + minutes(60, 90, 0.0, A) + minutes(90, 120, 0.0)),
        # a 3g.40gb instance on n1: team-b serves for 2 hours at 50 % (3/7 of a GPU).
        track("n1", "GPU-1", minutes(0, 120, 0.5, B), profile="3g.40gb", gi="2"),
        # GPU 0 of n2: shared by both teams (time-slicing) for 30 min, fully busy.
        track("n2", "GPU-9", minutes(60, 90, 1.0, A, B)),
    ]
    r = compute(0, 2 * H, STEP, nodes, devices, {A: "team-a", B: "team-b"})
    h100, l4 = r.pools["h100"], r.pools["l4"]
    assert h100.paid == pytest.approx(16) and l4.paid == pytest.approx(4)
    assert h100.allocated == pytest.approx(1.5 + 2 * 3 / 7)
    assert h100.busy == pytest.approx(0.8 + 2 * 3 / 7 * 0.5)
    assert h100.idle_allocated == pytest.approx(0.5)
    assert (l4.allocated, l4.busy) == (pytest.approx(0.5), pytest.approx(0.5))
    # Queues: a shared device's time is split between its holders.
    assert r.queues["team-a"].allocated == pytest.approx(1.5 + 0.25)
    assert r.queues["team-b"].allocated == pytest.approx(2 * 3 / 7 + 0.25)
    assert r.queues["team-a"].idle_allocated == pytest.approx(0.5)
    assert r.total.paid == pytest.approx(20)
    doc = r.as_dict()
    assert doc["pools"]["h100"]["allocatedOfPaid"] == pytest.approx((1.5 + 6 / 7) / 16, abs=1e-4)
    assert r.idle_now == []  # GPU-0 was released before the end


def test_a_gpu_held_and_idle_at_the_end_is_named_with_how_long() -> None:
    devices = [track("n1", "GPU-0", minutes(0, 30, 0.9, A) + minutes(30, 120, 0.0, A))]
    r = compute(0, 2 * H, STEP, [NodeSpan("n1", "p", 1, 0)], devices, {})
    (idle,) = r.idle_now
    assert (idle.node, idle.pool, idle.holders, idle.queues) == ("n1", "p", (A,), (NO_QUEUE,))
    assert idle.idle_seconds == pytest.approx(90 * 60)


@pytest.mark.parametrize(("profile", "share"), [("", 1.0), ("1g.10gb", 1 / 7), ("3g.40gb", 3 / 7),
                                                 ("7g.80gb", 1.0), ("1c.3g.40gb", 3 / 7), ("1g.10gb+me", 1 / 7)])
def test_a_mig_instance_counts_by_its_compute_slices(profile: str, share: float) -> None:
    assert share_of(profile) == pytest.approx(share)


def test_samples_outside_the_window_and_a_step_past_its_end_do_not_count() -> None:
    devices = [track("n1", "GPU-0", [(-STEP, 1.0, (A,)), (H - 30, 1.0, (A,)), (H, 1.0, (A,))])]
    r = compute(0, H, STEP, [], devices, {})
    assert r.pools["(no pool)"].allocated == pytest.approx(30 / H)  # the last sample covers 30 s, not 60


# --- what Prometheus answers ------------------------------------------------------------------------


def series(metric: dict[str, str], values: list[tuple[float, float]]) -> dict[str, Any]:
    return {"metric": metric, "values": [[t, str(v)] for t, v in values]}


GPU = {"gpu": "0", "UUID": "GPU-a", "hostname": "n1", "modelName": "NVIDIA H100 80GB HBM3",
       "namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-x", "service": "nvidia-dcgm-exporter"}


def test_a_held_series_names_its_holder_however_the_scrape_renamed_its_labels() -> None:
    held = {**GPU, "dra_claim_name": "c", "exported_namespace": "team-a", "exported_pod": "train-0"}
    honored = {**GPU, "dra_claim_name": "c", "namespace": "team-a", "pod": "train-0"}  # honorLabels: true
    assert sources.holder(held) == sources.holder(honored) == A
    assert sources.holder(GPU) is None  # the exporter's own pod is not a holder


def test_device_tracks_merge_clones_and_fall_back_to_gpu_util() -> None:
    mig = {**GPU, "GPU_I_ID": "3", "GPU_I_PROFILE": "1g.10gb", "Hostname": "n1"}
    del mig["hostname"]  # dcgm-exporter before 4.8.3 (and the fake-gpu-operator) spell it Hostname
    busy = [
        series({**GPU, "dra_claim_name": "c", "exported_namespace": "team-a", "exported_pod": "train-0",
                "exported_container": "a"}, [(0, 0.5), (60, 0.5)]),
        series({**GPU, "dra_claim_name": "c", "exported_namespace": "team-a", "exported_pod": "train-0",
                "exported_container": "b"}, [(0, 0.5), (60, 0.5)]),
        series(mig, [(0, 0.25)]),
    ]
    util = [series({**GPU, "UUID": "GPU-b"}, [(0, 40.0)]), series(GPU, [(0, 99.0)])]
    tracks = {(t.uuid, t.instance): t for t in sources.device_tracks(busy, util)}
    a = tracks[("GPU-a", "")]
    assert [(p.t, p.busy, p.holders) for p in a.points] == [(0, 0.5, (A,)), (60, 0.5, (A,))]  # profiling field won
    assert tracks[("GPU-a", "3")].profile == "1g.10gb" and tracks[("GPU-a", "3")].node == "n1"
    assert tracks[("GPU-b", "")].points[0].busy == pytest.approx(0.4)  # no profiling field: GPU_UTIL / 100


def test_node_spans_take_live_nodes_from_the_api_and_gone_ones_from_kube_state_metrics() -> None:
    live = [{"metadata": {"name": "n1", "creationTimestamp": "1970-01-01T01:00:00Z",
                          "labels": {"ck8s-gpu/pool": "h100", "node.kubernetes.io/instance-type": "p5.48xlarge"}}},
            {"metadata": {"name": "cp", "creationTimestamp": "1970-01-01T00:00:00Z", "labels": {}}}]
    created = [series({"node": "n1"}, [(3600, 3600.0)]),
               series({"node": "gone"}, [(600, 500.0), (1200, 500.0)]),
               series({"node": "nolabel"}, [(600, 500.0)])]
    labels = [series({"node": "gone", "label_ck8s_gpu_pool": "l4",
                      "label_node_kubernetes_io_instance_type": "g6.12xlarge"}, [(600, 1.0)])]
    spans, notes = sources.node_spans(live, created, labels, sources.default_gpus({}), [], 60)
    assert [(s.node, s.pool, s.gpus, s.start, s.end) for s in spans] == [
        ("gone", "l4", 4, 500.0, 1260.0), ("n1", "h100", 8, 3600.0, None)]
    assert any("nolabel" in n for n in notes)


# --- the command -------------------------------------------------------------------------------------


def args(**kw: Any) -> argparse.Namespace:
    base = {"kubeconfig": None, "context": None, "prometheus_url": "http://prom:9090", "since": "2h",
            "until": "7200", "step": "60s", "idle_below": 0.01, "stack": None, "json": True, "out": None}
    return argparse.Namespace(**{**base, **kw})


class FakeProm:
    def __init__(self, url: str) -> None:
        self.url = url

    def query_range(self, query: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        if query == sources.BUSY:
            return [series({**GPU, "dra_claim_name": "c", "exported_namespace": "team-a", "exported_pod": "train-0"},
                           [(t * 60.0, 1.0) for t in range(60)])]
        if query == "kube_node_created":
            return [series({"node": "n1"}, [(0, 0.0), (7140, 0.0)])]
        if query == "kube_node_labels":
            return [series({"node": "n1", "label_ck8s_gpu_pool": "h100",
                            "label_node_kubernetes_io_instance_type": "p5.48xlarge"}, [(0, 1.0)])]
        return []


def test_the_command_prints_the_json_report(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    rc = cli.execute(args(out=tmp_path / "r.json"), prometheus=FakeProm, out=out, err=err)
    assert rc == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    assert doc["pools"]["h100"]["paidGpuHours"] == pytest.approx(16)
    assert doc["pools"]["h100"]["allocatedGpuHours"] == pytest.approx(1)
    assert json.loads((tmp_path / "r.json").read_text()) == doc


def test_bad_arguments_are_all_named_with_exit_2() -> None:
    err = io.StringIO()
    rc = cli.execute(args(since="yesterday", step="0s", until="noon", idle_below=2.0, prometheus_url=None),
                     err=err)
    text = err.getvalue()
    assert rc == 2
    for flag in ("--since", "--step", "--until", "--idle-below", "--kubeconfig or --prometheus-url"):
        assert flag in text, text
    assert "Traceback" not in text


def test_an_unreachable_prometheus_exits_1_naming_it() -> None:
    err = io.StringIO()
    rc = cli.execute(args(prometheus_url="http://127.0.0.1:9"), err=err)
    assert rc == 1 and "cannot reach Prometheus at http://127.0.0.1:9" in err.getvalue()


def test_the_tables_show_each_pool_queue_and_the_idle_gpu() -> None:
    from components.report.utilization import render

    devices = [track("n1", "GPU-0", minutes(0, 60, 0.0, A))]
    text = render(compute(0, H, STEP, [NodeSpan("n1", "h100", 8, 0)], devices, {A: "team-a"}))
    assert "h100" in text and "team-a" in text and "TOTAL" in text
    assert "n1 (h100) GPU-0: team-a/train-0 [team-a] idle 60 min" in text


def test_the_report_command_is_registered_with_its_help() -> None:
    from components.cli.main import build_parser

    parsed = build_parser().parse_args(["report", "utilization", "--prometheus-url", "http://p", "--since", "1h"])
    assert parsed.func is cli.run and parsed.since == "1h"


@pytest.mark.parametrize("body", ["[]", "<html>proxy error</html>", '{"status": "error", "errorType": "bad_data", '
                                  '"error": "parse error at char 3"}'])
def test_anything_but_a_prometheus_success_is_one_named_error(body: str) -> None:
    with pytest.raises(sources.PrometheusError) as e:
        sources._decode(body, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
    assert str(e.value).startswith("DCGM_FI_PROF_GR_ENGINE_ACTIVE: ")

"""ai_inference, ai_service_metrics and pod_autoscaling read from one run of the smoke test's
inference case (components/conformance/inference.py): each requirement by its own hops, `model
replicas` first for all; an absent add-on is Not Implemented with the setting to turn on; a case
that cannot run leaves the status declared, never passed."""

from __future__ import annotations

import argparse
import io
from pathlib import Path
from typing import Any

import pytest

from components.cli import conformance as cli
from components.conformance import inference as inf
from components.conformance.common import Context
from components.smoke.cases import inference as case
from tests.unit.conformance.test_procedures import FakeApi, run_args

IMAGE = "registry.local/ck8s-gpu/probe:dev@sha256:" + "a" * 64
ALL = ("ai_inference", "ai_service_metrics", "pod_autoscaling")


def served(api: FakeApi) -> FakeApi:
    """The three add-ons' APIs as a cluster with them serves them."""
    ok = {"status": {"conditions": [{"type": "Accepted", "status": "True"}]}}
    api.paths.update({
        "/apis/gateway.networking.k8s.io/v1/gatewayclasses": {"items": [{"metadata": {"name": "traefik"}, **ok}]},
        "/apis/monitoring.coreos.com/v1": {"resources": []},
        "/apis/monitoring.coreos.com/v1/prometheuses": {"items": [{"metadata": {"name": "k8s"}}]},
        "/apis/keda.sh/v1alpha1": {"resources": []},
        "/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.external.metrics.k8s.io": {
            "status": {"conditions": [{"type": "Available", "status": "True"}]}},
    })
    return api


def context(api: FakeApi, checks: dict[str, Any] | None = None, **kw: Any) -> Context:
    c = Context(api, "probe:1", "conf", 30.0, lambda _m: None, **kw)  # type: ignore[arg-type]
    if checks is not None:
        c.found[inf.CACHE] = checks
    return c


def report(**status: str) -> dict[str, Any]:
    """The case's checks by id, each passed unless named (hop name -> status)."""
    return {check: {"name": check, "status": status.get(hop, "passed"), "message": f"{hop}: what the verifier said"}
            for check, hop in case.HOPS}


def test_each_requirement_passes_on_its_own_hops() -> None:
    c = context(served(FakeApi()), report())
    for rid in ALL:
        r = getattr(inf, rid)(c)
        assert (r.status, r.outcome) == ("Implemented", "passed"), r
        assert "model replicas" in r.notes


def test_a_failed_hop_fails_its_requirement_only_and_names_what_the_verifier_said() -> None:
    c = context(served(FakeApi()), report(**{"workload metrics": "failed", "pod autoscaling": "skipped"}))
    assert inf.ai_inference(c).outcome == "passed"
    metrics, scaling = inf.ai_service_metrics(c), inf.pod_autoscaling(c)
    assert (metrics.status, metrics.outcome) == ("Not Implemented", "failed")
    assert "workload metrics: what the verifier said" in metrics.notes
    assert scaling.outcome == "failed" and "pod autoscaling" in scaling.notes  # not reached is not proven
    c = context(served(FakeApi()), report(**{"model replicas": "failed"}))
    assert {getattr(inf, rid)(c).outcome for rid in ALL} == {"failed"}


@pytest.mark.parametrize(("path", "rid", "setting"), [
    ("/apis/gateway.networking.k8s.io/v1/gatewayclasses", "ai_inference", "inferenceGateway"),
    ("/apis/monitoring.coreos.com/v1/prometheuses", "ai_service_metrics", "kubePrometheusStack"),
    ("/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.external.metrics.k8s.io", "pod_autoscaling", "keda"),
])
def test_an_absent_add_on_is_not_implemented_naming_its_setting_without_a_run(path: str, rid: str,
                                                                              setting: str) -> None:
    api = served(FakeApi())
    del api.paths[path]
    c = context(api)  # nothing cached: a run would render and install
    r = getattr(inf, rid)(c)
    assert (r.status, r.outcome) == ("Not Implemented", "skipped") and setting in r.notes
    assert inf.CACHE not in c.found


def test_without_a_model_server_image_the_case_does_not_run_and_nothing_passes() -> None:
    api = served(FakeApi())
    c = context(api)
    r = inf.pod_autoscaling(c)
    assert (r.status, r.outcome) == ("Implemented", "skipped")
    assert "not proven" in r.notes and "--image" in r.notes and "smokeTest.image" in r.notes
    assert not api.objects  # nothing created


def test_the_case_runs_alone_with_the_command_s_image_prometheus_and_namespace() -> None:
    settings, why = inf._settings(context(FakeApi(), custom_image=IMAGE, prometheus_url="http://127.0.0.1:9090"))
    assert why == "" and settings is not None
    s = settings.smoke_test
    assert s.inference.enabled and s.image == IMAGE and s.inference.prometheus_url == "http://127.0.0.1:9090"
    assert (s.gpus, s.gang, s.shared_claim, s.mig) == (1, False, False, False)
    assert not (s.nvlink_group.enabled or s.compute_domain.enabled or s.first_available.enabled)
    assert s.namespace == "conf-inference"
    _, why = inf._settings(context(FakeApi(), custom_image="probe:1"))  # not pinned by digest
    assert "smokeTest.image" in why


def test_bad_prometheus_url_and_stack_file_are_named(tmp_path: Path) -> None:
    err = io.StringIO()
    rc = cli.execute(run_args(tmp_path, prometheus_url="ftp://x", stack=tmp_path / "Pulumi.none.yaml"),
                     connect=lambda *_: FakeApi(), out=io.StringIO(), err=err)
    assert rc == 2
    assert "--prometheus-url ftp://x" in err.getvalue() and "--stack" in err.getvalue(), err.getvalue()


def test_argparse_knows_the_new_options() -> None:
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    args = parser.parse_args(["conformance", "run", "--kubeconfig", "kc", "--stack", "s.yaml",
                              "--prometheus-url", "http://p:9090"])
    assert (args.stack, args.prometheus_url) == (Path("s.yaml"), "http://p:9090")


def test_the_three_procedures_read_the_add_ons_once() -> None:
    class Counting(FakeApi):
        asked: list[str] = []

        def request(self, method: str, api_path: str, **kw: Any) -> Any:
            self.asked.append(api_path)
            return super().request(method, api_path, **kw)

    api = served(Counting())
    c = context(api, report())
    for rid in ALL:
        getattr(inf, rid)(c)
    assert api.asked.count("/apis/gateway.networking.k8s.io/v1/gatewayclasses") == 1, api.asked

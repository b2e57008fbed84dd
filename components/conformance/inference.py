"""ai_inference, ai_service_metrics and pod_autoscaling, proven by one run of the smoke test's own
`inference` case (components/smoke/cases/inference.py, docs/smoke-test.md) against the live cluster.

The case is what `pulumi up` runs, rendered by the same chart and judged by the same verifier: two
backends of the model-server stand-in, each replica with its own GPU claim, behind the inference
gateway's Gateway; a weighted split and a header route through it; the stable backend autoscaled by
KEDA on the servers' own queue metric, which Prometheus finds through the case's PodMonitor. Its hops
map onto the checklist (cncf/k8s-ai-conformance docs/AIConformance-1.35.yaml):

- ai_inference ("Gateway API ... advanced traffic management for inference services ... weighted
  traffic splitting, header-based routing"): `inference route`, `weighted split`, `header route`;
- ai_service_metrics ("discover and collect metrics from workloads that expose them in a standard
  format"): `workload metrics`, the HPA reading the servers' own metric, which only reaches
  Prometheus through the PodMonitor the workload brought (no change to Prometheus' configuration);
- pod_autoscaling ("HPA ... for pods that use accelerators ... based on custom metrics relevant to
  AI/ML workloads"): `pod autoscaling`, out to maxReplicas GPU replicas on the driven queue and back.

`model replicas` comes first for all three: no replica, nothing proven. One run serves the three
procedures (cached in the context). A requirement whose add-on is absent is Not Implemented with the
setting to turn on, without a run; where the case cannot run at all (no model-server image), the
status is declared from what is installed.
"""

from __future__ import annotations

import secrets
from typing import Any

from pydantic import ValidationError

from ..facts.cluster import live_cluster_facts
from ..kube.charts import render
from ..settings.model import Settings, SmokeTestSettings
from ..smoke.cases import inference as case
from ..smoke.gateway import KubeError, KubeUnreachable
from ..smoke.inference_run import KEDA_API
from ..smoke.plan import smoke_plan
from ..smoke.run import RunSpec, install, namespace_labels, run_smoke
from ..smoke.values import SmokeConfigError
from ..tables import pins
from .common import Context, Log, get_json, items
from .evidence import Result

HOPS: dict[str, tuple[tuple[str, str], ...]] = {
    "ai_inference": (case.ROUTE, case.SPLIT, case.HEADER_HOP),
    "ai_service_metrics": (case.METRICS,),
    "pod_autoscaling": (case.AUTOSCALE,),
}
PROVEN = {
    "ai_inference": "a Gateway API HTTPRoute on the inference gateway split requests between two GPU-backed model "
                    "backends by weight and sent a model header's requests to its backend",
    "ai_service_metrics": "Prometheus collected the model servers' own metric through the PodMonitor the workload "
                          "brought, with no change to its configuration, and the autoscaler read it",
    "pod_autoscaling": "a HorizontalPodAutoscaler (KEDA) scaled a GPU-backed Deployment out on the servers' queue "
                       "metric, each new replica with its own GPU claim, and back",
}
CACHE = "inference_case"
PREREQUISITES = "inference_prerequisites"


def _available(ctx: Context, apiservice: str) -> bool:
    got = get_json(ctx.gw, f"/apis/apiregistration.k8s.io/v1/apiservices/{apiservice}") or {}
    return any(c.get("type") == "Available" and c.get("status") == "True"
               for c in (got.get("status") or {}).get("conditions") or [])


def prerequisites(ctx: Context) -> dict[str, tuple[str, str]]:
    """Per requirement: (what is installed, or "") and what to set when it is not; read once per run
    (the three procedures ask in turn)."""
    if PREREQUISITES not in ctx.found:
        ctx.found[PREREQUISITES] = _read_prerequisites(ctx)
    return dict(ctx.found[PREREQUISITES])


def _read_prerequisites(ctx: Context) -> dict[str, tuple[str, str]]:
    classes = items(ctx.gw, "/apis/gateway.networking.k8s.io/v1/gatewayclasses")
    accepted = [c["metadata"]["name"] for c in classes if any(x.get("type") == "Accepted" and x.get("status") == "True"
                                                              for x in (c.get("status") or {}).get("conditions", []))]
    monitors = get_json(ctx.gw, "/apis/monitoring.coreos.com/v1") is not None and bool(
        items(ctx.gw, "/apis/monitoring.coreos.com/v1/prometheuses"))
    keda = get_json(ctx.gw, f"/apis/{KEDA_API}") is not None and _available(
        ctx, "v1beta1.external.metrics.k8s.io")
    return {
        "ai_inference": (f"GatewayClass {', '.join(accepted)} accepted" if accepted else "",
                         "no accepted GatewayClass: set gpuStack.addons.inferenceGateway"),
        "ai_service_metrics": ("a Prometheus Operator Prometheus selects PodMonitors" if monitors else "",
                               "no Prometheus Operator Prometheus: set gpuStack.addons.kubePrometheusStack"),
        "pod_autoscaling": ("KEDA's ScaledObject API and the external metrics API" if keda else "",
                            "no external metrics API for the HPA: set gpuStack.addons.keda"),
    }


def _settings(ctx: Context) -> tuple[Settings | None, str]:
    """The stack's settings with only the inference case on (one base pod beside it, and the
    gpuHealth case as the stack has it: where the driver taints devices, the verifier expects that
    case), or why the case cannot run here."""
    base = ctx.settings or Settings(platform="existing")
    smoke = base.smoke_test.model_dump()
    for key in ("nvlink_group", "compute_domain", "first_available", "all_reduce"):
        smoke[key] = {**smoke[key], "enabled": False}
    smoke.update(gpus=1, mig=False, shared_claim=False, shared_named_claim=False, gang=False,
                 namespace=f"{ctx.namespace}-inference",
                 timeout_seconds=max(base.smoke_test.timeout_seconds, int(ctx.timeout) * 3),
                 inference={**smoke["inference"], "enabled": True,
                            **({"prometheus_url": ctx.prometheus_url} if ctx.prometheus_url else {})})
    if ctx.custom_image:
        smoke["image"] = ctx.custom_image
    try:
        settings = base.model_copy(update={"smoke_test": SmokeTestSettings.model_validate(smoke)})
    except ValidationError as exc:
        return None, "the inference case cannot run: " + "; ".join(
            f"smokeTest.{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    why = [msg for _path, msg in case.problems(settings)]
    if why:
        return None, "the inference case cannot run: " + "; ".join(why) + (
            " (give the conformance command --image, or a --stack whose smokeTest.image is set)"
            if settings.smoke_test.image is None else "")
    return settings, ""


def run_case(ctx: Context) -> dict[str, Any]:
    """The case's checks by id (the CTRF tests of its report), or {"error": why} when it did not run;
    once per command run."""
    if CACHE in ctx.found:
        return dict(ctx.found[CACHE])
    settings, why = _settings(ctx)
    out: dict[str, Any] = {"error": why}
    if settings is not None:
        try:
            facts = live_cluster_facts(settings if ctx.settings is not None else None, ctx.kubernetes_minor)
            plan = smoke_plan(settings, facts, pins.image("smoke-test"), release="conformance",
                              nonce=secrets.token_hex(4), pools_known=ctx.settings is not None, dcgm=False)
            objects = render("gpu-smoke-test", plan.values, release=plan.release, namespace=plan.namespace)
            ctx.say(f"inference case {plan.run_id} in namespace {plan.namespace}")
            install(ctx.gw, objects, plan.namespace, ctx.created, labels=namespace_labels(plan.expectations))
            outcome = run_smoke(ctx.gw, RunSpec.from_dict(plan.spec()),
                                progress=lambda p: ctx.say(f"[{p.elapsed:6.1f}s] {p.hop}: {p.message}"))
            out = {t["name"]: t for t in outcome.report["results"]["tests"]}
        except SmokeConfigError as exc:
            out = {"error": f"the inference case cannot run: {exc}"}
        except (KubeError, KubeUnreachable) as exc:
            out = {"error": f"the cluster refused the inference case: {exc}"}
    ctx.found[CACHE] = out
    return dict(out)


def _prove(ctx: Context, rid: str) -> Result:
    log = Log(ctx, rid)
    present, missing = prerequisites(ctx)[rid]
    if not present:
        return Result(rid, "Not Implemented", "skipped", missing, log.lines)
    log(f"installed: {present}")
    checks = run_case(ctx)
    if "error" in checks:
        return Result(rid, "Implemented", "skipped", f"declared: {present}; not proven: {checks['error']}",
                      log.lines)
    hops = (case.REPLICAS, *HOPS[rid])
    failed = []
    for check, hop in hops:
        t = checks.get(check) or {"status": "other", "message": "the report has no such check"}
        log(f"{hop}: {t['status']}: {t.get('message', '')}")
        if t["status"] != "passed":
            failed.append(f"{hop}: {t.get('message') or t['status']}")
    if failed:
        return Result(rid, "Not Implemented", "failed", "; ".join(failed), log.lines)
    return Result(rid, "Implemented", "passed", f"{PROVEN[rid]} (the smoke test's inference case: "
                  f"{', '.join(h for _, h in hops)} passed)", log.lines)


def ai_inference(ctx: Context) -> Result:
    return _prove(ctx, "ai_inference")


def ai_service_metrics(ctx: Context) -> Result:
    return _prove(ctx, "ai_service_metrics")


def pod_autoscaling(ctx: Context) -> Result:
    return _prove(ctx, "pod_autoscaling")


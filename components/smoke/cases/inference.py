"""Case `inference` (smokeTest.inference, docs/inference.md): a model served behind the inference
gateway, from a GPU per replica to an autoscaled backend. Two Deployments of the model-server
stand-in (tools/mod/simgpu/cmd/ck8s-model-server, in the project-built probe image): `stable` and
`canary`, each replica with its own GPU through a ResourceClaimTemplate; one HTTPRoute on the
add-on's Gateway splitting by weight and routing a header to the canary; a PodMonitor; and a KEDA
ScaledObject scaling `stable` on the server's own waiting queue (vllm:num_requests_waiting) read from
Prometheus. The runner (components/smoke/inference_run.py) starts the replicas, sends the requests
through the API server's proxy to the gateway's Service, drives the queue and records what it saw in
Snapshot.inference; the checks here judge it, one hop each, in the order the runner crosses them:

- model replicas: every replica held its own claim, no device twice, and the GPUs nvidia-smi listed
  inside it are exactly its claim's (the slice's `uuid` attribute of the allocated device).
- inference route: the Gateway Accepted and Programmed, the HTTPRoute Accepted with ResolvedRefs on
  it, by the gateway's controller (components/kube/gateway_api.py: a route to a Service that does
  not exist is ResolvedRefs False, BackendNotFound).
- weighted split: `requests` requests without the header, each backend's share within 4 standard
  deviations of a binomial draw of that many at the canary's percent (a deterministic weighted
  round robin, as Traefik's, lands within one request).
- header route: every request carrying the canary's model in the header answered by the canary.
- workload metrics: before any driving, the autoscaler read a value for the stable backend's own
  metric: only the case's PodMonitor puts it in Prometheus with the namespace and pod labels the
  trigger's query selects on (the HPA's ScalingActive condition and currentMetrics).
- pod autoscaling: with the queue driven to threshold x maxReplicas the HPA scaled `stable` out to
  maxReplicas (each new replica on a GPU of its own: model replicas judges them too), and with the
  queue back at 0, in to one.

KEDA facts (github.com/kedacore/keda/v2 v2.21.1): the ScaledObject's HPA is `keda-hpa-<name>`
(controllers/keda/hpa.go getHPAName); `autoscaling.keda.sh/paused: "true"`
stops the scale loop and deletes the HPA, leaving the replicas as they are
(controllers/keda/scaledobject_controller.go reconcileScaledObject, apis/keda/v1alpha1/
scaledobject_types.go NeedToBePausedByAnnotation); removing it creates the HPA again. The chart
creates the ScaledObject paused and the Deployments at 0, so no replica holds a GPU before the run
(nor after it: the runner pauses it at 0 replicas again when it is done).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from typing import Any

from ...addons import inference_gateway as gateway_addon
from ...addons import keda as keda_addon
from ...addons import kube_prometheus_stack as monitoring_addon
from ...addons.selected import installed
from ...kube.gateway_api import gateway_problems, route_problems, split_problem
from ...settings.model import Settings
from ...settings.problems import ROOT, Problem
from ...settings.rules.queues import smoke_quota_problems
from ..checks.base import Check
from ..expectations import InferenceExpectation
from ..snapshot import Obj, allocation_results, attribute
from ..view import SKIPPED, CheckResult, View, outcome
from .base import CaseFamily, NameFn

# Chart object parts (templates/inference.yaml): "<release>-<part>-<runId>".
STABLE, CANARY = "stable", "canary"
PARTS = {STABLE: "model-stable", CANARY: "model-canary", "route": "model-route", "scaler": "model-scaler"}
CONTAINER = "server"
PORT = 8080
# The header the Gateway API Inference Extension's body-based router writes from a request's `model`
# (docs/inference.md §4): what clients and routers of this stack route on.
HEADER = "X-Gateway-Model-Name"
HEADER_REQUESTS = 20
THRESHOLD = 5  # waiting requests per replica the trigger targets
HPA_PREFIX = "keda-hpa-"  # KEDA v2.21.1 controllers/keda/hpa.go getHPAName
PAUSED_ANNOTATION = "autoscaling.keda.sh/paused"
SIGMAS = 4

# The hops, in the order the runner crosses them (components/smoke/inference_run.py): a hop after
# the one where a run stopped is "not reached".
REPLICAS = ("case-inference-replicas", "model replicas")
ROUTE = ("case-inference-route", "inference route")
SPLIT = ("case-inference-split", "weighted split")
HEADER_HOP = ("case-inference-header", "header route")
METRICS = ("case-inference-metrics", "workload metrics")
AUTOSCALE = ("case-inference-autoscale", "pod autoscaling")
HOPS = (REPLICAS, ROUTE, SPLIT, HEADER_HOP, METRICS, AUTOSCALE)


def on(s: Settings) -> bool:
    return s.smoke_test.enabled is not False and s.smoke_test.inference.enabled


def models(run_part: str) -> tuple[str, str]:
    """The model names the two backends answer for (the canary's is the header's value)."""
    return (f"smoke-{run_part}", f"smoke-{run_part}-canary")


def prometheus_url(s: Settings) -> str:
    return s.smoke_test.inference.prometheus_url or monitoring_addon.PROMETHEUS_URL


def values(s: Settings) -> dict[str, Any]:
    """charts/gpu-smoke-test `inference` (templates/inference.yaml)."""
    if not on(s):
        return {"inference": {"enabled": False}}
    c = s.smoke_test.inference
    return {"inference": {
        "enabled": True,
        "gateway": {"namespace": gateway_addon.NAMESPACE, "name": gateway_addon.GATEWAY,
                    "sectionName": gateway_addon.LISTENER},
        "header": HEADER,
        "canaryPercent": c.canary_percent,
        "port": PORT,
        "autoscaling": {"maxReplicas": c.max_replicas, "threshold": THRESHOLD, "pollingInterval": 5,
                        "prometheusUrl": prometheus_url(s)},
    }}


def expectation(s: Settings, name: NameFn, run_id: str) -> InferenceExpectation | None:
    if not on(s):
        return None
    c = s.smoke_test.inference
    return InferenceExpectation(
        stable=name(PARTS[STABLE]), canary=name(PARTS[CANARY]), route=name(PARTS["route"]),
        scaled_object=name(PARTS["scaler"]), models=models(run_id), header=HEADER,
        gateway_namespace=gateway_addon.NAMESPACE, gateway=gateway_addon.GATEWAY, listener=gateway_addon.LISTENER,
        service=gateway_addon.SERVICE, service_port=gateway_addon.SERVICE_PORT, port=PORT,
        requests=c.requests, header_requests=HEADER_REQUESTS, canary_percent=c.canary_percent,
        max_replicas=c.max_replicas, threshold=THRESHOLD)


# --- settings rules ------------------------------------------------------------------------------

NEEDS = ((gateway_addon.NAME, "inferenceGateway", "the Gateway its route attaches to"),
         (keda_addon.NAME, "keda", "the autoscaler of its stable backend"),
         (monitoring_addon.NAME, "kubePrometheusStack", "the Prometheus that discovers its metrics"))


def problems(s: Settings) -> Iterator[Problem]:
    """The case needs the project-built probe image (the pinned one has no model server), and, where
    this program installs the add-ons (aws, kind), the three it drives; on `existing` and `local` the
    cluster brings its own (the hops then prove them: a missing Gateway fails `inference route`)."""
    if not on(s):
        return
    if s.smoke_test.image is None:
        yield (f"{ROOT}.smokeTest.image",
               "required with smokeTest.inference: the case runs the model-server stand-in, which only the "
               "project-built probe image carries (tools/probe_image.py --model-server), pushed where the nodes "
               "pull from")
    if s.smoke_test.scheduler == "kai":
        # The replicas carry the smoke test's non-preemptible queue label: scaled out, the stable
        # backend's maxReplicas and the canary hold that many GPUs at once.
        c = s.smoke_test.inference
        yield from smoke_quota_problems(s, c.max_replicas + 1, "smokeTest.inference (maxReplicas stable replicas "
                                        "and one canary, scaled out)", "smokeTest.inference.maxReplicas")
    if s.platform in ("aws", "kind"):
        names = installed(s)
        for addon, key, what in NEEDS:
            if addon not in names:
                yield (f"{ROOT}.gpuStack.addons.{key}.enabled",
                       f"smokeTest.inference needs it ({what}); it is off")


# --- what the runner recorded --------------------------------------------------------------------


def _obs(v: View) -> dict[str, Any] | None:
    return v.snap.inference if v.exp.inference is not None else None


def _not_reached(obs: dict[str, Any], hop: tuple[str, str]) -> CheckResult | None:
    """SKIPPED naming the hop where the runner stopped, for every hop after it (the run fails there)."""
    stopped = obs.get("stopped") or {}
    order = [h[1] for h in HOPS]
    if stopped.get("hop") in order and order.index(hop[1]) > order.index(stopped["hop"]):
        return CheckResult(hop[0], hop[1], SKIPPED, f"not reached: the run stopped at `{stopped['hop']}`")
    return None


def _off(hop: tuple[str, str]) -> CheckResult:
    return CheckResult(hop[0], hop[1], SKIPPED, "smokeTest.inference is off")


def _start(v: View, hop: tuple[str, str]) -> CheckResult | tuple[dict[str, Any], InferenceExpectation]:
    """What a check judges, or its SKIPPED result: the case off, or a hop the run never reached."""
    obs, e = _obs(v), v.exp.inference
    if obs is None or e is None:
        return _off(hop)
    if (skipped := _not_reached(obs, hop)) is not None:
        return skipped
    return obs, e


def _stopped_here(obs: dict[str, Any], hop: tuple[str, str]) -> str:
    stopped = obs.get("stopped") or {}
    return str(stopped.get("why", "")) if stopped.get("hop") == hop[1] else ""


def check_route(v: View) -> CheckResult:
    started = _start(v, ROUTE)
    if isinstance(started, CheckResult):
        return started
    obs, e = started
    problems = gateway_problems(obs.get("gateway"), e.gateway_namespace, e.gateway)
    problems += route_problems(obs.get("route"), "HTTPRoute", (e.gateway_namespace, e.gateway),
                               gateway_addon.CONTROLLER, e.listener)
    if not problems and (why := _stopped_here(obs, ROUTE)):
        problems.append(why)
    return outcome(ROUTE[0], ROUTE[1], problems,
                   f"Gateway {e.gateway_namespace}/{e.gateway} programmed; HTTPRoute {e.route} accepted with "
                   f"its backends resolved by {gateway_addon.CONTROLLER}")


def _device_uuid(v: View, result: Obj) -> str:
    sd = v.slices.get((str(result.get("pool", "")), str(result.get("device", ""))))
    return str(attribute(sd.device, "uuid", v.exp.driver) or "") if sd is not None else ""


def check_replicas(v: View) -> CheckResult:
    started = _start(v, REPLICAS)
    if isinstance(started, CheckResult):
        return started
    obs, _ = started
    pods: dict[str, dict[str, Any]] = obs.get("pods") or {}
    claims = {str(c.get("metadata", {}).get("name")): c for c in v.snap.claims}
    problems: list[str] = []
    held: dict[str, list[str]] = {}  # "<pool>/<device>" -> pods
    for pod, seen in sorted(pods.items()):
        who = f"replica {pod} ({seen.get('backend', '?')}"
        who += f", node {seen['node']})" if seen.get("node") else ")"
        cname = seen.get("claim")
        if not cname:
            problems.append(f"{who} holds no ResourceClaim: its pod names none (a model server without a GPU)"
                            + (f"; {seen['why']}" if seen.get("why") else ""))
            continue
        if seen.get("why"):
            problems.append(f"{who}: {seen['why']}")
            continue
        claim = claims.get(cname)
        results = [r for r in allocation_results(claim) if r.get("driver") == v.exp.driver] if claim else []
        if not results:
            problems.append(f"{who}: its claim {cname} was never seen allocated a {v.exp.driver} device")
            continue
        uuids = sorted(u for r in results if (u := _device_uuid(v, r)))
        for r in results:
            held.setdefault(f"{r.get('pool')}/{r.get('device')}", []).append(pod)
        inside = sorted(seen.get("gpus") or [])
        if seen.get("gpu_error"):
            problems.append(f"{who}: nvidia-smi inside failed: {seen['gpu_error']}")
        elif inside != uuids:
            problems.append(f"{who}: nvidia-smi inside lists {inside or 'no GPU'}, its claim {cname} holds "
                            f"{uuids or 'devices without a uuid attribute'}")
    for device, holders in sorted(held.items()):
        if len(holders) > 1:
            problems.append(f"device {device} went to {len(holders)} replicas at once: {', '.join(sorted(holders))}")
    if not pods and not problems:
        problems.append("no replica of either backend was recorded")
    if not problems and (why := _stopped_here(obs, REPLICAS)):
        problems.append(why)
    return outcome(REPLICAS[0], REPLICAS[1], problems,
                   f"{len(pods)} replica(s), each on its own GPU, the one nvidia-smi lists inside it")


def tolerance(requests: int, percent: int) -> float:
    """SIGMAS standard deviations of the canary's share in a binomial draw of `requests`."""
    p = percent / 100
    return SIGMAS * math.sqrt(p * (1 - p) / requests)


def _answers(obs: dict[str, Any], key: str) -> tuple[Counter[str], list[str]]:
    """(answers per backend, why requests failed) of the recorded `key` requests."""
    counts: Counter[str] = Counter()
    failures: list[str] = []
    for a in obs.get(key) or []:
        if a.get("status") == 200 and a.get("backend"):
            counts[str(a["backend"])] += 1
        else:
            failures.append(f"HTTP {a.get('status')}: {a.get('error') or 'no backend named in the answer'}")
    return counts, failures


def _traffic(obs: dict[str, Any], key: str, wanted: int) -> tuple[Counter[str], int, list[str]]:
    """(answers per backend, requests sent, problems: the failed ones by reason, and too few sent)."""
    counts, failures = _answers(obs, key)
    total = len(obs.get(key) or [])
    problems = []
    if failures:
        common = Counter(failures).most_common(3)
        problems.append(f"{len(failures)} of {total} request(s) failed: " + "; ".join(f"{n} x {w}" for w, n in common))
    if total < wanted:
        problems.append(f"{total} of {wanted} requests sent")
    return counts, total, problems


def check_split(v: View) -> CheckResult:
    started = _start(v, SPLIT)
    if isinstance(started, CheckResult):
        return started
    obs, e = started
    counts, total, problems = _traffic(obs, "split", e.requests)
    tol = tolerance(e.requests, e.canary_percent)
    weights = {STABLE: 100 - e.canary_percent, CANARY: e.canary_percent}
    if counts and (why := split_problem(counts, weights, tol)):
        problems.append(why)
    warm = obs.get("converge") or {}
    answered = warm.get("answered") if isinstance(warm, dict) else None
    if problems and isinstance(answered, dict) and set(answered) != {STABLE, CANARY}:
        raw = warm.get("endpoints")
        endpoints: dict[str, Any] = raw if isinstance(raw, dict) else {}
        listed = "; ".join(f"{b}'s EndpointSlices: {n} endpoint(s)" for b, n in sorted(endpoints.items()))
        problems.append(f"before measuring, {warm.get('requests')} request(s) over {warm.get('seconds')} s reached "
                        f"only {sorted(answered) or 'no backend'}: the proxy never had every backend's endpoints"
                        + (f" ({listed})" if listed else ""))
    if not problems and (why := _stopped_here(obs, SPLIT)):
        problems.append(why)
    shares = ", ".join(f"{b} {counts.get(b, 0)}" for b in (STABLE, CANARY))
    return outcome(SPLIT[0], SPLIT[1], problems,
                   f"{total} requests through the gateway: {shares} (weights {weights[STABLE]}/{weights[CANARY]}, "
                   f"tolerance {tol:.1%}: {SIGMAS} sigma of {e.requests} draws)")


def check_header(v: View) -> CheckResult:
    started = _start(v, HEADER_HOP)
    if isinstance(started, CheckResult):
        return started
    obs, e = started
    counts, total, problems = _traffic(obs, "header", e.header_requests)
    if wrong := {b: n for b, n in counts.items() if b != CANARY}:
        problems.append(f"{sum(wrong.values())} of {total} requests with `{e.header}: {e.models[1]}` answered by "
                        + ", ".join(f"{b} ({n})" for b, n in sorted(wrong.items()))
                        + f", not {CANARY}: the header rule did not match")
    if not problems and (why := _stopped_here(obs, HEADER_HOP)):
        problems.append(why)
    return outcome(HEADER_HOP[0], HEADER_HOP[1], problems,
                   f"{total} requests with `{e.header}: {e.models[1]}` all answered by {CANARY}")


def hpa_conditions(hpa: Obj | None) -> dict[str, Obj]:
    return {str(c.get("type")): c for c in ((hpa or {}).get("status") or {}).get("conditions") or []}


def current_value(hpa: Obj | None) -> str:
    for m in ((hpa or {}).get("status") or {}).get("currentMetrics") or []:
        current = (m.get("external") or m.get("pods") or m.get("object") or {}).get("current") or {}
        value = current.get("averageValue") or current.get("value")
        if value is not None:
            return str(value)
    return ""


def check_metrics(v: View) -> CheckResult:
    started = _start(v, METRICS)
    if isinstance(started, CheckResult):
        return started
    obs, e = started
    hpa = obs.get("hpa")
    name = HPA_PREFIX + e.scaled_object
    problems: list[str] = []
    if hpa is None:
        problems.append(f"KEDA never created HPA {name} for ScaledObject {e.scaled_object}"
                        + (f": {obs['scaler_why']}" if obs.get("scaler_why") else ""))
    else:
        active = hpa_conditions(hpa).get("ScalingActive") or {}
        value = current_value(hpa)
        if active.get("status") != "True" or not value:
            problems.append(f"HPA {name} read no value of the model servers' metric: ScalingActive "
                            f"{active.get('status', 'absent')} {active.get('reason', '')}: "
                            f"{active.get('message', '')}".rstrip(": "))
    if not problems and (why := _stopped_here(obs, METRICS)):
        problems.append(why)
    return outcome(METRICS[0], METRICS[1], problems,
                   f"HPA {name} reads the stable backend's queue ({current_value(hpa)} per replica) through the "
                   "case's PodMonitor, without a change to the monitoring configuration")


def check_autoscale(v: View) -> CheckResult:
    started = _start(v, AUTOSCALE)
    if isinstance(started, CheckResult):
        return started
    obs, e = started
    out, back = obs.get("scale_out") or {}, obs.get("scale_in") or {}
    problems: list[str] = []
    if int(out.get("ready", 0)) < e.max_replicas:
        hpa = out.get("hpa")
        desired = ((hpa or {}).get("status") or {}).get("desiredReplicas")
        problems.append(f"driven to {e.threshold * e.max_replicas} waiting requests, {e.stable} reached "
                        f"{out.get('ready', 0)} ready replica(s) of {e.max_replicas} (HPA desired {desired})"
                        + (f": {out['why']}" if out.get("why") else ""))
    elif int(back.get("replicas", -1)) != 1:
        problems.append(f"with the queue back at 0, {e.stable} stayed at {back.get('replicas')} replica(s), "
                        "not 1" + (f": {back['why']}" if back.get("why") else ""))
    if not problems and (why := _stopped_here(obs, AUTOSCALE)):
        problems.append(why)
    return outcome(AUTOSCALE[0], AUTOSCALE[1], problems,
                   f"scaled out to {e.max_replicas} replicas in {out.get('seconds')} s on the driven queue, "
                   f"back to 1 in {back.get('seconds')} s")


CHECKS = (Check(*REPLICAS, check_replicas), Check(*ROUTE, check_route), Check(*SPLIT, check_split),
          Check(*HEADER_HOP, check_header), Check(*METRICS, check_metrics), Check(*AUTOSCALE, check_autoscale))

FAMILY = CaseFamily("inference", checks=CHECKS, values=values, problems=problems)

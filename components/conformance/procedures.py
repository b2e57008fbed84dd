"""One procedure per requirement of the AI Conformance checklist (issue 44, docs/conformance.md).

Each looks at the live cluster through the API server only (the smoke test's Gateway), creates what
it needs in the run's namespace (deleted by the command, also on Ctrl-C), and returns a Result:
`passed` when it proved the status, `failed` when a prerequisite is broken (the status is then Not
Implemented and the notes name what), `skipped` when this version runs nothing for the requirement
and the status is read from what is installed (the notes say so, and what proves it in CI).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable

from ..addons import dra_driver, fake_gpu_operator, gpu_operator
from ..facts.mig import pool_mig_devices
from ..smoke.gateway import KubeError, Obj, proxy_path
from ..tables.labels import POOL_LABELS
from .autoscaling import cluster_autoscaling
from .common import (
    DCGM_SELECTOR,
    DRIVER,
    RESOURCE_API,
    UUID,
    Context,
    Log,
    allocation,
    attr,
    create,
    get_json,
    probe_pod,
    unscheduled,
    wait_pod,
)
from .evidence import Result
from .gang import gang_scheduling
from .inference import ai_inference, ai_service_metrics, pod_autoscaling
from .networking import high_performance_networking
from .operator import robust_controller

# --- accelerators ------------------------------------------------------------------------------------


def dra_support(ctx: Context) -> Result:
    log = Log(ctx, "dra_support")
    api = get_json(ctx.gw, f"/apis/{RESOURCE_API}")
    kinds = {r.get("kind") for r in (api or {}).get("resources", [])}
    if not {"ResourceClaim", "ResourceSlice", "DeviceClass"} <= kinds:
        return Result("dra_support", "Not Implemented", "failed", f"{RESOURCE_API} is not served: no DRA API",
                      log.lines)
    log(f"{RESOURCE_API} served: {', '.join(sorted(k for k in kinds if k))}")
    devices = ctx.devices()
    if not devices:
        return Result("dra_support", "Not Implemented", "failed",
                      f"no ResourceSlice of driver {DRIVER}: is NVIDIA's DRA kubelet plugin running on the GPU nodes?",
                      log.lines)
    kwok = ctx.simulated_nodes()
    whole = [(n, d) for n, d in devices if attr(d, "type") == "gpu" and n not in kwok and not d.get("taints")]
    mig = [(n, d) for n, d in devices if attr(d, "type") == "mig" and n not in kwok]
    log(f"{len(devices)} device(s) published by {DRIVER} on {len({n for n, _ in devices})} node(s)")
    klass = "gpu.nvidia.com" if whole else "mig.nvidia.com"
    if not (whole or mig):
        return Result("dra_support", "Partially Implemented", "skipped",
                      "GPUs are published, but only on nodes that run no containers: no claim can be used end to end",
                      log.lines)
    claim = {"apiVersion": RESOURCE_API, "kind": "ResourceClaim",
             "metadata": {"name": "dra-support", "namespace": ctx.namespace},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": klass}}]}}}
    create(ctx, claim)
    # The pod lingers a little after nvidia-smi: the claim controller deallocates the claim as soon as
    # its last pod is done, so the allocation is read while the pod holds it.
    create(ctx, probe_pod(ctx, "dra-support", "nvidia-smi -L; sleep 3", "dra-support"))
    results = allocation(ctx, "dra-support", "dra-support")
    pod = wait_pod(ctx, "dra-support")
    if not results:
        why = unscheduled(pod)
        return Result("dra_support", "Not Implemented", "failed",
                      f"the claim (class {klass}) was never allocated{': ' + why if why else ''}", log.lines)
    r = results[0]
    device = next((d for n, d in devices if n == r.get("pool") and d.get("name") == r.get("device")), {})
    want = attr(device, "uuid")
    log(f"claim allocated {r.get('pool')}/{r.get('device')} ({want})")
    phase = (pod or {}).get("status", {}).get("phase")
    text = ctx.gw.logs(ctx.namespace, "dra-support", "probe") if phase in ("Succeeded", "Failed") else ""
    seen = UUID.findall(text)
    log(f"pod {phase}; nvidia-smi -L inside listed {seen or 'nothing'}")
    ctx.found["dra_container"] = (want, seen)
    if phase != "Succeeded" or want not in seen:
        return Result("dra_support", "Not Implemented", "failed",
                      f"the pod holding {want} ended {phase} and saw {seen or 'no GPU'}", log.lines)
    return Result("dra_support", "Implemented", "passed",
                  f"a ResourceClaim of class {klass} was allocated {r.get('pool')}/{r.get('device')} and the pod "
                  f"using it saw that device ({want}) through nvidia-smi", log.lines)


def driver_runtime_management(ctx: Context) -> Result:
    log = Log(ctx, "driver_runtime_management")
    devices = ctx.devices()
    if not devices:
        return Result("driver_runtime_management", "Not Implemented", "failed",
                      f"no device of {DRIVER} publishes driver versions", log.lines)
    per_node: dict[str, set[tuple[str, str]]] = {}
    missing = []
    for node, d in devices:
        drv, cuda = attr(d, "driverVersion"), attr(d, "cudaDriverVersion")
        if not drv or not cuda:
            missing.append(f"{node}/{d.get('name')}")
            continue
        per_node.setdefault(node, set()).add((str(drv), str(cuda)))
    for node, versions in sorted(per_node.items()):
        drivers, cudas = (", ".join(sorted({v[i] for v in versions})) for i in (0, 1))
        log(f"{node}: driver {drivers}, CUDA {cudas}")
    if missing:
        return Result("driver_runtime_management", "Not Implemented", "failed",
                      f"devices without driverVersion/cudaDriverVersion: {', '.join(missing[:5])}", log.lines)
    split = [n for n, v in per_node.items() if len(v) > 1]
    if split:
        return Result("driver_runtime_management", "Not Implemented", "failed",
                      f"nodes publishing two driver versions at once: {', '.join(split)}", log.lines)
    return Result("driver_runtime_management", "Implemented", "passed",
                  "every GPU node's DRA devices publish one driver and CUDA version (logs list them)", log.lines)


def layout_problems(ctx: Context, log: Log) -> list[str]:
    """With the stack's settings (--stack): each pool whose MIG layout cuts its GPUs must publish, on
    every node of that pool, the layout's profiles as MIG devices (what the MIG manager cut and the
    DRA driver published), and no whole GPU."""
    if ctx.settings is None:
        return []
    problems = []
    nodes = ctx.gw.list("v1", "Node")[0]
    for pool in ctx.settings.node_pools:
        want = set(pool_mig_devices(pool) or {}) if pool.cuts_gpus else set()
        if not want:
            continue
        members = sorted(n["metadata"]["name"] for n in nodes
                         if any((n["metadata"].get("labels") or {}).get(k) == pool.name for k in POOL_LABELS))
        if not members:
            log(f"pool {pool.name}: no node now (its layout is judged when one joins)")
        for node in members:
            published = [d for n, d in ctx.devices() if n == node]
            got = {str(attr(d, "profile")) for d in published if attr(d, "type") == "mig"}
            whole = [str(d.get("name")) for d in published if attr(d, "type") == "gpu"]
            log(f"pool {pool.name}, node {node}: layout {', '.join(sorted(want))}; published MIG "
                f"{', '.join(sorted(got)) or 'none'}" + (f", whole GPUs {', '.join(whole)}" if whole else ""))
            if want - got:
                problems.append(f"node {node} of pool {pool.name} publishes no {', '.join(sorted(want - got))} "
                                f"instance (its layout: {', '.join(sorted(want))}; published: "
                                f"{', '.join(sorted(got)) or 'no MIG device'})")
            if whole:
                problems.append(f"node {node} of pool {pool.name} publishes whole GPUs ({', '.join(whole)}) though "
                                "its layout cuts them")
    return problems


def gpu_sharing(ctx: Context) -> Result:
    log = Log(ctx, "gpu_sharing")
    mig = [(n, d) for n, d in ctx.devices() if attr(d, "type") == "mig"]
    profiles = sorted({str(attr(d, "profile")) for _, d in mig})
    if problems := layout_problems(ctx, log):
        return Result("gpu_sharing", "Not Implemented", "failed", "; ".join(problems[:4]), log.lines)
    if mig:
        log(f"{len(mig)} MIG instance(s) published as DRA devices: {', '.join(profiles)} "
            f"on {', '.join(sorted({n for n, _ in mig}))}")
        return Result("gpu_sharing", "Implemented", "passed",
                      f"hardware partitions (MIG {', '.join(profiles)}) are schedulable DRA devices (class "
                      "mig.nvidia.com)" + ("; every node of a pool the stack cuts publishes its layout"
                                           if ctx.settings is not None else "")
                      + "; time-slicing and MPS through NVIDIA's GpuConfig on shared claims", log.lines)
    return Result("gpu_sharing", "Partially Implemented", "skipped",
                  "no MIG instance is published (nodePools[].mig cuts a pool's GPUs); time-slicing and MPS through "
                  "NVIDIA's GpuConfig on shared claims are not exercised by this run (the smoke test's shared cases "
                  "are)", log.lines)


def virtualized_accelerator(ctx: Context) -> Result:
    names = sorted({str(attr(d, "productName")) for _, d in ctx.devices()})
    return Result("virtualized_accelerator", "N/A", "skipped",
                  f"no virtualized GPU is offered: the GPUs here are {', '.join(names) or 'none'}, passed through "
                  "whole; no AWS instance type in this project's table offers vGPU", [])


# --- security ----------------------------------------------------------------------------------------


# Where an NVIDIA GPU is reachable on a node without DRA: its device nodes, all of /dev or the host's
# root, and the driver container's root (the GPU Operator's driver root, /run/nvidia/driver).
GPU_HOST_PATHS = ("/", "/dev", "/dev/nvidia*", "/dev/dri", "/run/nvidia", "/run/nvidia/*")
# The GPU stack's own pods reach the devices by design (driver, toolkit, DRA kubelet plugin, exporter).
GPU_STACK_NAMESPACES = frozenset({gpu_operator.NAMESPACE, dra_driver.NAMESPACE, fake_gpu_operator.NAMESPACE})


def gpu_host_mounts(pod: Obj) -> list[str]:
    """The pod's hostPath volumes that reach a GPU, however the path is spelled (`//dev/./nvidia0/`)."""
    out = []
    for v in (pod.get("spec") or {}).get("volumes") or []:
        raw = (v.get("hostPath") or {}).get("path")
        if not isinstance(raw, str):
            continue
        path = "/" + posixpath.normpath("/" + raw).lstrip("/")
        if any(fnmatch.fnmatchcase(path, g) for g in GPU_HOST_PATHS):
            out.append(f"{v.get('name')} ({raw})")
    return out


def gpu_by_host_path(ctx: Context) -> list[str]:
    """Pods outside the GPU stack that mount a GPU from the host: a GPU reached without a claim."""
    out = []
    for pod in ctx.gw.list("v1", "Pod")[0]:
        meta = pod.get("metadata") or {}
        if meta.get("namespace") in GPU_STACK_NAMESPACES or (pod.get("status") or {}).get("phase") in (
                "Succeeded", "Failed"):
            continue
        if mounts := gpu_host_mounts(pod):
            where = (pod.get("spec") or {}).get("nodeName") or "no node yet"
            out.append(f"{meta.get('namespace')}/{meta.get('name')} on {where} mounts {', '.join(mounts)}")
    return out


NO_GPU_SCRIPT = ('for f in /dev/nvidia*; do [ -e "$f" ] && echo "DEVICE $f"; done; '
                 'if command -v nvidia-smi >/dev/null; then nvidia-smi -L; fi; echo done')


def secure_accelerator_access(ctx: Context) -> Result:
    log = Log(ctx, "secure_accelerator_access")
    kwok = ctx.simulated_nodes()
    nodes = sorted({n for n, _ in ctx.devices() if n and n not in kwok})
    if not nodes:
        return Result("secure_accelerator_access", "Partially Implemented", "skipped",
                      "no GPU node runs containers: nothing to look at from a pod", log.lines)
    node = nodes[0]
    create(ctx, probe_pod(ctx, "no-claim", NO_GPU_SCRIPT, None, node=node))
    pod = wait_pod(ctx, "no-claim")
    phase = (pod or {}).get("status", {}).get("phase")
    text = ctx.gw.logs(ctx.namespace, "no-claim", "probe") if phase in ("Succeeded", "Failed") else ""
    leaks = [line for line in text.splitlines() if line.startswith("DEVICE ") or UUID.search(line)]
    log(f"a pod without a claim on GPU node {node}: {phase}; saw {leaks or 'no GPU device, no GPU listed'}")
    if phase != "Succeeded":
        return Result("secure_accelerator_access", "Not Implemented", "failed",
                      f"the pod without a claim on {node} ended {phase}", log.lines)
    if leaks:
        return Result("secure_accelerator_access", "Not Implemented", "failed",
                      f"a pod without a claim on {node} reached GPUs: {'; '.join(leaks[:4])}", log.lines)
    want, seen = ctx.found.get("dra_container", (None, None))
    if seen is not None:
        log(f"the claim's pod saw {seen}, its claim held {want}")
        if seen != [want] and [u for u in seen if u.startswith("MIG-")] != [want]:
            return Result("secure_accelerator_access", "Not Implemented", "failed",
                          f"the claim's pod saw {seen}, more than its claim's {want}", log.lines)
    bypass = gpu_by_host_path(ctx)
    log(f"pods outside the GPU stack ({', '.join(sorted(GPU_STACK_NAMESPACES))}) mounting a GPU from the host: "
        f"{'; '.join(bypass) or 'none'}")
    if bypass:
        return Result("secure_accelerator_access", "Not Implemented", "failed",
                      f"GPUs reachable without a claim, by hostPath: {'; '.join(bypass[:4])}", log.lines)
    return Result("secure_accelerator_access", "Partially Implemented", "passed",
                  "a pod without a claim sees no GPU device node and no GPU; a claim's pod sees only its device; no "
                  "pod outside the GPU stack mounts a GPU from the host; such a hostPath is refused by the policy pack "
                  "at plan time, not at admission", log.lines)


# --- observability -----------------------------------------------------------------------------------


# Per GPU, what the checklist asks of accelerator metrics, by the names exporters use: DCGM's
# (dcgm-exporter's default counters, etc/default-counters.csv: GPU_UTIL in %, PROF_GR_ENGINE_ACTIVE
# a ratio, FB_USED in MiB) and OpenTelemetry's hardware GPU conventions where they exist
# (opentelemetry.io/docs/specs/semconv/hardware/gpu: hw.gpu.utilization, unit 1;
# hw.gpu.memory.usage, unit By; GPU named by hw.id), as an OTel exporter's Prometheus translation
# spells them (unit 1 on a gauge -> _ratio, By -> _bytes). Each: (metric, GPU label, lowest, highest).
SIGNALS: dict[str, tuple[tuple[str, str, float, float], ...]] = {
    "utilization": (("DCGM_FI_DEV_GPU_UTIL", "UUID", 0.0, 100.0), ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "UUID", 0.0, 1.0),
                    ("hw_gpu_utilization_ratio", "hw_id", 0.0, 1.0)),
    "memory used": (("DCGM_FI_DEV_FB_USED", "UUID", 0.0, float("inf")),
                    ("hw_gpu_memory_usage_bytes", "hw_id", 0.0, float("inf"))),
}
OTEL_NAMES = {"DCGM_FI_DEV_GPU_UTIL": "hw.gpu.utilization (x 1/100)", "DCGM_FI_PROF_GR_ENGINE_ACTIVE":
              "hw.gpu.utilization", "DCGM_FI_DEV_FB_USED": "hw.gpu.memory.usage (x 2^20 B)"}
SAMPLE = re.compile(r'^([A-Za-z_:][A-Za-z0-9_:]*)\{([^}]*)\}\s+(\S+)', re.M)


def gpu_samples(text: str) -> dict[tuple[str, str, str], float]:
    """(metric, GPU label, its value) -> sample value, for every labelled sample of the exposition."""
    out: dict[tuple[str, str, str], float] = {}
    for metric, labels, value in SAMPLE.findall(text):
        for key, val in re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="([^"]*)"', labels):
            try:
                out[(metric, key, val)] = float(value)
            except ValueError:
                continue
    return out


def signal_problems(samples: dict[tuple[str, str, str], float], uuid: str) -> tuple[list[str], set[str]]:
    """What a GPU lacks or reports out of range, and the metric names it is reported by."""
    problems, names = [], set()
    for signal, sources in SIGNALS.items():
        found = [(m, samples[(m, label, uuid)], lo, hi) for m, label, lo, hi in sources if (m, label, uuid) in samples]
        if not found:
            problems.append(f"no {signal} series for {uuid}")
        for m, value, lo, hi in found:
            names.add(m)
            if not lo <= value <= hi:
                problems.append(f"{m} of {uuid} is {value:g}, outside [{lo:g}, {hi:g}]")
    return problems, names


def accelerator_metrics(ctx: Context) -> Result:
    log = Log(ctx, "accelerator_metrics")
    services = ctx.gw.list("v1", "Service", label_selector=DCGM_SELECTOR)[0]
    if not services:
        return Result("accelerator_metrics", "Not Implemented", "failed",
                      f"no DCGM exporter Service ({DCGM_SELECTOR}): the GPU Operator's dcgmExporter is off", log.lines)
    svc = services[0]
    ns = svc["metadata"]["namespace"]
    port = str(svc["spec"]["ports"][0].get("targetPort") or svc["spec"]["ports"][0]["port"])
    expected: dict[str, set[str]] = {}
    for node, d in ctx.devices():
        uuid = attr(d, "parentUUID") if attr(d, "type") == "mig" else attr(d, "uuid")
        if uuid:
            expected.setdefault(node, set()).add(str(uuid))
    problems: list[str] = []
    names: set[str] = set()
    checked = 0
    for s in ctx.gw.list("discovery.k8s.io/v1", "EndpointSlice", ns,
                         label_selector=f"kubernetes.io/service-name={svc['metadata']['name']}")[0]:
        for ep in s.get("endpoints") or []:
            ref, node = ep.get("targetRef") or {}, ep.get("nodeName", "")
            if ref.get("kind") != "Pod" or node not in expected:
                continue
            try:
                text = ctx.gw.get_text(proxy_path("Pod", ns, ref["name"], port, "/metrics"))
            except KubeError as exc:
                problems.append(f"{node}: the exporter pod {ref['name']} did not answer: {exc}")
                continue
            samples = gpu_samples(text)
            for uuid in sorted(expected[node]):
                missing, seen = signal_problems(samples, uuid)
                problems += [f"{node}: {p}" for p in missing]
                names |= seen
            checked += 1
            log(f"{node}: {len(expected[node])} GPU(s), utilization and memory series for each")
    if not checked:
        problems.append(f"no exporter endpoint answered on any GPU node ({', '.join(sorted(expected)) or 'none'})")
    if problems:
        return Result("accelerator_metrics", "Not Implemented", "failed", "; ".join(problems[:5]), log.lines)
    otel = ", ".join(f"{m} = {OTEL_NAMES[m]}" for m in sorted(names) if m in OTEL_NAMES)
    log(f"names: {', '.join(sorted(names))}" + (f"; OpenTelemetry's equivalents: {otel}" if otel else ""))
    return Result("accelerator_metrics", "Implemented", "passed",
                  f"the DCGM exporter ({ns}/{svc['metadata']['name']}) reports utilization and memory per GPU, each "
                  f"within its unit's range, on every GPU node it runs on ({checked}), in Prometheus exposition format "
                  f"as {', '.join(sorted(names))}" + (f" (OpenTelemetry: {otel})" if otel else ""), log.lines)


# --- stated: no procedure runs them ------------------------------------------------------------------


def advanced_inference_ingress(_ctx: Context) -> Result:
    return Result("advanced_inference_ingress", "Not Implemented", "skipped",
                  "the Gateway API Inference Extension has no implementation whose data path this project builds "
                  "(ADR 0052)")


def disaggregated_inference(_ctx: Context) -> Result:
    return Result("disaggregated_inference", "Not Implemented", "skipped",
                  "no recipe for separate prefill and decode yet")


PROCEDURES: dict[str, Callable[[Context], Result]] = {f.__name__: f for f in (
    dra_support, driver_runtime_management, gpu_sharing, virtualized_accelerator, secure_accelerator_access,
    accelerator_metrics, ai_inference, gang_scheduling, cluster_autoscaling, pod_autoscaling, ai_service_metrics,
    robust_controller, advanced_inference_ingress, high_performance_networking, disaggregated_inference)}

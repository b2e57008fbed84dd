"""What every conformance procedure uses: the run's context and log, reads of the API, and the
probe pods and claims the procedures create (issue 44, docs/conformance.md).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..settings.model import Settings
from ..smoke.gateway import Gateway, Obj
from ..smoke.run import Ref
from ..tables.labels import KWOK_NODE_ANNOTATION

DRIVER = "gpu.nvidia.com"  # NVIDIA's DRA driver (cmd/gpu-kubelet-plugin main.go DriverName)
RESOURCE_API = "resource.k8s.io/v1"
DCGM_SELECTOR = "app=nvidia-dcgm-exporter"  # gpu-operator v26.7.0 assets/state-dcgm-exporter/0400_service.yaml
UUID = re.compile(r"\(UUID: ((?:GPU|MIG)-[0-9a-fA-F-]+)\)")


@dataclass
class Context:
    gw: Gateway
    image: str  # carries bash; nvidia-smi comes from the driver's CDI spec, as in the smoke test
    namespace: str
    timeout: float
    say: Callable[[str], None]
    created: list[Ref] = field(default_factory=list)
    # The stack's settings (--stack), where the procedures render the stack's own smoke case.
    settings: Settings | None = None
    prometheus_url: str | None = None  # the Prometheus KEDA queries (--prometheus-url); null: the settings'
    custom_image: str | None = None  # --image: also the smoke case's image (it must be pinned by digest)
    kubernetes_minor: int = 0  # the cluster's, as the command read it from the API server
    found: dict[str, Any] = field(default_factory=dict)  # what one procedure learnt for the next

    def devices(self) -> list[tuple[str, Obj]]:
        """gpu_devices, listed once per run: the procedures read them, none changes them."""
        if "devices" not in self.found:
            self.found["devices"] = gpu_devices(self.gw)
        return list(self.found["devices"])

    def simulated_nodes(self) -> set[str]:
        if "simulated" not in self.found:
            self.found["simulated"] = simulated_nodes(self.gw)
        return set(self.found["simulated"])


class Log:
    def __init__(self, ctx: Context, rid: str) -> None:
        self.lines: list[str] = []
        self.ctx, self.rid = ctx, rid

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        self.ctx.say(f"{self.rid}: {line}")


def get_json(gw: Gateway, api_path: str) -> Any | None:
    answer = gw.request("GET", api_path, timeout=20.0)
    if answer.status != 200:
        return None
    try:
        return json.loads(answer.body)
    except ValueError:
        return None


def items(gw: Gateway, api_path: str) -> list[Obj]:
    doc = get_json(gw, api_path)
    return list(doc.get("items", [])) if isinstance(doc, dict) else []


def gpu_devices(gw: Gateway) -> list[tuple[str, Obj]]:
    """(node, device) for every device NVIDIA's DRA driver publishes."""
    out = []
    for s in gw.list(RESOURCE_API, "ResourceSlice")[0]:
        spec = s.get("spec", {})
        if spec.get("driver") == DRIVER:
            out += [(spec.get("nodeName", ""), d) for d in spec.get("devices") or []]
    return out


def attr(device: Obj, name: str) -> Any:
    a = (device.get("attributes") or {}).get(name) or (device.get("attributes") or {}).get(f"{DRIVER}/{name}") or {}
    return next(iter(a.values()), None) if isinstance(a, dict) else None


def simulated_nodes(gw: Gateway) -> set[str]:
    """Nodes KWOK fakes: they run no container, so a container-side check cannot run there."""
    return {n["metadata"]["name"] for n in gw.list("v1", "Node")[0]
            if KWOK_NODE_ANNOTATION in (n["metadata"].get("annotations") or {})}


def create(ctx: Context, obj: Obj) -> Obj:
    got = ctx.gw.create(obj)
    meta = obj["metadata"]
    ctx.created.append(Ref(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")))
    return got


def probe_pod(ctx: Context, name: str, script: str, claim: str | None, node: str | None = None) -> Obj:
    simulated = sorted(ctx.simulated_nodes())
    spec: Obj = {
        "restartPolicy": "Never", "tolerations": [{"operator": "Exists"}],
        "containers": [{"name": "probe", "image": ctx.image, "command": ["bash", "-c", script],
                        "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": False,
                                            "capabilities": {"drop": ["ALL"]}}}],
    }
    if node:
        spec["nodeName"] = node
    elif simulated:
        # A node field requirement takes exactly one value (k8s.io/kubernetes v1.34
        # pkg/apis/core/validation/validation.go validateNodeFieldSelectorRequirement): one per node,
        # ANDed in the one term.
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": [n]} for n in simulated]}]}}}
    if claim:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimName": claim}]
        spec["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ctx.namespace}, "spec": spec}


def allocation(ctx: Context, claim: str, pod: str) -> list[Obj]:
    """The claim's allocation results, read while its pod may still hold it; [] when it never was
    allocated before the pod ended or the timeout."""
    until = time.monotonic() + ctx.timeout
    while time.monotonic() < until:
        got = ctx.gw.get(RESOURCE_API, "ResourceClaim", claim, ctx.namespace) or {}
        results = ((got.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
        if results:
            return list(results)
        p = ctx.gw.get("v1", "Pod", pod, ctx.namespace)
        if p and p.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            return []
        time.sleep(0.25)
    return []


def unscheduled(pod: Obj | None) -> str:
    """The scheduler's word on a pod it did not place (its PodScheduled condition)."""
    for c in (pod or {}).get("status", {}).get("conditions", []) or []:
        if c.get("type") == "PodScheduled" and c.get("status") != "True":
            return str(c.get("message") or c.get("reason") or "")
    return ""


def wait_pod(ctx: Context, name: str) -> Obj | None:
    until = time.monotonic() + ctx.timeout
    while time.monotonic() < until:
        pod = ctx.gw.get("v1", "Pod", name, ctx.namespace)
        if pod and pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            return pod
        time.sleep(1.0)
    return ctx.gw.get("v1", "Pod", name, ctx.namespace)



"""What the verifier expects, from settings and ClusterFacts (pure, JSON round-trippable).

The same object travels into the Pulumi dynamic resource as plain JSON, so everything here is
a frozen dataclass of strings, numbers and tuples.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..facts.cluster import ClusterFacts
from ..facts.feature_gates import smoke_gpu_health_on
from ..settings.facts import pool_gpus
from ..settings.model import Settings
from ..tables import labels
from . import all_reduce

# Both the NVIDIA DRA driver and fake-gpu-operator's DRA plugin register this driver name.
DRIVER = "gpu.nvidia.com"
MIG_DEVICE_CLASS = "mig.nvidia.com"
SCHEDULER_NAMES: dict[str, str] = {"kai": "kai-scheduler", "default": "default-scheduler"}
# smokeTest.sharing -> NVIDIA GpuConfig `sharing.strategy` (dra-driver-nvidia-gpu v0.4.1
# api/nvidia.com/resource/v1beta1/sharing.go TimeSlicingStrategy, MpsStrategy).
SHARING_STRATEGIES: dict[str, str] = {"timeSlicing": "TimeSlicing", "mps": "MPS"}
GPU_CONFIG_API = "resource.nvidia.com/v1beta1"
NO_KUBELET = "no kubelet on simulated nodes"

# Labels and annotations shared by the chart, the runner and the verifier.
RUN_LABEL = "ck8s-gpu.io/smoke-run"
CASE_LABEL = "ck8s-gpu.io/smoke-case"
RELEASE_ANNOTATION = "ck8s-gpu.io/smoke-release"
RELEASE_VALUE = "go"
POD_GROUP_ANNOTATION = labels.POD_GROUP_ANNOTATION  # KAI's (components/tables/labels.py)
# Well-known node labels: set by the kubelet/cloud provider and by GPU feature discovery.
GFD_COUNT_LABEL = "nvidia.com/gpu.count"

# Chart object names: "<release[:30]>-<part>-<runId>" (templates/_helpers.tpl "gpu-smoke-test.name").
PREFIX_MAX = 30


def object_name(release: str, part: str, run_id: str) -> str:
    return f"{release[:PREFIX_MAX].rstrip('-')}-{part}-{run_id}"


@dataclass(frozen=True)
class PoolExpectation:
    name: str
    instance_type: str
    nodes: int
    gpus_per_node: int
    product_name: str


@dataclass(frozen=True)
class CaseExpectation:
    case: str  # the case's name (CASE_LABEL), e.g. gpus, shared, mig, all-reduce
    job: str
    pods: int
    containers: tuple[str, ...]
    device_class: str
    distinct: bool  # the case's pods must hold different devices at the same time
    pod_group: str = ""
    claim: str = ""  # the ResourceClaim object every pod names (shared-named); "" = one claim per pod
    profile: str = ""  # the MIG profile asked for (mig); "" = any
    device_type: str = "gpu"  # the `type` attribute of the devices the case asks for: gpu | mig
    sharing: str = ""  # GpuConfig sharing strategy on the case's claims (TimeSlicing | MPS); "" = none
    # all-reduce: GPUs (ranks) per pod, and the floor of nccl-tests' average bus bandwidth with its source.
    gpus_per_pod: int = 0
    min_bus_bandwidth: float = 0.0
    floor_source: str = ""
    # What a newer case family needs beyond these, as strings (exact through the engine's JSON, which
    # carries every number as a float): read with param().
    params: tuple[tuple[str, str], ...] = ()

    def param(self, key: str, default: str = "") -> str:
        return next((v for k, v in self.params if k == key), default)


@dataclass(frozen=True)
class InferenceExpectation:
    """Case `inference` (components/smoke/cases/inference.py): the chart's objects by name and what
    the runner drives through them. Not a Job case: its pods are Deployments' replicas, started and
    scaled by the runner, so the Job-path checks leave them to the case's own."""

    stable: str  # Deployment (and Service) of the stable backend; the ScaledObject scales it
    canary: str  # Deployment (and Service) of the canary backend
    route: str  # HTTPRoute
    scaled_object: str  # KEDA ScaledObject of `stable` (its HPA: keda-hpa-<name>)
    models: tuple[str, str]  # (stable, canary) model names the servers answer for
    header: str  # the header whose value (the canary's model) routes to the canary backend
    gateway_namespace: str
    gateway: str
    listener: str
    service: str  # the gateway's Service, reached through the API server's service proxy
    service_port: str
    port: int  # the model server's container port (name `http`)
    requests: int
    header_requests: int
    canary_percent: int
    max_replicas: int
    threshold: int  # the trigger's target per replica: driving threshold * maxReplicas scales to the max


@dataclass(frozen=True)
class Expectations:
    namespace: str
    run_id: str
    resource_api: str
    driver: str
    device_class: str
    scheduler: str  # schedulerName, e.g. kai-scheduler
    queue: str  # "" unless KAI
    # None: unknown (CLI without a stack file): GFD's nvidia.com/gpu.count label, else >= 1 device.
    pools: tuple[PoolExpectation, ...] | None
    cases: tuple[CaseExpectation, ...]
    in_container: bool  # a kubelet runs the containers (false on KWOK nodes)
    probe_expect: str  # nvidia-smi | env
    dcgm: bool | None  # True: required, False: off, None: checked when an exporter exists
    # Smoke case gpuHealth (components/smoke/cases/gpu_health.py): judged over every case's claims, no Job of its own.
    gpu_health: bool = False
    inference: InferenceExpectation | None = None

    def case(self, name: str) -> CaseExpectation | None:
        return next((c for c in self.cases if c.case == name), None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Expectations:
        """Also what the Pulumi engine hands the dynamic provider: it drops null properties and
        carries every number as a float, so absent means None and counts become ints again."""
        d = {k: None for k in NULLABLE} | dict(data)
        pools = d.get("pools")
        d["pools"] = None if pools is None else tuple(
            PoolExpectation(**{**p, "nodes": int(p["nodes"]), "gpus_per_node": int(p["gpus_per_node"])})
            for p in pools)
        inf = d.get("inference")
        ints = ("port", "requests", "header_requests", "canary_percent", "max_replicas", "threshold")
        d["inference"] = None if not inf else InferenceExpectation(
            **{**inf, "models": tuple(inf["models"]), **{k: int(inf[k]) for k in ints}})
        d["cases"] = tuple(
            CaseExpectation(**{**c, "pods": int(c["pods"]), "containers": tuple(c["containers"]),
                               "gpus_per_pod": int(c.get("gpus_per_pod", 0)),
                               "params": tuple((str(k), str(v)) for k, v in c.get("params") or ())})
            for c in d["cases"]
        )
        return cls(**d)


# Expectations fields that may be None (the engine drops them from the dynamic resource's inputs).
NULLABLE = ("pools", "dcgm", "inference")


def pool_expectations(settings: Settings, facts: ClusterFacts) -> tuple[PoolExpectation, ...]:
    """Per pool: how many nodes and how many GPUs each must advertise (instance table or pool.gpu)."""
    by_name = {p.name: p for p in settings.node_pools}
    out = []
    for pool in facts.pools:
        declared = by_name.get(pool.name)
        instance_type = declared.instance_type if declared is not None else ""
        gpu = pool_gpus(declared) if declared is not None else None
        product = gpu.product_name if gpu is not None else pool.product_name
        out.append(PoolExpectation(pool.name, instance_type, pool.nodes, pool.gpus_per_node, product))
    return tuple(out)


def all_reduce_expectation(settings: Settings, job: str) -> CaseExpectation:
    """`nodes` pods, each holding every GPU of its node, in a PodGroup named like the Job."""
    t = settings.smoke_test
    found = all_reduce.pool(settings)
    shape = all_reduce.node_shape(found[1]) if found else None
    floor = all_reduce.floor(settings, shape.instance_type) if shape else None
    if shape is None or floor is None:
        # The settings rules refuse this first (components/smoke/all_reduce_rules.py).
        raise ValueError("smokeTest.allReduce: no pool with known GPUs and a bus-bandwidth floor")
    return CaseExpectation(all_reduce.CASE, job, t.all_reduce.nodes, (all_reduce.CONTAINER,), t.device_class,
                           distinct=True, pod_group=job, gpus_per_pod=shape.gpus, min_bus_bandwidth=floor.gbps,
                           floor_source=floor.source)


def expectations_for(
    settings: Settings,
    facts: ClusterFacts,
    *,
    release: str,
    run_id: str,
    resource_api: str,
    cases: tuple[CaseExpectation, ...],
    pools_known: bool = True,
    dcgm: bool | None = None,
    inference: InferenceExpectation | None = None,
) -> Expectations:
    """`cases`: components/smoke/cases case_expectations (the registry sits above this module)."""
    t = settings.smoke_test
    return Expectations(
        namespace=t.namespace,
        run_id=run_id,
        resource_api=resource_api,
        driver=DRIVER,
        device_class=t.device_class,
        scheduler=SCHEDULER_NAMES[t.scheduler],
        queue=t.queue if t.scheduler == "kai" else "",
        pools=pool_expectations(settings, facts) if pools_known else None,
        cases=cases,
        in_container=facts.has_kubelet,
        probe_expect=facts.gpu_view,
        dcgm=dcgm,
        gpu_health=smoke_gpu_health_on(settings),
        inference=inference,
    )

"""Cluster objects shaped like the real ones, for the verifier tests.

Shapes follow upstream sources read for this project:
- NVIDIA DRA driver (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1, 764900e,
  cmd/gpu-kubelet-plugin/deviceinfo.go): one pool per node named after the node, devices
  `gpu-<minor>`, unqualified attributes type/uuid/productName/brand/architecture/
  cudaComputeCapability/driverVersion/cudaDriverVersion + resource.kubernetes.io/pciBusID,
  capacity `memory`; MIG devices `gpu-<minor>-mig-<profile>-<id>-<start>` with type mig,
  parentUUID, profile.
- fake-gpu-operator v0.2.0 (3a3f644, internal/dra-plugin-gpu/discovery.go, state.go): driver
  gpu.nvidia.com, pool = node, device name = lowercased GPU id, attributes uuid/model plus
  qualified gpu.nvidia.com/type|uuid|productName; containers get GPU_DEVICE_<name with _>=<name>
  and a fake nvidia-smi that rejects `-L`.
- KAI scheduler v0.17.0 (f218c69): `Scheduled` events with source.component kai-scheduler,
  pods join a PodGroup through the `pod-group-name` annotation.
- kube-scheduler: `Scheduled` events with reportingComponent default-scheduler; claims generated
  from templates carry status.allocation.{devices.results,nodeSelector} and reservedFor.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from components.smoke.expectations import (
    CaseExpectation,
    Expectations,
    PoolExpectation,
    object_name,
)
from components.smoke.snapshot import Obj, Snapshot

NS = "gpu-smoke-test"
RELEASE = "gpu-smoke-test"
RUN = "ab12cd34"
DRIVER = "gpu.nvidia.com"
API = "resource.k8s.io/v1"
NODES = ("ip-10-0-1-17.eu-north-1.compute.internal", "ip-10-0-2-33.eu-north-1.compute.internal")
TS = "2026-11-29T21:30:0{}Z"


def gpu_uuid(node: str, i: int) -> str:
    return f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}/{i}')}"


def mig_uuid(node: str, i: int) -> str:
    return f"MIG-{uuid.uuid5(uuid.NAMESPACE_URL, f'{node}/mig/{i}')}"


def nvidia_slice(node: str, gpus: int, *, mig: bool = False) -> Obj:
    devices = []
    for i in range(gpus):
        devices.append({
            "name": f"gpu-{i}",
            "attributes": {
                "architecture": {"string": "Ada Lovelace"},
                "brand": {"string": "Nvidia"},
                "cudaComputeCapability": {"version": "8.9.0"},
                "cudaDriverVersion": {"version": "13.0.0"},
                "driverVersion": {"version": "580.95.5"},
                "productName": {"string": "NVIDIA L4"},
                "resource.kubernetes.io/pciBusID": {"string": f"0000:3{i}:00.0"},
                "type": {"string": "gpu"},
                "uuid": {"string": gpu_uuid(node, i)},
            },
            "capacity": {"memory": {"value": "23034Mi"}},
        })
    if mig:
        devices = [{
            "name": "gpu-0-mig-1g10gb-19-0",
            "attributes": {
                "type": {"string": "mig"},
                "uuid": {"string": mig_uuid(node, 0)},
                "parentUUID": {"string": gpu_uuid(node, 0)},
                "profile": {"string": "1g.10gb"},
                "productName": {"string": "NVIDIA A100-SXM4-80GB"},
                "brand": {"string": "Nvidia"},
                "architecture": {"string": "Ampere"},
                "cudaComputeCapability": {"version": "8.0.0"},
                "driverVersion": {"version": "580.95.5"},
                "cudaDriverVersion": {"version": "13.0.0"},
            },
            "capacity": {"multiprocessors": {"value": "14"}, "copyEngines": {"value": "1"},
                         "memory": {"value": "9856Mi"}},
        }, *devices[1:]]
    return {
        "apiVersion": API,
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"{node}-gpu.nvidia.com-7xk2p",
            "generateName": f"{node}-gpu.nvidia.com-",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "controller": True,
                                 "uid": str(uuid.uuid5(uuid.NAMESPACE_OID, node))}],
        },
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def fake_slice(node: str, gpus: int) -> Obj:
    devices = []
    for i in range(gpus):
        gid = gpu_uuid(node, i)
        devices.append({
            "name": gid.lower(),
            "attributes": {
                "uuid": {"string": gid},
                "model": {"string": "NVIDIA L4"},
                "gpu.nvidia.com/type": {"string": "gpu"},
                "gpu.nvidia.com/uuid": {"string": gid},
                "gpu.nvidia.com/productName": {"string": "NVIDIA L4"},
            },
            "capacity": {"memory": {"value": "23034Mi"}},
        })
    return {
        "apiVersion": API,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu.nvidia.com-q8w2z"},
        "spec": {"driver": DRIVER, "nodeName": node,
                 "pool": {"name": node, "generation": 0, "resourceSliceCount": 1}, "devices": devices},
    }


def device_class(name: str = "gpu.nvidia.com", kind: str = "gpu") -> Obj:
    return {
        "apiVersion": API,
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression":
                 f"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '{kind}'"}}],
                 "extendedResourceName": "nvidia.com/gpu" if kind == "gpu" else None},
    }


def node(name: str, instance_type: str = "g6.xlarge", extra: dict[str, str] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "node.kubernetes.io/instance-type": instance_type,
                                                  **(extra or {})}}}


def claim(pod: str, node: str, device: str, *, driver: str = DRIVER, device_class: str = "gpu.nvidia.com") -> Obj:
    return {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": {
            "name": f"{pod}-gpu-9sd8f",
            "namespace": NS,
            "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod, "controller": True,
                                 "blockOwnerDeletion": True, "uid": str(uuid.uuid5(uuid.NAMESPACE_OID, pod))}],
        },
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": device_class, "allocationMode": "ExactCount", "count": 1}}]}},
        "status": {
            "allocation": {
                "devices": {"results": [{"request": "gpu", "driver": driver, "pool": node, "device": device}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]},
            },
            "reservedFor": [{"resource": "pods", "name": pod, "uid": str(uuid.uuid5(uuid.NAMESPACE_OID, pod))}],
        },
    }


def gpu_config(strategy: str) -> Obj:
    """An allocation's config entry as the API server copies it from the claim (source FromClaim),
    with NVIDIA's GpuConfig (dra-driver-nvidia-gpu v0.4.1 demo gpu-test5)."""
    sharing: Obj = ({"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}} if strategy == "TimeSlicing"
                    else {"strategy": strategy, "mpsConfig": {"defaultActiveThreadPercentage": 50}})
    return {"source": "FromClaim", "requests": ["gpu"], "opaque": {"driver": DRIVER, "parameters": {
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", "sharing": sharing}}}


def named_claim(name: str, node: str, device: str, pods: list[str], *, sharing: str = "") -> Obj:
    """A ResourceClaim object (no owner, no pod-claim-name annotation) allocated once and reserved
    for every pod naming it (kube-scheduler adds each pod it binds to reservedFor)."""
    c = claim(pods[0], node, device)
    c["metadata"] = {"name": name, "namespace": NS, "labels": {"ck8s-gpu.io/smoke-run": RUN,
                                                               "kai.scheduler/queue": "smoke-test"}}
    c["status"]["reservedFor"] = [{"resource": "pods", "name": p, "uid": str(uuid.uuid5(uuid.NAMESPACE_OID, p))}
                                  for p in pods]
    if sharing:
        c["status"]["allocation"]["devices"]["config"] = [gpu_config(sharing)]
    return c


def pod(name: str, case: str, node: str, claim_name: str, *, scheduler: str = "kai-scheduler",
        containers: tuple[str, ...] = ("probe",), queue: str = "smoke-test", annotations: dict[str, str] | None = None,
        phase: str = "Succeeded", exit_code: int = 0, named: bool = False) -> Obj:
    """`named`: the pod names the claim object itself (resourceClaimName); the API server then
    records no resourceClaimStatuses, which are for claims generated from a template."""
    job = object_name(RELEASE, case, RUN)
    labels = {"app.kubernetes.io/name": "gpu-smoke-test", "ck8s-gpu.io/smoke-run": RUN,
              "ck8s-gpu.io/smoke-case": case, "job-name": job, "batch.kubernetes.io/job-name": job}
    if queue:
        labels["kai.scheduler/queue"] = queue
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeName": node,
        "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name} if named else
                           {"name": "gpu", "resourceClaimTemplateName": object_name(RELEASE, "gpu", RUN)}],
        "containers": [{"name": c, "image": "docker.io/library/ubuntu:24.04",
                        "resources": {"claims": [{"name": "gpu"}]}} for c in containers],
    }
    if scheduler != "default-scheduler":
        spec["schedulerName"] = scheduler
    else:
        spec["schedulerName"] = "default-scheduler"
    state = {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error"}}
    status: dict[str, Any] = {
        "phase": phase,
        "conditions": [{"type": "PodScheduled", "status": "True"}],
        "containerStatuses": [{"name": c, "state": state} for c in containers],
    }
    if not named:
        status["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": claim_name}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels, "annotations": annotations or {}},
        "spec": spec,
        "status": status,
    }


def scheduled_event(pod_name: str, node: str, scheduler: str, i: int = 0) -> Obj:
    ev: Obj = {"apiVersion": "v1", "kind": "Event", "type": "Normal", "reason": "Scheduled",
               "involvedObject": {"kind": "Pod", "name": pod_name, "namespace": NS},
               "lastTimestamp": TS.format(i), "count": 1}
    if scheduler == "kai-scheduler":  # KAI records with a legacy EventSource
        ev["source"] = {"component": "kai-scheduler"}
        ev["message"] = f"Successfully assigned pod {NS}/{pod_name} to node {node} at node-pool default"
    else:  # kube-scheduler records through events.k8s.io
        ev["reportingComponent"] = "default-scheduler"
        ev["source"] = {}
        ev["message"] = f"Successfully assigned {NS}/{pod_name} to {node}"
    return ev


def job(case: str, pods: int, *, failed: bool = False) -> Obj:
    name = object_name(RELEASE, case, RUN)
    status: dict[str, Any]
    if failed:
        status = {"failed": 1, "succeeded": pods - 1, "conditions": [
            {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"},
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
             "message": "Job has reached the specified backoff limit"}]}
    else:
        status = {"succeeded": pods, "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": NS, "labels": {"ck8s-gpu.io/smoke-run": RUN}},
            "spec": {"suspend": False, "parallelism": pods, "completions": pods, "backoffLimit": 0},
            "status": status}


def nvidia_smi_log(pod_name: str, node: str, case: str, container: str, uuids: list[str],
                   mig: list[str] | None = None, *, mps: bool = False) -> str:
    lines = [f"CK8S-SMOKE begin pod={pod_name} container={container} node={node} case={case}",
             "CK8S-SMOKE nvidia-smi rc=0"]
    lines += [f"CK8S-SMOKE uuid {u}" for u in uuids]
    lines += [f"CK8S-SMOKE uuid {u}" for u in mig or []]
    if mps:  # the MPS pipe directory NVIDIA's driver mounts (sharing.go GetCDIContainerEdits)
        lines.append("CK8S-SMOKE mps pipe=/tmp/nvidia-mps mounted=yes")
    lines += ["CK8S-SMOKE barrier wait", "CK8S-SMOKE end rc=0"]
    return "\n".join(lines) + "\n"


def fake_env_log(pod_name: str, node: str, case: str, container: str, devices: list[str]) -> str:
    lines = [f"CK8S-SMOKE begin pod={pod_name} container={container} node={node} case={case}",
             "CK8S-SMOKE nvidia-smi rc=2", "flag provided but not defined: -L"]
    lines += [f"CK8S-SMOKE env GPU_DEVICE_{d.replace('-', '_')}={d}" for d in devices]
    lines += ["CK8S-SMOKE barrier wait", "CK8S-SMOKE end rc=0"]
    return "\n".join(lines) + "\n"


def dcgm_metrics(node: str, uuids: list[str]) -> str:
    out = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).", "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for i, u in enumerate(uuids):
        out.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="{i}",UUID="{u}",pci_bus_id="00000000:3{i}:00.0",device="nvidia{i}",'
                   f'modelName="NVIDIA L4",Hostname="{node}"}} 0')
    return "\n".join(out) + "\n"


@dataclass
class World:
    """A consistent cluster state after one smoke run, plus what the verifier expects of it."""

    exp: Expectations
    snap: Snapshot
    pods: list[str] = field(default_factory=list)

    def copy(self) -> World:
        return World(self.exp, copy.deepcopy(self.snap), list(self.pods))

    def obj(self, kind: str, name: str) -> Obj:
        bucket = {"Pod": self.snap.pods, "ResourceClaim": self.snap.claims, "Job": self.snap.jobs,
                  "ResourceSlice": self.snap.slices, "Node": self.snap.nodes}[kind]
        return next(o for o in bucket if o["metadata"]["name"] == name)


def expectations(*, pools: tuple[PoolExpectation, ...] | None, cases: tuple[str, ...] = ("gpus",), gpus: int = 2,
                 scheduler: str = "kai-scheduler", in_container: bool = True, probe_expect: str = "nvidia-smi",
                 dcgm: bool | None = None, sharing: str = "", mig_profile: str = "") -> Expectations:
    def case(c: str) -> CaseExpectation:
        n = object_name(RELEASE, c, RUN)
        return {
            "gpus": CaseExpectation("gpus", n, gpus, ("probe",), "gpu.nvidia.com", True),
            "shared": CaseExpectation("shared", n, 1, ("probe-a", "probe-b"), "gpu.nvidia.com", False,
                                      sharing=sharing),
            "shared-named": CaseExpectation("shared-named", n, 2, ("probe",), "gpu.nvidia.com", False, claim=n,
                                            sharing=sharing),
            "gang": CaseExpectation("gang", n, gpus, ("probe",), "gpu.nvidia.com", True, pod_group=n),
            "mig": CaseExpectation("mig", n, 1, ("probe",), "mig.nvidia.com", False, profile=mig_profile,
                                    device_type="mig"),
        }[c]

    return Expectations(namespace=NS, run_id=RUN, resource_api=API, driver=DRIVER, device_class="gpu.nvidia.com",
                        scheduler=scheduler, queue="smoke-test" if scheduler == "kai-scheduler" else "",
                        pools=pools, cases=tuple(case(c) for c in cases), in_container=in_container,
                        probe_expect=probe_expect, dcgm=dcgm)


def pod_name(case: str, i: int) -> str:
    return f"{object_name(RELEASE, case, RUN)}-{'kq7xz'[i:] + 'abcde'[:i]}"


def _add_pod(w: World, case: str, i: int, node_name: str, device: str, uuids: list[str], *,
             scheduler: str, containers: tuple[str, ...] = ("probe",), simulated: bool = False,
             annotations: dict[str, str] | None = None, mig: list[str] | None = None, sharing: str = "",
             named: Obj | None = None) -> None:
    """One pod of `case` with its own claim from a template, or naming the claim object `named`."""
    name = pod_name(case, i)
    if named is None:
        c = claim(name, node_name, device, device_class="mig.nvidia.com" if mig else "gpu.nvidia.com")
        if sharing:
            c["status"]["allocation"]["devices"]["config"] = [gpu_config(sharing)]
        w.snap.claims.append(c)
    else:
        c = named
    w.snap.pods.append(pod(name, case, node_name, c["metadata"]["name"], scheduler=scheduler, containers=containers,
                           queue="smoke-test" if scheduler == "kai-scheduler" else "", annotations=annotations,
                           named=named is not None))
    w.snap.events.append(scheduled_event(name, node_name, scheduler, len(w.snap.events) % 10))
    for ctr in containers:
        text = (fake_env_log(name, node_name, case, ctr, [device]) if simulated
                else nvidia_smi_log(name, node_name, case, ctr, uuids, mig, mps=sharing == "MPS"))
        w.snap.logs[f"{name}/{ctr}"] = text
    w.pods.append(name)


def real_world(*, gpus_per_node: int = 1, nodes: tuple[str, ...] = NODES, cases: tuple[str, ...] = ("gpus",),
               scheduler: str = "kai-scheduler", dcgm: bool | None = None, sharing: str = "",
               mig_profile: str = "") -> World:
    """Two g6 nodes with the NVIDIA DRA driver; one single-GPU pod per node (or per GPU). `sharing`
    (TimeSlicing | MPS) puts the GpuConfig on the shared cases' claims."""
    pools = (PoolExpectation("gpu", "g6.xlarge" if gpus_per_node == 1 else "g6.12xlarge", len(nodes),
                             gpus_per_node, "NVIDIA L4"),)
    exp = expectations(pools=pools, cases=cases, gpus=2, scheduler=scheduler, dcgm=dcgm, sharing=sharing,
                       mig_profile=mig_profile)
    itype = pools[0].instance_type
    snap = Snapshot(device_classes=[device_class(), device_class("mig.nvidia.com", "mig")],
                    slices=[nvidia_slice(n, gpus_per_node, mig="mig" in cases and n == nodes[0]) for n in nodes],
                    nodes=[node(n, itype) for n in nodes])
    w = World(exp, snap)
    for case in cases:
        if case in ("gpus", "gang"):
            ann = {"pod-group-name": object_name(RELEASE, "gang", RUN), "kai.scheduler/skip-podgrouper": "true"} \
                if case == "gang" else None
            for i in range(2):
                # One pod per node, or both on the last node when it has the GPUs (node 0's gpu-0
                # is MIG-partitioned in the MIG world).
                n, gi = (nodes[i % len(nodes)], 0) if gpus_per_node == 1 else (nodes[-1], i)
                _add_pod(w, case, i, n, f"gpu-{gi}", [gpu_uuid(n, gi)], scheduler=scheduler, annotations=ann)
            snap.jobs.append(job(case, 2))
        elif case == "shared":
            n = nodes[-1]
            gi = gpus_per_node - 1
            _add_pod(w, case, 0, n, f"gpu-{gi}", [gpu_uuid(n, gi)], scheduler=scheduler,
                     containers=("probe-a", "probe-b"), sharing=sharing)
            snap.jobs.append(job(case, 1))
        elif case == "shared-named":
            # NVIDIA's gpu-test3: both pods on the claim's node, on its one GPU.
            n = nodes[-1]
            gi = gpus_per_node - 1
            shared = named_claim(object_name(RELEASE, case, RUN), n, f"gpu-{gi}",
                                 [pod_name(case, 0), pod_name(case, 1)], sharing=sharing)
            snap.claims.append(shared)
            for i in range(2):
                _add_pod(w, case, i, n, f"gpu-{gi}", [gpu_uuid(n, gi)], scheduler=scheduler, sharing=sharing,
                         named=shared)
            snap.jobs.append(job(case, 2))
        elif case == "mig":
            n = nodes[0]
            _add_pod(w, case, 0, n, "gpu-0-mig-1g10gb-19-0", [gpu_uuid(n, 0)], scheduler=scheduler,
                     mig=[mig_uuid(n, 0)])
            snap.jobs.append(job(case, 1))
    if "gang" in cases:
        snap.pod_groups.append({"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
                                "metadata": {"name": object_name(RELEASE, "gang", RUN), "namespace": NS},
                                "spec": {"minMember": 2, "queue": "smoke-test"}, "status": {"phase": "Running"}})
    if dcgm is not False:
        snap.metrics = {n: dcgm_metrics(n, [gpu_uuid(n, i) for i in range(gpus_per_node)]) for n in nodes}
    # After the run: the generated claims went with their pods; a named claim stays, deallocated.
    named = object_name(RELEASE, "shared-named", RUN)
    snap.claims_after = [{**c, "status": {}} for c in snap.claims if c["metadata"]["name"] == named]
    return w


def fake_world(*, nodes: tuple[str, ...] = ("ck8s-gpu-worker", "ck8s-gpu-worker2")) -> World:
    """kind + fake-gpu-operator: GPU_DEVICE_* env instead of nvidia-smi -L."""
    pools = (PoolExpectation("gpu", "g6.xlarge", len(nodes), 1, "NVIDIA L4"),)
    exp = expectations(pools=pools, probe_expect="env")
    snap = Snapshot(device_classes=[device_class()], slices=[fake_slice(n, 1) for n in nodes],
                    nodes=[node(n, "g6.xlarge", {"run.ai/simulated-gpu-node-pool": "default"}) for n in nodes])
    w = World(exp, snap)
    for i, n in enumerate(nodes):
        dev = gpu_uuid(n, 0).lower()
        _add_pod(w, "gpus", i, n, dev, [], scheduler="kai-scheduler", simulated=True)
    snap.jobs.append(job("gpus", 2))
    return w


def kwok_world(cases: tuple[str, ...] = ("gpus",)) -> World:
    """local: KWOK nodes with the test publisher's slices; no kubelet, so no logs at all."""
    w = real_world(cases=cases)
    w.exp = replace(w.exp, in_container=False, probe_expect="env", scheduler="default-scheduler", queue="")
    for p in w.snap.pods:
        p["spec"]["schedulerName"] = "default-scheduler"
        p["metadata"]["labels"].pop("kai.scheduler/queue")
    w.snap.events = [scheduled_event(p["metadata"]["name"], p["spec"]["nodeName"], "default-scheduler")
                     for p in w.snap.pods]
    w.snap.logs = {}
    w.snap.log_errors = {f"{p}/probe": "pod has no kubelet (KWOK node)" for p in w.pods}
    w.snap.metrics = None
    w.snap.metrics_note = "no nvidia-dcgm-exporter Service found"
    return w


def scale_world(nodes: int, gpus_per_node: int, pods: int) -> World:
    """`nodes` p5.48xlarge-like nodes of `gpus_per_node` GPUs and one case of `pods` single-GPU pods,
    each on its own GPU, with logs, events and DCGM metrics: the verifier benchmark's cluster
    (scripts/bench_verifier.py; issue 14: 1,000 x 8 with 8,000 pods)."""
    names = tuple(f"ip-10-{i // 250}-{i % 250}-{i % 7}.us-east-1.compute.internal" for i in range(nodes))
    pools = (PoolExpectation("h100", "p5.48xlarge", nodes, gpus_per_node, "NVIDIA H100 80GB HBM3"),)
    job_name = object_name(RELEASE, "gpus", RUN)
    exp = replace(expectations(pools=pools), cases=(
        CaseExpectation("gpus", job_name, pods, ("probe",), "gpu.nvidia.com", True),))
    snap = Snapshot(device_classes=[device_class()], slices=[nvidia_slice(n, gpus_per_node) for n in names],
                    nodes=[node(n, "p5.48xlarge") for n in names])
    w = World(exp, snap)
    for i in range(pods):
        n, g = names[(i // gpus_per_node) % nodes], i % gpus_per_node
        pod_name = f"{job_name}-{i:05d}"
        c = claim(pod_name, n, f"gpu-{g}")
        snap.claims.append(c)
        snap.pods.append(pod(pod_name, "gpus", n, c["metadata"]["name"]))
        snap.events.append(scheduled_event(pod_name, n, "kai-scheduler", i % 10))
        snap.logs[f"{pod_name}/probe"] = nvidia_smi_log(pod_name, n, "gpus", "probe", [gpu_uuid(n, g)])
        w.pods.append(pod_name)
    snap.jobs.append(job("gpus", pods))
    snap.metrics = {n: dcgm_metrics(n, [gpu_uuid(n, g) for g in range(gpus_per_node)]) for n in names}
    return w

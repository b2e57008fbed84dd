"""An in-memory cluster behind the Gateway protocol, with just enough controller behaviour for the
runner: the Job controller (pods on resume), a DRA scheduler (claims allocated from slices), a
kubelet (Running until the barrier is released) or KWOK (Succeeded at once, no logs), and the
resource-claim controller (generated claims deleted when their pod finishes; a named claim released
by each pod, deallocated once none holds it).

`kai_binder=True` allocates as KAI v0.17.0's binder does: one status update with the allocation
and the reservation, no `resource.kubernetes.io/delete-protection` finalizer
(pkg/binder/plugins/k8s-plugins/dynamicresources/dra.go). The claim controller of k8s v1.34.4
(pkg/controller/resourceclaim/controller.go) then behaves as it does with such claims:
- syncClaim drops finished pods from reservedFor but deallocates only a claim with the finalizer,
  so a named claim keeps its device; syncPod re-reserves an allocated claim for any pod bound to
  a node that names it, finished or not, and syncClaim drops it again: two writes a cycle for as
  long as the claim stays allocated (kubernetes#141274);
- a finished pod whose generated claim was deleted gets a new, unallocated one, and its
  status.resourceClaimStatuses is re-pointed at it (syncPod works from the spec, not the phase).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from components.smoke.expectations import RELEASE_ANNOTATION, RELEASE_VALUE
from components.smoke.gateway import KubeError, KubeUnreachable, Obj
from tests.unit.smoke import fixtures as fx

Key = tuple[str, str, str]  # kind, namespace, name


@dataclass
class FakeCluster:
    nodes: tuple[str, ...] = fx.NODES
    gpus_per_node: int = 1
    kubelet: bool = True
    schedulable: bool = True  # False: every pod stays Pending (no GPU fits)
    fail_pods: bool = False  # containers exit 1
    wrong_uuid: bool = False  # containers print another GPU's UUID
    unreachable: bool = False
    # A hop after scheduling that never succeeds (the kubelet's words): pods stay Pending on their node.
    prepare_error: str = ""  # event FailedPrepareDynamicResources with this message
    waiting: tuple[str, str] | None = None  # containers waiting (reason, message), e.g. ErrImagePull
    kai_binder: bool = False  # claims allocated without the delete-protection finalizer (see above)
    objects: dict[Key, Obj] = field(default_factory=dict)
    events_log: list[tuple[int, str, Obj]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)
    rv: int = 100
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _serial: int = 0
    claim_writes: int = 0  # the claim controller's re-reserve / un-reserve writes (kai_binder)

    def __post_init__(self) -> None:
        for n in self.nodes:
            self._put(fx.node(n, "g6.xlarge" if self.gpus_per_node == 1 else "g6.12xlarge"))
            self._put(fx.nvidia_slice(n, self.gpus_per_node))
        self._put(fx.device_class())

    # --- storage ----------------------------------------------------------------------------

    @staticmethod
    def key(obj: Obj) -> Key:
        m = obj["metadata"]
        return obj["kind"], m.get("namespace", ""), m["name"]

    def _put(self, obj: Obj, kind: str = "ADDED") -> Obj:
        self.rv += 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(self.rv)
        self.objects[self.key(obj)] = obj
        if obj["kind"] == "ResourceClaim":
            self.events_log.append((self.rv, kind, copy.deepcopy(obj)))
        return obj

    def _drop(self, key: Key) -> None:
        obj = self.objects.pop(key)
        self.rv += 1
        if obj["kind"] == "ResourceClaim":
            self.events_log.append((self.rv, "DELETED", copy.deepcopy(obj)))

    def of(self, kind: str, namespace: str | None = None) -> list[Obj]:
        return [o for (k, ns, _), o in sorted(self.objects.items()) if k == kind and (namespace in (None, ns))]

    # --- Gateway ----------------------------------------------------------------------------

    def _check(self, call: str) -> None:
        self.calls.append(call)
        if self.unreachable:
            raise KubeUnreachable("MaxRetryError: connection refused")

    def server_version(self) -> str:
        self._check("version")
        return "v1.34.4"

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        self._check(f"get {kind}/{name}")
        with self._lock:
            self._tick()
            obj = self.objects.get((kind, namespace or "", name))
            return copy.deepcopy(obj) if obj else None

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, label_selector: str = "",
             field_selector: str = "") -> tuple[list[Obj], str]:
        self._check(f"list {kind}")
        with self._lock:
            self._tick()
            want = dict(p.split("=", 1) for p in label_selector.split(",") if p)
            fields = dict(p.split("=", 1) for p in field_selector.split(",") if p)
            items = [copy.deepcopy(o) for o in self.of(kind, namespace)
                     if all(o["metadata"].get("labels", {}).get(k) == v for k, v in want.items())
                     and all(o["metadata"]["name"] == v for k, v in fields.items() if k == "metadata.name")]
            return items, str(self.rv)

    def create(self, obj: Obj) -> Obj:
        self._check(f"create {obj['kind']}/{obj['metadata']['name']}")
        with self._lock:
            obj = copy.deepcopy(obj)
            if obj["kind"] != "Namespace":
                obj["metadata"].setdefault("namespace", "default")
            if self.key(obj) in self.objects:
                raise KubeError(409, f"{obj['kind']} {obj['metadata']['name']} already exists")
            if obj["kind"] == "Job" and "selector" in obj["spec"]:
                raise KubeError(422, "spec.selector: `selector` not auto-generated")
            return copy.deepcopy(self._put(obj))

    def patch(self, api_version: str, kind: str, name: str, namespace: str | None, patch: Obj, *,
              subresource: str = "") -> Obj:
        self._check(f"patch {kind}/{name}" + (f"/{subresource}" if subresource else ""))
        with self._lock:
            obj = self.objects.get((kind, namespace or "", name))
            if obj is None:
                raise KubeError(404, f"{kind} {name} not found")
            patch = copy.deepcopy(patch)
            want_rv = patch.get("metadata", {}).pop("resourceVersion", None)
            if want_rv is not None and want_rv != obj["metadata"].get("resourceVersion"):
                raise KubeError(409, f"the object has been modified; resourceVersion {want_rv} is stale")
            if subresource == "status":  # the status subresource changes status alone
                patch = {"status": patch.get("status", {})}
            _merge(obj, patch)
            if kind == "Job" and patch.get("spec", {}).get("suspend") is False:
                self._start_job(obj)
            return copy.deepcopy(self._put(obj, "MODIFIED"))

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
               propagation: str = "Background") -> bool:
        self._check(f"delete {kind}/{name}")
        with self._lock:
            key = (kind, namespace or "", name)
            if key not in self.objects:
                return False
            self._drop(key)
            if kind == "Job":
                for pod in self.of("Pod", namespace):
                    if pod["metadata"]["labels"].get("job-name") == name:
                        self._finish_pod(pod, delete=True)
            if kind == "Namespace":
                for k in [k for k in self.objects if k[1] == name]:
                    self._drop(k)
            return True

    def watch(self, api_version: str, kind: str, namespace: str | None, *, resource_version: str,
              timeout_seconds: int) -> Iterator[tuple[str, Obj]]:
        with self._lock:
            start = int(resource_version or 0)
            pending = [(t, copy.deepcopy(o)) for rv, t, o in self.events_log if rv > start]
        if not pending:
            time.sleep(0.01)
        yield from pending

    def logs(self, namespace: str, pod: str, container: str) -> str:
        self._check(f"logs {pod}/{container}")
        with self._lock:
            obj = self.objects.get(("Pod", namespace, pod))
            if obj is None:
                raise KubeError(404, f"pods \"{pod}\" not found")
            if not self.kubelet:
                raise KubeError(500, "no kubelet answers for a KWOK node")
            return str(obj.get("_log", {}).get(container, ""))

    def get_text(self, api_path: str) -> str:
        raise KubeError(404, "no proxy in the fake")

    # --- controllers ------------------------------------------------------------------------

    def _start_job(self, job: Obj) -> None:
        ns, jname = job["metadata"]["namespace"], job["metadata"]["name"]
        tpl = job["spec"]["template"]
        job.setdefault("status", {})["startTime"] = "2026-11-29T21:30:00Z"
        for i in range(job["spec"]["parallelism"]):
            self._serial += 1
            pname = f"{jname}-{self._serial:05d}"
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": pname, "namespace": ns,
                                "labels": {**tpl["metadata"].get("labels", {}), "job-name": jname},
                                "annotations": dict(tpl["metadata"].get("annotations", {}))},
                   "spec": copy.deepcopy(tpl["spec"]), "status": {"phase": "Pending"}}
            self._put(pod)
            _ = i

    def _free_device(self, claim_class: str) -> tuple[str, int] | None:
        used = {(r["pool"], r["device"]) for c in self.of("ResourceClaim")
                for r in c.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])}
        for n in self.nodes:
            for g in range(self.gpus_per_node):
                if (n, f"gpu-{g}") not in used:
                    return n, g
        return None

    def _tick(self) -> None:
        """One step of every controller."""
        for pod in self.of("Pod"):
            phase = pod["status"]["phase"]
            if phase == "Pending" and not pod["spec"].get("nodeName"):
                self._schedule(pod)
            elif phase == "Running" and pod["metadata"]["annotations"].get(RELEASE_ANNOTATION) == RELEASE_VALUE:
                self._finish_pod(pod)
        for job in self.of("Job"):
            self._job_status(job)
        if self.kai_binder:
            self._claim_controller_without_finalizer()

    def _claim_controller_without_finalizer(self) -> None:
        """syncPod and syncClaim on claims KAI allocated (module docstring)."""
        for pod in self.of("Pod"):
            if pod["status"]["phase"] not in ("Succeeded", "Failed") or not pod["spec"].get("nodeName"):
                continue
            ns, pname = pod["metadata"]["namespace"], pod["metadata"]["name"]
            for ref in pod["spec"].get("resourceClaims", []):
                named = self.objects.get(("ResourceClaim", ns, ref.get("resourceClaimName") or ""))
                if named is None or not named.get("status", {}).get("allocation"):
                    continue
                reserved = [r["name"] for r in named["status"].get("reservedFor", [])]
                if pname in reserved:  # syncClaim: a done pod is no valid consumer
                    named["status"]["reservedFor"] = [r for r in named["status"]["reservedFor"] if r["name"] != pname]
                else:  # syncPod: allocated, not reserved for a pod bound to a node: reserve it
                    named["status"]["reservedFor"] = [*named["status"].get("reservedFor", []),
                                                      {"resource": "pods", "name": pname, "uid": f"uid-{pname}"}]
                self.claim_writes += 1
                self._put(named, "MODIFIED")
            for status in pod["status"].get("resourceClaimStatuses", []):
                if ("ResourceClaim", ns, status["resourceClaimName"]) not in self.objects:
                    self._serial += 1  # a new generated claim, never allocated: the pod is done
                    fresh = fx.claim(pname, "", "")
                    fresh["metadata"].update(name=f"{pname}-gpu-{self._serial:05d}", namespace=ns)
                    fresh["status"] = {}
                    status["resourceClaimName"] = fresh["metadata"]["name"]
                    self._put(fresh)
                    self._put(pod, "MODIFIED")

    def _schedule(self, pod: Obj) -> None:
        ns, pname = pod["metadata"]["namespace"], pod["metadata"]["name"]
        named = next((r["resourceClaimName"] for r in pod["spec"].get("resourceClaims", [])
                      if r.get("resourceClaimName")), None)
        if named is not None:
            self._schedule_on_named_claim(pod, named)
            return
        cname = f"{pname}-gpu-{self._serial:05d}"
        pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": cname}]
        free = self._free_device("gpu.nvidia.com") if self.schedulable else None
        if free is None:
            if ("ResourceClaim", ns, cname) not in self.objects:
                c = fx.claim(pname, "", "")
                c["metadata"].update(name=cname, namespace=ns)
                c["status"] = {}
                self._put(c)
                self._put({"apiVersion": "v1", "kind": "Event", "type": "Warning", "reason": "FailedScheduling",
                           "metadata": {"name": f"{pname}.fs", "namespace": ns},
                           "involvedObject": {"kind": "Pod", "name": pname},
                           "source": {"component": pod["spec"].get("schedulerName", "default-scheduler")},
                           "message": "0/2 nodes are available: 2 cannot allocate all claims."})
            return
        node, gpu = free
        c = fx.claim(pname, node, f"gpu-{gpu}")
        c["metadata"].update(name=cname, namespace=ns)
        template = next((self.objects.get(("ResourceClaimTemplate", ns, r["resourceClaimTemplateName"]))
                         for r in pod["spec"].get("resourceClaims", []) if r.get("resourceClaimTemplateName")), None)
        configs = (template or {}).get("spec", {}).get("spec", {}).get("devices", {}).get("config") or []
        if configs:  # the allocator copies the claim's configuration into the allocation
            c["status"]["allocation"]["devices"]["config"] = [{"source": "FromClaim", **copy.deepcopy(x)}
                                                              for x in configs]
        self._put(c)
        self._bind(pod, node, gpu)

    def _run(self, pod: Obj) -> None:
        if self.kubelet and (self.prepare_error or self.waiting):
            ns, pname = pod["metadata"]["namespace"], pod["metadata"]["name"]
            if self.prepare_error:
                self._put({"apiVersion": "v1", "kind": "Event", "type": "Warning",
                           "reason": "FailedPrepareDynamicResources",
                           "metadata": {"name": f"{pname}.prep", "namespace": ns},
                           "involvedObject": {"kind": "Pod", "name": pname}, "source": {"component": "kubelet"},
                           "message": self.prepare_error})
            else:
                assert self.waiting is not None
                pod["status"]["containerStatuses"] = [
                    {"name": ctr["name"], "state": {"waiting": {"reason": self.waiting[0],
                                                                "message": self.waiting[1]}}}
                    for ctr in pod["spec"]["containers"]]
            self._put(pod, "MODIFIED")
            return
        if self.kubelet:
            pod["status"]["phase"] = "Running"
            pod["status"]["containerStatuses"] = [{"name": ctr["name"], "state": {"running": {}}}
                                                  for ctr in pod["spec"]["containers"]]
        else:  # KWOK's stages: straight to Succeeded, the claim controller deletes the claim
            self._finish_pod(pod)
        self._put(pod, "MODIFIED")

    def _schedule_on_named_claim(self, pod: Obj, cname: str) -> None:
        """A ResourceClaim object the pod names: allocated by the first pod, reserved for each pod,
        which runs on the claim's node (no resourceClaimStatuses: those are for generated claims)."""
        ns, pname = pod["metadata"]["namespace"], pod["metadata"]["name"]
        claim = self.objects.get(("ResourceClaim", ns, cname))
        if claim is None:
            return  # Pending: the scheduler waits for the claim to exist
        alloc = claim.get("status", {}).get("allocation")
        if alloc is None:
            free = self._free_device("gpu.nvidia.com") if self.schedulable else None
            if free is None:
                return
            node, gpu = free
            claim["status"] = {k: v for k, v in fx.claim(pname, node, f"gpu-{gpu}")["status"].items()
                               if k != "reservedFor"}
            alloc = claim["status"]["allocation"]
            # The allocator copies the claim's configuration into the allocation for the driver.
            configs = claim["spec"]["devices"].get("config") or []
            if configs:
                alloc["devices"]["config"] = [{"source": "FromClaim", **copy.deepcopy(c)} for c in configs]
        result = alloc["devices"]["results"][0]
        node, gpu = result["pool"], int(result["device"].removeprefix("gpu-"))
        claim["status"]["reservedFor"] = [*claim["status"].get("reservedFor", []),
                                          {"resource": "pods", "name": pname, "uid": f"uid-{pname}"}]
        self._put(claim, "MODIFIED")
        self._bind(pod, node, gpu)

    def _bind(self, pod: Obj, node: str, gpu: int) -> None:
        """The scheduler binds the pod to its device's node; the probe then lists the device."""
        ns, pname = pod["metadata"]["namespace"], pod["metadata"]["name"]
        pod["spec"]["nodeName"] = node
        ev = fx.scheduled_event(pname, node, pod["spec"].get("schedulerName", "default-scheduler"))
        ev["metadata"] = {"name": f"{pname}.sched", "namespace": ns}
        self._put(ev)
        uuid = "GPU-00000000-1111-2222-3333-444444444444" if self.wrong_uuid else fx.gpu_uuid(node, gpu)
        case = pod["metadata"]["labels"]["ck8s-gpu.io/smoke-case"]
        pod["_log"] = {ctr["name"]: fx.nvidia_smi_log(pname, node, case, ctr["name"], [uuid])
                       for ctr in pod["spec"]["containers"]}
        self._run(pod)

    def _finish_pod(self, pod: Obj, delete: bool = False) -> None:
        ns, pname = pod["metadata"]["namespace"], pod["metadata"]["name"]
        code = 1 if self.fail_pods else 0
        pod["status"]["phase"] = "Failed" if code else "Succeeded"
        pod["status"]["containerStatuses"] = [
            {"name": c["name"], "state": {"terminated": {"exitCode": code, "reason": "Error" if code else "Completed"}}}
            for c in pod["spec"]["containers"]]
        for s in pod["status"].get("resourceClaimStatuses", []):
            key = ("ResourceClaim", ns, s["resourceClaimName"])
            if key in self.objects:
                self._drop(key)
        for ref in pod["spec"].get("resourceClaims", []):
            # A named claim outlives its pods: the claim controller drops the pod from reservedFor
            # and deallocates the claim once nobody holds it.
            named = self.objects.get(("ResourceClaim", ns, ref.get("resourceClaimName") or ""))
            if named is not None and named.get("status", {}).get("allocation") and not self.kai_binder:
                left = [r for r in named["status"].get("reservedFor", []) if r["name"] != pname]
                named["status"] = {"allocation": named["status"]["allocation"], "reservedFor": left} if left else {}
                self._put(named, "MODIFIED")
        if delete:
            self._drop(("Pod", ns, pname))

    def _job_status(self, job: Obj) -> None:
        ns, jname = job["metadata"]["namespace"], job["metadata"]["name"]
        if job["spec"].get("suspend") or any(c["type"] in ("Complete", "Failed")
                                             for c in job.get("status", {}).get("conditions", [])):
            return
        pods = [p for p in self.of("Pod", ns) if p["metadata"]["labels"].get("job-name") == jname]
        done = [p for p in pods if p["status"]["phase"] == "Succeeded"]
        failed = [p for p in pods if p["status"]["phase"] == "Failed"]
        st = job.setdefault("status", {})
        st.update(succeeded=len(done), failed=len(failed), active=len(pods) - len(done) - len(failed))
        if failed:
            st["conditions"] = [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                                 "message": "Job has reached the specified backoff limit"}]
        elif len(done) >= job["spec"]["completions"]:
            st["conditions"] = [{"type": "Complete", "status": "True"}]


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    for k, v in patch.items():
        if isinstance(v, dict) and isinstance(target.get(k), dict):
            _merge(target[k], v)
        elif v is None:
            target.pop(k, None)
        else:
            target[k] = copy.deepcopy(v)


class FakeClock:
    def __init__(self, cluster: FakeCluster | None = None) -> None:
        self.now = 1000.0
        self.cluster = cluster
        self.slept = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds

    def wall_ms(self) -> int:
        return int(self.now * 1000)

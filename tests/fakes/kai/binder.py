"""KAI's scheduler + binder, as far as DRA claims go, against a real API server (the local tier).

Built from kai-scheduler/KAI-Scheduler v0.17.0; each rule names the file it models:

- Pods it takes: `spec.schedulerName: kai-scheduler`, not bound, not finished. A pod without the
  `kai.scheduler/queue` label goes to the podgrouper's default queue `default-queue`
  (pkg/podgrouper/podgrouper/plugins/constants); that queue must be one `queues` names, else the
  pod stays Pending (no Queue object: KAI never schedules it).
- A named (non-template) claim whose DeviceClass name contains "gpu" must carry the label
  `kai.scheduler/queue` equal to the pod's queue, else the pod is unschedulable
  (pkg/scheduler/plugins/dynamicresources, validateSharedGpuClaimQueueLabel).
- A template claim is found through `pod.status.resourceClaimStatuses` (pkg/common/resources/dra.go
  GetResourceClaimName): until the claim controller created it, the pod waits.
- Allocation (pkg/scheduler/api/.../dynamicresources: the structured allocator): `ExactCount`
  requests of `count` devices of the class's `type` on one node, never a device another claim
  holds; an already allocated claim keeps its allocation and pins the pod to its node. CEL
  selectors, `All`, constraints and `firstAvailable` are NOT modelled: such a pod gets a Warning
  event saying so and stays Pending (strict: never a silent allocation).
- Gangs: pods annotated `pod-group-name` (pkg/common/constants/constants.go
  PodGroupAnnotationForPod) belong to that PodGroup (scheduling.run.ai/v2alpha2, spec.minMember:
  pkg/apis/scheduling/v2alpha2/podgroup_types.go). A group with fewer pods than minMember is not
  tried (pkg/scheduler/actions/allocate/allocate.go, FilterUnready; podset.go IsReadyForScheduling);
  a group without its PodGroup object waits. Its pending pods are placed together, each after the
  devices the others took; if one does not fit, none is bound (allocate.go: the statement is
  Discarded), and each pod gets one Warning event saying so. Topology, subgroups and queue quotas of
  a gang are not modelled.
- The binder (pkg/binder/plugins/k8s-plugins/dynamicresources/dra.go): per claim ONE status
  update setting `allocation` (if unset) and appending `{resource: pods, name, uid}` to
  `reservedFor`; NO `resource.kubernetes.io/delete-protection` finalizer (kube-scheduler adds it);
  then the pod's `pods/binding`. Events: `Scheduled` from `kai-scheduler`.

Everything the claim controller does afterwards is the real kube-controller-manager's.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from components.smoke.gateway import KubeError, KubeGateway

Obj = dict[str, Any]
POD_GROUP_API = "scheduling.run.ai/v2alpha2"
POD_GROUP_ANNOTATION = "pod-group-name"
SCHEDULER = "kai-scheduler"
QUEUE_LABEL = "kai.scheduler/queue"
DEFAULT_QUEUE = "default-queue"
API = "resource.k8s.io/v1"
CLASS_TYPES = {"gpu.nvidia.com": "gpu", "mig.nvidia.com": "mig"}  # the DRA driver's DeviceClass selectors


def _name(o: Obj) -> str:
    return str(o.get("metadata", {}).get("name", ""))


def _attr(device: Obj, key: str, domain: str) -> Any:
    for k in (key, f"{domain}/{key}"):
        v = (device.get("attributes") or {}).get(k)
        if isinstance(v, dict) and v:
            return next(iter(v.values()))
    return None


def unsupported(claim: Obj) -> str:
    """What the stand-in does not model in a claim ("" when it can allocate it)."""
    devices = claim.get("spec", {}).get("devices") or {}
    if devices.get("constraints"):
        return "constraints"
    for r in devices.get("requests") or []:
        exactly = r.get("exactly")
        if exactly is None:
            return f"request {r.get('name')}: firstAvailable"
        if exactly.get("allocationMode", "ExactCount") != "ExactCount":
            return f"request {r.get('name')}: allocationMode {exactly.get('allocationMode')}"
        if exactly.get("selectors"):
            return f"request {r.get('name')}: CEL selectors"
        if exactly.get("deviceClassName") not in CLASS_TYPES:
            return f"request {r.get('name')}: DeviceClass {exactly.get('deviceClassName')}"
    return ""


@dataclass
class KaiStandIn:
    gw: KubeGateway
    namespace: str
    queues: frozenset[str]
    driver: str = "gpu.nvidia.com"
    allocated: list[str] = field(default_factory=list)  # claim names, in order
    bound: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    error: str = ""
    _told: set[str] = field(default_factory=set)  # pods already given the gang's Discard event

    # -- the loop ------------------------------------------------------------------------

    def start(self) -> KaiStandIn:
        self._thread = threading.Thread(target=self._loop, name="kai-stand-in", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(5)

    def _loop(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self.cycle()
            except Exception as exc:  # keep scheduling: the test reads `error`
                self.error = f"{type(exc).__name__}: {exc}"

    def cycle(self) -> None:
        pods = [p for p in self.gw.list("v1", "Pod", self.namespace)[0]
                if p.get("spec", {}).get("schedulerName") == SCHEDULER and not p["spec"].get("nodeName")
                and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
                and not p["metadata"].get("deletionTimestamp")]
        gangs: dict[str, list[Obj]] = {}
        for pod in pods:
            group = pod["metadata"].get("annotations", {}).get(POD_GROUP_ANNOTATION)
            if group:
                gangs.setdefault(group, []).append(pod)
            else:
                self.schedule(pod)
        for group, members in gangs.items():
            self.schedule_gang(group, members)

    # -- one pod -------------------------------------------------------------------------

    def _event(self, pod: Obj, reason: str, message: str, kind: str = "Normal") -> None:
        self.gw.create({"apiVersion": "v1", "kind": "Event",
                        "metadata": {"name": f"{_name(pod)}.{uuid.uuid4().hex[:10]}", "namespace": self.namespace},
                        "involvedObject": {"kind": "Pod", "name": _name(pod), "namespace": self.namespace,
                                           "uid": pod["metadata"]["uid"], "apiVersion": "v1"},
                        "reason": reason, "message": message, "type": kind, "source": {"component": SCHEDULER},
                        "firstTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "lastTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "count": 1})

    def claims_of(self, pod: Obj) -> list[Obj] | str:
        """The pod's claims, or why it must wait."""
        out = []
        statuses = {s["name"]: s.get("resourceClaimName") for s in pod.get("status", {}).get("resourceClaimStatuses")
                    or []}
        queue = pod["metadata"].get("labels", {}).get(QUEUE_LABEL, DEFAULT_QUEUE)
        for ref in pod["spec"].get("resourceClaims") or []:
            cname = ref.get("resourceClaimName") or statuses.get(ref["name"])
            if not cname:
                return f"claim {ref['name']} not created yet"
            claim = self.gw.get(API, "ResourceClaim", cname, self.namespace)
            if claim is None:
                return f"claim {cname} does not exist"
            gpu = any("gpu" in (r.get("exactly") or {}).get("deviceClassName", "")
                      for r in claim["spec"]["devices"].get("requests") or [])
            if ref.get("resourceClaimName") and gpu and claim["metadata"].get("labels", {}).get(QUEUE_LABEL) != queue:
                return f"shared GPU claim {cname} lacks label {QUEUE_LABEL}={queue}"
            out.append(claim)
        return out

    def schedule(self, pod: Obj) -> None:
        queue = pod["metadata"].get("labels", {}).get(QUEUE_LABEL, DEFAULT_QUEUE)
        if queue not in self.queues:
            return  # no such Queue: KAI leaves the pod Pending
        claims = self.claims_of(pod)
        if isinstance(claims, str):
            return
        for c in claims:
            if (why := unsupported(c)) and not c.get("status", {}).get("allocation"):
                return self._event(pod, "Unschedulable", f"KAI stand-in does not model {why}", "Warning")
        plan = self.place(claims)
        if plan is None:
            return self._event(pod, "FailedScheduling", "0 nodes have the free devices the pod's claims ask for",
                               "Warning")
        self.bind(pod, claims, *plan)

    def bind(self, pod: Obj, claims: list[Obj], node: str, results: dict[str, list[Obj]]) -> None:
        for claim in claims:
            if not self.bind_claim(claim, pod, node, results.get(_name(claim))):
                return  # the claim moved on (409): schedule again next cycle
        self.gw._json("POST", f"/api/v1/namespaces/{self.namespace}/pods/{_name(pod)}/binding",
                      body={"apiVersion": "v1", "kind": "Binding", "metadata": {"name": _name(pod)},
                            "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
        self.bound.append(_name(pod))
        self._event(pod, "Scheduled", f"Successfully assigned {self.namespace}/{_name(pod)} to {node}")

    def schedule_gang(self, group: str, pending: list[Obj]) -> None:
        """All the group's pending pods bound, or none (allocate.go)."""
        pg = self.gw.get(POD_GROUP_API, "PodGroup", group, self.namespace)
        if pg is None:
            return  # KAI's podgrouper makes one for a known owner; an explicit gang names an existing one
        members = [p for p in self.gw.list("v1", "Pod", self.namespace)[0]
                   if p["metadata"].get("annotations", {}).get(POD_GROUP_ANNOTATION) == group
                   and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
                   and not p["metadata"].get("deletionTimestamp")]
        if len(members) < int(pg.get("spec", {}).get("minMember", 1)):
            return  # not ready for scheduling: not tried
        # The group's pending pods from the same listing as its members: KAI judges a gang on one
        # snapshot of the cluster (KAI-Scheduler pkg/scheduler/cache/cache.go
        # SchedulerCache.Snapshot, then the allocate action). A pod created between the cycle's
        # listing and this one would otherwise count toward minMember without being placed, and a
        # gang that cannot fit would get its other pods bound (seen in CI: gang-never-0 bound).
        pending = [p for p in members if not p["spec"].get("nodeName")]
        if any(p["metadata"].get("labels", {}).get(QUEUE_LABEL, DEFAULT_QUEUE) not in self.queues for p in pending):
            return
        taken: set[tuple[str, str]] = set()
        plans = []
        for pod in sorted(pending, key=_name):
            claims = self.claims_of(pod)
            if isinstance(claims, str):
                return
            if any(unsupported(c) for c in claims if not c.get("status", {}).get("allocation")):
                return self._event(pod, "Unschedulable", "KAI stand-in does not model a claim of this gang", "Warning")
            plan = self.place(claims, taken)
            if plan is None:
                for p in pending:
                    if _name(p) not in self._told:
                        self._told.add(_name(p))
                        self._event(p, "FailedScheduling", f"KAI stand-in: gang {group} (minMember "
                                    f"{pg['spec'].get('minMember')}): pod {_name(pod)} does not fit, so none is bound",
                                    "Warning")
                return
            taken |= {(r["pool"], r["device"]) for rs in plan[1].values() for r in rs}
            plans.append((pod, claims, plan))
        for pod, claims, (node, results) in plans:
            self.bind(pod, claims, node, results)

    def place(self, claims: list[Obj], taken: set[tuple[str, str]] | None = None,
              ) -> tuple[str, dict[str, list[Obj]]] | None:
        """A node and, per claim still unallocated, its device results; `taken`: devices planned for
        the gang's other pods."""
        pinned = {r["pool"] for c in claims
                  for r in (c.get("status", {}).get("allocation") or {}).get("devices", {}).get("results", [])}
        slices = [s for s in self.gw.list(API, "ResourceSlice")[0] if s["spec"].get("driver") == self.driver]
        used = {(r["pool"], r["device"]) for c in self.gw.list(API, "ResourceClaim")[0]
                for r in (c.get("status", {}).get("allocation") or {}).get("devices", {}).get("results", [])}
        used |= taken or set()
        nodes = sorted({s["spec"].get("nodeName") for s in slices if s["spec"].get("nodeName")})
        for node in nodes:
            if pinned and pinned != {node}:
                continue
            free = [(s["spec"]["pool"]["name"], d) for s in slices if s["spec"].get("nodeName") == node
                    for d in s["spec"].get("devices") or [] if (s["spec"]["pool"]["name"], d["name"]) not in used]
            results: dict[str, list[Obj]] = {}
            ok = True
            for claim in claims:
                if claim.get("status", {}).get("allocation"):
                    continue
                got: list[Obj] = []
                for req in claim["spec"]["devices"]["requests"]:
                    want = CLASS_TYPES[req["exactly"]["deviceClassName"]]
                    n = int(req["exactly"].get("count", 1))
                    pick = [(pool, d) for pool, d in free if _attr(d, "type", self.driver) == want][:n]
                    if len(pick) < n:
                        ok = False
                        break
                    free = [f for f in free if f not in pick]
                    got += [{"request": req["name"], "driver": self.driver, "pool": pool, "device": d["name"]}
                            for pool, d in pick]
                results[_name(claim)] = got
            if ok:
                return node, results
        return None

    def bind_claim(self, claim: Obj, pod: Obj, node: str, results: list[Obj] | None) -> bool:
        """dra.go: one status update, allocation if unset plus this pod's reservation, no finalizer,
        retried on conflict with a fresh read (client-go retry.RetryOnConflict, DefaultRetry: 5)."""
        for _ in range(5):
            status = dict(claim.get("status") or {})
            fresh = not status.get("allocation")
            if fresh:
                if results is None:
                    return False  # allocated by the plan, freed since: plan again next cycle
                config = [{"source": "FromClaim", **c} for c in claim["spec"]["devices"].get("config") or []]
                status["allocation"] = {
                    "devices": {"results": results, **({"config": config} if config else {})},
                    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                        {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}
            entry = {"resource": "pods", "name": _name(pod), "uid": pod["metadata"]["uid"]}
            status["reservedFor"] = [*[r for r in status.get("reservedFor") or [] if r.get("uid") != entry["uid"]],
                                     entry]
            try:
                self.gw.patch(API, "ResourceClaim", _name(claim), self.namespace,
                              {"metadata": {"resourceVersion": claim["metadata"]["resourceVersion"]},
                               "status": status}, subresource="status")
            except KubeError as exc:
                if exc.status != 409:
                    raise
                again = self.gw.get(API, "ResourceClaim", _name(claim), self.namespace)
                if again is None:
                    return False
                claim = again
                continue
            if fresh:
                self.allocated.append(_name(claim))
            return True
        return False

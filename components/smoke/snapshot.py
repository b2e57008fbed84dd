"""The plain objects the verifier reads, and accessors for their Kubernetes JSON shapes.

Objects are dicts exactly as the API server returns them (camelCase JSON), so test fixtures
can be copied from `kubectl get -o json` of real clusters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

Obj = dict[str, Any]


@dataclass
class Snapshot:
    device_classes: list[Obj] = field(default_factory=list)
    slices: list[Obj] = field(default_factory=list)
    nodes: list[Obj] = field(default_factory=list)
    # The last version of each claim of the run that carried an allocation (claims generated
    # from templates are deleted once their pod finishes, so the runner records them as it goes).
    claims: list[Obj] = field(default_factory=list)
    # Every version of those claims in the order the watch delivered them ({"type", "object"}):
    # shows which claims held a device at the same time where no barrier makes pods overlap.
    claim_history: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    # Pod -> the claim (request `gpu`) it named while it ran, as the runner recorded it. After a pod
    # finishes, the claim controller may delete its claim, create another and re-point the pod's
    # status at it (pkg/controller/resourceclaim/controller.go at v1.34.4: it works from the pod's
    # spec, not its phase): the final status can then name a claim that never held a device.
    pod_claims: dict[str, str] = field(default_factory=dict)
    # Every device taint of the driver's slices seen during the run, over every slice version the
    # runner's watch delivered ({"pool", "device", "taint"}); [] when nothing watched (the final
    # slices then stand alone).
    taints_seen: list[Obj] = field(default_factory=list)
    # The namespace's claims as they are after the run (None: not listed): nothing may still hold a GPU.
    claims_after: list[Obj] | None = None
    # owned_allocated's index and what it was computed from (the claim lists, by identity and length)
    _owned: tuple[tuple[int, int, int, int], dict[tuple[str, str], list[tuple[str, str]]]] | None = field(
        default=None, repr=False, compare=False)
    jobs: list[Obj] = field(default_factory=list)
    events: list[Obj] = field(default_factory=list)
    pod_groups: list[Obj] = field(default_factory=list)
    # The run's NVIDIA ComputeDomains (case compute-domain), each as the runner saw it while the case's
    # pods held their claims (a node leaves the domain once its channel claim is unprepared).
    compute_domains: list[Obj] = field(default_factory=list)
    logs: dict[str, str] = field(default_factory=dict)  # "pod/container" -> log text
    log_errors: dict[str, str] = field(default_factory=dict)  # "pod/container" -> why no log
    # node -> DCGM exporter metrics text; None: no exporter found (see metrics_note).
    metrics: dict[str, str] | None = None
    metrics_note: str = ""
    # Case `inference`: what the runner saw while it drove the model servers (plain JSON; the case's
    # module reads it: components/smoke/cases/inference.py). None: the case did not run.
    inference: dict[str, Any] | None = None


def when(text: object) -> datetime | None:
    """An API timestamp (RFC 3339, `Z`) as an aware datetime; None when absent or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def status_written(claim: Obj) -> datetime | None:
    """When this version's status was last written: its newest status-subresource managedFields entry
    (the scheduler writes the allocation there; the first version carrying an allocation is that write)."""
    times = [t for f in claim.get("metadata", {}).get("managedFields") or []
             if f.get("subresource") == "status" and (t := when(f.get("time"))) is not None]
    return max(times) if times else None


FINISHED_PHASES = ("Succeeded", "Failed")  # a pod in one of these holds no device any more


def name(obj: Obj) -> str:
    return str(obj.get("metadata", {}).get("name", ""))


def labels(obj: Obj) -> dict[str, str]:
    return dict(obj.get("metadata", {}).get("labels") or {})


def annotations_of(obj: Obj) -> dict[str, str]:
    return dict(obj.get("metadata", {}).get("annotations") or {})


def attribute(device: Obj, key: str, domain: str) -> Any:
    """A device attribute's value. Unqualified names belong to the driver's domain, so both
    `uuid` (NVIDIA DRA driver) and `gpu.nvidia.com/uuid` (fake-gpu-operator) answer `uuid`."""
    attrs = device.get("attributes") or {}
    for k in (key, f"{domain}/{key}"):
        value = attrs.get(k)
        if isinstance(value, dict) and value:
            return next(iter(value.values()))
    return None


@dataclass(frozen=True)
class SliceDevice:
    node: str
    pool: str
    name: str
    device: Obj


def slice_devices(slices: list[Obj], driver: str) -> dict[tuple[str, str], SliceDevice]:
    """(pool, device) -> device, from the newest generation of each of the driver's pools."""
    newest: dict[str, int] = {}
    for s in slices:
        spec = s.get("spec", {})
        if spec.get("driver") == driver:
            pool = spec.get("pool", {})
            newest[pool.get("name", "")] = max(newest.get(pool.get("name", ""), 0), int(pool.get("generation", 0)))
    out: dict[tuple[str, str], SliceDevice] = {}
    for s in slices:
        spec = s.get("spec", {})
        pool = spec.get("pool", {})
        pool_name = pool.get("name", "")
        if spec.get("driver") != driver or int(pool.get("generation", 0)) != newest.get(pool_name):
            continue
        for d in spec.get("devices") or []:
            out[(pool_name, d.get("name", ""))] = SliceDevice(spec.get("nodeName") or "", pool_name, d["name"], d)
    return out


def pod_claim_name(pod: Obj, claim: str = "gpu") -> str | None:
    for status in pod.get("status", {}).get("resourceClaimStatuses") or []:
        if status.get("name") == claim:
            value = status.get("resourceClaimName")
            return str(value) if value else None
    for ref in pod.get("spec", {}).get("resourceClaims") or []:
        if ref.get("name") == claim and ref.get("resourceClaimName"):
            return str(ref["resourceClaimName"])
    return None


POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"  # on claims made from a pod's template


def owned_allocated(snap: Snapshot) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(pod name, pod claim name) -> [(claim name, pod uid)] of generated claims that held an
    allocation in some recorded version: the claim controller names the owning pod (a controller
    ownerReference) and the pod's claim entry (POD_CLAIM_ANNOTATION) on every claim it makes
    (pkg/controller/resourceclaim/controller.go at v1.34.4). Computed once per state of the
    snapshot's claim lists (a verdict asks for every pod), again when collect replaces them."""
    key = (id(snap.claims), len(snap.claims), id(snap.claim_history), len(snap.claim_history))
    if snap._owned is None or snap._owned[0] != key:
        owned: dict[tuple[str, str], list[tuple[str, str]]] = {}
        versions = [e.get("object") or {} for e in snap.claim_history if e.get("type") != "DELETED"]
        for c in [*versions, *snap.claims]:
            if not allocation_results(c):
                continue
            meta = c.get("metadata", {})
            request = (meta.get("annotations") or {}).get(POD_CLAIM_ANNOTATION)
            for ref in meta.get("ownerReferences") or []:
                if ref.get("kind") == "Pod" and ref.get("controller") and request:
                    entry = (name(c), str(ref.get("uid") or ""))
                    found = owned.setdefault((str(ref.get("name", "")), str(request)), [])
                    if entry not in found:
                        found.append(entry)
        snap._owned = (key, owned)
    return snap._owned[1]


def claim_of(snap: Snapshot, pod: Obj, claim: str = "gpu") -> str | None:
    """The claim a pod ran with. A named claim is in the pod's spec. A generated one is the claim
    owned by the pod that held an allocation: after the pod finished, the claim controller may
    delete it, create another that is never allocated and re-point the pod's status at that, within
    milliseconds (seen with KAI v0.17.0 on KWOK nodes: docs/compatibility.md). Else what the runner
    recorded while the pod ran, else the status now."""
    for ref in pod.get("spec", {}).get("resourceClaims") or []:
        if ref.get("name") == claim and ref.get("resourceClaimName"):
            return str(ref["resourceClaimName"])
    uid = str(pod.get("metadata", {}).get("uid") or "")
    held = [c for c, owner_uid in owned_allocated(snap).get((name(pod), claim), []) if not uid or not owner_uid
            or owner_uid == uid]
    if held:
        return held[0]
    # pod_claims records the `gpu` claim alone: another claim entry (an IMEX channel) reads its own status.
    recorded = snap.pod_claims.get(name(pod)) if claim == "gpu" else None
    return recorded or pod_claim_name(pod, claim)


def allocation_results(claim: Obj) -> list[Obj]:
    alloc = claim.get("status", {}).get("allocation") or {}
    return list((alloc.get("devices") or {}).get("results") or [])


def allocation_nodes(claim: Obj) -> set[str]:
    """Node names an allocation's nodeSelector pins the claim to (metadata.name match fields)."""
    alloc = claim.get("status", {}).get("allocation") or {}
    nodes: set[str] = set()
    for term in (alloc.get("nodeSelector") or {}).get("nodeSelectorTerms") or []:
        for f in term.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("operator") == "In":
                nodes.update(f.get("values") or [])
    return nodes


def events_for(events: list[Obj], kind: str, obj_name: str) -> list[Obj]:
    def about(e: Obj) -> Obj:
        return e.get("involvedObject") or e.get("regarding") or {}

    found = [e for e in events if about(e).get("kind") == kind and about(e).get("name") == obj_name]
    return sorted(found, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))


def reporter(event: Obj) -> str:
    """Who emitted an event: kube-scheduler sets reportingComponent, KAI the legacy source."""
    return str(event.get("reportingComponent") or event.get("reportingController")
               or (event.get("source") or {}).get("component") or "")


def event_message(events: list[Obj], *reasons: str) -> str:
    """The newest message among events with one of `reasons` ("" when none)."""
    picked = [e for e in events if e.get("reason") in reasons]
    return str(picked[-1].get("message") or picked[-1].get("note") or "") if picked else ""


def pod_containers(pod: Obj) -> list[str]:
    return [c.get("name", "") for c in pod.get("spec", {}).get("containers") or []]


def container_state(pod: Obj, container: str) -> str:
    """One phrase for a container's state: `exited 1 (Error)`, `waiting (ImagePullBackOff: ...)`."""
    for cs in pod.get("status", {}).get("containerStatuses") or []:
        if cs.get("name") != container:
            continue
        state = cs.get("state") or {}
        if "terminated" in state:
            t = state["terminated"]
            return f"exited {t.get('exitCode')} ({t.get('reason', '')})"
        if "waiting" in state:
            w = state["waiting"]
            msg = f": {w['message']}" if w.get("message") else ""
            return f"waiting ({w.get('reason', '')}{msg})"
        if "running" in state:
            return "running"
    return "not started"


def condition(obj: Obj, kind: str) -> Obj | None:
    for c in obj.get("status", {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return None


# Why a pod's containers did not start, hop by hop, as the kubelet reports it (k8s v1.34.4):
# pod events pkg/kubelet/events/event.go; container waiting reasons pkg/kubelet/images/types.go,
# pkg/kubelet/kuberuntime/kuberuntime_container.go and pkg/kubelet/container/sync_result.go.
START_EVENT_HOPS = {
    "FailedPrepareDynamicResources": "claim prepare (kubelet -> DRA kubelet plugin NodePrepareResources)",
    "FailedCreatePodSandBox": "pod sandbox (container runtime, CNI)",
    "FailedMount": "volume mount",
}
START_WAITING_HOPS = {
    "ErrImagePull": "image pull",
    "ImagePullBackOff": "image pull",
    "ErrImageNeverPull": "image pull",
    "InvalidImageName": "image pull",
    "ImageInspectError": "image pull",
    "CreateContainerError": "container create (runtime, CDI devices)",
    "CreateContainerConfigError": "container config",
    "RunContainerError": "container start (runtime)",
    "CreatePodSandboxError": "pod sandbox (container runtime, CNI)",
}


def containers_started(pod: Obj) -> bool:
    """Some container of the pod runs or ran (the kubelet created and started it)."""
    return any(set(cs.get("state") or {}) & {"running", "terminated"}
               for cs in pod.get("status", {}).get("containerStatuses") or [])


def start_failure(pod: Obj, events: list[Obj]) -> str:
    """The hop that keeps a scheduled pod's containers from starting, with the kubelet's words;
    "" when its containers started (or nothing failed yet). Waiting reasons beat events: they are
    the current state, an event may be an old retry that later succeeded."""
    for cs in pod.get("status", {}).get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        reason = str(waiting.get("reason", ""))
        if reason in START_WAITING_HOPS:
            message = waiting.get("message")
            return f"{START_WAITING_HOPS[reason]}: container {cs.get('name')} {reason}" + (
                f": {message}" if message else "")
    if containers_started(pod) or pod.get("status", {}).get("phase") in ("Running", "Succeeded", "Failed"):
        return ""
    for reason, hop in START_EVENT_HOPS.items():
        msg = event_message(events, reason)
        if msg:
            return f"{hop}: {msg}"
    return ""

"""operator/robust_controller: an AI operator with a CRD installed and working (issue 44).

The checklist (cncf/k8s-ai-conformance, operator/robust_controller, MUST) asks that at least one
complex AI operator be proven: its pods run, its webhooks are operational, its custom resources are
reconciled. This project's operator is KubeRay (components/addons/kuberay_operator.py), so the
procedure proves, in this order:

1. the operator's pods, found by the chart's label in any namespace, are Running and Ready. None at
   all is no failure: the operator may run outside the cluster (as in CI); step 3 is then the proof
   that it runs;
2. the admission webhooks whose rules reach ray.io are listed. Where one of them validates RayCluster
   creates, a server-side dry run of a RayCluster the operator's validator refuses (two worker groups
   of one name) must be refused; a webhook that is down fails the dry run ("failed calling webhook");
3. a RayCluster with a head and no workers, created in the run's namespace, is reconciled within the
   run's timeout: its head Pod and head Service exist, owned by it, and its status says the cluster
   is ready. The head keeps a sleeping command of the run's image (Ray itself is not what is
   proven), so the proof is the same on a GPU node, a CPU node or a KWOK node.

Facts from ray-project/kuberay v1.5.2 (ray-operator module and helm-chart/kuberay-operator), cited
where used.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from ..smoke.gateway import KubeError, KubeUnreachable, Obj
from .common import Context, Log, get_json, items
from .evidence import Result

RID = "robust_controller"
RAY_API = "ray.io/v1"
NAME = "robust-controller"
TWINS = f"{NAME}-twins"
# helm-chart/kuberay-operator/templates/deployment.yaml labels the operator's pods with
# app.kubernetes.io/name = the chart's name (values.yaml nameOverride: kuberay-operator).
OPERATOR_PODS = "app.kubernetes.io/name=kuberay-operator"
# ray-operator controllers/ray/utils/constant.go RayClusterLabelKey, RayNodeTypeLabelKey.
CLUSTER_LABEL, NODE_TYPE_LABEL = "ray.io/cluster", "ray.io/node-type"
# ray-operator controllers/ray/utils/constant.go RayOverwriteContainerCmdAnnotationKey: with it the operator
# keeps the head container's command (controllers/ray/common/pod.go BuildPod) instead of `ray start`.
OVERWRITE_CMD = "ray.io/overwrite-container-cmd"
WEBHOOK_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")
DOWN = "an admission webhook for ray.io is not operational"
DENIED_BY = re.compile(r'admission webhook "([^"]+)" denied the request')
UNIQUE = "worker group names must be unique"  # pkg/webhooks/v1/raycluster_webhook.go validateWorkerGroups


def _collection(ns: str) -> str:
    return f"/apis/{RAY_API}/namespaces/{ns}/rayclusters"


def _container(ctx: Context) -> Obj:
    # Probes of our own: the operator injects probes that ask Ray's dashboard agent and GCS for their
    # health only where a container has none (controllers/ray/common/pod.go initLivenessAndReadinessProbe).
    alive = {"exec": {"command": ["bash", "-c", "true"]}, "periodSeconds": 5}
    return {"name": "ray-head", "image": ctx.image,
            "command": ["bash", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"],
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}},
            "readinessProbe": alive, "livenessProbe": alive,
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}


def raycluster(ctx: Context, name: str, worker_groups: tuple[str, ...] = ()) -> Obj:
    """A head and, where named, empty worker groups (0 replicas): no GPU, nothing to schedule but the head."""
    template = {"spec": {"tolerations": [{"operator": "Exists"}], "containers": [_container(ctx)]}}
    spec: Obj = {"headGroupSpec": {"rayStartParams": {}, "template": template}}
    if worker_groups:
        spec["workerGroupSpecs"] = [{"groupName": g, "replicas": 0, "minReplicas": 0, "maxReplicas": 1,
                                     "rayStartParams": {}, "template": template} for g in worker_groups]
    return {"apiVersion": RAY_API, "kind": "RayCluster",
            "metadata": {"name": name, "namespace": ctx.namespace, "annotations": {OVERWRITE_CMD: "true"}},
            "spec": spec}


# --- 1. the operator's pods -------------------------------------------------------------------------


def _pod_state(pod: Obj) -> tuple[bool, str]:
    """(Running and Ready, what it is)."""
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    ready: Obj = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
    if phase == "Running" and ready.get("status") == "True":
        return True, "Running and Ready"
    waiting = [f"{c.get('name')} {(c.get('state') or {}).get('waiting', {}).get('reason') or 'waiting'}"
               for c in status.get("containerStatuses") or [] if (c.get("state") or {}).get("waiting")]
    why = "; ".join(waiting) or ready.get("message") or ready.get("reason") or "not Ready"
    return False, f"{phase}, {why}"


def _operator_pods(ctx: Context, log: Log) -> tuple[str, str]:
    """(what the notes say of the operator's pods, the failure; "" when none)."""
    pods = ctx.gw.list("v1", "Pod", label_selector=OPERATOR_PODS)[0]
    if not pods:
        log(f"no pod labelled {OPERATOR_PODS} in any namespace: the operator runs outside the cluster, or under "
            "other labels; its reconcile below is the proof that it runs")
        return "no operator pod in the cluster (it runs outside it: the reconcile proves it runs)", ""
    live, bad = [], []
    for p in pods:
        ref = f"{p['metadata'].get('namespace')}/{p['metadata']['name']}"
        ok, what = _pod_state(p)
        log(f"operator pod {ref}: {what}")
        # An evicted or replaced pod stays listed, ended or terminating: a leftover, not the operator.
        if p["metadata"].get("deletionTimestamp") or (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        live.append(ref)
        if not ok:
            bad.append(f"{ref} is {what}")
    if bad:
        return "", f"KubeRay's operator pod is not Running and Ready: {'; '.join(bad)}"
    if not live:
        return "", f"no KubeRay operator pod is running ({len(pods)} ended or terminating)"
    return f"operator pod(s) {', '.join(live)} Running and Ready", ""


# --- 2. the webhooks --------------------------------------------------------------------------------


def _reaches_ray(rule: Obj) -> bool:
    return bool({"ray.io", "*"} & set(rule.get("apiGroups") or []))


def _validates_raycluster_creates(rule: Obj) -> bool:
    """A rule that names ray.io itself for RayCluster creates: a catch-all ("*") webhook of a policy
    engine reaches ray.io too, but is not the operator's and need not refuse what the operator does."""
    return ("ray.io" in (rule.get("apiGroups") or [])
            and bool({"rayclusters", "*", "*/*"} & set(rule.get("resources") or []))
            and bool({"CREATE", "*"} & set(rule.get("operations") or [])))


def _webhooks(ctx: Context, log: Log) -> tuple[list[str], list[str]]:
    """(every webhook reaching ray.io, those that validate RayCluster creates), as `Kind/config: webhook`."""
    reaching, validating = [], []
    for kind in WEBHOOK_KINDS:
        plural = kind.lower() + "s"
        for config in items(ctx.gw, f"/apis/admissionregistration.k8s.io/v1/{plural}"):
            for hook in config.get("webhooks") or []:
                rules = hook.get("rules") or []
                if not any(_reaches_ray(r) for r in rules):
                    continue
                ref = f"{kind}/{config['metadata']['name']}: {hook.get('name')}"
                reaching.append(ref)
                client = hook.get("clientConfig") or {}
                svc = client.get("service") or {}
                where = f"Service {svc.get('namespace')}/{svc.get('name')}" if svc else client.get("url")
                log(f"webhook {ref} (failurePolicy {hook.get('failurePolicy', 'Fail')}, to {where})")
                if kind == "ValidatingWebhookConfiguration" and any(_validates_raycluster_creates(r) for r in rules):
                    validating.append(ref)
    if not reaching:
        log("no admission webhook reaches ray.io (the kuberay-operator 1.5.2 chart installs none)")
    return reaching, validating


def _message(body: str) -> str:
    """The API server's word on a refused request (its Status message), whole."""
    try:
        doc = json.loads(body)
    except ValueError:
        return body.strip()
    return str(doc.get("message") or doc.get("reason") or body) if isinstance(doc, dict) else body.strip()


def _short(message: str) -> str:
    """For the notes (the log keeps it whole): a refusal of an Invalid object quotes the object, and
    the verdict comes last."""
    return message if len(message) <= 360 else f"{message[:200]} ... {message[-150:]}"


def _dry_run(ctx: Context, log: Log, validating: list[str]) -> tuple[str, str]:
    """(what the notes say of the dry run, the failure; "" when none)."""
    answer = ctx.gw.request("POST", _collection(ctx.namespace) + "?dryRun=All",
                            body=raycluster(ctx, TWINS, ("twin", "twin")), timeout=30.0)
    said = _message(answer.body)
    if answer.status < 300:
        log(f"dry-run create of RayCluster {TWINS} (two worker groups named alike): admitted")
        if validating:
            return "", (f"the webhook admitted what it refuses: a dry-run create of RayCluster {TWINS} with two worker "
                        f"groups named alike passed {'; '.join(validating)} (is its failurePolicy Ignore and the "
                        "webhook down?)")
        return "nothing at admission refuses a RayCluster with two worker groups named alike", ""
    log(f"dry-run create of RayCluster {TWINS} (two worker groups named alike): {answer.status} {said}")
    if "failed calling webhook" in said:
        return "", f"{DOWN}: the dry-run create of RayCluster {TWINS} got {_short(said)}"
    if "does not support dry run" in said:
        # A webhook with side effects is not sent dry runs (k8s.io/apiserver v0.34
        # pkg/admission/plugin/webhook/errors/statuserror.go NewDryRunUnsupportedErr): its verdict
        # cannot be asked without storing the object, and the create below still passes through it.
        return f"the dry run was not tried ({_short(said)})", ""
    if UNIQUE not in said:
        if validating:
            return "", (f"the dry-run create of RayCluster {TWINS} was refused, but not for its duplicate worker "
                        f"groups, so the webhook's verdict is unknown: {_short(said)}")
        return f"a dry-run RayCluster was refused for another reason ({_short(said)})", ""
    what = "a dry-run RayCluster with two worker groups named alike"
    if "ValidatingAdmissionPolicy" in said:
        # components/addons/kuberay_admission.py restates the webhook's rule as a policy. The API
        # server asks policies before webhooks (k8s.io/kubernetes v1.34 pkg/kubeapiserver/options/
        # plugins.go AllOrderedPlugins), so a policy's refusal leaves the webhook unasked.
        unasked = " before the webhook was asked: the create below passes through it" if validating else ""
        return f"a ValidatingAdmissionPolicy refused {what}{unasked}", ""
    # k8s.io/apiserver v0.34 pkg/admission/plugin/webhook/errors/statuserror.go ToStatusErr:
    # `admission webhook "<name>" denied the request: ...`.
    by = DENIED_BY.search(said)
    return f"{'the webhook ' + by.group(1) if by else 'admission'} refused {what}", ""


# --- 3. the reconcile -------------------------------------------------------------------------------


def _owned_by(obj: Obj | None, uid: str) -> bool:
    return any(o.get("kind") == "RayCluster" and o.get("uid") == uid and o.get("controller")
               for o in (obj or {}).get("metadata", {}).get("ownerReferences") or [])


def _look(ctx: Context, name: str, uid: str) -> tuple[bool, bool, str]:
    """(reconciled, anything made for it, what was seen)."""
    cluster = get_json(ctx.gw, f"{_collection(ctx.namespace)}/{name}") or {}
    status = cluster.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    heads = [p for p in ctx.gw.list("v1", "Pod", ctx.namespace,
                                    label_selector=f"{CLUSTER_LABEL}={name},{NODE_TYPE_LABEL}=head")[0]
             if _owned_by(p, uid)]
    # controllers/ray/utils/util.go GenerateHeadServiceName: <cluster>-head-svc, no headService name given.
    svc = ctx.gw.get("v1", "Service", f"{name}-head-svc", ctx.namespace)
    # controllers/ray/raycluster_controller.go calculateStatus: state `ready` (apis/ray/v1/raycluster_types.go)
    # once every pod runs and is ready, and condition RayClusterProvisioned the first time that happens
    # (feature gate RayClusterStatusConditions, on by default: pkg/features/features.go).
    provisioned = (conditions.get("RayClusterProvisioned") or {}).get("status") == "True"
    ready = status.get("state") == "ready" or provisioned
    seen = [", ".join(f"head pod {p['metadata']['name']} {_pod_state(p)[1]}" for p in heads)
            or "no head pod owned by it",
            f"head Service {name}-head-svc" + (" owned by it" if _owned_by(svc, uid) else
                                                " not owned by it" if svc else " absent"),
            f"state {status.get('state') or 'unset'}"]
    # Why a condition is not (yet) True, and a ReplicaFailure's pod error, where the operator says it.
    seen += [f"{t} {c.get('status')}" + (f" ({c.get('reason')}: {c['message']})" if c.get("message") and (
        c.get("status") != "True" or t == "ReplicaFailure") else "") for t, c in sorted(conditions.items()) if t]
    made = bool(heads) or _owned_by(svc, uid) or bool(status)
    return bool(heads) and _owned_by(svc, uid) and ready, made, "; ".join(seen)


def _reconcile(ctx: Context, log: Log) -> tuple[str, str]:
    """(what the notes say of the reconcile, the failure; "" when none)."""
    answer = ctx.gw.request("POST", _collection(ctx.namespace), body=raycluster(ctx, NAME), timeout=30.0)
    if answer.status >= 300:
        said = _message(answer.body)
        log(f"create of RayCluster {NAME}: {answer.status} {said}")
        if "failed calling webhook" in said:
            return "", f"{DOWN}: the create of RayCluster {NAME} got {_short(said)}"
        return "", f"the API server refused RayCluster {NAME}: {_short(said)}"
    t0 = time.monotonic()
    try:
        uid = str(json.loads(answer.body)["metadata"]["uid"])
    except (ValueError, KeyError, TypeError):
        uid = str(((get_json(ctx.gw, f"{_collection(ctx.namespace)}/{NAME}") or {}).get("metadata") or {}).get("uid"))
    log(f"created RayCluster {ctx.namespace}/{NAME} (uid {uid}): a head, no workers")
    try:
        seen, last = "", ""
        while True:
            done, made, seen = _look(ctx, NAME, uid)
            if seen != last:
                log(f"{time.monotonic() - t0:.1f}s: {seen}")
                last = seen
            if done:
                took = time.monotonic() - t0
                return f"RayCluster {NAME} reconciled in {took:.1f} s (head Pod and Service owned by it, ready)", ""
            if time.monotonic() - t0 > ctx.timeout:
                hint = "" if made else (f" (nothing made for it: is the operator running, and does it watch "
                                        f"namespace {ctx.namespace}?)")
                return "", f"the operator did not reconcile RayCluster {NAME} in {ctx.timeout:.0f} s: {seen}{hint}"
            time.sleep(1.0)
    finally:
        # Not in ctx.created: the Gateway's object paths know no RayCluster (components/smoke/gateway.py
        # KINDS), so it is deleted here; the run's namespace, deleted last, takes it on an interrupt too.
        try:
            gone = ctx.gw.request("DELETE", f"{_collection(ctx.namespace)}/{NAME}", timeout=30.0, body={
                "kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
            said = _short(_message(gone.body))
            log(f"deleted RayCluster {NAME}" if gone.status < 300 else
                f"delete of RayCluster {NAME}: {gone.status} {said} (the run's namespace takes it)")
        except (KubeError, KubeUnreachable) as exc:  # what was found stands; the namespace takes the object
            log(f"delete of RayCluster {NAME}: {exc} (the run's namespace takes it)")


def robust_controller(ctx: Context) -> Result:
    log = Log(ctx, RID)
    api: dict[str, Any] = get_json(ctx.gw, f"/apis/{RAY_API}") or {}
    if "RayCluster" not in {r.get("kind") for r in api.get("resources") or []}:
        return Result(RID, "Not Implemented", "skipped",
                      f"no AI operator: {RAY_API} RayCluster is not served; set gpuStack.addons.kuberayOperator",
                      log.lines)
    log(f"{RAY_API} served: {', '.join(sorted({str(r.get('kind')) for r in api['resources'] if r.get('kind')}))}")
    pods, failure = _operator_pods(ctx, log)
    if failure:
        return Result(RID, "Not Implemented", "failed", failure, log.lines)
    reaching, validating = _webhooks(ctx, log)
    refusal, failure = _dry_run(ctx, log, validating)
    if failure:
        return Result(RID, "Not Implemented", "failed", failure, log.lines)
    reconciled, failure = _reconcile(ctx, log)
    if failure:
        return Result(RID, "Not Implemented", "failed", failure, log.lines)
    hooks = (f"{len(reaching)} admission webhook(s) reach ray.io ({'; '.join(reaching)})" if reaching
             else "no admission webhook reaches ray.io")
    return Result(RID, "Implemented", "passed", f"KubeRay: {pods}; {hooks}; {refusal}; {reconciled}", log.lines)

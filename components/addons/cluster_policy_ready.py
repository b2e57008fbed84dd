"""ClusterPolicyReady: the GPU Operator's gate, judged the way the operator actually writes status.

What the operator at the pin (NVIDIA/gpu-operator v26.7.0) does, and what the gate makes of it:

- `status.state` is `ready` also when no node carries an NFD label (Ready condition reason
  `NFDLabelsMissing`) or no node is a GPU node (`NoGPUNodes`); only reason `Reconciled` means the
  operands were rolled out onto GPU nodes (controllers/clusterpolicy_controller.go, Reconcile,
  the branches after the state loop). The gate wants `state: ready` AND a Ready condition True
  with reason `Reconciled`, and counts the GPU nodes itself: nodes labelled
  `nvidia.com/gpu.present=true`, the label the operator counts (state_manager.go discoverGPUNodes,
  hasCommonGPULabel), at least `min_gpu_nodes` of them.
- The operator's own DaemonSets (owned by the ClusterPolicy, in its namespace) are rolled out at
  their current generation: the operator's readiness rule (object_controls.go isDaemonSetReady,
  isDaemonSetRollingUpdateComplete), read by the gate directly rather than through a state the
  operator may not have rewritten yet.
- The status has no observedGeneration, `state` is written only when it changes (updateCRState
  compares first) and the conditions go through `Status().Update` with meta.SetStatusCondition,
  which the API server drops as a no-op when nothing changed (internal/conditions/clusterpolicy.go).
  Right after a change the old `ready` is still there. The operator's ClusterPolicy watch uses
  GenerationChangedPredicate, so a spec change is reconciled at once, and a change that rolls an
  operand writes `notReady` in that reconcile. The gate therefore takes as fresh either a status
  that differs from the one it found when it started (the operator wrote after the change), or
  the full verdict holding without a break for `settle_seconds` (the change needed no rollout:
  nothing was written because nothing moved). docs/adr/0026 has the trade-off.

The verdicts are pure functions; the dynamic provider only reads the API. The provider class is
pickled into the state by reference: it must stay here under its name.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pulumi
import pulumi.dynamic

from ..k8s_ready import inputs_changed, kubeconfig_endpoint, sha256
from ..kube.errors import ApiFailure
from ..kube.wait import Observation, WaitTimeout, poll
from ..settings.model import parse_utc
from ..tables import tokens

API = "nvidia.com/v1"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"  # state_manager.go commonGPULabelKey / commonGPULabelValue
READY_REASON = "Reconciled"  # internal/conditions: the one Ready reason that means operands are on GPU nodes
# Ready True with this reason: the operator found no GPU node (v26.7.0 internal/conditions/consts.go
# NoGPUNodes; clusterpolicy_controller.go Reconcile sets it with state ready when none is found).
NO_GPU_NODES_REASON = "NoGPUNodes"
SETTLE_SECONDS = 30
TYPE = tokens.DYNAMIC_CLUSTER_POLICY_READY
# What this gate was before it judged conditions and nodes: its state is adopted, not replaced.
PREVIOUS_TYPE = tokens.DYNAMIC_WAIT_FOR

Obj = dict[str, Any]


# --------------------------------------------------------------------------------------------
# pure verdicts


@dataclass(frozen=True)
class Seen:
    """One poll: the ClusterPolicy (None: absent), the nodes, the operator namespace's DaemonSets."""

    policy: Obj | None
    nodes: list[Obj]
    daemonsets: list[Obj]


def ready_condition(policy: Obj) -> Obj:
    for c in (policy.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return dict(c)
    return {}


def error_message(policy: Obj) -> str:
    """The Error condition's message when it is True (`ClusterPolicy is not ready; states not ready: [...]`)."""
    for c in (policy.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Error" and c.get("status") == "True":
            return f"{c.get('reason', '')}: {c.get('message', '')}".strip(": ")
    return ""


def status_fingerprint(policy: Obj | None) -> str:
    """What the operator writes: state and conditions (not resourceVersion: spec writes move it too)."""
    if policy is None:
        return "absent"
    st = policy.get("status") or {}
    conds = sorted((c.get("type", ""), c.get("status", ""), c.get("reason", ""), c.get("message", ""),
                    c.get("lastTransitionTime", "")) for c in st.get("conditions") or [])
    return json.dumps([st.get("state", ""), conds])


def gpu_nodes(nodes: list[Obj]) -> list[str]:
    return sorted(str(n.get("metadata", {}).get("name", "?")) for n in nodes
                  if (n.get("metadata", {}).get("labels") or {}).get(GPU_PRESENT_LABEL) == "true")


def owned_by_policy(ds: Obj, policy: Obj) -> bool:
    uid = policy.get("metadata", {}).get("uid")
    return any(o.get("kind") == "ClusterPolicy" and (not uid or o.get("uid") == uid)
               for o in ds.get("metadata", {}).get("ownerReferences") or [])


def daemonset_problem(ds: Obj) -> str:
    """Why an operand DaemonSet is not rolled out ("" when it is), by the operator's own rule:
    0 desired pods is ready; else nothing unavailable, the latest generation observed, every
    desired pod updated and available (object_controls.go isDaemonSetReady at v26.7.0)."""
    name = ds.get("metadata", {}).get("name", "?")
    st = ds.get("status") or {}
    desired = int(st.get("desiredNumberScheduled") or 0)
    if desired == 0:
        return ""
    if int(st.get("numberUnavailable") or 0):
        return f"DaemonSet {name}: {st.get('numberUnavailable')} of {desired} pod(s) unavailable"
    if int(st.get("observedGeneration") or 0) < int(ds.get("metadata", {}).get("generation") or 0):
        return f"DaemonSet {name}: generation {ds['metadata']['generation']} not observed yet"
    updated, available = int(st.get("updatedNumberScheduled") or 0), int(st.get("numberAvailable") or 0)
    if updated != desired or available != desired:
        return f"DaemonSet {name}: {updated} updated, {available} available of {desired}"
    return ""


def status_problems(seen: Seen, min_gpu_nodes: int) -> tuple[list[str], list[str]]:
    """(problems, GPU nodes) of an operator's custom resource that exists (a ClusterPolicy or a
    GPUCluster: the same state, Ready condition and reasons), before its DaemonSets are judged."""
    assert seen.policy is not None
    st = seen.policy.get("status") or {}
    state, cond = st.get("state") or "", ready_condition(seen.policy)
    problems = []
    if state != "ready":
        problems.append(f"state is {state or 'unset'!r}" + (f" ({msg})" if (msg := error_message(seen.policy)) else ""))
    found = gpu_nodes(seen.nodes)
    # With no GPU node due (min_gpu_nodes 0: every GPU node is the autoscaler's, none launched yet)
    # the operator's ready verdict carries reason NoGPUNodes (clusterpolicy_controller.go), and
    # that is the whole truth: there is nothing to roll out yet.
    reasons = {READY_REASON} | ({NO_GPU_NODES_REASON} if min_gpu_nodes == 0 and not found else set())
    if cond.get("status") != "True" or cond.get("reason") not in reasons:
        if cond:
            problems.append(f"Ready condition is {cond.get('status')} with reason {cond.get('reason', '')!r}"
                            + (f": {cond['message']}" if cond.get("message") else ""))
        else:
            problems.append("no Ready condition yet")
    if len(found) < min_gpu_nodes:
        problems.append(f"{len(found)} GPU node(s) labelled {GPU_PRESENT_LABEL}=true, expected at least "
                        f"{min_gpu_nodes}" + (f" ({', '.join(found[:10])})" if found else ""))
    return problems, found


def judge(seen: Seen, name: str, min_gpu_nodes: int) -> Observation:
    """The verdict on one poll, before freshness: every reason it is not ready, in one line."""
    if seen.policy is None:
        return Observation(False, f"ClusterPolicy {name} does not exist (yet)")
    problems, found = status_problems(seen, min_gpu_nodes)
    problems += [p for ds in seen.daemonsets if owned_by_policy(ds, seen.policy) and (p := daemonset_problem(ds))]
    if problems:
        return Observation(False, "; ".join(problems))
    reason = ready_condition(seen.policy).get("reason", READY_REASON)
    return Observation(True, f"state ready, Ready/{reason}, {len(found)} GPU node(s), operands rolled out",
                       value=str(len(found)))


class Freshness:
    """Passes a ready verdict only on a status written after the gate started, or one that held
    for `settle_seconds` without a break (see the module docstring)."""

    def __init__(self, baseline: str, settle_seconds: float, clock: Callable[[], float]) -> None:
        self.baseline, self.settle, self.clock = baseline, settle_seconds, clock
        self.rewritten = baseline == "absent"  # first install: whatever status appears is new
        self.ready_since: float | None = None

    def observe(self, seen: Seen, verdict: Observation) -> Observation:
        if status_fingerprint(seen.policy) != self.baseline:
            self.rewritten = True
        if not verdict.done:
            self.ready_since = None
            return verdict
        if self.rewritten:
            return verdict
        now = self.clock()
        self.ready_since = now if self.ready_since is None else self.ready_since
        held = now - self.ready_since
        if held >= self.settle:
            return Observation(True, f"{verdict.detail}; unchanged for {held:.0f}s after the change",
                               value=verdict.value)
        return Observation(False, f"{verdict.detail}, but the status predates this change: waiting {self.settle:.0f}s "
                                  f"for the operator to react ({held:.0f}s so far)")


def timeout_message(what: str, endpoint: str, elapsed: float, attempts: int, last: Observation) -> str:
    """`what`: the object the gate waits for, as `<Kind> <name>`."""
    verb = "gave up" if last.permanent or last.fatal else "timed out"
    return (f"GPU Operator not ready: {what} on {endpoint}: {verb} after {elapsed:.0f}s and "
            f"{attempts} attempts; last seen: {last.detail}")


# --------------------------------------------------------------------------------------------
# I/O: the operator's custom resource (ClusterPolicy, or GPUCluster: gpu_cluster_ready.py), the
# nodes, the operator namespace's DaemonSets


def read_seen(get: Callable[[str], str | ApiFailure], object_path: str, namespace: str) -> Seen | Observation:
    answers: dict[str, Any] = {}
    for key, path in (("object", object_path), ("nodes", "/api/v1/nodes"),
                      ("daemonsets", f"/apis/apps/v1/namespaces/{namespace}/daemonsets")):
        answer = get(path)
        if isinstance(answer, ApiFailure):
            if answer.status == 404 and key == "object":
                answers[key] = None
                continue
            return Observation.failed(answer, f"GET {path}: ")
        try:
            answers[key] = json.loads(answer)
        except ValueError:
            return Observation(False, f"GET {path}: answer is not JSON: {answer[:200]!r}")
    return Seen(answers["object"], list((answers["nodes"] or {}).get("items") or []),
                list((answers["daemonsets"] or {}).get("items") or []))


def poll_fresh(kubeconfig: str, *, what: str, object_path: str, namespace: str, judge: Callable[[Seen], Observation],
               timeout_seconds: float, settle_seconds: float, clock: Callable[[], float],
               sleep: Callable[[float], None]) -> dict[str, Any]:
    """Poll until `judge` says ready on a fresh status (Freshness). Returns the outputs."""
    from ..kube.client import api_client, http_get  # the kubernetes client is slow to import

    endpoint = kubeconfig_endpoint(kubeconfig)
    try:
        api = api_client(kubeconfig)
    except Exception as exc:  # malformed kubeconfig: waiting cannot fix it
        raise WaitTimeout(f"GPU Operator not ready: {what} on {endpoint}: unusable kubeconfig: {exc}") from None
    fresh: list[Freshness] = []

    def probe() -> Observation:
        seen = read_seen(lambda p: http_get(api, p), object_path, namespace)
        if isinstance(seen, Observation):
            return seen
        if not fresh:
            fresh.append(Freshness(status_fingerprint(seen.policy), settle_seconds, clock))
        return fresh[0].observe(seen, judge(seen))

    try:
        last, _ = poll(probe, timeout_seconds=timeout_seconds, clock=clock, sleep=sleep,
                       describe_timeout=lambda e, n, obs: timeout_message(what, endpoint, e, n, obs))
    finally:
        api.close()
    return {"gpuNodes": int(last.value), "observed": last.detail}


def check_cluster_policy(kubeconfig: str, *, name: str, namespace: str, min_gpu_nodes: int, timeout_seconds: float,
                         settle_seconds: float = SETTLE_SECONDS, clock: Callable[[], float] = time.monotonic,
                         sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Poll until the ClusterPolicy is ready by `judge` on a fresh status. Returns the outputs."""
    return poll_fresh(kubeconfig, what=f"ClusterPolicy {name}", object_path=f"/apis/{API}/clusterpolicies/{name}",
                      namespace=namespace, judge=lambda seen: judge(seen, name, min_gpu_nodes),
                      timeout_seconds=timeout_seconds, settle_seconds=settle_seconds, clock=clock, sleep=sleep)


# --------------------------------------------------------------------------------------------
# the dynamic resource

# The inputs whose change runs a gate again (both gates: this one and gpu_cluster_ready.py).
GATE_KEYS = ("objectName", "operatorNamespace", "minGpuNodes", "laterGpuNodes", "trigger")


def nodes_due(min_gpu_nodes: int, later: Sequence[Sequence[Any]] | None, now: datetime) -> int:
    """`min_gpu_nodes` plus the nodes of each Capacity Block pool whose block has started by `now`
    (`later`: [nodes, startsAt ISO 8601 UTC]; components/addons/gpu_operator.py later_gpu_nodes):
    AWS launches a block's instances only once it is active."""
    due = min_gpu_nodes
    for nodes, starts_at in later or ():
        if now >= parse_utc(str(starts_at)):
            due += int(nodes)
    return due


GateCheck = Callable[..., dict[str, Any]]


def run_gate(props: dict[str, Any], check: GateCheck) -> dict[str, Any]:
    """A gate's create/update: `check` (check_cluster_policy or check_gpu_cluster) on the inputs,
    the Capacity Block pools counted by the time it runs; the outputs recorded with the inputs."""
    due = nodes_due(int(props["minGpuNodes"]), props.get("laterGpuNodes"), datetime.now(UTC))
    outs = check(str(props["kubeconfig"]), name=str(props["objectName"]), namespace=str(props["operatorNamespace"]),
                 min_gpu_nodes=due, timeout_seconds=float(props["timeoutSeconds"]),
                 settle_seconds=float(props.get("settleSeconds") or SETTLE_SECONDS))
    return {**{k: props.get(k) for k in GATE_KEYS}, **outs, "timeoutSeconds": props["timeoutSeconds"],
            "settleSeconds": props.get("settleSeconds"), "kubeconfigSha256": sha256(str(props["kubeconfig"]))}


def gate_props(gate: str, name: str, kubeconfig: pulumi.Input[str], *, object_name: str, operator_namespace: str,
               min_gpu_nodes: int, timeout_seconds: int, trigger: pulumi.Input[str], settle_seconds: int,
               later_gpu_nodes: Sequence[tuple[int, str]]) -> dict[str, Any]:
    """The inputs of a gate resource (`gate`: its class name, for the message), checked."""
    # min_gpu_nodes 0: every GPU node is the autoscaler's (gpu_operator.expected_gpu_nodes).
    if timeout_seconds <= 0 or settle_seconds < 0 or min_gpu_nodes < 0:
        raise ValueError(f"{gate} {name}: timeout_seconds must be positive, settle_seconds >= 0 "
                         f"and min_gpu_nodes >= 0 (got {timeout_seconds}, {settle_seconds}, {min_gpu_nodes})")
    props = {
        "kubeconfig": pulumi.Output.secret(kubeconfig),
        "objectName": object_name,
        "operatorNamespace": operator_namespace,
        "minGpuNodes": min_gpu_nodes,
        "timeoutSeconds": timeout_seconds,
        "settleSeconds": settle_seconds,
        "trigger": trigger,
        "gpuNodes": None,
        "observed": None,
        "kubeconfigSha256": None,
    }
    if later_gpu_nodes:  # only then: a stack without Capacity Block pools keeps its inputs as they were
        props["laterGpuNodes"] = [[n, t] for n, t in later_gpu_nodes]
    return props


class OperatorGateProvider(pulumi.dynamic.ResourceProvider):  # type: ignore[misc]
    """The provider of an operator gate: `id_prefix` names its resources, `poll` polls its custom
    resource (a subclass per gate: each is pickled into the state by its own name). Not `check`:
    that is ResourceProvider's input hook, `check(olds, news)`, which the engine calls first."""

    id_prefix = "gate"

    def poll(self, kubeconfig: str, **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError

    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        return run_gate(props, self.poll)

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(f"{self.id_prefix}-{uuid.uuid4().hex[:12]}", self._run(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        # The state of the WaitFor this gate replaced has no minGpuNodes: that alone re-checks once.
        return pulumi.dynamic.DiffResult(changes=inputs_changed(olds, news, GATE_KEYS))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(self._run(news))


class _ClusterPolicyReadyProvider(OperatorGateProvider):
    id_prefix = "clusterpolicy"

    def poll(self, kubeconfig: str, **kwargs: Any) -> dict[str, Any]:
        return check_cluster_policy(kubeconfig, **kwargs)


class ClusterPolicyReady(pulumi.dynamic.Resource, module="ck8s-gpu", name="ClusterPolicyReady"):  # type: ignore[misc,call-arg]
    """Succeeds once the GPU Operator reconciled its ClusterPolicy onto at least `min_gpu_nodes`
    GPU nodes, judged on a status written after the change (module docstring). `trigger` is a
    digest of everything the operator consumes (chart version, values): any change waits again."""

    gpuNodes: pulumi.Output[int]
    observed: pulumi.Output[str]

    def __init__(self, name: str, kubeconfig: pulumi.Input[str], *, object_name: str, operator_namespace: str,
                 min_gpu_nodes: int, timeout_seconds: int, trigger: pulumi.Input[str],
                 settle_seconds: int = SETTLE_SECONDS, later_gpu_nodes: Sequence[tuple[int, str]] = (),
                 opts: pulumi.ResourceOptions | None = None) -> None:
        props = gate_props("ClusterPolicyReady", name, kubeconfig, object_name=object_name,
                           operator_namespace=operator_namespace, min_gpu_nodes=min_gpu_nodes,
                           timeout_seconds=timeout_seconds, trigger=trigger, settle_seconds=settle_seconds,
                           later_gpu_nodes=later_gpu_nodes)
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
            additional_secret_outputs=["kubeconfig"], aliases=[pulumi.Alias(type_=PREVIOUS_TYPE)]))
        super().__init__(_ClusterPolicyReadyProvider(), name, props, opts)

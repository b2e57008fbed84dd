"""ApiReady: the readiness gate every Kubernetes resource of a cluster depends on.

A dynamic resource whose create/update polls the API server (GET /readyz, then list nodes) with
bounded retries and backoff (`components.kube.wait.poll`), and fails with a message naming the
endpoint and the last error. The verdicts and the timeout message are pure functions tested
directly; the dynamic provider only does the I/O.

The dynamic provider is pickled into the state by reference to this module
(`components.k8s_ready._ApiReadyProvider` in a checkout, `ck8s_gpu.k8s_ready._ApiReadyProvider`
from the wheel: ADR 0044): the class must stay here under that name, and the process that runs it
(started by the Pulumi engine in the project directory) must be able to import the package.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pulumi
import pulumi.dynamic
import yaml

from .kube.errors import ApiFailure
from .kube.wait import Observation, WaitTimeout, poll

# --------------------------------------------------------------------------------------------
# pure decisions


def readyz_observation(answer: str | ApiFailure) -> Observation:
    """/readyz answers 200 `ok` once every readiness check passes; otherwise lists the failing ones."""
    if isinstance(answer, ApiFailure):
        failing = [line.strip() for line in answer.body.splitlines() if line.strip().startswith("[-]")]
        if failing:
            return Observation(False, f"/readyz HTTP {answer.status}: failing checks {', '.join(failing)}")
        return Observation.failed(answer, "/readyz ")
    return Observation(True, "/readyz ok")


def node_is_ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def nodes_observation(answer: str | ApiFailure, min_ready_nodes: int) -> Observation:
    if isinstance(answer, ApiFailure):
        return Observation.failed(answer, "list nodes: ")
    try:
        items = json.loads(answer).get("items") or []
    except (ValueError, AttributeError):
        return Observation(False, f"list nodes: answer is not a NodeList: {answer[:200]!r}")
    ready = sorted(n.get("metadata", {}).get("name", "?") for n in items if node_is_ready(n))
    not_ready = sorted(n.get("metadata", {}).get("name", "?") for n in items if not node_is_ready(n))
    detail = f"{len(ready)}/{len(items)} nodes Ready"
    if not_ready:
        detail += f" (not Ready: {', '.join(not_ready[:10])}{' ...' if len(not_ready) > 10 else ''})"
    return Observation(len(ready) >= min_ready_nodes, f"{detail}; need {min_ready_nodes}", value=str(len(ready)))


def kubeconfig_endpoint(kubeconfig: str) -> str:
    """The API server URL of the kubeconfig's current context (for messages); `<unknown>` if absent."""
    try:
        doc = yaml.safe_load(kubeconfig)
        contexts = {c["name"]: c["context"] for c in doc.get("contexts") or []}
        clusters = {c["name"]: c["cluster"] for c in doc.get("clusters") or []}
        current = doc.get("current-context") or next(iter(contexts), None)
        cluster_name = contexts[current]["cluster"] if current in contexts else next(iter(clusters))
        return str(clusters[cluster_name]["server"])
    except (yaml.YAMLError, AttributeError, KeyError, TypeError, StopIteration):
        return "<unknown endpoint>"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def api_timeout_message(
    endpoint: str, elapsed: float, attempts: int, last: Observation, waiting_for: str = ""
) -> str:
    verb = "gave up" if last.permanent or last.fatal else "timed out"
    text = (
        f"Kubernetes API at {endpoint} not ready: {verb} after {elapsed:.0f}s and {attempts} attempts; "
        f"last error: {last.detail}"
    )
    return f"{text}\nwaiting for: {waiting_for}" if waiting_for else text


def nodes_path(node_selector: str | None) -> str:
    """The node list the gate counts: all nodes, or those matching a label selector."""
    return "/api/v1/nodes" + (f"?labelSelector={urllib.parse.quote(node_selector, safe='')}" if node_selector else "")


# --------------------------------------------------------------------------------------------
# I/O


@contextlib.contextmanager
def gate_client(kubeconfig: str, what: Callable[[str], str]) -> Iterator[tuple[Any, str]]:
    """The API client of `kubeconfig` and its endpoint (for messages), closed on exit; WaitTimeout
    naming `what(endpoint)` when the kubeconfig is unusable: waiting cannot fix it. Every gate's poll
    (ApiReady, WaitFor, GatewayReady) runs inside one."""
    from .kube.client import api_client  # the kubernetes client is slow to import

    endpoint = kubeconfig_endpoint(kubeconfig)
    try:
        api = api_client(kubeconfig)
    except Exception as exc:  # malformed kubeconfig
        raise WaitTimeout(f"{what(endpoint)}: unusable kubeconfig: {exc}") from None
    try:
        yield api, endpoint
    finally:
        api.close()


def check_api_ready(
    kubeconfig: str, timeout_seconds: float, min_ready_nodes: int, waiting_for: str = "",
    node_selector: str | None = None,
) -> dict[str, Any]:
    """Poll until /readyz is ok and enough nodes are Ready. Returns the dynamic resource's outputs."""
    from .kube.client import http_get

    with gate_client(kubeconfig, lambda endpoint: f"Kubernetes API at {endpoint}") as (api, endpoint):

        def probe() -> Observation:
            ready = readyz_observation(http_get(api, "/readyz"))
            return nodes_observation(http_get(api, nodes_path(node_selector)), min_ready_nodes) if ready.done else ready

        last, _ = poll(
            probe,
            timeout_seconds=timeout_seconds,
            describe_timeout=lambda elapsed, n, obs: api_timeout_message(endpoint, elapsed, n, obs, waiting_for),
        )
    return {"endpoint": endpoint, "readyNodes": int(last.value)}


# --------------------------------------------------------------------------------------------
# the dynamic resource


def inputs_changed(olds: dict[str, Any], news: dict[str, Any], keys: tuple[str, ...]) -> bool:
    """Compare the new inputs with what the last create/update recorded (`olds` are outputs)."""
    if sha256(str(news.get("kubeconfig", ""))) != olds.get("kubeconfigSha256"):
        return True
    return any(olds.get(k) != news.get(k) for k in keys)


class ObservingGateProvider(pulumi.dynamic.ResourceProvider):  # type: ignore[misc]
    """A gate that polls until what it watches holds, then records what it saw (`observed`): its
    outputs repeat its inputs `KEYS`, so the next diff compares the new inputs with them and a new
    kubeconfig alone re-checks. A subclass names `KEYS` and `ID_PREFIX` and implements `observe`."""

    KEYS: tuple[str, ...] = ()
    ID_PREFIX = "gate"

    def observe(self, props: dict[str, Any]) -> str:
        """Poll until the gate holds; the last observation's detail (WaitTimeout otherwise)."""
        raise NotImplementedError

    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        seen = self.observe(props)
        return {**{k: props.get(k) for k in self.KEYS}, "timeoutSeconds": props["timeoutSeconds"],
                "observed": seen, "kubeconfigSha256": sha256(str(props["kubeconfig"]))}

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(f"{self.ID_PREFIX}-{uuid.uuid4().hex[:12]}", self._run(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        return pulumi.dynamic.DiffResult(changes=inputs_changed(olds, news, self.KEYS))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(self._run(news))


class _ApiReadyProvider(pulumi.dynamic.ResourceProvider):  # type: ignore[misc]
    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        outs = check_api_ready(str(props["kubeconfig"]), float(props["timeoutSeconds"]),
                               int(props["minReadyNodes"]), str(props.get("waitingFor") or ""),
                               props.get("nodeSelector") or None)
        return {
            **outs,
            "kubeconfigSha256": sha256(str(props["kubeconfig"])),
            "timeoutSeconds": props["timeoutSeconds"],
            "minReadyNodes": props["minReadyNodes"],
            "trigger": props.get("trigger"),
            "waitingFor": props.get("waitingFor"),
            "nodeSelector": props.get("nodeSelector"),
        }

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(f"apiready-{uuid.uuid4().hex[:12]}", self._run(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        # A new kubeconfig (rebuilt cluster, rotated credentials) or trigger re-checks the API;
        # a different timeout alone does not.
        return pulumi.dynamic.DiffResult(
            changes=inputs_changed(olds, news, ("minReadyNodes", "trigger", "nodeSelector")))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(self._run(news))


class ApiReady(pulumi.dynamic.Resource, module="ck8s-gpu", name="ApiReady"):  # type: ignore[misc,call-arg]
    """Succeeds once the cluster's API answers /readyz and lists at least `min_ready_nodes` Ready nodes.

    Outputs: `endpoint` (API server URL) and `ready_nodes` (Ready nodes seen when the check passed).
    Change `trigger` to re-run the check without changing anything else.
    """

    endpoint: pulumi.Output[str]
    readyNodes: pulumi.Output[int]  # wire name; `ready_nodes` below

    @property
    def ready_nodes(self) -> pulumi.Output[int]:
        return self.readyNodes

    def __init__(
        self,
        name: str,
        kubeconfig: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
        timeout_seconds: int = 900,
        *,
        min_ready_nodes: int = 1,
        trigger: pulumi.Input[str] | None = None,
        waiting_for: pulumi.Input[str] | None = None,
        node_selector: str | None = None,
    ) -> None:
        """`waiting_for` names what the gate waits on (a node, an instance and where its boot log
        is) in the failure message; `node_selector` (a label selector) limits the nodes it counts,
        e.g. to control planes while workers join beside them."""
        if timeout_seconds <= 0:
            raise ValueError(f"ApiReady {name}: timeout_seconds must be positive, got {timeout_seconds}")
        if min_ready_nodes < 0:
            raise ValueError(f"ApiReady {name}: min_ready_nodes must be >= 0, got {min_ready_nodes}")
        props = {
            "kubeconfig": pulumi.Output.secret(kubeconfig),
            "timeoutSeconds": timeout_seconds,
            "minReadyNodes": min_ready_nodes,
            "trigger": trigger,
            "waitingFor": waiting_for,
            "nodeSelector": node_selector,
            "endpoint": None,
            "readyNodes": None,
            "kubeconfigSha256": None,
        }
        opts = pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])
        )
        super().__init__(_ApiReadyProvider(), name, props, opts)

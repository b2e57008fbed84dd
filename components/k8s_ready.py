"""ApiReady: the readiness gate every Kubernetes resource of a cluster depends on.

A dynamic resource whose create/update polls the API server (GET /readyz, then list nodes) with
bounded retries and backoff, and fails with a message naming the endpoint and the last error.
The decisions (backoff schedule, verdicts from responses, the timeout message) are pure functions
tested directly; the dynamic provider only does the I/O. The poll loop and the GET helper are
shared with `components.k8s_wait`.

The dynamic provider is pickled into the state by reference to this module, so the process that
runs it (started by the Pulumi engine in the project directory) must be able to import
`components` — true when `pulumi up` runs from the project root.
"""

from __future__ import annotations

import hashlib
import json
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.dynamic
import yaml

# Per-request limit: a hung TCP connection must not eat the whole budget.
REQUEST_TIMEOUT_SECONDS = 10.0
# A credentials or TLS failure seen this many times in a row will not go away by waiting.
PERMANENT_AFTER = 3


# --------------------------------------------------------------------------------------------
# pure decisions


@dataclass(frozen=True)
class Observation:
    """One poll attempt's verdict: `detail` says what was seen, for progress and timeout messages."""

    done: bool
    detail: str
    # True when waiting is unlikely to help (bad credentials, TLS mismatch, wrong scope).
    permanent: bool = False
    # True when waiting cannot help at all: stop at once.
    fatal: bool = False
    # The value a WaitFor observed (empty for other probes).
    value: str = ""


@dataclass(frozen=True)
class HttpResult:
    status: int | None  # None: no HTTP response (connection refused, DNS, TLS, timeout)
    body: str = ""
    error: str = ""


class WaitTimeout(Exception):
    """The awaited condition did not hold in time; `str()` is the whole user-facing message."""


def backoff_delays(first: float = 1.0, factor: float = 2.0, cap: float = 15.0) -> Iterator[float]:
    """Seconds to sleep between attempts: 1, 2, 4, 8, 15, 15, ... (bounded by the deadline in `poll`)."""
    delay = first
    while True:
        yield min(delay, cap)
        delay = min(delay * factor, cap)


def poll(
    probe: Callable[[], Observation],
    *,
    timeout_seconds: float,
    describe_timeout: Callable[[float, int, Observation], str],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    delays: Iterator[float] | None = None,
    on_attempt: Callable[[int, Observation], None] | None = None,
) -> tuple[Observation, int]:
    """Call `probe` until it reports done; returns (last observation, attempts).

    Raises WaitTimeout with `describe_timeout(elapsed, attempts, last)` when the deadline passes,
    when an observation is fatal, or when PERMANENT_AFTER permanent observations come in a row.
    The last attempt happens at the deadline, never after a sleep that overshoots it.
    """
    delays = delays if delays is not None else backoff_delays()
    start = clock()
    deadline = start + timeout_seconds
    attempts = 0
    permanent_streak = 0
    while True:
        attempts += 1
        obs = probe()
        if on_attempt is not None:
            on_attempt(attempts, obs)
        if obs.done:
            return obs, attempts
        permanent_streak = permanent_streak + 1 if obs.permanent else 0
        remaining = deadline - clock()
        if obs.fatal or permanent_streak >= PERMANENT_AFTER or remaining <= 0:
            raise WaitTimeout(describe_timeout(clock() - start, attempts, obs))
        sleep(min(next(delays), remaining))


def http_problem(result: HttpResult) -> Observation | None:
    """The verdict for a failed request, or None when the request got a 2xx answer."""
    if result.status is None:
        err = result.error or "no response"
        tls = any(s in err for s in ("CERTIFICATE_VERIFY_FAILED", "SSLError", "certificate verify failed"))
        if tls:
            return Observation(False, f"TLS verification failed (wrong CA in the kubeconfig?): {err}", permanent=True)
        return Observation(False, f"no response: {err}")
    if 200 <= result.status < 300:
        return None
    body = " ".join(result.body.split())[:300]
    if result.status == 401:
        return Observation(False, f"HTTP 401 Unauthorized: the kubeconfig's credentials were rejected ({body})",
                           permanent=True)
    if result.status == 403:
        return Observation(False, f"HTTP 403 Forbidden: the kubeconfig's user lacks permission ({body})",
                           permanent=True)
    return Observation(False, f"HTTP {result.status}: {body}")


def readyz_observation(result: HttpResult) -> Observation:
    """/readyz answers 200 `ok` once every readiness check passes; otherwise lists the failing ones."""
    problem = http_problem(result)
    if problem is not None:
        failing = [line.strip() for line in result.body.splitlines() if line.strip().startswith("[-]")]
        if failing:
            return Observation(False, f"/readyz HTTP {result.status}: failing checks {', '.join(failing)}")
        return Observation(False, f"/readyz {problem.detail}", problem.permanent, problem.fatal)
    return Observation(True, "/readyz ok")


def node_is_ready(node: dict[str, Any]) -> bool:
    conditions = node.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def nodes_observation(result: HttpResult, min_ready_nodes: int) -> Observation:
    problem = http_problem(result)
    if problem is not None:
        return Observation(False, f"list nodes: {problem.detail}", problem.permanent, problem.fatal)
    try:
        items = json.loads(result.body).get("items") or []
    except (ValueError, AttributeError):
        return Observation(False, f"list nodes: answer is not a NodeList: {result.body[:200]!r}")
    ready = sorted(n.get("metadata", {}).get("name", "?") for n in items if node_is_ready(n))
    not_ready = sorted(n.get("metadata", {}).get("name", "?") for n in items if not node_is_ready(n))
    detail = f"{len(ready)}/{len(items)} nodes Ready"
    if not_ready:
        detail += f" (not Ready: {', '.join(not_ready[:10])}{' ...' if len(not_ready) > 10 else ''})"
    return Observation(len(ready) >= min_ready_nodes, f"{detail}; need {min_ready_nodes}")


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


# --------------------------------------------------------------------------------------------
# I/O


def http_get(api: Any, path: str, timeout: float = REQUEST_TIMEOUT_SECONDS) -> HttpResult:
    """GET `path` with the ApiClient's credentials; never raises for HTTP or network failures."""
    try:
        response = api.call_api(
            path, "GET", auth_settings=["BearerToken"], _preload_content=False, _request_timeout=timeout
        )
        body = response.data.decode("utf-8", "replace")
        return HttpResult(int(response.status), body)
    except Exception as exc:
        status = getattr(exc, "status", None)  # the client raises ApiException for 4xx/5xx answers
        if isinstance(status, int) and status > 0:
            raw = getattr(exc, "body", "") or ""
            return HttpResult(status, raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw))
        # urllib3/ssl/socket errors (and ApiException status 0 for TLS) mean "no answer"; say which.
        return HttpResult(None, error=f"{type(exc).__name__}: {exc}")


def nodes_path(node_selector: str | None) -> str:
    """The node list the gate counts: all nodes, or those matching a label selector."""
    return "/api/v1/nodes" + (f"?labelSelector={urllib.parse.quote(node_selector, safe='')}" if node_selector else "")


def check_api_ready(
    kubeconfig: str, timeout_seconds: float, min_ready_nodes: int, waiting_for: str = "",
    node_selector: str | None = None,
) -> dict[str, Any]:
    """Poll until /readyz is ok and enough nodes are Ready. Returns the dynamic resource's outputs."""
    from components.kube.client import api_client  # the kubernetes client is slow to import

    endpoint = kubeconfig_endpoint(kubeconfig)
    try:
        api = api_client(kubeconfig)
    except Exception as exc:  # malformed kubeconfig: waiting cannot fix it
        raise WaitTimeout(f"Kubernetes API at {endpoint}: unusable kubeconfig: {exc}") from None
    seen_nodes: list[int] = [0]

    def probe() -> Observation:
        ready = readyz_observation(http_get(api, "/readyz"))
        if not ready.done:
            return ready
        nodes = http_get(api, nodes_path(node_selector))
        obs = nodes_observation(nodes, min_ready_nodes)
        if obs.done:
            seen_nodes[0] = sum(node_is_ready(n) for n in json.loads(nodes.body).get("items") or [])
        return obs

    try:
        poll(
            probe,
            timeout_seconds=timeout_seconds,
            describe_timeout=lambda elapsed, n, last: api_timeout_message(endpoint, elapsed, n, last, waiting_for),
        )
    finally:
        api.close()
    return {"endpoint": endpoint, "readyNodes": seen_nodes[0]}


# --------------------------------------------------------------------------------------------
# the dynamic resource


def _inputs_changed(olds: dict[str, Any], news: dict[str, Any], keys: tuple[str, ...]) -> bool:
    """Compare the new inputs with what the last create/update recorded (`olds` are outputs)."""
    if sha256(str(news.get("kubeconfig", ""))) != olds.get("kubeconfigSha256"):
        return True
    return any(olds.get(k) != news.get(k) for k in keys)


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
            changes=_inputs_changed(olds, news, ("minReadyNodes", "trigger", "nodeSelector")))

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

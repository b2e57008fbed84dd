"""The smoke test's only door to a cluster: plain-JSON REST calls through the kubernetes client.

Objects stay dicts exactly as the API server sends them (no typed models), so the verifier and
its fixtures see the same shapes. `Gateway` is the protocol the runner uses; tests fake it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

# The REST failure model; its names stay importable from here (runner, collector, CLI, fakes).
from ..kube.errors import KubeError as KubeError
from ..kube.errors import KubeUnreachable as KubeUnreachable
from ..kube.errors import call_failure
from ..kube.wait import backoff_delays

Obj = dict[str, Any]

# How often a wait asks: its first look this soon, then each pause doubles up to the run's poll.
# Most hops (a pod scheduled, started, its Job complete, a route accepted) settle within a second
# or two, and a flat 2 s poll put up to 2 s on every wait of every case; a long wait still asks no
# more often than the poll.
FIRST_POLL_SECONDS = 0.25


def poll_pauses(poll: float) -> Iterator[float]:
    """The pauses of one wait: FIRST_POLL_SECONDS, doubling, at most `poll` (kube/wait.py's backoff)."""
    return backoff_delays(min(FIRST_POLL_SECONDS, poll), cap=poll)

# kind -> (plural, namespaced). Only what the smoke test touches.
KINDS: dict[str, tuple[str, bool]] = {
    "Namespace": ("namespaces", False),
    "Node": ("nodes", False),
    "Pod": ("pods", True),
    "Event": ("events", True),
    "ConfigMap": ("configmaps", True),
    "NetworkPolicy": ("networkpolicies", True),
    "Service": ("services", True),
    "Job": ("jobs", True),
    "EndpointSlice": ("endpointslices", True),
    "DeviceClass": ("deviceclasses", False),
    "ResourceSlice": ("resourceslices", False),
    "ResourceClaim": ("resourceclaims", True),
    "ResourceClaimTemplate": ("resourceclaimtemplates", True),
    "PodGroup": ("podgroups", True),
    "ComputeDomain": ("computedomains", True),  # resource.nvidia.com/v1beta1 (case compute-domain)
    # Case inference: the model servers, their route and Gateway, their autoscaler.
    "Deployment": ("deployments", True),
    "HTTPRoute": ("httproutes", True),  # gateway.networking.k8s.io/v1
    "Gateway": ("gateways", True),
    "ScaledObject": ("scaledobjects", True),  # keda.sh/v1alpha1
    "PodMonitor": ("podmonitors", True),  # monitoring.coreos.com/v1
    "HorizontalPodAutoscaler": ("horizontalpodautoscalers", True),  # autoscaling/v2
}


def proxy_path(kind: str, namespace: str, name: str, port: str, path: str) -> str:
    """The API server's proxy to a Service's or a pod's port (`services/<name>:<port>/proxy/...`):
    the one way to a workload that works wherever the API does, also from outside the cluster."""
    plural = {"Service": "services", "Pod": "pods"}[kind]
    return f"/api/v1/namespaces/{namespace}/{plural}/{name}:{port}/proxy/{path.lstrip('/')}"


@dataclass(frozen=True)
class Answer:
    """What came back from a proxied request: `status` and `body` as sent; `proxy_error` the API
    server's own refusal (a Status object: no such Service, no endpoints, dial failed), "" when the
    answer came from behind the proxy."""

    status: int
    body: str
    proxy_error: str = ""


def path(api_version: str, kind: str, namespace: str | None = None, name: str | None = None) -> str:
    """REST path of a collection or object: core kinds under /api/v1, others under /apis/<group/version>."""
    plural, namespaced = KINDS[kind]
    out = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    if namespaced and namespace:
        out += f"/namespaces/{namespace}"
    out += f"/{plural}"
    return f"{out}/{name}" if name else out


class Gateway(Protocol):
    def server_version(self) -> str: ...

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None: ...

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, label_selector: str = "",
             field_selector: str = "") -> tuple[list[Obj], str]:
        """Items and the list's resourceVersion (to start a watch from)."""
        ...

    def create(self, obj: Obj) -> Obj: ...

    def patch(self, api_version: str, kind: str, name: str, namespace: str | None, patch: Obj, *,
              subresource: str = "") -> Obj:
        """JSON merge patch (of the object, or of a subresource such as `status`). A
        `metadata.resourceVersion` in the patch makes it conditional: 409 when the object moved on."""
        ...

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
               propagation: str = "Background") -> bool:
        """False when the object was already gone."""
        ...

    def watch(self, api_version: str, kind: str, namespace: str | None, *, resource_version: str,
              timeout_seconds: int) -> Iterator[tuple[str, Obj]]: ...

    def logs(self, namespace: str, pod: str, container: str) -> str: ...

    def get_text(self, api_path: str) -> str:
        """GET of a non-JSON path, e.g. a pod proxy's /metrics."""
        ...

    def request(self, method: str, api_path: str, *, body: Obj | None = None,
                headers: dict[str, str] | None = None, timeout: float = 10.0) -> Answer:
        """Any request through the API server (a service or pod proxy), answered whatever its status."""
        ...


class KubeGateway:
    """Gateway over kubernetes.client.ApiClient (see components/kube/client.py `api_client`)."""

    def __init__(self, client: Any, request_timeout: float = 30.0) -> None:
        self.client = client
        self.timeout = request_timeout

    def _call(self, method: str, api_path: str, *, query: list[tuple[str, str]] | None = None, body: Any = None,
              content_type: str = "application/json", accept: str = "application/json",
              timeout: float | None = None) -> Any:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        headers = {"Accept": accept, "Content-Type": content_type}
        try:
            return self.client.call_api(api_path, method, query_params=query or [], header_params=headers,
                                        body=body, auth_settings=["BearerToken"], _preload_content=False,
                                        _request_timeout=timeout or self.timeout)
        except (ApiException, HTTPError, OSError) as exc:
            raise call_failure(exc) from None

    def _json(self, method: str, api_path: str, **kw: Any) -> Obj:
        data = self._call(method, api_path, **kw).data
        return json.loads(data) if data else {}

    def server_version(self) -> str:
        v = self._json("GET", "/version", timeout=10)
        return str(v.get("gitVersion", ""))

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        try:
            return self._json("GET", path(api_version, kind, namespace, name))
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, label_selector: str = "",
             field_selector: str = "") -> tuple[list[Obj], str]:
        query = [(k, v) for k, v in (("labelSelector", label_selector), ("fieldSelector", field_selector)) if v]
        doc = self._json("GET", path(api_version, kind, namespace), query=query)
        return list(doc.get("items") or []), str(doc.get("metadata", {}).get("resourceVersion", ""))

    def create(self, obj: Obj) -> Obj:
        meta = obj.get("metadata", {})
        return self._json("POST", path(obj["apiVersion"], obj["kind"], meta.get("namespace")), body=obj)

    def patch(self, api_version: str, kind: str, name: str, namespace: str | None, patch: Obj, *,
              subresource: str = "") -> Obj:
        target = path(api_version, kind, namespace, name) + (f"/{subresource}" if subresource else "")
        return self._json("PATCH", target, body=patch, content_type="application/merge-patch+json")

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
               propagation: str = "Background") -> bool:
        try:
            self._json("DELETE", path(api_version, kind, namespace, name),
                       body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation})
        except KubeError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def watch(self, api_version: str, kind: str, namespace: str | None, *, resource_version: str,
              timeout_seconds: int) -> Iterator[tuple[str, Obj]]:
        from kubernetes.watch.watch import iter_resp_lines

        query = [("watch", "true"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", str(timeout_seconds))]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        from urllib3.exceptions import HTTPError

        resp = self._call("GET", path(api_version, kind, namespace), query=query, timeout=timeout_seconds + 10)
        try:
            for line in iter_resp_lines(resp):
                event = json.loads(line)
                if event.get("type") == "ERROR":
                    status = event.get("object", {})
                    raise KubeError(int(status.get("code", 500)), str(status.get("message", "watch error")))
                yield str(event.get("type")), dict(event.get("object") or {})
        except (HTTPError, OSError) as exc:  # the stream broke (server closed it, network)
            raise KubeUnreachable(f"watch interrupted: {type(exc).__name__}: {exc}") from None
        finally:
            resp.release_conn()

    def logs(self, namespace: str, pod: str, container: str) -> str:
        resp = self._call("GET", f"/api/v1/namespaces/{namespace}/pods/{pod}/log",
                          query=[("container", container)], accept="*/*")
        return bytes(resp.data).decode("utf-8", errors="replace")

    def get_text(self, api_path: str) -> str:
        return bytes(self._call("GET", api_path, accept="*/*").data).decode("utf-8", errors="replace")

    def request(self, method: str, api_path: str, *, body: Obj | None = None,
                headers: dict[str, str] | None = None, timeout: float = 10.0) -> Answer:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        head = {"Accept": "*/*", "Content-Type": "application/json", **(headers or {})}
        try:
            resp = self.client.call_api(api_path, method, query_params=[], header_params=head, body=body,
                                        auth_settings=["BearerToken"], _preload_content=False,
                                        _request_timeout=timeout)
            return Answer(int(resp.status), bytes(resp.data).decode("utf-8", errors="replace"))
        except ApiException as exc:
            if not exc.status:
                raise call_failure(exc) from None
            text = exc.body.decode("utf-8", "replace") if isinstance(exc.body, bytes) else str(exc.body or "")
            return Answer(int(exc.status), text, proxy_error(text))
        except (HTTPError, OSError) as exc:
            raise call_failure(exc) from None


def proxy_error(text: str) -> str:
    """The API server's own message when an answer is its Status object (a proxied server's error
    page is not one), else ""."""
    try:
        doc = json.loads(text)
    except ValueError:
        return ""
    if isinstance(doc, dict) and doc.get("kind") == "Status" and doc.get("apiVersion") == "v1":
        return str(doc.get("message") or doc.get("reason") or "error")
    return ""

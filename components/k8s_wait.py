"""WaitFor: block dependants until a Kubernetes object's field has a value.

For example ClusterPolicy `cluster-policy` until `{.status.state}` is `ready`. A dynamic resource
whose create/update polls the object (`components.kube.wait.poll`); the timeout message names the
object, the endpoint and the last observed value. Field paths, API discovery decisions and
messages are pure functions; the path is checked when the resource is declared, before anything
is deployed.

The field path is written as kubectl's JSONPath writes one (`{.status.state}`: the input is named
`jsonpath` and existing states hold that syntax), but only a dotted path of plain keys is
supported; anything else (filters, indices, quoting) is refused. The value is printed as kubectl
prints it: strings as they are, anything else as compact JSON (`true`, `3`, `{"a":1}`).

The dynamic provider is pickled into the state by reference (`components.k8s_wait._WaitForProvider`):
the class must stay here under that name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.dynamic

from .k8s_ready import ObservingGateProvider, gate_client
from .kube.errors import ApiFailure
from .kube.wait import Observation, poll

# --------------------------------------------------------------------------------------------
# field paths


class FieldPathError(ValueError):
    pass


_FIELD_PATH = re.compile(r"\{(\.[A-Za-z0-9_-]+)+\}")


def parse_field_path(expr: str) -> tuple[str, ...]:
    """The keys of `{.a.b.c}`; raises FieldPathError for anything else."""
    if not _FIELD_PATH.fullmatch(expr):
        raise FieldPathError(f"jsonpath {expr!r} is not supported: only a dotted field path like "
                             "'{.status.state}' (plain keys of letters, digits, '_' and '-')")
    return tuple(expr[2:-1].split("."))


def format_value(value: Any) -> str:
    """As kubectl's jsonpath prints a value: strings as they are, anything else as compact JSON."""
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), sort_keys=True)


def observed(keys: tuple[str, ...], obj: Any) -> str | None:
    """The value at the path in `obj`, None when a key on the way is absent."""
    for key in keys:
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return format_value(obj)


# --------------------------------------------------------------------------------------------
# API discovery and paths (pure)


@dataclass(frozen=True)
class Target:
    api_version: str
    kind: str
    name: str
    namespace: str | None
    jsonpath: str
    equals: str

    @property
    def ref(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where} ({self.api_version})"


def discovery_path(api_version: str) -> str:
    """`v1` is the core group under /api; everything else is `<group>/<version>` under /apis."""
    return f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"


def find_resource(resource_list: dict[str, Any], kind: str) -> tuple[str, bool] | None:
    """(plural name, namespaced) of `kind` in an APIResourceList; subresources are skipped."""
    for res in resource_list.get("resources") or []:
        if res.get("kind") == kind and "/" not in str(res.get("name", "")):
            return str(res["name"]), bool(res.get("namespaced"))
    return None


def object_path(api_version: str, plural: str, namespace: str | None, name: str) -> str:
    base = discovery_path(api_version)
    return f"{base}/namespaces/{namespace}/{plural}/{name}" if namespace else f"{base}/{plural}/{name}"


def discovery_observation(
    target: Target, answer: str | ApiFailure
) -> tuple[Observation, tuple[str, bool] | None]:
    """The verdict on the discovery answer and, when usable, the resource's (plural, namespaced)."""
    if isinstance(answer, ApiFailure):
        if answer.status == 404:
            return Observation(False, f"API {target.api_version} is not served (yet): CRD not installed?"), None
        return Observation.failed(answer, f"discovery of {target.api_version}: "), None
    try:
        found = find_resource(json.loads(answer), target.kind)
    except (ValueError, AttributeError):
        return Observation(False, f"discovery of {target.api_version}: not an APIResourceList"), None
    if found is None:
        return Observation(False, f"kind {target.kind} is not served by {target.api_version} (yet)"), None
    _, namespaced = found
    if namespaced and not target.namespace:
        return Observation(False, f"{target.kind} is namespaced: a namespace is required", fatal=True), None
    if not namespaced and target.namespace:
        return Observation(False, f"{target.kind} is cluster-scoped: namespace {target.namespace!r} must be "
                                  "None", fatal=True), None
    return Observation(False, "discovered"), found


def object_observation(target: Target, keys: tuple[str, ...], answer: str | ApiFailure) -> Observation:
    if isinstance(answer, ApiFailure):
        return Observation(False, "object not found (yet)") if answer.status == 404 else Observation.failed(answer)
    try:
        obj = json.loads(answer)
    except ValueError:
        return Observation(False, f"answer is not JSON: {answer[:200]!r}")
    value = observed(keys, obj)
    if value is None:
        return Observation(False, f"{target.jsonpath} is not set (yet)")
    return Observation(value == target.equals, f"{target.jsonpath} is {value!r}", value=value)


def wait_timeout_message(target: Target, endpoint: str, elapsed: float, attempts: int, last: Observation) -> str:
    verb = "gave up" if last.permanent or last.fatal else "timed out"
    return (
        f"waiting for {target.ref} on {endpoint}: {verb} after {elapsed:.0f}s and {attempts} attempts "
        f"for {target.jsonpath} == {target.equals!r}; last observed: {last.detail}"
    )


# --------------------------------------------------------------------------------------------
# I/O and the dynamic resource


def wait_for(kubeconfig: str, target: Target, timeout_seconds: float) -> str:
    """Poll until the target's field equals the expected value; returns the observed value."""
    from .kube.client import http_get  # the kubernetes client is slow to import

    keys = parse_field_path(target.jsonpath)
    with gate_client(kubeconfig, lambda endpoint: f"waiting for {target.ref} on {endpoint}") as (api, endpoint):
        found: list[tuple[str, bool]] = []

        def probe() -> Observation:
            if not found:
                obs, res = discovery_observation(target, http_get(api, discovery_path(target.api_version)))
                if res is None:
                    return obs
                found.append(res)
            plural = found[0][0]
            return object_observation(
                target, keys, http_get(api, object_path(target.api_version, plural, target.namespace, target.name))
            )

        last, _ = poll(
            probe,
            timeout_seconds=timeout_seconds,
            describe_timeout=lambda e, n, obs: wait_timeout_message(target, endpoint, e, n, obs),
        )
    return last.value


_TARGET_KEYS = ("apiVersion", "kind", "objectName", "namespace", "jsonpath", "equals", "trigger")


def _target(props: dict[str, Any]) -> Target:
    return Target(props["apiVersion"], props["kind"], props["objectName"], props.get("namespace") or None,
                  props["jsonpath"], props["equals"])


class _WaitForProvider(ObservingGateProvider):
    KEYS = _TARGET_KEYS
    ID_PREFIX = "waitfor"

    def observe(self, props: dict[str, Any]) -> str:
        return wait_for(str(props["kubeconfig"]), _target(props), float(props["timeoutSeconds"]))


class WaitFor(pulumi.dynamic.Resource, module="ck8s-gpu", name="WaitFor"):  # type: ignore[misc,call-arg]
    """Succeeds once the object's field at `jsonpath` (a dotted path, `{.status.state}`) equals `equals`;
    fails with the last observed value.

    Re-checks when the target, the kubeconfig or `trigger` change (pass e.g. the chart version of
    the release that owns the object, so an upgrade waits again).
    """

    observed: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        kubeconfig: pulumi.Input[str],
        *,
        api_version: str,
        kind: str,
        object_name: str,
        namespace: str | None,
        jsonpath: str,
        equals: str,
        timeout_seconds: int,
        opts: pulumi.ResourceOptions | None = None,
        trigger: pulumi.Input[str] | None = None,
    ) -> None:
        problems = []
        try:
            parse_field_path(jsonpath)
        except FieldPathError as exc:
            problems.append(str(exc))
        if timeout_seconds <= 0:
            problems.append(f"timeout_seconds must be positive, got {timeout_seconds}")
        if not re.fullmatch(r"([a-z0-9.-]+/)?v\d+((alpha|beta)\d+)?", api_version):
            problems.append(f"api_version {api_version!r} is not 'v1' or '<group>/<version>'")
        if not kind or not object_name:
            problems.append("kind and object_name are required")
        if problems:
            raise ValueError(f"WaitFor {name}: " + "; ".join(problems))
        props = {
            "kubeconfig": pulumi.Output.secret(kubeconfig),
            "apiVersion": api_version,
            "kind": kind,
            "objectName": object_name,
            "namespace": namespace,
            "jsonpath": jsonpath,
            "equals": equals,
            "timeoutSeconds": timeout_seconds,
            "trigger": trigger,
            "observed": None,
            "kubeconfigSha256": None,
        }
        opts = pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])
        )
        super().__init__(_WaitForProvider(), name, props, opts)

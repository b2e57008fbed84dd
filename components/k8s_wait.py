"""WaitFor: block dependants until a Kubernetes object's field has a value.

For example ClusterPolicy `cluster-policy` until `{.status.state}` is `ready`, or a Deployment
until `{.status.conditions[?(@.type=="Available")].status}` is `True`. A dynamic resource whose
create/update polls the object; the timeout message names the object, the endpoint and the last
observed value. JSONPath parsing, evaluation, API discovery decisions and messages are pure
functions; the JSONPath is checked when the resource is declared, before anything is deployed.

Supported JSONPath (the subset kubectl users write for conditions): `.field`, `['field']`,
`field\\.with\\.dots`, `[N]` (negative counts from the end), `[*]`, and filters
`[?(@.a.b=="x")]` / `[?(@.a!="x")]`. Optional surrounding `{}` and leading `$`.
Several matches are joined with a space, as kubectl prints them.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.dynamic

from components.k8s_ready import (
    HttpResult,
    Observation,
    WaitTimeout,
    http_get,
    http_problem,
    kubeconfig_endpoint,
    poll,
    sha256,
)

# --------------------------------------------------------------------------------------------
# JSONPath subset


class JsonPathError(ValueError):
    pass


@dataclass(frozen=True)
class Key:
    name: str


@dataclass(frozen=True)
class Index:
    index: int


@dataclass(frozen=True)
class All:
    pass


@dataclass(frozen=True)
class Filter:
    path: tuple[Key | Index, ...]
    op: str  # "==" or "!="
    value: str


Step = Key | Index | All | Filter

_NAME_CHAR = re.compile(r"[A-Za-z0-9_\-/:]")
_FILTER = re.compile(r"""^\?\(@((?:\.[A-Za-z0-9_\-/]+|\[\d+\])+)\s*(==|!=)\s*(?:"([^"]*)"|'([^']*)'|([-\w.]+))\)$""")


def parse_jsonpath(expr: str) -> tuple[Step, ...]:
    """Parse the supported subset; raises JsonPathError naming the position of the problem."""
    text = expr.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    if not text:
        raise JsonPathError(f"empty JSONPath {expr!r}")
    steps: list[Step] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == ".":
            if text[i + 1 : i + 2] == ".":
                raise JsonPathError(f"recursive descent '..' is not supported in {expr!r}")
            i += 1
            name, i = _read_name(text, i, expr)
            steps.append(Key(name))
        elif ch == "[":
            end = _closing_bracket(text, i, expr)
            steps.append(_bracket(text[i + 1 : end], expr))
            i = end + 1
        elif i == 0 and _NAME_CHAR.match(ch):  # kubectl accepts a leading bare name too
            name, i = _read_name(text, i, expr)
            steps.append(Key(name))
        else:
            raise JsonPathError(f"unexpected {ch!r} at position {i} in {expr!r}")
    return tuple(steps)


def _read_name(text: str, i: int, expr: str) -> tuple[str, int]:
    out = []
    while i < len(text):
        if text[i] == "\\" and text[i + 1 : i + 2] == ".":
            out.append(".")
            i += 2
        elif _NAME_CHAR.match(text[i]):
            out.append(text[i])
            i += 1
        else:
            break
    if not out:
        raise JsonPathError(f"expected a field name at position {i} in {expr!r}")
    return "".join(out), i


def _closing_bracket(text: str, start: int, expr: str) -> int:
    depth, quote = 0, ""
    for j in range(start, len(text)):
        c = text[j]
        if quote:
            quote = "" if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
            if depth == 0:
                if c != "]":
                    break
                return j
    raise JsonPathError(f"unclosed '[' at position {start} in {expr!r}")


def _bracket(inner: str, expr: str) -> Step:
    inner = inner.strip()
    if inner == "*":
        return All()
    if re.fullmatch(r"-?\d+", inner):
        return Index(int(inner))
    quoted = re.fullmatch(r"""'([^']*)'|"([^"]*)\"""", inner)
    if quoted:
        return Key(quoted.group(1) if quoted.group(1) is not None else quoted.group(2))
    m = _FILTER.match(inner)
    if m:
        rel = tuple(
            Index(int(part[1:-1])) if part.startswith("[") else Key(part)
            for part in re.findall(r"\[\d+\]|[^.\[\]]+", m.group(1))
        )
        value = next(v for v in (m.group(3), m.group(4), m.group(5)) if v is not None)
        return Filter(rel, m.group(2), value)
    raise JsonPathError(f"unsupported selector [{inner}] in {expr!r}")


def evaluate(steps: tuple[Step, ...], obj: Any) -> list[Any]:
    """Every value the path selects in `obj` (empty when it selects nothing)."""
    current = [obj]
    for step in steps:
        nxt: list[Any] = []
        for node in current:
            if isinstance(step, Key):
                if isinstance(node, dict) and step.name in node:
                    nxt.append(node[step.name])
            elif isinstance(step, Index):
                if isinstance(node, list) and -len(node) <= step.index < len(node):
                    nxt.append(node[step.index])
            elif isinstance(step, All):
                if isinstance(node, list):
                    nxt.extend(node)
                elif isinstance(node, dict):
                    nxt.extend(node.values())
            elif isinstance(node, list):  # Filter
                for item in node:
                    got = evaluate(step.path, item)
                    matched = bool(got) and format_value(got[0]) == step.value
                    if matched == (step.op == "=="):
                        nxt.append(item)
        current = nxt
    return current


def format_value(value: Any) -> str:
    """As kubectl's jsonpath prints a value: booleans lower-case, objects as compact JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    if value is None:
        return "null"
    return str(value)


def observed(steps: tuple[Step, ...], obj: Any) -> str | None:
    values = evaluate(steps, obj)
    return " ".join(format_value(v) for v in values) if values else None


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


def discovery_observation(target: Target, result: HttpResult) -> tuple[Observation, tuple[str, bool] | None]:
    """The verdict on the discovery answer and, when usable, the resource's (plural, namespaced)."""
    if result.status == 404:
        return Observation(False, f"API {target.api_version} is not served (yet): CRD not installed?"), None
    problem = http_problem(result)
    if problem is not None:
        return Observation(False, f"discovery of {target.api_version}: {problem.detail}", problem.permanent), None
    try:
        found = find_resource(json.loads(result.body), target.kind)
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


def object_observation(target: Target, steps: tuple[Step, ...], result: HttpResult) -> Observation:
    if result.status == 404:
        return Observation(False, "object not found (yet)")
    problem = http_problem(result)
    if problem is not None:
        return problem
    try:
        obj = json.loads(result.body)
    except ValueError:
        return Observation(False, f"answer is not JSON: {result.body[:200]!r}")
    value = observed(steps, obj)
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
    """Poll until the target's JSONPath equals the expected value; returns the observed value."""
    from components.kube.client import api_client  # the kubernetes client is slow to import

    endpoint = kubeconfig_endpoint(kubeconfig)
    steps = parse_jsonpath(target.jsonpath)
    try:
        api = api_client(kubeconfig)
    except Exception as exc:  # malformed kubeconfig: waiting cannot fix it
        raise WaitTimeout(f"waiting for {target.ref} on {endpoint}: unusable kubeconfig: {exc}") from None
    found: list[tuple[str, bool]] = []

    def probe() -> Observation:
        if not found:
            obs, res = discovery_observation(target, http_get(api, discovery_path(target.api_version)))
            if res is None:
                return obs
            found.append(res)
        plural = found[0][0]
        return object_observation(
            target, steps, http_get(api, object_path(target.api_version, plural, target.namespace, target.name))
        )

    try:
        last, _ = poll(
            probe,
            timeout_seconds=timeout_seconds,
            describe_timeout=lambda e, n, obs: wait_timeout_message(target, endpoint, e, n, obs),
        )
    finally:
        api.close()
    return last.value


_TARGET_KEYS = ("apiVersion", "kind", "objectName", "namespace", "jsonpath", "equals", "trigger")


def _target(props: dict[str, Any]) -> Target:
    return Target(props["apiVersion"], props["kind"], props["objectName"], props.get("namespace") or None,
                  props["jsonpath"], props["equals"])


class _WaitForProvider(pulumi.dynamic.ResourceProvider):  # type: ignore[misc]
    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        seen = wait_for(str(props["kubeconfig"]), _target(props), float(props["timeoutSeconds"]))
        return {
            **{k: props.get(k) for k in _TARGET_KEYS},
            "timeoutSeconds": props["timeoutSeconds"],
            "observed": seen,
            "kubeconfigSha256": sha256(str(props["kubeconfig"])),
        }

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        return pulumi.dynamic.CreateResult(f"waitfor-{uuid.uuid4().hex[:12]}", self._run(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.DiffResult:
        changed = sha256(str(news.get("kubeconfig", ""))) != olds.get("kubeconfigSha256") or any(
            olds.get(k) != news.get(k) for k in _TARGET_KEYS
        )
        return pulumi.dynamic.DiffResult(changes=changed)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.UpdateResult:
        return pulumi.dynamic.UpdateResult(self._run(news))


class WaitFor(pulumi.dynamic.Resource, module="ck8s-gpu", name="WaitFor"):  # type: ignore[misc,call-arg]
    """Succeeds once `jsonpath` of the object equals `equals`; fails with the last observed value.

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
            parse_jsonpath(jsonpath)
        except JsonPathError as exc:
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

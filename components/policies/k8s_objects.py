"""Kubernetes objects a stack registers, however they were spelled (pure, no pulumi_policy import).

What a policy can see (pulumi-kubernetes 4.34):
- typed resources, `kubernetes:<group>/<version>:<Kind>` (CustomResource too: `kubernetes:nvidia.com/v1:ClusterPolicy`);
  `*Patch` types carry the same fields;
- the objects of `kubernetes:yaml:ConfigFile`/`ConfigGroup` (SDK-side components, sdk/python
  yaml/yaml.py `_parse_yaml_object`) and of `kubernetes:yaml/v2:ConfigFile`/`ConfigGroup` (the
  provider expands them in Construct): each is registered as its own typed child resource, so
  the real engine shows them like any other;
- a yaml/v2 component's own inputs (`objs`, `yaml`, `files`, `file`), read here only when the
  stack holds no children of it: the offline plan runs no provider, so there it has none.
Blind spot, offline only: v1 ConfigFile/ConfigGroup given `files` or `yaml` text, whose children the
SDK creates from the provider's `kubernetes:yaml:decode`, which the mock engine does not answer.

Objects rendered by a `kubernetes:helm.sh/v4:Chart` are marked `in_chart`: the Helm policies judge
that chart through its version and values. The SDK-side `helm.sh/v3:Chart` is not one of those
(components/policies/helm.py HELM_TYPES), so its objects count as registered directly.

Reading manifest text is bounded: MAX_TEXT characters per document source, MAX_FILES files, no
YAML aliases (PyYAML shares aliased nodes, so a walk over "a billion laughs" would not end), and
at most MAX_DEPTH levels of nesting.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..tables import tokens
from ..tables.paths import PROJECT_DIR
from .props import get, is_seq, is_unknown, items

YAML_V2 = (tokens.K8S_YAML_V2_CONFIG_GROUP, tokens.K8S_YAML_V2_CONFIG_FILE)
CHART_V4 = tokens.K8S_HELM_V4_CHART  # helm.py's; not imported: helm.py imports this module
MAX_TEXT = 1 << 20
MAX_FILES = 64
MAX_DEPTH = 64

# Where each pod-carrying kind keeps its pod spec (k8s.io/api core/v1, apps/v1, batch/v1).
POD_SPEC_PATHS: dict[str, str] = {
    "Pod": "spec",
    "PodTemplate": "template.spec",
    "Deployment": "spec.template.spec",
    "DaemonSet": "spec.template.spec",
    "StatefulSet": "spec.template.spec",
    "ReplicaSet": "spec.template.spec",
    "ReplicationController": "spec.template.spec",
    "Job": "spec.template.spec",
    "CronJob": "spec.jobTemplate.spec.template.spec",
}
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


@dataclass(frozen=True)
class K8sObject:
    kind: str
    obj: Mapping[str, Any]  # the object's fields: metadata, spec, rules, subjects...
    urn: str  # the resource that registered it (the component, for objects read from its inputs)
    in_chart: bool = False

    @property
    def name(self) -> str:
        name = get(self.obj, "metadata.name")
        return name if isinstance(name, str) else self.urn.rsplit("::", 1)[-1]

    @property
    def namespace(self) -> str | None:
        ns = get(self.obj, "metadata.namespace")
        return ns if isinstance(ns, str) and not is_unknown(ns) else None

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace + '/' if self.namespace else ''}{self.name}"


@dataclass(frozen=True)
class Unreadable:
    urn: str
    why: str


def kind_of(resource_type: str) -> str | None:
    """The Kubernetes kind a resource type registers (`DaemonSet`), None for anything else."""
    parts = resource_type.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes" or "/" not in parts[1]:
        return None  # providers, yaml/kustomize/helm v1 modules
    if parts[1].startswith(("yaml/", "helm.sh/", "kustomize/")):
        return None
    return parts[2].removesuffix("Patch")


def _ancestry(urn: str) -> list[str]:
    """Types of a resource and its parents, from the URN's qualified type (`parent$child`)."""
    parts = urn.split("::")
    return parts[2].split("$") if len(parts) >= 4 else []


def objects(resources: Iterable[Any]) -> tuple[list[K8sObject], list[Unreadable]]:
    """Every Kubernetes object of `resources` (PolicyResources: resource_type, urn, props, parent),
    and the components whose inline objects could not be read."""
    resources = list(resources)
    parents = {r.parent.urn for r in resources if getattr(r, "parent", None) is not None}
    out: list[K8sObject] = []
    unreadable: list[Unreadable] = []
    for r in resources:
        kind = kind_of(r.resource_type)
        if kind is not None:
            in_chart = CHART_V4 in _ancestry(r.urn)[:-1]
            out.append(K8sObject(kind, r.props, r.urn, in_chart))
        elif r.resource_type in YAML_V2 and r.urn not in parents:
            docs, problems = inline_documents(r.props)
            out += [K8sObject(str(d["kind"]), d, r.urn) for d in docs]
            unreadable += [Unreadable(r.urn, p) for p in problems]
    return out, unreadable


def inline_documents(props: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The objects a yaml/v2 component's inputs describe (Lists flattened), and why any part
    could not be read. Unknown inputs are skipped."""
    docs: list[Any] = list(items(props, "objs"))
    problems: list[str] = []
    texts = props.get("yaml")
    for text in items(props, "yaml") if is_seq(texts) else [texts]:
        if isinstance(text, str) and not is_unknown(text):
            docs += _load(text, "yaml", problems)
    paths = [props["file"]] if isinstance(props.get("file"), str) else items(props, "files")
    for pattern in paths:
        if isinstance(pattern, str) and not is_unknown(pattern):
            for path, text in _read(pattern, problems):
                docs += _load(text, path, problems)
    return list(_flatten(docs, problems)), problems


def _flatten(docs: Iterable[Any], problems: list[str]) -> Iterator[Mapping[str, Any]]:
    for doc in docs:
        if not isinstance(doc, Mapping) or not isinstance(doc.get("kind"), str):
            continue
        if not _shallow(doc):
            problems.append(f"an object nests deeper than {MAX_DEPTH} levels")
        elif doc["kind"].endswith("List"):
            yield from _flatten(items(doc, "items"), problems)
        else:
            yield doc


class _NoAliasLoader(yaml.SafeLoader):
    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.YAMLError("YAML aliases are not expanded here")
        return super().compose_node(parent, index)


def _load(text: str, where: str, problems: list[str]) -> list[Any]:
    if len(text) > MAX_TEXT:
        problems.append(f"{where}: over {MAX_TEXT} characters")
        return []
    try:
        return [d for d in yaml.load_all(text, Loader=_NoAliasLoader) if d is not None]
    except (yaml.YAMLError, RecursionError) as exc:
        problems.append(f"{where}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
        return []


def _read(pattern: str, problems: list[str]) -> Iterator[tuple[str, str]]:
    """Local manifest files (relative to the project, as the program runs there); a URL is only
    fetched at deploy time, so it cannot be reviewed offline."""
    if "://" in pattern:
        problems.append(f"{pattern}: fetched at deploy time, not reviewable offline")
        return
    base = Path(pattern) if Path(pattern).is_absolute() else PROJECT_DIR / pattern
    matches = sorted(glob.glob(str(base))) if glob.has_magic(pattern) else [str(base)]
    if len(matches) > MAX_FILES:
        problems.append(f"{pattern}: over {MAX_FILES} files")
        return
    for match in matches:
        try:
            with open(match, encoding="utf-8") as handle:
                text = handle.read(MAX_TEXT + 1)
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{pattern}: {type(exc).__name__}")
            continue
        yield match, text


def _shallow(value: Any, limit: int = MAX_DEPTH) -> bool:
    """No deeper than `limit` levels (iterative: the check itself must not recurse)."""
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(node, Mapping):
            stack += [(v, depth + 1) for v in node.values()]
        elif is_seq(node):
            stack += [(v, depth + 1) for v in node]
    return True


# --- pods ---------------------------------------------------------------------------------------

def pod_spec(o: K8sObject) -> Mapping[str, Any] | None:
    path = POD_SPEC_PATHS.get(o.kind)
    spec = get(o.obj, path) if path else None
    return spec if isinstance(spec, Mapping) else None


def containers(o: K8sObject, lists: tuple[str, ...] = CONTAINER_LISTS) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(`containers[0]`-style path from the pod spec, container) for every container of a pod-carrying object."""
    spec = pod_spec(o)
    if spec is None:
        return
    for key in lists:
        for i, container in enumerate(items(spec, key)):
            if isinstance(container, Mapping):
                yield f"{key}[{i}]", container

"""The package schema every Pulumi language's SDK is generated from (`pulumi package gen-sdk`).

Resources, types, enums and their descriptions come from Pulumi's own analyzer over the typed
components (args.py, resources.py; pulumi/provider/experimental/analyzer.py and schema.py of the
pinned SDK). This adds what the analyzer cannot know, each field as Pulumi's schema reference
describes it (pkg/codegen/schema/pulumi.json of pulumi/pulumi): the package metadata, `secret`
on the kubeconfig, every default the Python API applies (in the descriptions: a schema `default`
would make each SDK send it, hiding which fields a program set), and per-language names.
"""

import dataclasses
import importlib.metadata
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pulumi.provider.experimental.analyzer import Analyzer
from pulumi.provider.experimental.schema import generate_schema
from pulumi.provider.experimental.util import camel_case

from .. import api
from ..settings.defaults import default_at
from ..tables.paths import PROJECT_DIR
from .resources import COMPONENTS

NAME = "ck8s-gpu"  # the package: tokens `ck8s-gpu:index:<Component>`, plugin `pulumi-resource-ck8s-gpu`
DISTRIBUTION = "ck8s-gpu"
# Names each language imports the SDK by (ADR 0045). Go: a module path under the project's own
# `ck8s-gpu.local` (no registry serves it: `go mod edit -replace` points it at the generated SDK).
NODEJS_PACKAGE = "@ck8s-gpu/pulumi"
GO_IMPORT_BASE = "ck8s-gpu.local/sdk/go/ck8sgpu"
CSHARP_ROOT_NAMESPACE = "Ck8s"
CSHARP_NAMESPACE = "Gpu"  # C#: `using Ck8s.Gpu;`
PYTHON_PACKAGE = "pulumi_ck8s_gpu"
EXTRA_KEYWORDS = ("kind/component", "category/cloud")  # the Pulumi Registry's facets

# Which Python API dataclass gives the defaults of each schema object (by its analyzer name).
DEFAULTS_FROM: Mapping[str, type] = {"GpuAddons": api.GpuAddonsArgs, "GpuCluster": api.GpuClusterArgs,
                                     "GpuPool": api.GpuPool, "SmokeTest": api.SmokeTestArgs}
SECRETS = {"kubeconfig"}  # inputs and outputs


@dataclass(frozen=True)
class Project:
    version: str
    description: str
    keywords: tuple[str, ...]
    license: str
    publisher: str
    urls: Mapping[str, str]


def project() -> Project:
    """The distribution's metadata: pyproject.toml in a checkout (the source of truth there, even
    behind a stale editable install), the installed metadata in a wheel."""
    pyproject = PROJECT_DIR / "pyproject.toml"
    if pyproject.is_file():
        doc = tomllib.loads(pyproject.read_text())["project"]
        if doc.get("name") == DISTRIBUTION:
            return Project(doc["version"], doc["description"], tuple(doc.get("keywords", ())), doc["license"],
                           ", ".join(a["name"] for a in doc.get("authors", ())), dict(doc.get("urls", {})))
    md = importlib.metadata.metadata(DISTRIBUTION)
    urls = dict(u.split(", ", 1) for u in md.get_all("Project-URL") or ())
    return Project(md["Version"], md["Summary"], tuple(k for k in (md["Keywords"] or "").split(",") if k),
                   md["License-Expression"] or md["License"] or "", md["Author"] or md["Author-email"] or "", urls)


def _default_text(value: Any) -> str | None:
    if value is None or value == () or value == {} or dataclasses.is_dataclass(value):
        return None  # "unset", or an object whose own fields say their defaults
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def defaults(cls: type) -> dict[str, str]:
    """Schema name -> default, as text, of a Python API dataclass's fields: its own, or for an argument
    left unset the settings model's default at the path it names (with its note)."""
    out = {}
    for f in dataclasses.fields(cls):
        value = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if value is None and "settings" in f.metadata:
            value = default_at(f.metadata["settings"])
        text = None if value is dataclasses.MISSING else _default_text(value)
        if text is not None:
            out[camel_case(f.name)] = f"`{text}`" + (f"; {f.metadata['note']}" if f.metadata.get("note") else "")
    return out


def _describe_defaults(props: dict[str, Any], cls: type) -> None:
    for name, text in defaults(cls).items():
        if name in props:
            props[name]["description"] = f"{props[name].get('description', '').rstrip()} Default: {text}.".lstrip()


def _mark_secrets(props: dict[str, Any]) -> None:
    for name in SECRETS & props.keys():
        props[name]["secret"] = True


def _tidy(node: Any, nested: bool = False) -> None:
    """Docstrings' line breaks and indents out of every description; an array's items and a map's
    values repeat their property's description (the analyzer gives both): theirs goes."""
    if isinstance(node, dict):
        if nested:
            node.pop("description", None)
        elif isinstance(node.get("description"), str):
            node["description"] = " ".join(node["description"].split())
        for key, value in node.items():
            _tidy(value, key in ("items", "additionalProperties"))
    elif isinstance(node, list):
        for value in node:
            _tidy(value)


def language(p: Project) -> dict[str, dict[str, Any]]:
    return {
        "nodejs": {"packageName": NODEJS_PACKAGE, "packageDescription": p.description},
        # generateExtraInputTypes: the Go generator of pulumi v3.274.1 names `[]GpuPoolArgs` for a
        # plain array of plain objects but generates GpuPoolArgs only for types it marks as inputs
        # (pkg/codegen/go/gen.go populateDetailsForPropertyTypes): without it the Go SDK does not
        # compile (`undefined: GpuPoolArgs`; tests/integration/test_provider_sdks.py).
        "go": {"importBasePath": GO_IMPORT_BASE, "generateExtraInputTypes": True},
        "csharp": {"rootNamespace": CSHARP_ROOT_NAMESPACE, "namespaces": {NAME: CSHARP_NAMESPACE}},
        "python": {"packageName": PYTHON_PACKAGE},
    }


def schema(p: Project | None = None) -> dict[str, Any]:
    """The provider's package schema (a JSON object), for `p` (default: this distribution)."""
    p = p or project()
    result = Analyzer(NAME).analyze(list(COMPONENTS))
    spec: dict[str, Any] = generate_schema(NAME, p.version, None, result["component_definitions"],
                                           result["type_definitions"],
                                           sorted(result["dependencies"], key=lambda d: f"{d.name}{d.version}"),
                                           ).to_json()
    for token, resource in spec["resources"].items():
        short = token.rsplit(":", 1)[-1]
        _describe_defaults(resource["inputProperties"], DEFAULTS_FROM[short])
        _mark_secrets(resource["inputProperties"])
        _mark_secrets(resource["properties"])
    for token, typ in spec["types"].items():
        short = token.rsplit(":", 1)[-1]
        if short in DEFAULTS_FROM:
            _describe_defaults(typ["properties"], DEFAULTS_FROM[short])
    _tidy(spec)
    for lang, extra in language(p).items():
        spec["language"].setdefault(lang, {}).update(extra)
    spec.update({
        "displayName": NAME,
        "description": p.description,
        "keywords": sorted({*p.keywords, *EXTRA_KEYWORDS}),
        "license": p.license,
        "publisher": p.publisher,
        # Each SDK a complete package (Go: a go.mod; nodejs: a versioned package.json), as
        # `pulumi package add` generates them (pkg/cmd/pulumi/packages/packages.go).
        "meta": {"supportPack": True},
        "config": {},  # the provider takes no configuration
    })
    if not spec.get("dependencies"):
        spec.pop("dependencies", None)  # in the form `pulumi package get-schema` prints it: bound, re-marshalled
    for field, key in (("repository", "Repository"), ("homepage", "Homepage")):
        if key in p.urls:
            spec[field] = p.urls[key]
    return spec

"""The provider's schema (components/provider/schema.py): what each language's SDK is generated from."""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Iterator
from typing import Any

import pytest

from components import api
from components.provider import args
from components.provider.schema import NAME, Project, project, schema
from components.settings.model import KubernetesSettings, SmokeTestSettings

SPEC = schema()
RESOURCES = {"GpuAddons": (args.GpuAddonsArgs, api.GpuAddonsArgs),
             "GpuCluster": (args.GpuClusterArgs, api.GpuClusterArgs)}
TYPES = {"GpuPool": (args.GpuPool, api.GpuPool), "SmokeTest": (args.SmokeTest, api.SmokeTestArgs)}
ENUMS = {"Driver": (args.Driver, api.Driver), "Scheduler": (args.Scheduler, api.Scheduler),
         "ControlPlaneCount": (args.ControlPlaneCount, typing.get_type_hints(api.GpuClusterArgs)["control_planes"])}


def token(short: str) -> str:
    return f"{NAME}:index:{short}"


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def described(where: str, props: dict[str, Any]) -> Iterator[str]:
    for name, prop in props.items():
        if not prop.get("description", "").strip():
            yield f"{where}.{name}"


def test_the_components_are_the_python_apis_tokens() -> None:
    assert set(SPEC["resources"]) == {api.GpuAddons.TYPE, api.GpuCluster.TYPE}
    assert all(r["isComponent"] for r in SPEC["resources"].values())


def test_every_resource_type_input_and_output_has_a_description() -> None:
    missing = [f"resources.{t}" for t, r in SPEC["resources"].items() if not r.get("description")]
    missing += [f"types.{t}" for t, ty in SPEC["types"].items() if not ty.get("description")]
    for t, r in SPEC["resources"].items():
        missing += described(f"{t}.inputProperties", r["inputProperties"])
        missing += described(f"{t}.properties", r["properties"])
    for t, ty in SPEC["types"].items():
        missing += described(f"{t}.properties", ty.get("properties", {}))
        missing += [f"{t}.enum.{v['name']}" for v in ty.get("enum", []) if not v.get("description")]
    assert not missing
    assert not [d for d in re.findall(r'"description": "([^"]*)"', str(SPEC)) if "\n" in d]


@pytest.mark.parametrize("short", sorted(ENUMS))
def test_enums_carry_exactly_the_values_the_python_api_allows(short: str) -> None:
    enum, allowed = ENUMS[short]
    values = [v["value"] for v in SPEC["types"][token(short)]["enum"]]
    assert values == [m.value for m in enum]
    assert set(values) == set(typing.get_args(allowed))


@pytest.mark.parametrize("short", sorted(RESOURCES))
def test_inputs_required_and_outputs_match_the_args(short: str) -> None:
    typed, dataclass = RESOURCES[short]
    res = SPEC["resources"][token(short)]
    assert set(res["inputProperties"]) == {camel(k) for k in typed.__annotations__}
    assert res["requiredInputs"] == sorted(camel(k) for k in typed.__required_keys__)
    # Each input is a field of the Python API's args: the two APIs say the same things.
    assert {camel(f.name) for f in dataclasses.fields(dataclass)} >= set(res["inputProperties"])
    assert set(res["properties"]) == set(res["required"]) == {"kubeconfig", "addons", "smokeReport"}
    assert res["inputProperties"]["kubeconfig" if short == "GpuAddons" else "region"]
    assert res["properties"]["kubeconfig"]["secret"] is True
    assert res["properties"]["addons"] == {**res["properties"]["addons"], "type": "array", "items": {"type": "string"}}
    assert res["properties"]["smokeReport"]["$ref"] == "pulumi.json#/Any"


@pytest.mark.parametrize("short", sorted(TYPES))
def test_object_types_match_the_python_api(short: str) -> None:
    typed, dataclass = TYPES[short]
    ty = SPEC["types"][token(short)]
    assert set(ty["properties"]) == {camel(k) for k in typed.__annotations__}
    assert set(ty["properties"]) <= {camel(f.name) for f in dataclasses.fields(dataclass)}
    assert ty.get("required", []) == sorted(camel(k) for k in typed.__required_keys__)


def test_every_python_api_default_is_in_its_description() -> None:
    addons = SPEC["resources"][api.GpuAddons.TYPE]["inputProperties"]
    assert addons["driver"]["description"].endswith("Default: `operator`.")
    assert addons["simulatedGpus"]["description"].endswith("Default: `false`.")
    # Unset arguments document the settings model's default (the one place defaults live).
    assert api.GpuAddonsArgs.__dataclass_fields__["kubernetes_track"].default is None
    assert addons["kubernetesTrack"]["description"].endswith(f"Default: `{KubernetesSettings().track}`.")
    smoke = SPEC["types"][token("SmokeTest")]["properties"]
    assert smoke["timeoutSeconds"]["description"].endswith(f"Default: `{SmokeTestSettings().timeout_seconds}`.")
    assert smoke["scheduler"]["description"].endswith(
        "Default: `kai`; `default` where the GPUs are simulated (no KAI there).")
    assert "Default" not in SPEC["types"][token("GpuPool")]["properties"]["ami"]["description"]  # unset
    assert "default" not in str(addons)  # no schema `default`: the SDKs send only what a program set


def test_inputs_other_than_the_kubeconfig_are_plain() -> None:
    """The settings are validated before anything is registered: they cannot wait for outputs."""
    for res in SPEC["resources"].values():
        for name, prop in res["inputProperties"].items():
            assert prop.get("plain") is (None if name == "kubeconfig" else True), name
    assert SPEC["resources"][api.GpuAddons.TYPE]["inputProperties"]["kubeconfig"]["secret"] is True


def test_package_metadata_and_language_names() -> None:
    p = project()
    assert SPEC["name"] == NAME and SPEC["version"] == p.version
    assert SPEC["license"] == "Apache-2.0" and SPEC["description"] == p.description
    assert {"kind/component", *p.keywords} <= set(SPEC["keywords"])
    lang = SPEC["language"]
    assert re.fullmatch(r"@[a-z0-9-]+/[a-z0-9-]+", lang["nodejs"]["packageName"])
    go_package = lang["go"]["importBasePath"].rsplit("/", 1)[-1]
    assert re.fullmatch(r"[a-z][a-z0-9]*", go_package), "a Go package name has no hyphen"
    assert lang["go"]["generateExtraInputTypes"] is True
    assert re.fullmatch(r"[A-Z][A-Za-z0-9]*", lang["csharp"]["rootNamespace"])
    assert lang["python"]["packageName"].isidentifier()
    assert SPEC["meta"] == {"supportPack": True}


def test_the_version_and_urls_follow_the_project_metadata() -> None:
    p = dataclasses.replace(project(), version="9.8.7", urls={"Repository": "https://example.test/ck8s-gpu"})
    spec = schema(p)
    assert spec["version"] == "9.8.7" and spec["repository"] == "https://example.test/ck8s-gpu"
    assert "homepage" not in spec


def test_the_checkout_reads_its_pyproject() -> None:
    import tomllib

    from components import PROJECT_DIR

    doc = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())["project"]
    assert project() == Project(doc["version"], doc["description"], tuple(doc["keywords"]), doc["license"],
                                ", ".join(a["name"] for a in doc["authors"]), dict(doc.get("urls", {})))

"""compat.breaking_changes: each kind of change that breaks a consumer is named by its schema path;
the kinds that break nothing pass."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from components.provider.compat import breaking_changes
from components.provider.schema import schema

BASE = schema()
ADDONS = "ck8s-gpu:index:GpuAddons"
POOL = "ck8s-gpu:index:GpuPool"
DRIVER = "ck8s-gpu:index:Driver"


def changed(edit: Callable[[dict[str, Any]], None]) -> list[str]:
    new = copy.deepcopy(BASE)
    edit(new)
    return breaking_changes(BASE, new)


def res(s: dict[str, Any]) -> dict[str, Any]:
    return dict(s["resources"][ADDONS])


BREAKING: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "resource removed": (lambda s: s["resources"].pop(ADDONS), f"resources.{ADDONS}: removed"),
    "type removed": (lambda s: s["types"].pop(DRIVER), f"types.{DRIVER}: removed"),
    "input removed": (lambda s: s["resources"][ADDONS]["inputProperties"].pop("environment"),
                      f"resources.{ADDONS}.inputProperties.environment: removed"),
    "output removed": (lambda s: s["resources"][ADDONS]["properties"].pop("addons"),
                       f"resources.{ADDONS}.properties.addons: removed"),
    "type property removed": (lambda s: s["types"][POOL]["properties"].pop("ami"),
                              f"types.{POOL}.properties.ami: removed"),
    "enum value removed": (lambda s: s["types"][DRIVER]["enum"].pop(), f"types.{DRIVER}.enum['host']: removed"),
    "enum type changed": (lambda s: s["types"][DRIVER].update(type="integer"),
                          f"types.{DRIVER}: no longer an enum of string"),
    "input type changed": (lambda s: s["resources"][ADDONS]["inputProperties"]["environment"].update(type="integer"),
                           f"resources.{ADDONS}.inputProperties.environment: type changed from plain string to "
                           "plain integer"),
    "plain dropped": (lambda s: s["resources"][ADDONS]["inputProperties"]["environment"].pop("plain"),
                      f"resources.{ADDONS}.inputProperties.environment: type changed from plain string to string"),
    "item type changed": (lambda s: s["resources"][ADDONS]["properties"]["addons"]["items"].update(type="number"),
                          f"resources.{ADDONS}.properties.addons: type changed from array of string to array of "
                          "number"),
    "input newly required": (lambda s: s["resources"][ADDONS]["requiredInputs"].append("environment"),
                             f"resources.{ADDONS}.inputProperties.environment: newly required"),
    "new required input": (lambda s: (s["resources"][ADDONS]["inputProperties"].update(zone={"type": "string"}),
                                      s["resources"][ADDONS]["requiredInputs"].append("zone")),
                           f"resources.{ADDONS}.inputProperties.zone: newly required"),
    "type property newly required": (lambda s: s["types"][POOL]["required"].append("ami"),
                                     f"types.{POOL}.properties.ami: newly required"),
    "output made optional": (lambda s: s["resources"][ADDONS]["required"].remove("smokeReport"),
                             f"resources.{ADDONS}.properties.smokeReport: no longer always set"),
    "npm package renamed": (lambda s: s["language"]["nodejs"].update(packageName="@other/pkg"),
                            "language.nodejs.packageName: changed from '@ck8s-gpu/pulumi' to '@other/pkg'"),
    "go import path moved": (lambda s: s["language"]["go"].update(importBasePath="example.test/x"),
                             "language.go.importBasePath: changed from 'ck8s-gpu.local/sdk/go/ck8sgpu' to "
                             "'example.test/x'"),
    "package renamed": (lambda s: s.update(name="gpu"), "name: changed from 'ck8s-gpu' to 'gpu'"),
}

NON_BREAKING: dict[str, Callable[[dict[str, Any]], None]] = {
    "new optional input": lambda s: s["resources"][ADDONS]["inputProperties"].update(zone={"type": "string"}),
    "new output": lambda s: (s["resources"][ADDONS]["properties"].update(endpoint={"type": "string"}),
                             s["resources"][ADDONS]["required"].append("endpoint")),
    "input made optional": lambda s: s["resources"][ADDONS]["requiredInputs"].remove("pools"),
    "new type": lambda s: s["types"].update({"ck8s-gpu:index:Extra": {"type": "object", "properties": {}}}),
    "new enum value": lambda s: s["types"][DRIVER]["enum"].append({"name": "Other", "value": "other"}),
    "description": lambda s: s["resources"][ADDONS]["inputProperties"]["pools"].update(description="GPU pools."),
    "version": lambda s: s.update(version="9.0.0"),
    "new resource": lambda s: s["resources"].update({"ck8s-gpu:index:Other": res(s)}),
}


@pytest.mark.parametrize("kind", sorted(BREAKING))
def test_each_breaking_kind_is_named_by_its_path(kind: str) -> None:
    edit, expected = BREAKING[kind]
    assert changed(edit) == [expected]


@pytest.mark.parametrize("kind", sorted(NON_BREAKING))
def test_changes_that_break_nothing_pass(kind: str) -> None:
    assert changed(NON_BREAKING[kind]) == []


def test_a_type_used_only_by_outputs_may_gain_a_required_property_but_not_lose_one() -> None:
    old = {"resources": {ADDONS: {"properties": {"info": {"$ref": "#/types/ck8s-gpu:index:Info"}}}},
           "types": {"ck8s-gpu:index:Info": {"type": "object", "required": ["a"],
                                             "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}}}
    more = json.loads(json.dumps(old))
    more["types"]["ck8s-gpu:index:Info"]["required"] = ["a", "b"]
    assert breaking_changes(old, more) == []
    assert breaking_changes(more, old) == ["types.ck8s-gpu:index:Info.properties.b: no longer always set"]


def test_identical_schemas_break_nothing() -> None:
    assert breaking_changes(BASE, copy.deepcopy(BASE)) == []

"""Gateway API status judged as the spec defines it (components/kube/gateway_api.py), the inference
gateway's gate built on it (components/addons/gateway_ready.py), and a release manifest's CRDs read
before any is applied (components/addons/crds_first.py). Real controllers write these statuses in
tests/integration/test_inference_gateway_local.py; here each rule is held to its edge cases."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from components.addons.crds_first import CrdError, manifest_objects
from components.addons.gateway_ready import NOT_SERVED, Target, judge
from components.kube.errors import ApiFailure
from components.kube.gateway_api import gateway_class_problems, gateway_problems, route_problems, split_problem

CONTROLLER = "traefik.io/gateway-controller"
PARENT = ("inference-gateway", "inference")


def cond(kind: str, status: str = "True", gen: int = 1, reason: str = "Ok", message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": status, "observedGeneration": gen, "reason": reason, "message": message}


def gateway(conditions: list[dict[str, Any]], listeners: list[dict[str, Any]] | None = None,
            generation: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": "inference", "namespace": "inference-gateway", "generation": generation},
            "spec": {"listeners": [{"name": "web", "port": 8000}]},
            "status": {"conditions": conditions,
                       "listeners": listeners if listeners is not None else [
                           {"name": "web", "conditions": [cond("Accepted"), cond("Programmed")]}]}}


def route(parents: list[dict[str, Any]], generation: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": "llm", "namespace": "serve", "generation": generation},
            "spec": {}, "status": {"parents": parents}}


def parent(conditions: list[dict[str, Any]], controller: str = CONTROLLER, **ref: Any) -> dict[str, Any]:
    return {"controllerName": controller, "conditions": conditions,
            "parentRef": {"name": "inference", "namespace": "inference-gateway", "sectionName": "web", **ref}}


def test_a_gateway_accepted_and_programmed_for_its_generation_is_ready() -> None:
    assert gateway_problems(gateway([cond("Accepted"), cond("Programmed")]), *PARENT) == []


def test_a_gateway_is_judged_on_every_condition_and_listener() -> None:
    assert gateway_problems(None, *PARENT) == ["Gateway inference-gateway/inference does not exist"]
    [p] = gateway_problems(gateway([cond("Accepted")]), *PARENT)
    assert "has no Programmed condition" in p
    [p] = gateway_problems(gateway([cond("Accepted"), cond("Programmed", "False", reason="Invalid",
                                                                  message="no address")]), *PARENT)
    assert "is not Programmed: Invalid: no address" in p
    # conditions written for generation 1 say nothing about a spec at generation 2
    stale = gateway_problems(gateway([cond("Accepted"), cond("Programmed")], generation=2), *PARENT)
    assert len(stale) == 2 and all("for generation 1, the spec is at 2" in p for p in stale)
    [p] = gateway_problems(gateway([cond("Accepted"), cond("Programmed")], listeners=[]), *PARENT)
    assert "listener web has no status yet" in p
    conflicted = [{"name": "web", "conditions": [cond("Programmed"), cond("Conflicted", reason="PortConflict")]}]
    [p] = gateway_problems(gateway([cond("Accepted"), cond("Programmed")], conflicted), *PARENT)
    assert "Conflicted: PortConflict" in p


def test_a_gateway_class_must_be_this_controllers_and_accepted() -> None:
    gc = {"metadata": {"generation": 3}, "spec": {"controllerName": CONTROLLER},
          "status": {"conditions": [cond("Accepted", gen=3)]}}
    assert gateway_class_problems(gc, "ck8s-inference", CONTROLLER) == []
    assert "names controller 'example.com/other'" in gateway_class_problems(
        {**gc, "spec": {"controllerName": "example.com/other"}}, "ck8s-inference", CONTROLLER)[0]
    assert "for generation 2" in gateway_class_problems(
        {**gc, "status": {"conditions": [cond("Accepted", gen=2)]}}, "ck8s-inference", CONTROLLER)[0]
    assert gateway_class_problems(None, "ck8s-inference", CONTROLLER) == ["GatewayClass ck8s-inference does not exist"]


def test_a_route_is_judged_by_this_controllers_entry_for_this_parent() -> None:
    ok = [cond("Accepted"), cond("ResolvedRefs")]
    assert route_problems(route([parent(ok)]), "HTTPRoute", PARENT, CONTROLLER, "web") == []
    # the route's namespace is the parentRef's when it names none
    assert route_problems(route([parent(ok, namespace=None)]), "HTTPRoute", ("serve", "inference"), CONTROLLER) == []
    for others in ([parent(ok, controller="example.com/other")], [parent(ok, name="another")],
                   [parent(ok, sectionName="websecure")], []):
        [p] = route_problems(route(others), "HTTPRoute", PARENT, CONTROLLER, "web")
        assert "has written no status for this parent yet" in p
    [p] = route_problems(route([parent([cond("Accepted"), cond(
        "ResolvedRefs", "False", reason="BackendNotFound", message="services \"llm-gone\" not found")])]),
        "HTTPRoute", PARENT, CONTROLLER, "web")
    assert p == ('HTTPRoute serve/llm on Gateway inference-gateway/inference is not ResolvedRefs: BackendNotFound: '
                 'services "llm-gone" not found')
    stale = route_problems(route([parent(ok)], generation=4), "HTTPRoute", PARENT, CONTROLLER, "web")
    assert len(stale) == 2 and all("the spec is at 4" in p for p in stale)


def test_a_split_within_tolerance_and_every_way_it_is_not() -> None:
    assert split_problem({"a": 320, "b": 80}, {"a": 80, "b": 20}, 0.05) is None
    assert split_problem({"a": 340, "b": 60}, {"a": 80, "b": 20}, 0.05) is None  # 85/15: on the edge
    off = split_problem({"a": 200, "b": 200}, {"a": 80, "b": 20}, 0.05)
    assert off is not None and "a answered 50.0% of 400 requests, its weight asks 80.0%" in off and "b answered" in off
    stray = split_problem({"a": 300, "b": 80, "c": 20}, {"a": 80, "b": 20}, 0.1)
    assert stray is not None and "c answered 20 of 400 but has no weight in the route" in stray
    assert split_problem({"a": 400}, {"a": 80, "b": 20}, 0.05) is not None  # b never answered
    assert split_problem({}, {"a": 1}, 0.05) == "no request was answered"
    assert "every weight is 0" in str(split_problem({"a": 1}, {"a": 0}, 0.05))


TARGET = Target("ck8s-inference", CONTROLLER, "inference-gateway", "inference")
GC = json.dumps({"metadata": {"generation": 1}, "spec": {"controllerName": CONTROLLER},
                 "status": {"conditions": [cond("Accepted")]}})


def test_the_gate_is_ready_exactly_when_class_and_gateway_are() -> None:
    ready = json.dumps(gateway([cond("Accepted"), cond("Programmed")]))
    assert judge(TARGET, GC, ready).done
    waiting = judge(TARGET, GC, json.dumps(gateway([cond("Accepted"), cond("Programmed", "False", reason="Pending")])))
    assert not waiting.done and "not Programmed: Pending" in waiting.detail


def test_the_gate_tells_a_missing_object_from_a_missing_api() -> None:
    missing = judge(TARGET, GC, ApiFailure(404, 'gateways.gateway.networking.k8s.io "inference" not found'))
    assert not missing.done and "Gateway inference-gateway/inference does not exist" in missing.detail
    no_api = judge(TARGET, ApiFailure(404, NOT_SERVED), ApiFailure(404, NOT_SERVED))
    assert not no_api.done and "its CRDs are missing" in no_api.detail
    denied = judge(TARGET, ApiFailure(403, "forbidden"), GC)
    assert not denied.done and denied.permanent


def crd(name: str, version: str | None = "v1.6.1") -> dict[str, Any]:
    annotations = {"gateway.networking.k8s.io/bundle-version": version} if version else {}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name, "annotations": annotations}}


BUNDLE = ("gateway.networking.k8s.io/bundle-version", "v1.6.1")
VAP = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
       "metadata": {"name": "safe-upgrades.gateway.networking.k8s.io"}}


def test_a_release_manifest_holds_crds_and_their_upgrade_policy_only() -> None:
    text = yaml.safe_dump_all([crd("gateways.gateway.networking.k8s.io"), None, VAP,
                               {**VAP, "kind": "ValidatingAdmissionPolicyBinding"}])
    crds, policies = manifest_objects(text, BUNDLE)
    assert [c["metadata"]["name"] for c in crds] == ["gateways.gateway.networking.k8s.io"]
    assert [p["kind"] for p in policies] == ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"]


@pytest.mark.parametrize(("docs", "named"), [
    ([crd("a.x"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gateway-system"}}],
     "document 2 (Namespace gateway-system) is neither"),
    ([crd("a.x", "v1.4.1")], "CRD a.x: gateway.networking.k8s.io/bundle-version is 'v1.4.1', expected 'v1.6.1'"),
    ([crd("a.x", None)], "is None, expected 'v1.6.1'"),
    ([VAP], "no CustomResourceDefinition in it"),
    (["just a string"], "document 1 is not an object"),
])
def test_a_manifest_of_anything_else_is_refused_whole(docs: list[Any], named: str) -> None:
    with pytest.raises(CrdError) as e:
        manifest_objects(yaml.safe_dump_all(docs), BUNDLE)
    assert named in str(e.value)

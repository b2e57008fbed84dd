"""cluster_autoscaling on a fake API and a fake clock (components/conformance/autoscaling.py): a
GPU pod pending brings a NodeClaim, a Node, and runs there; gone, its node goes. Each hop that does
not come fails the procedure, naming the hop and what Karpenter said."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from components.conformance import autoscaling as au
from components.conformance.common import Context
from components.conformance.evidence import Result
from components.facts.autoscaling import NODEPOOL_LABEL
from components.smoke.gateway import Answer
from components.tables.labels import POOL_TAG

KARPENTER = "/apis/karpenter.sh/v1"


def nodepool(name: str, itype: str, *, consolidate_after: str = "10s", limit: str = "3") -> dict[str, Any]:
    """The shape components/facts/autoscaling.py renders."""
    return {"metadata": {"name": name}, "spec": {
        "template": {"metadata": {"labels": {POOL_TAG: name}}, "spec": {
            "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [itype]},
                             {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}},
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": consolidate_after,
                       "budgets": [{"nodes": "1"}]},
        "limits": {"nodes": limit}}}


@dataclass
class World:
    """Karpenter and the scheduler as the clock sees them: each hop at its time after the pod's
    creation (None: never), the node leaving `leaves` seconds after the pod's deletion."""

    nodepools: list[dict[str, Any]] = field(default_factory=lambda: [nodepool("h100", "p5.48xlarge"),
                                                                     nodepool("l4", "g6.xlarge")])
    claim_at: float | None = 3.0
    node_at: float | None = 6.0
    running_at: float | None = 8.0
    leaves: float | None = 12.0
    events: list[dict[str, Any]] = field(default_factory=list)
    existing: list[dict[str, Any]] = field(default_factory=list)  # nodes the pools had before
    now: float = 0.0
    created: float | None = None
    deleted: float | None = None
    objects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    made: list[dict[str, Any]] = field(default_factory=list)

    # --- the clock (monkeypatched over the module's `time`) ---
    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    # --- what exists at `now` ---
    def since(self, at: float | None) -> bool:
        return self.created is not None and at is not None and self.now - self.created >= at

    def gone(self) -> bool:
        return self.deleted is not None and self.leaves is not None and self.now - self.deleted >= self.leaves

    def claim(self) -> dict[str, Any] | None:
        if not self.since(self.claim_at) or self.gone():
            return None
        registered = self.since(self.node_at)
        return {"metadata": {"name": "l4-abcde", "labels": {NODEPOOL_LABEL: "l4",
                                                            "node.kubernetes.io/instance-type": "g6.xlarge"}},
                "status": {"providerID": "kwok://l4-xyz", **({"nodeName": "l4-xyz"} if registered else {}),
                           "conditions": [{"type": "Launched", "status": "True"},
                                          {"type": "Registered", "status": "True" if registered else "Unknown",
                                           "message": "" if registered else "Node not registered with cluster"}]}}

    def node(self) -> dict[str, Any] | None:
        if not self.since(self.node_at) or self.gone():
            return None
        return {"metadata": {"name": "l4-xyz", "labels": {NODEPOOL_LABEL: "l4"}},
                "spec": {"providerID": "kwok://l4-xyz"}}

    def pod(self) -> dict[str, Any] | None:
        if self.created is None or self.deleted is not None:
            return None
        if self.since(self.running_at) and self.node() is not None:
            return {**self.objects[("Pod", au.NAME)], "spec": {"nodeName": "l4-xyz"},
                    "status": {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}}
        return {**self.objects[("Pod", au.NAME)], "status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/0 nodes are available"}]}}

    # --- the Gateway ---
    def request(self, method: str, api_path: str, **_: Any) -> Answer:
        docs: dict[str, Any] = {}
        if self.nodepools is not None:
            docs[KARPENTER] = {"resources": [{"kind": "NodePool"}, {"kind": "NodeClaim"}]}
            docs[f"{KARPENTER}/nodepools"] = {"items": self.nodepools}
            for np in self.nodepools:
                docs[f"{KARPENTER}/nodepools/{np['metadata']['name']}"] = np
            claim = self.claim()
            docs[f"{KARPENTER}/nodeclaims"] = {"items": [claim] if claim else []}
            if claim:
                docs[f"{KARPENTER}/nodeclaims/{claim['metadata']['name']}"] = claim
        if api_path in docs:
            return Answer(200, json.dumps(docs[api_path]))
        return Answer(404, '{"kind": "Status", "apiVersion": "v1", "message": "not found"}', "not found")

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, label_selector: str = "",
             field_selector: str = "") -> tuple[list[dict[str, Any]], str]:
        if kind == "Node":
            node = self.node()
            return self.existing + ([node] if node else []), "1"
        if kind == "Event":
            name = field_selector.rsplit("involvedObject.name=", 1)[-1]
            return [e for e in self.events if e["involvedObject"]["name"] == name], "1"
        return [], "1"

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.objects[(obj["kind"], obj["metadata"]["name"])] = obj
        self.made.append(obj)
        if obj["kind"] == "Pod":
            self.created = self.now
            return {**obj, "metadata": {**obj["metadata"], "creationTimestamp": "2026-01-01T00:10:00Z"}}
        return obj

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        if kind == "Pod":
            return self.pod()
        if kind == "Node":
            return next((n for n in [*self.existing, self.node() or {"metadata": {"name": ""}}]
                         if n["metadata"]["name"] == name), None)
        return self.objects.get((kind, name))

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, **_: Any) -> bool:
        if kind == "Pod" and self.deleted is None:
            self.deleted = self.now
        return self.objects.pop((kind, name), None) is not None


def run(world: World, monkeypatch: pytest.MonkeyPatch, timeout: float = 60.0) -> Result:
    monkeypatch.setattr(au, "time", world)
    ctx = Context(world, "probe:1", "conf", timeout, lambda _m: None)  # type: ignore[arg-type]
    return au.cluster_autoscaling(ctx)


def karpenter_event(name: str, reason: str, message: str, at: str = "2026-01-01T00:10:01Z") -> dict[str, Any]:
    return {"involvedObject": {"name": name}, "source": {"component": "karpenter"}, "reason": reason,
            "message": message, "lastTimestamp": at}


def test_no_nodepool_is_no_autoscaler(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World(nodepools=[])
    r = run(world, monkeypatch)
    assert (r.id, r.status, r.outcome) == ("cluster_autoscaling", "Not Implemented", "skipped")
    assert "nodePools[].autoscaling" in r.notes and world.created is None
    world = World()
    world.nodepools = None  # type: ignore[assignment]  # the API is not served at all
    assert run(world, monkeypatch).notes == au.NO_AUTOSCALER


def test_scale_up_and_down_seen_is_implemented(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World()
    r = run(world, monkeypatch)
    assert (r.status, r.outcome) == ("Implemented", "passed"), r.notes
    # the pool with one GPU a node (g6.xlarge) is the cheaper proof than p5's eight
    assert r.notes == ("a pending pod claiming one NVIDIA L4 GPU scaled NodePool l4 from 0 to 1 nodes in 8 s, "
                       "and back in 12 s")
    pod = world.objects.get(("Pod", au.NAME)) or {}
    assert pod == {}  # deleted by the procedure for the scale-down
    log = "\n".join(r.log)
    for hop in ("Pending, unschedulable: 0/0 nodes", "NodeClaim l4-abcde created", "Node l4-xyz registered",
                "pod scheduled on l4-xyz", "pod Running", "Node l4-xyz gone"):
        assert hop in log, log


def test_the_probe_pod_selects_the_pool_tolerates_its_taint_and_claims_its_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World()
    run(world, monkeypatch)
    template, pod = world.made
    request = template["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert request["deviceClassName"] == "gpu.nvidia.com" and request["count"] == 1
    assert "productName == 'NVIDIA L4'" in request["selectors"][0]["cel"]["expression"]
    assert pod["spec"]["nodeSelector"] == {NODEPOOL_LABEL: "l4"}
    assert pod["spec"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": au.NAME}]


def test_a_pool_with_a_node_already_asks_for_a_new_one(monkeypatch: pytest.MonkeyPatch) -> None:
    old = {"metadata": {"name": "l4-old", "labels": {NODEPOOL_LABEL: "l4", "kubernetes.io/hostname": "ip-10-0-0-1"}}}
    world = World(nodepools=[nodepool("l4", "g6.xlarge")], existing=[old])
    r = run(world, monkeypatch)
    assert r.notes.startswith("a pending pod claiming one NVIDIA L4 GPU scaled NodePool l4 from 1 to 2 nodes"), r.notes
    affinity = world.made[1]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert affinity["nodeSelectorTerms"] == [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["ip-10-0-0-1"]}]}]


def test_no_node_claim_ever_fails_naming_it_and_karpenters_word(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World(claim_at=None, node_at=None, running_at=None)
    r = run(world, monkeypatch, timeout=30)
    assert (r.status, r.outcome) == ("Not Implemented", "failed")
    assert "no NodeClaim for NodePool l4 within 30s" in r.notes
    assert "0/0 nodes are available" in r.notes  # the scheduler's reason
    assert "Karpenter said nothing" in r.notes
    limits = "Failed to schedule pod, all available instance types exceed limits for nodepool"
    world = World(claim_at=None, node_at=None, running_at=None,
                  events=[karpenter_event(au.NAME, "FailedScheduling", limits)])
    r = run(world, monkeypatch, timeout=30)
    assert "FailedScheduling: Failed to schedule pod, all available instance types exceed limits" in r.notes


def test_karpenters_word_is_this_runs_and_leaves_out_conditions_becoming_true(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World(claim_at=None, node_at=None, running_at=None, events=[
        karpenter_event("l4", "NoCompatibleInstanceTypes", "an hour ago", at="2026-01-01T00:00:00Z"),
        karpenter_event("l4", "Ready", "Status condition transitioned, Type: Ready, Status: Unknown -> True"),
        karpenter_event("l4", "NodeRegistrationHealthy",
                        "Status condition transitioned, Type: NodeRegistrationHealthy, Status: True -> False"),
        {**karpenter_event(au.NAME, "FailedScheduling", "the scheduler's"), "source": {"component": "scheduler"}}])
    r = run(world, monkeypatch, timeout=30)
    assert r.notes.endswith("Karpenter: NodeRegistrationHealthy: Status condition transitioned, "
                            "Type: NodeRegistrationHealthy, Status: True -> False"), r.notes


def test_a_claim_that_never_registers_names_its_conditions(monkeypatch: pytest.MonkeyPatch) -> None:
    r = run(World(node_at=None, running_at=None), monkeypatch, timeout=30)
    assert r.outcome == "failed"
    assert "NodeClaim(s) of NodePool l4 brought no Node" in r.notes
    assert "l4-abcde: Launched=True, Registered=Unknown (Node not registered with cluster)" in r.notes


def test_a_node_that_never_leaves_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World(leaves=None)
    r = run(world, monkeypatch, timeout=30)
    assert (r.status, r.outcome) == ("Not Implemented", "failed")
    assert "scaled NodePool l4 from 0 to 1 nodes" in r.notes
    assert "scale-down did not happen: NodeClaim l4-abcde" in r.notes and "Node l4-xyz still there 40s" in r.notes
    assert "consolidateAfter 10s" in r.notes and world.now - (world.deleted or 0) >= 40  # 10 s + the timeout


def test_a_long_consolidate_after_is_partially_implemented_without_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World(nodepools=[nodepool("l4", "g6.xlarge", consolidate_after="15m")])
    r = run(world, monkeypatch, timeout=60)
    assert (r.status, r.outcome) == ("Partially Implemented", "passed")
    assert "left to the pool's consolidateAfter 15m and was not observed" in r.notes
    assert world.deleted is not None and world.now - world.deleted < 1  # deleted, not waited for
    world = World(nodepools=[nodepool("l4", "g6.xlarge", consolidate_after="Never")])
    assert "Never" in run(world, monkeypatch).notes


def test_durations_as_the_crd_admits_them() -> None:
    assert au.duration_seconds("10s") == 10 and au.duration_seconds("1h30m") == 5400
    assert au.duration_seconds("Never") is None and au.duration_seconds("") == 0

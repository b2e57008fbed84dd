"""Smoke runs under a KAI-like binder (tests/unit/smoke/fake_cluster.py, kai_binder): issue 26,
defects 4 and 5. KAI allocates claims without the delete-protection finalizer, so the claim
controller never frees a named claim and rewrites it in a loop, and re-points a finished pod at a
new, never-allocated claim. The run must still pass, free what it allocated, and stop the loop."""

from __future__ import annotations

import pytest

from components.smoke.expectations import RUN_LABEL
from components.smoke.run import Runner
from tests.unit.smoke import settings_fixtures as sf
from tests.unit.smoke.fake_cluster import FakeCluster
from tests.unit.smoke.test_run import deploy, message, smoke, statuses


def kai_plan(**smoke_keys: object) -> object:
    return sf.plan(sf.AWS, scheduler="kai", queue="smoke-test", **smoke_keys)


def test_a_claim_recreated_after_the_pod_finished_does_not_fail_the_run() -> None:
    cluster = FakeCluster(gpus_per_node=4, kai_binder=True)
    plan = kai_plan()
    deploy(cluster, plan)
    report, _ = smoke(cluster, plan)
    assert report["results"]["summary"]["failed"] == 0, {t["name"]: t["message"] for t in report["results"]["tests"]}
    # The controller did re-point the finished pods: their status names claims that never held a GPU.
    pods = cluster.of("Pod", plan.namespace)
    repointed = [p for p in pods if p["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
                 in {c["metadata"]["name"] for c in cluster.of("ResourceClaim", plan.namespace)}]
    assert len(repointed) == len(pods) > 0
    assert message(report, "claims-allocated").startswith("allocated: ")


def test_the_named_claim_is_freed_and_the_rewrite_loop_stops() -> None:
    cluster = FakeCluster(gpus_per_node=4, kai_binder=True)
    plan = kai_plan(sharedNamedClaim=True)
    deploy(cluster, plan)
    report, seen = smoke(cluster, plan)
    assert statuses(report)["case-named-claim"] == "passed"
    assert statuses(report)["claims-released"] == "passed", message(report, "claims-released")
    named = [c for c in cluster.of("ResourceClaim", plan.namespace) if c["metadata"].get("labels", {}).get(RUN_LABEL)
             and c["metadata"]["labels"].get("ck8s-gpu.io/smoke-case") == "shared-named"]
    assert len(named) == 1 and not named[0].get("status", {}).get("allocation")
    writes = cluster.claim_writes
    assert writes > 0  # the loop ran while the claim was allocated
    for _ in range(5):
        cluster.list("v1", "Pod", plan.namespace)  # controller ticks
    assert cluster.claim_writes == writes, "the claim controller still rewrites the claim"
    assert any("released" in p.message for p in seen if p.hop == "shared-named")


def test_a_claim_left_allocated_fails_claims_released(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the release (what the runner did before issue 26), KAI's claim keeps its GPU."""
    cluster = FakeCluster(gpus_per_node=4, kai_binder=True)
    plan = kai_plan(sharedNamedClaim=True)
    deploy(cluster, plan)
    monkeypatch.setattr(Runner, "release_named_claim", lambda self, case: None)
    report, _ = smoke(cluster, plan)
    assert statuses(report)["claims-released"] == "failed"
    assert "still holds" in message(report, "claims-released")


def test_a_claim_kube_scheduler_protects_is_left_to_the_claim_controller() -> None:
    """With the delete-protection finalizer the controller frees the claim; the runner only waits."""
    cluster = FakeCluster(gpus_per_node=4)
    plan = sf.plan(sf.AWS, sharedNamedClaim=True)
    deploy(cluster, plan)
    report, seen = smoke(cluster, plan)
    assert statuses(report)["claims-released"] == "passed"
    assert not [c for c in cluster.calls if c.endswith("/status")], "the runner wrote a claim's status"
    assert any(p.message.endswith("released") for p in seen if p.hop == "shared-named")


def test_a_pod_re_pointed_before_the_runner_saw_it_is_judged_by_the_claim_it_owned() -> None:
    """What real KAI does on KWOK nodes (docs/compatibility.md): the pod finishes within a poll,
    its claim is deleted, a new one made and the status re-pointed before the runner ever lists
    it. The allocated claim the pod owned (ownerReference + pod-claim-name) is the one it ran with."""
    from components.smoke.verifier import verify
    from tests.unit.smoke import fixtures as fx

    w = fx.real_world()
    for pod in w.snap.pods:
        fresh = f"{pod['metadata']['name']}-new"  # never allocated
        pod["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": fresh}]
    w.snap.pod_claims = {}
    results = {r.name: r for r in verify(w.exp, w.snap)}
    assert results["claims-allocated"].status == "passed", results["claims-allocated"].message

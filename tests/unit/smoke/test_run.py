"""The runner against an in-memory cluster: real chart objects, real verifier, faked controllers."""

from __future__ import annotations

from typing import Any

import pytest

from components.kube.charts import render
from components.smoke.gateway import KubeError
from components.smoke.plan import SmokePlan
from components.smoke.run import Progress, Ref, RunSpec, cleanup, fresh_job, install, is_pristine, run_smoke
from tests.unit.smoke import settings_fixtures as sf
from tests.unit.smoke.fake_cluster import FakeClock, FakeCluster


def deploy(cluster: FakeCluster, plan: SmokePlan) -> list[Ref]:
    created: list[Ref] = []
    objs = render("gpu-smoke-test", plan.values, release=plan.release, namespace=plan.namespace)
    install(cluster, objs, plan.namespace, created)
    return created


def smoke(cluster: FakeCluster, plan: SmokePlan, **kw: Any) -> tuple[dict[str, Any], list[Progress]]:
    seen: list[Progress] = []
    outcome = run_smoke(cluster, RunSpec.from_dict(plan.spec()), progress=seen.append, clock=FakeClock(cluster),
                        poll_seconds=1.0, **kw)
    assert outcome.passed == (outcome.report["results"]["summary"]["failed"] == 0)
    return outcome.report, seen


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {t["name"]: t["status"] for t in report["results"]["tests"]}


def message(report: dict[str, Any], check: str) -> str:
    return next(t["message"] for t in report["results"]["tests"] if t["name"] == check)


def test_healthy_cluster_passes_and_claims_are_kept_after_deletion() -> None:
    cluster = FakeCluster(gpus_per_node=4)
    plan = sf.plan(sf.AWS)
    deploy(cluster, plan)
    report, seen = smoke(cluster, plan)
    assert report["results"]["summary"]["failed"] == 0, {t["name"]: t["message"] for t in report["results"]["tests"]}
    # The generated claims are gone from the cluster; the report still proves their allocation.
    assert cluster.of("ResourceClaim", plan.namespace) == []
    assert message(report, "claims-allocated").startswith("allocated: ")
    assert [p["state"] for p in report["results"]["extra"]["phases"]] == ["Complete"]
    hops = [p.hop for p in seen]
    assert hops.index("slices") < hops.index("gpus") < hops.index("collect") < hops.index("verify")
    assert any(p.message == "barrier released" for p in seen)
    assert "diagnostics" not in report["results"]["extra"]


def test_every_case_runs_in_order() -> None:
    cluster = FakeCluster(gpus_per_node=4)
    plan = sf.plan(sf.AWS, sharedClaim=True, gang=True)
    deploy(cluster, plan)
    report, _ = smoke(cluster, plan)
    assert [p["case"] for p in report["results"]["extra"]["phases"]] == ["gpus", "shared", "gang"]
    # The fake has no KAI podgrouper and no PodGroup status: the gang check still sees one group.
    assert statuses(report)["case-shared-claim"] == "passed", message(report, "case-shared-claim")


def test_kwok_nodes_skip_container_checks() -> None:
    cluster = FakeCluster(gpus_per_node=4, kubelet=False)
    plan = sf.plan(sf.LOCAL)
    deploy(cluster, plan)
    report, _ = smoke(cluster, plan)
    assert statuses(report)["container-device"] == "skipped"
    assert message(report, "container-device") == "no kubelet on simulated nodes"
    # No barrier without containers: the watched claim history shows the GPUs never overlapped.
    assert message(report, "distinct-gpus") == "2 allocations, no device shared (per the claim history)"
    assert report["results"]["summary"]["failed"] == 0, {t["name"]: t["message"] for t in report["results"]["tests"]}


def test_no_free_gpu_times_out_names_the_hop_and_releases_the_job() -> None:
    cluster = FakeCluster(gpus_per_node=4, schedulable=False)
    plan = sf.plan(sf.AWS, timeoutSeconds=120)
    deploy(cluster, plan)
    report, seen = smoke(cluster, plan)
    st = statuses(report)
    assert st["claims-allocated"] == "failed"
    assert "was never allocated: 0/2 nodes are available: 2 cannot allocate all claims." in message(
        report, "claims-allocated")
    assert report["results"]["extra"]["phases"][0]["state"] == "timeout"
    job = cluster.of("Job", plan.namespace)[0]
    assert job["spec"]["suspend"] is True  # settled: its pending pods give nothing back to hold
    assert any(p.hop == "timeout" for p in seen)
    diag = report["results"]["extra"]["diagnostics"]
    assert any(e["reason"] == "FailedScheduling" for e in diag["events"])
    assert {p["phase"] for p in diag["pods"]} == {"Pending"}


def test_container_seeing_another_gpu_fails_the_run() -> None:
    cluster = FakeCluster(gpus_per_node=4, wrong_uuid=True)
    plan = sf.plan(sf.AWS)
    deploy(cluster, plan)
    report, _ = smoke(cluster, plan)
    assert statuses(report)["container-device"] == "failed"
    assert "saw GPU-00000000-1111-2222-3333-444444444444, but its claim was allocated" in message(
        report, "container-device")


def test_failing_containers_fail_the_job_check() -> None:
    cluster = FakeCluster(gpus_per_node=4, fail_pods=True)
    plan = sf.plan(sf.AWS)
    deploy(cluster, plan)
    report, _ = smoke(cluster, plan)
    assert "failed (BackoffLimitExceeded" in message(report, "jobs-complete")


def test_rerun_with_the_same_run_id_recreates_the_job() -> None:
    """A failed `pulumi up` is retried with unchanged inputs: the Job already ran once."""
    cluster = FakeCluster(gpus_per_node=4)
    plan = sf.plan(sf.AWS)
    deploy(cluster, plan)
    first, _ = smoke(cluster, plan)
    old_uid_rv = cluster.of("Job", plan.namespace)[0]["metadata"]["resourceVersion"]
    second, seen = smoke(cluster, plan)
    assert second["results"]["summary"]["failed"] == 0
    assert any("re-creating Job" in p.message for p in seen)
    assert cluster.of("Job", plan.namespace)[0]["metadata"]["resourceVersion"] != old_uid_rv
    assert first["results"]["extra"]["runId"] == second["results"]["extra"]["runId"]


def test_missing_job_is_reported_not_crashed() -> None:
    cluster = FakeCluster(gpus_per_node=4)
    plan = sf.plan(sf.AWS)
    report, _ = smoke(cluster, plan)  # nothing installed
    assert message(report, "jobs-complete") == f"Job {plan.expectations.cases[0].job} does not exist"


def test_fresh_job_drops_server_fields_and_suspends() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "n", "uid": "u", "resourceVersion": "9", "labels": {"a": "b"},
                        "annotations": {"meta.helm.sh/release-name": "gpu-smoke-test"}, "managedFields": []},
           "spec": {"suspend": False, "manualSelector": False, "selector": {"matchLabels": {"controller-uid": "u"}},
                    "template": {"metadata": {"labels": {"controller-uid": "u", "job-name": "j", "keep": "me",
                                                         "batch.kubernetes.io/controller-uid": "u",
                                                         "batch.kubernetes.io/job-name": "j"}},
                                 "spec": {"containers": []}}},
           "status": {"startTime": "t", "succeeded": 1}}
    fresh = fresh_job(job)
    assert fresh["metadata"] == {"name": "j", "namespace": "n", "labels": {"a": "b"},
                                 "annotations": {"meta.helm.sh/release-name": "gpu-smoke-test"}}
    assert fresh["spec"]["suspend"] is True and "selector" not in fresh["spec"] and "status" not in fresh
    assert fresh["spec"]["template"]["metadata"]["labels"] == {"keep": "me"}
    assert is_pristine(fresh) and not is_pristine(job)
    # The Job controller marks a created-suspended Job with a Suspended condition: still pristine.
    created = {**fresh, "status": {"conditions": [{"type": "Suspended", "status": "True"}]}}
    assert is_pristine(created)
    timed_out = {**fresh, "status": {"failed": 2, "conditions": [{"type": "Suspended", "status": "True"}]}}
    assert not is_pristine(timed_out)


def test_install_orders_objects_and_cleanup_removes_them_newest_first() -> None:
    cluster = FakeCluster(gpus_per_node=4)
    plan = sf.plan(sf.AWS, gang=True)
    created = deploy(cluster, plan)
    kinds = [r.kind for r in created]
    assert kinds[0] == "Namespace" and kinds.index("ConfigMap") < kinds.index("ResourceClaimTemplate") \
        < kinds.index("PodGroup") < kinds.index("Job")
    assert cluster.of("Namespace")[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    deletes_before = len([c for c in cluster.calls if c.startswith("delete")])
    assert cleanup(cluster, created) == []
    deleted = [c.split(" ", 1)[1] for c in cluster.calls if c.startswith("delete")][deletes_before:]
    assert deleted[-1] == f"Namespace/{plan.namespace}" and deleted[0].startswith("Job/")
    assert created == [] and cluster.of("Job") == []


def test_cleanup_keeps_going_after_a_failed_delete() -> None:
    class Flaky(FakeCluster):
        def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
                   propagation: str = "Background") -> bool:
            if kind == "ConfigMap":
                raise KubeError(403, "configmaps is forbidden")
            return super().delete(api_version, kind, name, namespace, propagation=propagation)

    cluster = Flaky(gpus_per_node=4)
    plan = sf.plan(sf.AWS)
    created = deploy(cluster, plan)
    left = cleanup(cluster, created)
    assert len(left) == 1 and left[0].startswith("ConfigMap/") and "403: configmaps is forbidden" in left[0]
    assert cluster.of("Job") == [] and cluster.of("ResourceClaimTemplate") == []


def test_existing_namespace_is_not_created_or_deleted() -> None:
    cluster = FakeCluster(gpus_per_node=4)
    plan = sf.plan(sf.AWS)
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": plan.namespace}})
    created = deploy(cluster, plan)
    assert "Namespace" not in [r.kind for r in created]
    cleanup(cluster, created)
    assert cluster.of("Namespace") != []


@pytest.mark.parametrize("gpus_per_node", [4])
def test_slices_wait_reports_progress(gpus_per_node: int) -> None:
    cluster = FakeCluster(gpus_per_node=gpus_per_node)
    plan = sf.plan(sf.AWS)
    deploy(cluster, plan)
    _, seen = smoke(cluster, plan)
    assert any(p.hop == "slices" and p.message == "2/2 GPU node(s) publish gpu.nvidia.com slices" for p in seen)


def test_install_waits_for_a_terminating_namespace_of_an_earlier_run() -> None:
    class Terminating(FakeCluster):
        gets = 0

        def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Any:
            if kind == "Namespace":
                self.gets += 1
                if self.gets <= 3:  # still finalizing for three looks
                    return {"metadata": {"name": name}, "status": {"phase": "Terminating"}}
            return super().get(api_version, kind, name, namespace)

    cluster = Terminating(gpus_per_node=4)
    plan = sf.plan(sf.AWS)
    clock = FakeClock()
    said: list[str] = []
    objs = render("gpu-smoke-test", plan.values, release=plan.release, namespace=plan.namespace)
    created: list[Ref] = []
    install(cluster, objs, plan.namespace, created, said.append, clock=clock)
    assert said[0] == f"waiting for namespace {plan.namespace} to finish terminating"
    assert clock.slept == 3.0 and created[0].kind == "Namespace"

    stuck = Terminating(gpus_per_node=4)
    stuck.gets = -10_000
    with pytest.raises(KubeError, match="still terminating after 5s"):
        install(stuck, objs, plan.namespace, [], clock=FakeClock(), terminating_wait=5)


def test_the_named_claim_case_runs_both_pods_on_one_allocation() -> None:
    """The chart's ResourceClaim object is created before the Jobs (a pod naming a missing claim stays
    Pending), both pods hold it through the barrier, and it outlives them, released."""
    cluster = FakeCluster(gpus_per_node=4)
    plan = sf.plan(sf.AWS_MPS)
    created = deploy(cluster, plan)
    kinds = [r.kind for r in created]
    assert kinds.index("ResourceClaim") < kinds.index("Job")
    report, _ = smoke(cluster, plan)
    assert statuses(report)["case-named-claim"] == "passed", message(report, "case-named-claim")
    assert message(report, "case-named-claim").startswith(
        f"claim gpu-smoke-test-shared-named-{plan.run_id} on ip-10-0-1-17.eu-north-1.compute.internal/gpu-0")
    # The allocation carries the GpuConfig, but the fake runs no MPS daemon: no pipe in the containers.
    assert statuses(report)["gpu-sharing"] == "failed"
    assert "got no MPS pipe directory (CUDA_MPS_PIPE_DIRECTORY unset)" in message(report, "gpu-sharing")
    [claim] = cluster.of("ResourceClaim", plan.namespace)
    assert claim["status"] == {}  # released by both pods, deallocated
    assert cleanup(cluster, created) == [] and cluster.of("ResourceClaim") == []


def test_time_slicing_on_both_shared_cases_passes_every_hop() -> None:
    cluster = FakeCluster(gpus_per_node=4)
    plan = sf.plan(sf.AWS, sharedClaim=True, sharedNamedClaim=True, sharing="timeSlicing")
    deploy(cluster, plan)
    report, _ = smoke(cluster, plan)
    assert report["results"]["summary"]["failed"] == 0, {t["name"]: t["message"] for t in report["results"]["tests"]}
    assert [p["case"] for p in report["results"]["extra"]["phases"]] == ["gpus", "shared", "shared-named"]
    assert message(report, "gpu-sharing") == "2 claim(s) carry the GpuConfig (TimeSlicing)"


def test_the_named_claim_case_on_kwok_nodes_passes_without_overlap() -> None:
    cluster = FakeCluster(gpus_per_node=4, kubelet=False)
    plan = sf.plan(sf.LOCAL, sharedNamedClaim=True)
    deploy(cluster, plan)
    report, _ = smoke(cluster, plan)
    assert report["results"]["summary"]["failed"] == 0, {t["name"]: t["message"] for t in report["results"]["tests"]}
    assert message(report, "case-named-claim").endswith("pods' view not checked: no kubelet on simulated nodes")


# --- a hop after scheduling that never succeeds ends the run after stuckSeconds ------------------


@pytest.mark.parametrize(("fault", "hop"), [
    ({"prepare_error": "prepare dynamic resources: DRA driver gpu.nvidia.com is not registered"},
     "claim prepare (kubelet -> DRA kubelet plugin NodePrepareResources): prepare dynamic resources: DRA driver "
     "gpu.nvidia.com is not registered"),
    ({"waiting": ("ErrImagePull", "failed to resolve image")},
     "image pull: container probe ErrImagePull: failed to resolve image"),
    ({"waiting": ("CreateContainerError", "CDI device injection failed: unresolvable CDI devices")},
     "container create (runtime, CDI devices): container probe CreateContainerError: CDI device injection failed"),
])
def test_a_pod_stuck_at_a_failing_hop_ends_the_run_naming_the_hop(fault: dict[str, Any], hop: str) -> None:
    cluster = FakeCluster(gpus_per_node=4, **fault)
    plan = sf.plan(sf.AWS, stuckSeconds=30, timeoutSeconds=900)
    deploy(cluster, plan)
    clock = FakeClock(cluster)
    t0 = clock.monotonic()
    outcome = run_smoke(cluster, RunSpec.from_dict(plan.spec()), clock=clock, poll_seconds=1.0)
    report = outcome.report
    assert not outcome.passed
    assert statuses(report)["pods-started"] == "failed"
    assert hop in message(report, "pods-started"), message(report, "pods-started")
    assert [p["state"] for p in report["results"]["extra"]["phases"]] == ["stuck"]
    # Given up after stuckSeconds, not after the 900 s budget.
    assert clock.monotonic() - t0 < 60, clock.monotonic() - t0


def test_without_a_failing_hop_the_run_waits_out_its_budget() -> None:
    """Pods that simply have not started yet (no failure reported) are not stuck."""
    cluster = FakeCluster(gpus_per_node=4, schedulable=False)
    plan = sf.plan(sf.AWS, stuckSeconds=5, timeoutSeconds=60)
    deploy(cluster, plan)
    clock = FakeClock(cluster)
    t0 = clock.monotonic()
    outcome = run_smoke(cluster, RunSpec.from_dict(plan.spec()), clock=clock, poll_seconds=1.0)
    assert [p["state"] for p in outcome.report["results"]["extra"]["phases"]] == ["timeout"]
    assert clock.monotonic() - t0 >= 60


def test_a_spec_recorded_before_stuck_seconds_existed_reads_the_default() -> None:
    spec = sf.plan(sf.AWS).spec()
    spec.pop("stuckSeconds")
    assert RunSpec.from_dict(spec).stuck_seconds == 120


class PausesClock(FakeClock):
    """FakeClock that keeps each pause."""

    def __init__(self, cluster: FakeCluster) -> None:
        super().__init__(cluster)
        self.pauses: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        super().sleep(seconds)


def test_a_wait_looks_again_soon_then_backs_off_to_the_poll() -> None:
    """A hop that settles in a moment is seen in a moment; one that takes long is asked no more often
    than every `poll_seconds` (here a Job whose pods never start, for the run's whole 60 s)."""
    cluster = FakeCluster(gpus_per_node=4, schedulable=False)
    plan = sf.plan(sf.AWS, stuckSeconds=5, timeoutSeconds=60)
    deploy(cluster, plan)
    clock = PausesClock(cluster)
    run_smoke(cluster, RunSpec.from_dict(plan.spec()), clock=clock, poll_seconds=2.0)
    assert clock.pauses[:5] == [0.25, 0.5, 1.0, 2.0, 2.0], clock.pauses[:5]
    assert max(clock.pauses) == 2.0
    waited = [p for p in clock.pauses if p >= 0.25]  # the claim-release loops pause 0.2 s apiece
    assert len(waited) <= 60 / 2 + 4, len(waited)


def test_the_first_look_is_never_later_than_a_short_poll() -> None:
    cluster = FakeCluster(gpus_per_node=4, schedulable=False)
    plan = sf.plan(sf.AWS, stuckSeconds=5, timeoutSeconds=60)
    deploy(cluster, plan)
    clock = PausesClock(cluster)
    run_smoke(cluster, RunSpec.from_dict(plan.spec()), clock=clock, poll_seconds=0.1)
    assert set(clock.pauses) == {0.1}

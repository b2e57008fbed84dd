"""Track upgrades and node replacement, end to end, against the stateful k8s-snap fake.

The cluster is built by the real node script (3 control planes, 2 GPU workers on 1.34); the
executor runs every command on a simulated instance as SSM would; the fake records what must
never happen (etcd quorum lost, version skew, an undrained in-place kubelet upgrade, a skipped
minor) and carries k8sd's own Upgrade resource. Each test asserts the cluster's end state.

The operator here holds no snap pin: it refreshes along the channel, the upgrade of an unpinned
stack. So the clusters are the committed stacks on the store path (cluster_sim.from_the_store:
no `kubernetes.snap`, nothing preloaded), their nodes at the channel's head. A pinned stack's
upgrade (`--revision`, the pin from the stack) is test_k8s_snap_fake_day2's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from components.settings.model import UpgradeSettings
from components.upgrade.executor import Operator, Result, UpgradeStopped
from tests.fakes.k8s_snap import workloads, world
from tests.unit.upgrade.fleet_ops import Booted, BootOnce, FleetRunner, WorldClock, boot

# Boots the cluster with the real node scripts in bash against the k8s-snap fake, then rolls it:
# seconds per case (the `slow` tier; `make check` leaves it out, `make test` and CI run it).
pytestmark = pytest.mark.slow

TARGET = "1.35-classic"
V135 = "v1.35.7"


@pytest.fixture(scope="session")
def booted_once(tmp_path_factory: pytest.TempPathFactory) -> BootOnce:
    return BootOnce(tmp_path_factory.mktemp("booted"))


@pytest.fixture
def cluster(booted_once: BootOnce) -> Iterator[Booted]:
    b = booted_once.get(store=True)  # the same booted cluster for each test, a fresh copy of it
    try:
        yield b
    finally:
        b.fleet.close()


def operator(b: Booted, runner: FleetRunner | None = None, **policy: Any) -> Operator:
    return Operator(runner or FleetRunner(b.fleet), b.cp_refs, UpgradeSettings(**policy), WorldClock(b.fleet.dir),
                    poll_seconds=60)


def with_workloads(b: Booted, job_seconds: float = 600) -> dict[str, str]:
    """A served Deployment (2 replicas, PDB minAvailable 1), a DaemonSet, and a GPU training Job."""
    w0, w1 = (w.name for w in b.workers)
    with b.fleet.mutate() as s:
        for w in (w0, w1):
            workloads.set_gpus(s, w, 4)
            workloads.add_daemonset_pod(s, "kube-system", "cilium", w)
        workloads.add_deployment_pods(s, "serve", "api-5d8f7", [w0, w1], labels={"app": "api"})
        workloads.add_pdb(s, "serve", "api", {"app": "api"}, min_available=1)
        job = workloads.add_job_pod(s, "ml", "train", w0, gpus=2, finishes_at=world.now(s) + job_seconds)
    return {"job": job, "w0": w0, "w1": w1}


def versions(b: Booted) -> dict[str, str]:
    return {n: node["version"] for n, node in b.cluster()["nodes"].items()}


def upgrade_all(op: Operator, b: Booted) -> None:
    op.upgrade_control_planes(TARGET)
    op.upgrade_pool(b.worker_refs, TARGET)


def test_a_track_upgrade_rolls_every_node_in_order_and_breaks_nothing(cluster: Booted) -> None:
    w = with_workloads(cluster)
    runner = FleetRunner(cluster.fleet)
    op = operator(cluster, runner)
    upgrade_all(op, cluster)
    name = op.wait_upgrade_completed(TARGET)

    state = cluster.cluster()
    assert set(versions(cluster).values()) == {V135}
    assert state.get("violations", []) == []
    assert runner.refreshes() == [i.name for i in (*cluster.control_planes, *cluster.workers)]
    assert not any(n.get("unschedulable") for n in state["nodes"].values()), "every node uncordoned"
    assert state["job_restarts"] == {}, "the running GPU job finished before its node drained"
    served = [p for p in state["pods"].values() if p["labels"].get("app") == "api" and p["phase"] == "Running"]
    assert len(served) == 2
    assert name.startswith("cluster-upgrade-to-k8s-1.35.7-")
    assert state["upgrades"][name]["phase"] == "Completed"
    assert w["job"] not in state["pods"] or state["pods"][w["job"]]["node"] == w["w0"]


def test_workers_before_control_planes_are_refused_by_the_skew_check(cluster: Booted) -> None:
    op = operator(cluster)
    with pytest.raises(UpgradeStopped, match=r"kubelet 1\.35 would be newer than kube-apiserver 1\.34"):
        op.upgrade_pool(cluster.worker_refs, TARGET)
    assert set(versions(cluster).values()) == {"v1.34.11"}
    assert cluster.cluster().get("violations", []) == []


def test_a_control_plane_is_not_taken_down_while_another_is_not_ready(cluster: Booted) -> None:
    cluster.fleet.terminate(cluster.control_planes[2])  # its member is down: etcd has 2 of 3
    op = operator(cluster)
    with pytest.raises(UpgradeStopped, match="without a majority"):
        op.upgrade_nodes(op.control_planes[:1], TARGET)
    assert versions(cluster)[cluster.control_planes[0].name] == "v1.34.11"


class Interrupt(KeyboardInterrupt):
    pass


def test_an_interrupted_upgrade_resumes_where_it_stopped(cluster: Booted) -> None:
    with_workloads(cluster, job_seconds=60)
    seen: list[str] = []

    def ctrl_c(instance: str, argv: Sequence[str], result: Result) -> None:
        if list(argv[:2]) == ["snap", "refresh"]:
            seen.append(instance)
            if len(seen) == 4:  # the first worker refreshed; Ctrl-C before its Ready/uncordon
                raise Interrupt

    first = FleetRunner(cluster.fleet, after=ctrl_c)
    with pytest.raises(Interrupt):
        upgrade_all(operator(cluster, first), cluster)
    interrupted = cluster.workers[0].name
    assert cluster.cluster()["nodes"][interrupted]["unschedulable"], "left cordoned by the interruption"

    second = FleetRunner(cluster.fleet)
    upgrade_all(operator(cluster, second), cluster)
    assert second.refreshes() == [cluster.workers[1].name], "finished nodes are not refreshed again"
    state = cluster.cluster()
    assert set(versions(cluster).values()) == {V135}
    assert not state["nodes"][interrupted].get("unschedulable"), "resumed run uncordons what it cordoned"
    assert state.get("violations", []) == []


def blocking_pdb(b: Booted) -> str:
    """One replica on worker 0 with minAvailable 1: no eviction can ever be allowed."""
    w0 = b.workers[0].name
    with b.fleet.mutate() as s:
        workloads.add_deployment_pods(s, "db", "pg-7c4", [w0], labels={"app": "pg"})
        workloads.add_pdb(s, "db", "pg", {"app": "pg"}, min_available=1)
    return w0


def test_a_node_that_will_not_drain_stops_the_upgrade_cordoned_and_named(cluster: Booted) -> None:
    w0 = blocking_pdb(cluster)
    op = operator(cluster, drain_timeout_seconds=60)
    op.upgrade_control_planes(TARGET)
    with pytest.raises(UpgradeStopped) as stopped:
        op.upgrade_pool(cluster.worker_refs, TARGET)
    assert stopped.value.node == w0 and stopped.value.step == "drain"
    assert "global timeout reached" in str(stopped.value) and "stays cordoned" in str(stopped.value)
    state = cluster.cluster()
    assert state["nodes"][w0]["unschedulable"]
    assert versions(cluster)[w0] == "v1.34.11" and versions(cluster)[cluster.workers[1].name] == "v1.34.11"
    assert state.get("violations", []) == []


def test_skip_leaves_the_node_on_its_minor_uncordoned_and_k8sd_waiting(cluster: Booted) -> None:
    w0 = blocking_pdb(cluster)
    op = operator(cluster, drain_timeout_seconds=60, on_drain_failure="skip")
    upgrade_all(op, cluster)
    state = cluster.cluster()
    assert versions(cluster)[w0] == "v1.34.11" and versions(cluster)[cluster.workers[1].name] == V135
    assert not state["nodes"][w0].get("unschedulable")
    assert state.get("violations", []) == []  # one minor behind is within the skew policy
    with pytest.raises(UpgradeStopped, match=f"not yet counted: {w0}"):
        op.wait_upgrade_completed(TARGET, timeout=120)


def test_force_deletes_the_blocked_pod_and_upgrades(cluster: Booted) -> None:
    w0 = blocking_pdb(cluster)
    upgrade_all(operator(cluster, drain_timeout_seconds=60, on_drain_failure="force"), cluster)
    assert versions(cluster)[w0] == V135
    assert cluster.cluster().get("violations", []) == []


def test_replacing_one_of_three_control_planes_keeps_quorum(cluster: Booted) -> None:
    op = operator(cluster)
    old = cluster.control_planes[1]
    op.remove_control_plane(op.control_planes[1])
    assert old.name not in cluster.cluster()["members"]
    cluster.fleet.terminate(old)  # what `pulumi up --replace` does to the instance next
    new = cluster.sim.control_plane(1)  # the replacement boots from the same user-data
    assert new.run().returncode == 0, new.log
    state = cluster.cluster()
    planes = sorted(n for n, m in state["members"].items() if m["role"] == "control-plane")
    assert planes == sorted([cluster.control_planes[0].name, new.name, cluster.control_planes[2].name])
    assert state.get("violations", []) == []


def test_the_only_control_plane_is_not_replaced_unless_forced(tmp_path: Path) -> None:
    b = boot(tmp_path, stack="aws-dev", workers=0, store=True)
    try:
        op = operator(b)
        with pytest.raises(UpgradeStopped, match=r"only control plane.*would be lost"):
            op.remove_control_plane(op.control_planes[0])
        assert b.control_planes[0].name in b.cluster()["members"]
        assert op.remove_control_plane(op.control_planes[0], force=True).result == "removed"
    finally:
        b.fleet.close()


def test_a_control_plane_is_not_removed_while_another_is_down(cluster: Booted) -> None:
    cluster.fleet.terminate(cluster.control_planes[2])
    op = operator(cluster)
    with pytest.raises(UpgradeStopped, match="without a majority"):
        op.remove_control_plane(op.control_planes[0])
    assert cluster.control_planes[0].name in cluster.cluster()["members"]


def test_replacing_a_worker_drains_it_and_its_replacement_joins(cluster: Booted) -> None:
    w = with_workloads(cluster, job_seconds=120)
    op = operator(cluster)
    node = cluster.worker_refs[0]
    op.remove_worker(node)
    state = cluster.cluster()
    assert state["job_restarts"] == {}
    assert not [p for p in workloads.pods_on(state_for(cluster), w["w0"]) if p["owner"]
                and p["owner"]["kind"] == "ReplicaSet"]
    cluster.fleet.terminate(cluster.workers[0])
    op.forget_node(node)
    assert w["w0"] not in cluster.cluster()["nodes"]
    new = cluster.sim.worker(0)
    assert new.run().returncode == 0, new.log
    assert new.name in cluster.cluster()["nodes"]
    assert cluster.cluster().get("violations", []) == []


def state_for(b: Booted) -> dict[str, Any]:
    return world.read(b.fleet.dir)


def test_a_node_that_joined_on_the_old_minor_mid_upgrade_is_swept_up_at_the_end(cluster: Booted) -> None:
    op = operator(cluster)
    op.upgrade_control_planes(TARGET)
    late = cluster.sim.worker(0)  # launched from the old launch template while control planes upgraded
    assert late.run().returncode == 0, late.log
    op.upgrade_pool(cluster.worker_refs, TARGET)  # the pool as it was listed when its step started
    assert versions(cluster)[late.name] == "v1.34.11"
    with pytest.raises(UpgradeStopped, match=f"not yet counted: {late.name}"):
        op.wait_upgrade_completed(TARGET, timeout=60)
    pools = {"l40s": [*cluster.worker_refs, *cluster.refs([late], "worker", "l40s")]}
    outcomes = op.finish(pools, TARGET)
    assert [(o.node, o.result) for o in outcomes if o.node != "cluster"] == [
        (cluster.workers[0].name, "already"), (cluster.workers[1].name, "already"), (late.name, "upgraded")]
    assert set(versions(cluster).values()) == {V135}
    assert cluster.cluster().get("violations", []) == []


def test_a_pool_node_that_has_not_joined_yet_is_left_to_join(cluster: Booted) -> None:
    op = operator(cluster)
    op.upgrade_control_planes(TARGET)
    pending = cluster.sim.worker(0)  # running, its script not yet at the join
    ref = cluster.refs([pending], "worker", "l40s")
    outcomes = op.upgrade_pool([*cluster.worker_refs, *ref], TARGET)
    assert [(o.node, o.result, o.detail) for o in outcomes if o.node == pending.name] == [
        (pending.name, "skipped", "not joined yet")]
    assert [o.result for o in outcomes if o.node != pending.name] == ["upgraded", "upgraded"]


def test_a_single_control_plane_stack_upgrades_with_its_api_down_only_during_its_refresh(tmp_path: Path) -> None:
    b = boot(tmp_path, stack="aws-dev", workers=1, store=True)
    try:
        with b.fleet.mutate() as s:
            s["refresh_seconds"] = 1  # the window in which its only etcd member (and API) is down
        runner = FleetRunner(b.fleet)
        op = operator(b, runner)
        op.upgrade_control_planes(TARGET)
        op.finish({"l4": b.refs(b.workers, "worker", "l4")}, TARGET)
        assert set(versions(b).values()) == {V135}
        assert runner.refreshes() == [b.control_planes[0].name, b.workers[0].name]
        # A single member is down while it refreshes: the one outage a one-control-plane stack accepts.
        violations = b.cluster().get("violations", [])
        assert len(violations) == 1 and violations[0].startswith("etcd quorum lost: 0 of 1"), violations
    finally:
        b.fleet.close()

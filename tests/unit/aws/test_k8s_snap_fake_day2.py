"""Day-2 operations against the k8s-snap fake (tests/fakes/k8s_snap): `snap refresh` with k8sd's
post-refresh Upgrade tracking, the invariant recorders (etcd quorum, version skew), and
`k8s kubectl get/cordon/uncordon/drain` with kubectl v1.34's filters, PDB evictions and texts.

Clusters are real ones: the rendered node scripts of a committed stack on simulated instances
(cluster_sim.simulate), then driven the way the upgrade orchestrator drives them, one argv on one
instance (`Instance.exec`, as SSM RunShellScript runs it).
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.settings.model import SnapPinSettings, UpgradeSettings
from components.upgrade.executor import Operator, UpgradeStopped
from tests.fakes.k8s_snap import tracks as fake_tracks
from tests.fakes.k8s_snap import workloads
from tests.fakes.k8s_snap.fleet import Instance
from tests.unit.aws.cluster_sim import SimCluster, simulate
from tests.unit.upgrade.fleet_ops import Booted, BootOnce, FleetRunner, WorldClock

# Runs the node scripts in bash against the k8s-snap fake: seconds per case (the `slow` tier;
# `make check` leaves it out, `make test` and CI run it).
pytestmark = pytest.mark.slow

TRACK = "1.34-classic"
PDB_429 = "Cannot evict pod as it would violate the pod's disruption budget."


def ok(inst: Instance) -> Instance:
    result = inst.run()
    assert result.returncode == 0, f"{inst.name}:\n{result.stderr[-2000:]}\n{inst.log[-2000:]}"
    return inst


def build(tmp: Path, stack: str, workers: int,
          store: bool = False) -> tuple[SimCluster, list[Instance], list[Instance]]:
    """`store`: the stack's nodes install the channel's snap from the store (cluster_sim.from_the_store),
    not the committed stack's pin from their image."""
    s = simulate(tmp, stack, TRACK, store=store)
    cps = [ok(s.control_plane(i)) for i in range(s.settings.control_plane.count)]
    ws = [s.worker().start() for _ in range(workers)]
    for w in ws:
        assert w.wait().returncode == 0, w.log[-2000:]
    return s, cps, ws


def refresh(inst: Instance, track: str) -> subprocess.CompletedProcess[str]:
    return inst.exec(["snap", "refresh", "k8s", f"--channel={track}/stable"])


def kubectl(inst: Instance, *args: str) -> subprocess.CompletedProcess[str]:
    return inst.exec(["k8s", "kubectl", *args])


def violations(s: SimCluster) -> list[str]:
    cluster = s.fleet.cluster
    assert cluster is not None
    return list(cluster.get("violations", []))


def versions(s: SimCluster) -> dict[str, str]:
    cluster = s.fleet.cluster
    assert cluster is not None
    return {n: node["version"] for n, node in cluster["nodes"].items()}


# ---------------------------------------------------------------------- refresh and upgrades


def test_refreshing_control_planes_one_by_one_then_workers_records_nothing(tmp_path: Path) -> None:
    # The store's refresh semantics from a node tracking the channel (no updates at its head).
    s, cps, (w,) = build(tmp_path / "w", "aws-prod", workers=1, store=True)
    try:
        assert set(versions(s).values()) == {"v1.34.11"}
        same = refresh(cps[0], TRACK)
        assert same.returncode == 0 and same.stderr.strip() == 'snap "k8s" has no updates available'
        first = refresh(cps[0], "1.35-classic")
        assert first.returncode == 0, first.stderr
        assert first.stdout.strip() == "k8s (1.35-classic/stable) v1.35.7 from Canonical** refreshed"
        cluster = s.fleet.cluster
        assert cluster is not None
        # k8sd's post-refresh hook on a control plane opens an InPlace Upgrade named after its new version
        assert cluster["upgrades"] == {"cluster-upgrade-to-k8s-1.35.7-rev-4507": {
            "phase": "NodeUpgrade", "strategy": "InPlace", "upgradedNodes": [cps[0].name]}}
        # ... and while it is open, no control plane may join (hooks_join.go handleUpgradeInProgress)
        joiner = s.control_plane(1)
        assert joiner.exec(["snap", "install", "k8s", "--classic", "--channel=1.35-classic/stable"]).returncode == 0
        token = cps[0].exec(["k8s", "get-join-token", joiner.name]).stdout.strip()
        refused = joiner.exec(["k8s", "join-cluster", token, "--name", joiner.name, "--address", joiner.ip])
        assert refused.returncode == 1
        assert refused.stderr.strip().endswith("failed to handle rollout-upgrade: can not join a new node while an "
                                               "in-place upgrade is in progress")
        for inst in (*cps[1:], w):
            done = refresh(inst, "1.35-classic")
            assert done.returncode == 0, done.stderr
        assert set(versions(s).values()) == {"v1.35.7"}
        cluster = s.fleet.cluster
        assert cluster is not None
        upgrade = cluster["upgrades"]["cluster-upgrade-to-k8s-1.35.7-rev-4507"]
        # the worker is counted by the upgrade controller from its version annotation, then Completed
        assert upgrade["phase"] == "Completed" and set(upgrade["upgradedNodes"]) == {*(c.name for c in cps), w.name}
        assert violations(s) == []
        assert cps[2].exec(["k8s", "status", "--wait-ready"]).returncode == 0
        nodes = json.loads(kubectl(cps[1], "get", "nodes", "-o", "json").stdout)
        assert {n["status"]["nodeInfo"]["kubeletVersion"] for n in nodes["items"]} == {"v1.35.7"}
        # the upgrade done, a control plane at the cluster's version joins again
        token = cps[0].exec(["k8s", "get-join-token", joiner.name]).stdout.strip()
        assert joiner.exec(["k8s", "join-cluster", token, "--name", joiner.name,
                            "--address", joiner.ip]).returncode == 0
        assert violations(s) == []
    finally:
        s.fleet.close()


def test_a_worker_first_skews_and_a_skipped_minor_is_recorded_not_refused(tmp_path: Path) -> None:
    s, (cp,), (w,) = build(tmp_path / "w", "aws-dev", workers=1)
    try:
        assert refresh(w, "1.35-classic").returncode == 0
        # the committed stack's control plane runs its pin, v1.34.4, installed from its image
        assert violations(s) == [
            f"version skew: kubelet v1.35.7 on {w.name} is newer than the oldest kube-apiserver v1.34.4 on "
            f"{cp.name} [refresh of {w.name} to 1.35-classic/stable done]"]
        unknown = refresh(cp, "1.33-classic")
        assert unknown.returncode == 1
        assert unknown.stderr.strip() == 'error: requested a non-existing branch on 1.33-classic/stable for snap "k8s"'
        skipped = refresh(cp, "1.36-classic")  # upstream refuses nothing: it happens, and is recorded
        assert skipped.returncode == 0 and "v1.36.4" in skipped.stdout
        assert versions(s)[cp.name] == "v1.36.4"
        found = violations(s)[1:]
        assert found[0] == (f"unsupported upgrade: {cp.name} refreshed from 1.34 to 1.36, skipping a minor version "
                            "[refresh start]")
        # the single control plane is etcd's only member: its refresh loses quorum for its duration
        assert found[1].startswith("etcd quorum lost: 0 of 1 control-plane members up")
        assert len(found) == 2  # the worker is now older than the apiserver, within policy
    finally:
        s.fleet.close()


def test_two_of_three_control_planes_refreshing_at_once_lose_quorum(tmp_path: Path) -> None:
    s, cps, _ = build(tmp_path / "w", "aws-prod", workers=0)
    try:
        with s.fleet.mutate() as state:
            state["refresh_seconds"] = 1.5
        assert refresh(cps[0], "1.35-classic").returncode == 0  # one at a time: 2 of 3 stay up
        assert violations(s) == []
        results: dict[str, subprocess.CompletedProcess[str]] = {}

        def run(inst: Instance) -> None:
            results[inst.name] = refresh(inst, "1.35-classic")

        threads = [threading.Thread(target=run, args=(inst,)) for inst in cps[1:]]
        for t in threads:
            t.start()
        while not all(s.fleet.world["instances"][i.id]["node"].get("refreshing") for i in cps[1:]):
            assert any(t.is_alive() for t in threads)
            time.sleep(0.02)
        status = cps[1].exec(["k8s", "status", "--wait-ready"])  # its k8sd restarts with the snap
        assert status.returncode == 1 and "Failed to check the current node status" in status.stderr
        for t in threads:
            t.join()
        assert all(r.returncode == 0 for r in results.values())
        lost = [v for v in violations(s) if v.startswith("etcd quorum lost")]
        assert len(lost) == 1 and lost[0].startswith("etcd quorum lost: 1 of 3 control-plane members up")
        # membership shrinks: 2 members need both; losing one instance loses quorum again
        with s.fleet.mutate() as state:
            workloads.add_deployment_pods(state, "default", "web-5d4f8", [cps[2].name], labels={"app": "web"})
        removed = cps[0].exec(["k8s", "remove-node", cps[2].name])
        assert removed.returncode == 0, removed.stderr
        cluster = s.fleet.cluster
        assert cluster is not None
        (web,) = [p for p in cluster["pods"].values() if p["labels"] == {"app": "web"}]
        assert web["node"] in (cps[0].name, cps[1].name) and web["phase"] == "Running"  # recreated elsewhere
        assert len([v for v in violations(s) if v.startswith("etcd quorum lost")]) == 1
        s.fleet.terminate(cps[1])
        assert violations(s)[-1].startswith("etcd quorum lost: 1 of 2 control-plane members up")
    finally:
        s.fleet.close()


# ---------------------------------------------------------------------- kubectl on one cluster


@pytest.fixture(scope="module")
def ops(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SimCluster, Instance, Instance, Instance]]:
    s, (cp,), (w1, w2) = build(tmp_path_factory.mktemp("ops"), "aws-dev", workers=2)
    yield s, cp, w1, w2
    s.fleet.close()


@pytest.fixture
def k8s(ops: tuple[SimCluster, Instance, Instance, Instance]) -> tuple[SimCluster, Instance, Instance, Instance]:
    """The module's cluster with no workloads, every node schedulable, 4 GPUs per worker."""
    s, cp, _, _ = ops
    with s.fleet.mutate() as state:
        state["cluster"].update(pods={}, pdbs={}, job_restarts={})
        for name, node in state["cluster"]["nodes"].items():
            node["unschedulable"] = False
            node["gpus"] = 4 if name != cp.name else 0
    return ops


def pods(s: SimCluster) -> dict[str, dict[str, Any]]:
    cluster = s.fleet.cluster
    assert cluster is not None
    return dict(cluster["pods"])


def test_cordon_and_uncordon_say_whether_anything_changed(k8s: tuple[SimCluster, Instance, Instance, Instance]) -> None:
    _, cp, w1, _ = k8s
    assert [kubectl(cp, verb, w1.name).stdout.strip() for verb in ("cordon", "cordon", "uncordon", "uncordon")] == [
        f"node/{w1.name} cordoned", f"node/{w1.name} already cordoned", f"node/{w1.name} uncordoned",
        f"node/{w1.name} already uncordoned"]
    missing = kubectl(cp, "cordon", "ip-10-9-9-9.ec2.internal")
    assert missing.returncode == 1
    assert missing.stderr.strip() == 'Error from server (NotFound): nodes "ip-10-9-9-9.ec2.internal" not found'
    assert kubectl(cp, "rollout", "restart", "deploy/x").returncode == 1  # unmodelled verbs are refused


def test_get_nodes_and_pods_as_json(k8s: tuple[SimCluster, Instance, Instance, Instance]) -> None:
    s, cp, w1, w2 = k8s
    now = s.fleet.world["clock_offset"] + time.time()
    with s.fleet.mutate() as state:
        workloads.add_deployment_pods(state, "ml", "serve-7c9d", [w1.name], labels={"app": "serve"}, gpus=1)
        workloads.add_job_pod(state, "ml", "train", w1.name, claims=("gpu",), finishes_at=now + 600)
        workloads.add_daemonset_pod(state, "kube-system", "cilium", w2.name)
    assert kubectl(cp, "cordon", w2.name).returncode == 0
    nodes = json.loads(kubectl(cp, "get", "nodes", "-o", "json").stdout)
    assert nodes["kind"] == "List" and nodes["apiVersion"] == "v1"
    by_name = {n["metadata"]["name"]: n for n in nodes["items"]}
    assert set(by_name) == {cp.name, w1.name, w2.name}
    assert by_name[w2.name]["spec"]["unschedulable"] is True and "unschedulable" not in by_name[w1.name]["spec"]
    assert by_name[w1.name]["status"]["nodeInfo"]["kubeletVersion"] == "v1.34.4"  # aws-dev's pin, from its image
    assert by_name[w1.name]["status"]["conditions"] == [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                                         "message": "kubelet is posting ready status"}]
    assert by_name[w1.name]["metadata"]["labels"]["k8sd.io/role"] == "worker"
    listed = kubectl(cp, "get", "pods", "--all-namespaces", "--field-selector", f"spec.nodeName={w1.name}", "-o",
                     "json")
    items = {p["metadata"]["name"].rsplit("-", 1)[0]: p for p in json.loads(listed.stdout)["items"]}
    assert set(items) == {"serve-7c9d", "train"}  # not the DaemonSet pod on w2
    serve, train = items["serve-7c9d"], items["train"]
    assert serve["metadata"]["ownerReferences"][0] | {"uid": ""} == {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "serve-7c9d", "controller": True,
        "blockOwnerDeletion": True, "uid": ""}
    assert serve["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    assert serve["spec"]["nodeName"] == w1.name and serve["status"]["phase"] == "Running"
    assert train["metadata"]["ownerReferences"][0]["kind"] == "Job"
    assert train["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]
    with s.fleet.mutate() as state:
        state["clock_offset"] += 900  # the Job's container has exited
    again = json.loads(kubectl(cp, "get", "pods", "-A", "--field-selector", f"spec.nodeName={w1.name}", "-o",
                               "json").stdout)
    assert {p["metadata"]["name"].rsplit("-", 1)[0]: p["status"]["phase"] for p in again["items"]} == {
        "serve-7c9d": "Running", "train": "Succeeded"}
    with s.fleet.mutate() as state:
        state["clock_offset"] -= 900


def test_drain_refuses_daemonset_bare_and_emptydir_pods_until_each_is_allowed(
        k8s: tuple[SimCluster, Instance, Instance, Instance]) -> None:
    s, cp, w1, w2 = k8s
    with s.fleet.mutate() as state:
        ds = workloads.add_daemonset_pod(state, "kube-system", "cilium", w1.name)
        bare = workloads.add_pod(state, "default", "debug", w1.name)
        (cache,) = workloads.add_deployment_pods(state, "default", "cache-6b7f", [w1.name], empty_dir=True)
    plain = kubectl(cp, "drain", w1.name, "--timeout=30s")
    assert plain.returncode == 1 and plain.stdout.strip() == f"node/{w1.name} cordoned"
    errors = [f"cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore): {ds}",
              f"cannot delete Pods with local storage (use --delete-emptydir-data to override): {cache}",
              f"cannot delete cannot delete Pods that declare no controller (use --force to override): {bare}"]
    assert plain.stderr.splitlines() == [
        f'error: unable to drain node "{w1.name}" due to error: [{", ".join(errors)}], continuing command...',
        "There are pending nodes to be drained:", f" {w1.name}", *errors]
    assert set(pods(s)) == {ds, bare, cache} and s.fleet.cluster and s.fleet.cluster["nodes"][w1.name]["unschedulable"]
    partly = kubectl(cp, "drain", w1.name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=30s")
    assert partly.returncode == 1 and partly.stderr.splitlines()[-1] == errors[2]
    with s.fleet.mutate() as state:
        bare_ed = workloads.add_pod(state, "default", "scratch", w1.name, empty_dir=True)
    done = kubectl(cp, "drain", w1.name, "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=30s",
                   "--grace-period=10")
    assert done.returncode == 0, done.stderr
    gone = sorted([bare, bare_ed, cache])
    assert done.stdout.splitlines() == [f"node/{w1.name} already cordoned", *(f"evicting pod {k}" for k in gone),
                                        *(f"pod/{k.split('/')[1]} evicted" for k in gone), f"node/{w1.name} drained"]
    # filters.go: a later filter's status replaces an earlier warning, so the controlled emptyDir
    # pod (ReplicaSet) is deleted without the local-storage warning; the bare one keeps only the
    # no-controller warning
    assert done.stderr.strip() == (f"Warning: deleting Pods that declare no controller: {bare}, {bare_ed}; "
                                   f"ignoring DaemonSet-managed Pods: {ds}")
    left = pods(s)
    assert left[ds]["node"] == w1.name  # DaemonSet pods stay
    (new_cache,) = [p for k, p in left.items() if k.startswith("default/cache-6b7f-")]
    assert new_cache["node"] in (cp.name, w2.name) and new_cache["phase"] == "Running"  # not the cordoned w1
    assert not any(k.startswith(("default/debug", "default/scratch")) for k in left)  # no controller: gone


def test_a_pdb_blocked_drain_fails_at_its_timeout_and_leaves_the_node_cordoned(
        k8s: tuple[SimCluster, Instance, Instance, Instance]) -> None:
    s, cp, w1, w2 = k8s
    with s.fleet.mutate() as state:
        web, _ = workloads.add_deployment_pods(state, "shop", "web-55f6", [w1.name, w2.name], labels={"app": "web"})
        workloads.add_pdb(state, "shop", "web", {"app": "web"}, min_available=2)
        state["cluster"]["nodes"][cp.name]["unschedulable"] = True  # replacements go to workers only
    name = web.split("/")[1]
    blocked = kubectl(cp, "drain", w1.name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=12s")
    assert blocked.returncode == 1
    # kubectl retries the 429 every 5s: attempts at 0, 5 and 10s, the deadline seen at 15s
    assert blocked.stdout.splitlines() == [f"node/{w1.name} cordoned", *[f"evicting pod {web}"] * 4]
    final = f'error when evicting pods/"{name}" -n "shop": global timeout reached: 12s'
    assert blocked.stderr.splitlines() == [
        *[f'error when evicting pods/"{name}" -n "shop" (will retry after 5s): {PDB_429}'] * 3,
        f'There are pending pods in node "{w1.name}" when an error occurred: {final}', f"pod/{name}",
        f'error: unable to drain node "{w1.name}" due to error: {final}, continuing command...',
        "There are pending nodes to be drained:", f" {w1.name}", final]
    assert pods(s)[web]["node"] == w1.name
    cluster = s.fleet.cluster
    assert cluster is not None and cluster["nodes"][w1.name]["unschedulable"] is True
    minutes = kubectl(cp, "drain", w1.name, "--ignore-daemonsets", "--timeout=5m")
    assert minutes.returncode == 1 and minutes.stderr.splitlines()[-1].endswith("global timeout reached: 5m0s")
    # --disable-eviction deletes, bypassing the budget
    bypass = kubectl(cp, "drain", w1.name, "--ignore-daemonsets", "--disable-eviction", "--timeout=12s")
    assert bypass.returncode == 0, bypass.stderr
    assert bypass.stdout.splitlines() == [f"node/{w1.name} already cordoned", f"pod/{name} deleted",
                                          f"node/{w1.name} drained"]
    # the replacement runs on w2, next to the other one; with maxUnavailable 1 both may go, one at a
    # time (each replacement Running elsewhere before the next eviction)
    with s.fleet.mutate() as state:
        state["cluster"]["pdbs"] = {}
        workloads.add_pdb(state, "shop", "web", {"app": "web"}, max_unavailable=1)
        state["cluster"]["nodes"][w1.name]["unschedulable"] = False
    assert {p["node"] for p in pods(s).values()} == {w2.name}
    second = kubectl(cp, "drain", w2.name, "--ignore-daemonsets", "--timeout=12s")
    assert second.returncode == 0, second.stderr
    assert {p["node"] for p in pods(s).values()} == {w1.name}


def test_job_pods_are_recreated_elsewhere_and_their_restarts_counted(
        k8s: tuple[SimCluster, Instance, Instance, Instance]) -> None:
    s, cp, w1, w2 = k8s
    now = s.fleet.world["clock_offset"] + time.time()
    with s.fleet.mutate() as state:
        workloads.set_gpus(state, w2.name, 1)
        workloads.add_job_pod(state, "ml", "train", w1.name, gpus=1, finishes_at=now + 3600)
        workloads.add_job_pod(state, "ml", "done", w1.name, finishes_at=now - 1)
        workloads.add_job_pod(state, "ml", "infer", w2.name, claims=("gpu",))
    drained = kubectl(cp, "drain", w1.name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s")
    assert drained.returncode == 0, drained.stderr
    cluster = s.fleet.cluster
    assert cluster is not None
    assert cluster["job_restarts"] == {"train": 1}  # the finished Job pod is not restarted; w2's never touched
    (train,) = [p for p in cluster["pods"].values() if p["owner"]["name"] == "train"]
    assert train["phase"] == "Pending" and train["node"] is None  # w2's one GPU is taken, w1 cordoned
    assert not any(p["owner"]["name"] == "done" for p in cluster["pods"].values())
    assert kubectl(cp, "uncordon", w1.name).returncode == 0
    cluster = s.fleet.cluster
    assert cluster is not None
    (train,) = [p for p in cluster["pods"].values() if p["owner"]["name"] == "train"]
    assert train["phase"] == "Running" and train["node"] == w1.name and cluster["job_restarts"] == {"train": 1}


def test_an_instance_terminated_through_its_group_leaves_a_node_that_is_not_ready(
        k8s: tuple[SimCluster, Instance, Instance, Instance]) -> None:
    s, cp, _, w2 = k8s
    args = ["aws", "autoscaling", "terminate-instance-in-auto-scaling-group", "--region", s.fleet.region,
            "--instance-id", w2.id, "--no-should-decrement-desired-capacity"]
    denied = cp.exec(args)
    assert denied.returncode == 254 and "autoscaling:TerminateInstanceInAutoScalingGroup" in denied.stderr
    with s.fleet.mutate() as state:
        state["instances"][cp.id]["role_policies"].append({"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow", "Action": ["autoscaling:TerminateInstanceInAutoScalingGroup"], "Resource": "*"}]})
    done = cp.exec(args)
    assert done.returncode == 0, done.stderr
    activity = json.loads(done.stdout)["Activity"]
    assert activity["Description"] == f"Terminating EC2 instance: {w2.id}" and activity["StatusCode"] == "InProgress"
    assert activity["Cause"].endswith(f"instance {w2.id} was taken out of service in response to a user request.")
    nodes = {n["metadata"]["name"]: n for n in json.loads(kubectl(cp, "get", "nodes", "-o", "json").stdout)["items"]}
    assert nodes[w2.name]["status"]["conditions"][0]["status"] == "Unknown"  # kubelet stopped posting
    assert not any(v.startswith("etcd") for v in violations(s))


# ------------------------------------- the pinned snap through upgrades and replacement (docs/adr/0039)


@pytest.fixture(scope="module")
def booted_once(tmp_path_factory: pytest.TempPathFactory) -> BootOnce:
    return BootOnce(tmp_path_factory.mktemp("pinned"))


def _pinned_cluster(once: BootOnce, version: str, revision: int) -> Booted:
    """A stack pinned to `version` whose nodes install that revision from the store (`snap install
    --revision`), the path the upgrades below refresh along; booted once, a fresh copy per test."""
    return once.get(stack="aws-prod", track=TRACK, store=True,
                    boot_override={"snap_version": version, "snap_revisions": (("amd64", revision),)})


def _pinned_operator(b: Booted, runner: FleetRunner, version: str, revision: int) -> Operator:
    pin = SnapPinSettings(version=version, revisions={"amd64": revision})
    return Operator(runner, b.cp_refs, UpgradeSettings(), WorldClock(b.fleet.dir), poll_seconds=60, snap=pin)


def test_a_new_pin_upgrades_every_node_to_its_patch_and_replacements_follow_it(booted_once: BootOnce) -> None:
    """The stack file moves kubernetes.snap to a newer patch of the same track (the record changed
    on purpose); the channel meanwhile serves a newer one still. Every node goes to the pin, k8sd's
    Upgrade completes, and a control plane replaced afterwards installs the new pin and joins."""
    b = _pinned_cluster(booted_once, "v1.34.11", 4104)
    try:
        with b.fleet.mutate() as state:
            fake_tracks.publish(state, TRACK, "amd64", "v1.34.12", "4204")
            fake_tracks.publish(state, TRACK, "amd64", "v1.34.13", "4304")  # the channel's head
        runner = FleetRunner(b.fleet)
        op = _pinned_operator(b, runner, "v1.34.12", 4204)
        op.upgrade_control_planes(TRACK)
        op.upgrade_pool(b.worker_refs, TRACK)
        assert op.wait_upgrade_completed(TRACK) == "cluster-upgrade-to-k8s-1.34.12-rev-4204"
        assert set(versions(b.sim).values()) == {"v1.34.12"} and violations(b.sim) == []
        refreshes = [argv for _, argv in runner.calls if argv[:2] == ("snap", "refresh")]
        assert refreshes == [("snap", "refresh", "k8s", f"--channel={TRACK}/stable", "--revision=4204")] * 5
        # run again: every node is at the pin, nothing is refreshed
        assert {o.result for o in op.upgrade_control_planes(TRACK)} == {"already"}
        # the stack's user-data now carries the new pin; a replaced control plane follows it
        b.sim.boot = dataclasses.replace(b.sim.boot, snap_version="v1.34.12", snap_revisions=(("amd64", 4204),))
        op.remove_control_plane(op.control_planes[1])
        b.fleet.terminate(b.control_planes[1])
        new = ok(b.sim.control_plane(1))
        assert new.state["node"]["snap_release"]["k8s"] == {"revision": "4204", "version": "v1.34.12"}
        assert set(versions(b.sim).values()) == {"v1.34.12"} and violations(b.sim) == []
    finally:
        b.fleet.close()


def test_a_pinned_track_upgrade_refreshes_to_the_new_tracks_revision(booted_once: BootOnce) -> None:
    b = _pinned_cluster(booted_once, "v1.34.11", 4104)
    try:
        target = fake_tracks.from_channel("1.35-classic/stable")
        runner = FleetRunner(b.fleet)
        op = _pinned_operator(b, runner, target.kubernetes_version, int(target.revision))
        op.upgrade_control_planes("1.35-classic")
        op.upgrade_pool(b.worker_refs, "1.35-classic")
        op.wait_upgrade_completed("1.35-classic")
        assert set(versions(b.sim).values()) == {target.kubernetes_version} and violations(b.sim) == []
        assert all(argv[-1] == f"--revision={target.revision}" for _, argv in runner.calls
                   if argv[:2] == ("snap", "refresh"))
        # a node of an architecture the pin does not name is stopped before anything is refreshed
        arm = dataclasses.replace(b.worker_refs[0], arch="arm64")
        with pytest.raises(UpgradeStopped, match=r"no revision for arm64 in kubernetes\.snap\.revisions"):
            op.refresh(arm, "1.35-classic")
    finally:
        b.fleet.close()

"""The rendered node scripts of both AWS stacks, unchanged, against the stateful k8s-snap fake
(tests/fakes/k8s_snap), at every supported track: happy paths, re-runs, failures and recovery.

Most scenarios add instances one after another (each control plane a member before the next
boots); the order `pulumi up` creates them in since docs/adr/0019 (control planes 1 and 2 once 0
runs, pools beside them) has its own scenarios at the end.
"""

from __future__ import annotations

import dataclasses
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from components.aws.inventory import api_lb_name
from tests.fakes.k8s_snap import tracks as fake_tracks
from tests.fakes.k8s_snap import world
from tests.fakes.k8s_snap.fleet import Instance
from tests.unit.aws.cluster_sim import CA_KEY, CLIENT_CA_KEY, LB, PEM, TRACKS, SimCluster, simulate

# Runs the node scripts in bash against the k8s-snap fake: seconds per case (the `slow` tier;
# `make check` leaves it out, `make test` and CI run it).
pytestmark = pytest.mark.slow

STACKS = ("aws-dev", "aws-prod")
# The failure paths (retries, tokens, late objects, replacements) are the script's own logic, the
# same on every track: the node script differs across tracks only in the snap channel it pins and
# the GPU runtime mode (CDI or default runtime: components/aws/userdata.py). Every track runs the
# whole assembly (test_cluster_assembles_...) and the pin scenarios; the failure paths run on the
# oldest and the newest track, which also differ in runtime mode, to keep CI's slow tier narrow.
EDGE_TRACKS = (TRACKS[0], TRACKS[-1])
# Failure paths that also vary by stack (one control plane or three) run each stack once and each
# edge track once, not their product: the stack decides who serves the token and the join, the
# track the snap channel and runtime mode, and no rule of the script reads both (each-choice
# coverage; the happy path above keeps the whole product).
EACH_STACK_AND_EDGE_TRACK = ((STACKS[0], EDGE_TRACKS[0]), (STACKS[1], EDGE_TRACKS[1]))
FAILED = "CK8S-GPU-BOOT-FAILED"

Sim = Callable[..., SimCluster]


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    made: list[SimCluster] = []

    def make(stack: str, track: str | None = None, **kw: object) -> SimCluster:
        s = simulate(tmp_path / f"w{len(made)}", stack, track, **kw)  # type: ignore[arg-type]
        made.append(s)
        return s

    yield make
    for s in made:
        s.fleet.close()


def ok(inst: Instance, **env: str) -> Instance:
    result = inst.run(**env)
    assert result.returncode == 0, f"{inst.name} failed:\n{result.stderr[-3000:]}\n--- log ---\n{inst.log[-3000:]}"
    return inst


def control_planes(s: SimCluster) -> list[Instance]:
    return [ok(s.control_plane(i)) for i in range(s.settings.control_plane.count)]


def no_secret_leaks(s: SimCluster, inst: Instance) -> None:
    text = inst.log + (inst.result.stderr if inst.result else "") + inst.console
    assert s.auth_token not in text and "CAKEYsecret" not in text and "CLIENTKEYsecret" not in text
    for token in s.fleet.world.get("commands", {}).values():
        for r in token["results"].values():
            assert r["out"].strip() == "" or r["out"].strip() not in text


# ------------------------------------------------------------------------------ happy paths


@pytest.mark.parametrize("track", TRACKS)
@pytest.mark.parametrize("stack", STACKS)
def test_cluster_assembles_and_every_script_reruns_as_a_no_op(sim: Sim, stack: str, track: str) -> None:
    s = sim(stack, track)
    cps = control_planes(s)
    workers = [s.worker(i).start() for i in range(len(s.settings.node_pools))]
    for w in workers:
        w.wait()
        assert w.result and w.result.returncode == 0, f"{w.result.stderr if w.result else ''}\n{w.log}"
    world = s.fleet.world
    cluster = world["cluster"]
    assert world.get("second_bootstraps") is None
    assert {m["role"] for m in cluster["members"].values()} == {"control-plane", "worker"}
    assert len(cluster["members"]) == len(cps) + len(workers)
    assert cluster["features"] == {"network": True, "dns": True, "gateway": False, "ingress": False,
                                   "load-balancer": False, "local-storage": False, "metrics-server": True}
    assert cluster["capi_token"] == s.auth_token  # registered by every control plane, same value
    assert cluster["worker_tokens"] == {} and cluster["cp_tokens"] == {}  # single use: all spent
    for w, pool in zip(workers, s.settings.node_pools, strict=True):
        labels = cluster["nodes"][w.name]["labels"]
        # k8sd's role labels kept, ours added by the kubelet's own credentials
        assert labels["k8sd.io/role"] == "worker" and labels["node-role.kubernetes.io/worker"] == ""
        assert labels["ck8s-gpu/pool"] == pool.name and labels["nvidia.com/dra-kubelet-plugin"] == "true"
        assert all(labels[k] == v for k, v in pool.labels.items())
        assert w.calls(f"kubectl label node {w.name} as system:node:{w.name}")
        # a worker reads no secret and mints through SSM only
        assert w.calls("aws secretsmanager") == [] and w.calls("aws ssm send-command")
        no_secret_leaks(s, w)
    for cp in cps:
        no_secret_leaks(s, cp)
        assert cp.console == ""
        assert not (cp.root / "run/ck8s-gpu").exists(), "the run dir holding fetched secrets must go"
    # the API NLB's DNS name, looked up at boot, is a SAN of every control plane's certificates
    assert all(cp.state["node"]["extra_sans"] == [LB] for cp in cps)
    assert all(cp.calls("aws elbv2 describe-load-balancers") for cp in cps)
    # what `k8s bootstrap` read: the user-data part plus the CA keys from Secrets Manager
    assert cluster["ca"] == {"ca-crt": PEM, "ca-key": CA_KEY, "client-ca-crt": PEM, "client-ca-key": CLIENT_CA_KEY}
    # every script again (a reboot re-running cloud-init, `cloud-init clean`): nothing new happens
    before = len(world["calls"])
    for inst in [*cps, *workers]:
        ok(inst)
        assert "already set up" in inst.log
    after = s.fleet.world["calls"][before:]
    assert [c["call"] for c in after if c["call"].startswith(("k8s", "snap", "aws", "kubectl"))] == []


@pytest.mark.parametrize("track", EDGE_TRACKS)
def test_a_half_finished_node_finishes_without_a_second_join(sim: Sim, track: str) -> None:
    s = sim("aws-dev", track)
    control_planes(s)
    w = ok(s.worker())
    (w.root / "var/lib/ck8s-gpu/done").unlink()  # died after joining, before labelling finished
    ok(w)
    assert len(w.calls("k8s join-cluster")) == 1 and len(w.calls("aws ssm send-command")) == 1
    assert "already a cluster member" in w.log


# ---------------------------------------------------------------------------- bootstrap file


@pytest.mark.parametrize("track", EDGE_TRACKS)
def test_the_old_bootstrap_file_never_gets_ready(sim: Sim, track: str) -> None:
    """Regression: a bootstrap file naming no feature turns network and DNS off (k8sd
    cluster_config_defaults.go); no node is Ready, the control plane gives up, loudly."""
    s = sim("aws-dev", track, boot_override={"features": ()})
    with pytest.raises(ValueError, match="every feature set explicitly"):
        s.control_plane(0)
    legacy = sim("aws-dev", track, boot_override={"features": (("metrics-server", True),)})
    cp = legacy.control_plane(0)
    assert cp.run().returncode == 1
    assert legacy.fleet.cluster and legacy.fleet.cluster["features"]["network"] is False
    assert "the cluster did not become ready" in cp.console and FAILED in cp.console


# -------------------------------------------------------------------------- transient faults


@pytest.mark.parametrize(("stack", "track"), EACH_STACK_AND_EDGE_TRACK)
def test_secrets_manager_failing_transiently_then_for_good(sim: Sim, stack: str, track: str) -> None:
    s = sim(stack, track)
    with s.fleet.mutate() as state:
        state["secrets"][s.auth_arn]["fail_next"] = 3
        state["secrets"][s.pki_arn]["fail_next"] = 2
    cp = ok(s.control_plane(0))
    assert "read secret" in cp.log and "attempt 3 of 8 failed" in cp.log
    broken = sim(stack, track)
    with broken.fleet.mutate() as state:
        state["secrets"][broken.pki_arn]["fail_always"] = True
    cp = broken.control_plane(0)
    assert cp.run().returncode == 1
    assert f"cannot read secret {broken.pki_arn}" in cp.console
    assert broken.fleet.cluster is None  # never bootstrapped half-configured


@pytest.mark.parametrize(("stack", "track"), EACH_STACK_AND_EDGE_TRACK)
def test_snap_install_failing_once_is_retried(sim: Sim, stack: str, track: str) -> None:
    s = sim(stack, track, store=True)  # the store path: the install that can fail and be retried
    cp = s.control_plane(0)
    with s.fleet.mutate() as state:
        state["snap_failures"] = {cp.id: 1}
    ok(cp)
    assert len(cp.calls("snap install k8s")) == 2
    assert cp.state["node"]["snap"]["k8s"] == f"{track}/stable" and cp.state["node"]["held"] is True
    down = s.control_plane(1) if stack == "aws-prod" else sim(stack, track, store=True).control_plane(0)
    with down.fleet.mutate() as state:
        state["snap_failures"] = {down.id: 99}  # the snap store stays unreachable
    assert down.run().returncode == 1
    assert len(down.calls("snap install k8s")) == 8 and "could not install the k8s snap" in down.console


@pytest.mark.parametrize(("stack", "track"), EACH_STACK_AND_EDGE_TRACK)
@pytest.mark.parametrize("fault", ["expire_minted", "steal_minted"])
def test_a_spent_or_expired_token_is_replaced_by_a_new_one(sim: Sim, stack: str, track: str, fault: str) -> None:
    s = sim(stack, track)
    ok(s.control_plane(0))  # the worker's script is under test: one control plane serves it
    with s.fleet.mutate() as state:
        state["faults"] = {fault: 1}
    w = ok(s.worker())
    assert len(w.calls("aws ssm send-command")) == 2 and "invalid token" in w.log
    assert s.fleet.cluster and w.name in s.fleet.cluster["members"]


@pytest.mark.parametrize(("stack", "track"), EACH_STACK_AND_EDGE_TRACK)
def test_a_node_registering_late_is_labelled_once_it_exists(sim: Sim, stack: str, track: str) -> None:
    s = sim(stack, track)
    ok(s.control_plane(0))
    with s.fleet.mutate() as state:
        state["node_registration_late_lookups"] = 2
    w = ok(s.worker())
    assert "label node" in w.log and "attempt 1 of 30 failed" in w.log and "attempt 2 of 30 failed" in w.log
    assert "attempt 3 of 30 failed" not in w.log
    assert s.fleet.cluster and s.fleet.cluster["nodes"][w.name]["labels"]["ck8s-gpu/pool"]


# ----------------------------------------------------------------- control planes together


@pytest.mark.parametrize("track", EDGE_TRACKS)
def test_two_control_planes_joining_at_once_both_get_in(sim: Sim, track: str) -> None:
    s = sim("aws-prod", track)
    ok(s.control_plane(0))
    with s.fleet.mutate() as state:
        state["join_seconds"] = 600.0  # an etcd learner catching up: k8sd refuses another join meanwhile
    a, b = s.control_plane(1), s.control_plane(2)
    slow = {"CK8S_RETRY_BASE_SECONDS": "1", "CK8S_RETRY_MAX_SECONDS": "1", "CK8S_JOIN_ATTEMPTS": "8"}
    a.start(**slow)
    # b boots while a's join is under way (both booted together; this pins the overlap down)
    while not (s.fleet.cluster or {}).get("joining"):
        assert a.process and a.process.poll() is None, a.log
        time.sleep(0.02)
    b.start(**slow)
    # a's join stays open until k8sd has refused b's at least once, however slowly b booted
    deadline = time.monotonic() + 120
    while "another node is currently joining" not in b.log:
        assert b.process and b.process.poll() is None and time.monotonic() < deadline, b.log
        time.sleep(0.05)
    with s.fleet.mutate() as state:
        state["cluster"]["joining"]["until"] = world.now(state)  # the learner caught up
        state["join_seconds"] = 0.0  # and b's own join, next, catches up at once
    for inst in (a, b):
        result = inst.wait()
        assert result.returncode == 0, inst.log
    assert s.fleet.cluster and len(s.fleet.cluster["members"]) == 3


@pytest.mark.parametrize("track", EDGE_TRACKS)
def test_auth_token_registered_late_joins_once_it_is(sim: Sim, track: str) -> None:
    s = sim("aws-prod", track)
    cp0 = ok(s.control_plane(0))
    with s.fleet.mutate() as state:
        state["cluster"]["capi_token"] = None  # bootstrapped, token not registered yet
    cp1 = s.control_plane(1).start(CK8S_RETRY_BASE_SECONDS="1", CK8S_RETRY_MAX_SECONDS="1", CK8S_JOIN_ATTEMPTS="10")
    while not any("invalid token" in c["call"] for c in s.fleet.world["calls"]):
        assert cp1.process and cp1.process.poll() is None, "cp1 ended before it was refused"
        time.sleep(0.05)
    # what cp0's script does once `k8s status --wait-ready` passes
    subprocess.run([str(cp0.root / "snap/bin/k8s"), "x-capi", "set-auth-token", s.auth_token], check=True)
    result = cp1.wait()
    assert result.returncode == 0, cp1.log
    assert "invalid token" in cp1.log


# ------------------------------------------------------------------------- replacements


@pytest.mark.parametrize("track", EDGE_TRACKS)
def test_replacing_the_first_control_plane_joins_its_peers(sim: Sim, track: str) -> None:
    s = sim("aws-prod", track)
    old = control_planes(s)
    fingerprint = s.fleet.cluster["fingerprint"] if s.fleet.cluster else None
    s.fleet.terminate(old[0])
    new = ok(s.control_plane(0))  # the same (bootstrap) user-data: `pulumi up --replace` of cp-0
    assert "joining them instead of bootstrapping" in new.log
    assert new.calls("k8s bootstrap") == [] and new.calls("k8s join-cluster control-plane")
    cluster = s.fleet.cluster
    assert cluster and cluster["fingerprint"] == fingerprint and new.name in cluster["members"]
    assert s.fleet.world.get("second_bootstraps") is None
    # ADR 0011's order, finished: the old member is removed from a survivor
    removed = subprocess.run([str(old[1].root / "snap/bin/k8s"), "remove-node", old[0].name],
                             capture_output=True, text=True, check=False)
    assert removed.returncode == 0 and removed.stdout.strip() == f"Removed {old[0].name} from cluster."
    after = s.fleet.cluster
    assert after and sorted(after["members"]) == sorted(i.name for i in (new, old[1], old[2]))


@pytest.mark.parametrize("track", EDGE_TRACKS)
def test_replacing_the_only_control_plane_while_it_runs_is_refused(sim: Sim, track: str) -> None:
    s = sim("aws-dev", track)
    (old,) = control_planes(s)
    before = s.fleet.cluster
    new = s.control_plane(0)  # create-before-delete: the old instance still runs
    assert new.run().returncode == 1
    assert "single-control-plane cluster" in new.console and old.id in new.console
    assert s.fleet.cluster == before and s.fleet.world.get("second_bootstraps") is None
    # once the old one (and the refused replacement) are gone, a replacement bootstraps a NEW,
    # empty cluster (ADR 0011: restore from backup)
    s.fleet.terminate(old)
    s.fleet.terminate(new)
    newer = ok(s.control_plane(0))
    cluster = s.fleet.cluster
    assert cluster and before and cluster["fingerprint"] != before["fingerprint"]
    assert list(cluster["members"]) == [newer.name]


# ------------------------------------------------------------------------- failing for good


@pytest.mark.parametrize(("stack", "track"), EACH_STACK_AND_EDGE_TRACK)
def test_a_worker_that_cannot_join_has_its_group_replace_it(sim: Sim, stack: str, track: str) -> None:
    """It powers itself off (docs/adr/0040): its launch template terminates it, its group's EC2
    health check finds it Unhealthy; the worker itself calls no AWS API to get there."""
    s = sim(stack, track)
    w = s.worker()  # no control plane at all
    assert w.run(CK8S_JOIN_ATTEMPTS="2").returncode == 1
    assert f"{FAILED}: worker {w.name}: could not join cluster {s.cluster}" in w.console
    # gpuStack.toolkit host: the containerd drop-in for the image's toolkit comes first (host_toolkit)
    reload = ["systemctl daemon-reload"] if s.settings.gpu_stack.toolkit == "host" else []
    assert w.calls("systemctl") == [*reload, "systemctl poweroff"]
    assert (w.state["state"], w.state["health"]) == ("terminated", "Unhealthy")
    assert w.calls("aws autoscaling") == [] and "powering off: the instance terminates" in w.log


def test_the_replacement_of_a_failed_worker_joins(sim: Sim) -> None:
    s = sim("aws-dev")
    failed = s.worker()
    assert failed.run(CK8S_JOIN_ATTEMPTS="1").returncode == 1 and failed.state["state"] == "terminated"
    control_planes(s)
    replacement = ok(s.worker())  # what the group launches for the Unhealthy one
    cluster = s.fleet.cluster
    assert cluster and replacement.name in cluster["members"] and failed.name not in cluster["members"]
    assert replacement.calls("systemctl") == ["systemctl daemon-reload"]  # host_toolkit's drop-in, no power-off


def test_the_fake_power_off_is_ec2s_and_refuses_what_it_does_not_model(sim: Sim) -> None:
    """tests/fakes/k8s_snap/systemctl.py: `systemctl poweroff` only; an instance in no group stops
    (EC2's default shutdown behaviour) and no health check judges it."""
    s = sim("aws-dev")
    w = s.worker()
    for argv, message in ((["systemctl", "bogus"], "Unknown command verb 'bogus'."),
                          (["systemctl", "reboot"], "is not modelled"),
                          (["systemctl", "poweroff", "--no-wall"], "is not modelled")):
        refused = w.exec(argv)
        assert refused.returncode == 1 and message in refused.stderr, argv
    assert w.state["state"] == "running" and w.calls("systemctl") == []
    cp = s.control_plane(0)
    assert cp.exec(["systemctl", "poweroff"]).returncode == 0
    assert (cp.state["state"], cp.state["health"]) == ("stopped", "Healthy")


def test_a_worker_can_mark_no_instance_unhealthy_nor_end_one(sim: Sim) -> None:
    """The worker role holds no Auto Scaling action (docs/adr/0040): through the fake CLI's IAM,
    neither another worker of its group, nor one of another pool, nor itself."""
    s = sim("aws-prod")
    me, peer, other_pool = s.worker(0), s.worker(0), s.worker(1)
    for target in (peer, other_pool, me):
        for args in (["set-instance-health", "--instance-id", target.id, "--health-status", "Unhealthy",
                      "--no-should-respect-grace-period"],
                     ["terminate-instance-in-auto-scaling-group", "--instance-id", target.id,
                      "--no-should-decrement-desired-capacity"]):
            denied = me.exec(["aws", "autoscaling", args[0], "--region", s.fleet.region, *args[1:]])
            assert denied.returncode == 254 and "is not authorized to perform: autoscaling:" in denied.stderr, args
    assert {i.state["health"] for i in (me, peer, other_pool)} == {"Healthy"}
    assert {i.state["state"] for i in (me, peer, other_pool)} == {"running"}


@pytest.mark.parametrize("track", EDGE_TRACKS)
def test_a_control_plane_that_cannot_join_says_so_on_its_console(sim: Sim, track: str) -> None:
    s = sim("aws-prod", track)
    ok(s.control_plane(0))
    with s.fleet.mutate() as state:
        state["cluster"]["capi_token"] = "rotated-elsewhere"  # its secret no longer opens k8sd
    cp = s.control_plane(1)
    assert cp.run(CK8S_JOIN_ATTEMPTS="2").returncode == 1
    assert f"{FAILED}: control-plane {cp.name}: could not join" in cp.console
    assert cp.calls("autoscaling") == []  # not in a group: the API gate names it instead


# ------------------------------------------------ nothing waits in the graph (docs/adr/0019)


def test_a_control_plane_booting_before_its_load_balancer_exists_waits_for_its_name(sim: Sim) -> None:
    s = sim("aws-dev")
    with s.fleet.mutate() as state:
        balancer = state["load_balancers"].pop(api_lb_name(s.cluster))
    cp = s.control_plane(0).start(CK8S_RETRY_BASE_SECONDS="1")
    deadline = time.monotonic() + 30
    while "look up API load balancer" not in cp.log and time.monotonic() < deadline:
        time.sleep(0.2)
    with s.fleet.mutate() as state:  # the NLB is created (provisioning) while the node retries
        state["load_balancers"][api_lb_name(s.cluster)] = balancer
    result = cp.wait()
    assert result.returncode == 0, f"{result.stderr[-2000:]}\n{cp.log[-2000:]}"
    assert "attempt 1 of 20 failed" in cp.log and cp.state["node"]["extra_sans"] == [LB]


def test_a_control_plane_that_may_not_describe_load_balancers_gives_up_naming_it(sim: Sim) -> None:
    s = sim("aws-dev")
    cp = s.control_plane(0)
    with s.fleet.mutate() as state:
        policy = state["instances"][cp.id]["role_policies"][0]
        # both grants of it: ours, and the cloud controller manager's (it manages Service NLBs)
        policy["Statement"] = [st for st in policy["Statement"]
                               if "elasticloadbalancing:DescribeLoadBalancers" not in st["Action"]]
    assert cp.run(CK8S_RETRY_BASE_SECONDS="0").returncode == 1
    assert f"{FAILED}: bootstrap {cp.name}: no DNS name for API load balancer {api_lb_name(s.cluster)}" in cp.console
    assert "AccessDenied" in cp.log and s.fleet.cluster is None  # nothing bootstrapped without its SAN


@pytest.mark.parametrize("stack", STACKS)
def test_workers_launched_with_the_control_planes_join_once_one_is_up(sim: Sim, stack: str) -> None:
    """Pools launch beside the control planes: their join loop, not the graph, waits."""
    s = sim(stack)
    workers = [s.worker(i).start(CK8S_RETRY_BASE_SECONDS="1") for i in range(len(s.settings.node_pools))]
    deadline = time.monotonic() + 60
    while not all("no running control plane found yet" in w.log for w in workers):  # in their join loops
        assert time.monotonic() < deadline, [w.log[-500:] for w in workers]
        time.sleep(0.2)
    cps = control_planes(s)
    for w in workers:
        result = w.wait()
        assert result.returncode == 0, f"{result.stderr[-2000:]}\n{w.log[-2000:]}"
        assert f"join cluster {s.cluster}: attempt 1 of" in w.log and "joined through" in w.log, w.log  # waited
    assert len(s.fleet.world["cluster"]["members"]) == len(cps) + len(workers)


def test_a_worker_newer_than_the_control_plane_waits_for_its_upgrade(sim: Sim) -> None:
    """A launch template changed by a track upgrade before the control planes were upgraded: the
    mint document refuses the newer worker until every control plane runs its minor."""
    s = sim("aws-dev", "1.34-classic", store=True)  # the newer launch template installs from the store
    (cp,) = control_planes(s)
    newer = dataclasses.replace(s.boot, snap_channel="1.35-classic/stable")
    w = s.worker(boot=newer)
    assert w.run(CK8S_JOIN_ATTEMPTS="2", CK8S_RETRY_BASE_SECONDS="0").returncode == 1
    assert "not at least the joining worker (1.35)" in w.log and w.calls("k8s join-cluster") == []
    assert cp.exec(["snap", "refresh", "k8s", "--channel=1.35-classic/stable"]).returncode == 0
    later = s.worker(boot=newer)
    ok(later, CK8S_RETRY_BASE_SECONDS="0")
    cluster = s.fleet.cluster
    assert cluster is not None and cluster["nodes"][later.name]["version"].startswith("v1.35")
    assert not [v for v in cluster.get("violations", []) if "skew" in v]


@pytest.mark.parametrize("track", EDGE_TRACKS)
def test_control_planes_launched_together_make_one_cluster(sim: Sim, track: str) -> None:
    """cp-1 and cp-2 launch once cp-0 runs, not once it is Ready: cp-0 sees them running, but they
    were launched after it, so it bootstraps (never blind: peers launched before it it would join)."""
    s = sim("aws-prod", track)
    fast = {"CK8S_RETRY_BASE_SECONDS": "1", "CK8S_RETRY_MAX_SECONDS": "2", "CK8S_JOIN_ATTEMPTS": "30"}
    cps = [s.control_plane(i) for i in range(3)]  # added in launch order, all running before any boots
    for cp in cps:
        cp.start(**fast)
    for cp in cps:
        result = cp.wait(timeout=240)
        assert result.returncode == 0, f"{cp.name}:\n{cp.log[-2000:]}"
    assert cps[0].calls("k8s bootstrap") == ["k8s bootstrap"] and "joining them instead" not in cps[0].log
    assert all(cp.calls("k8s join-cluster control-plane") for cp in cps[1:])
    cluster = s.fleet.cluster
    assert cluster and len(cluster["members"]) == 3 and s.fleet.world.get("second_bootstraps") is None
    assert all(cp.state["node"]["extra_sans"] == [LB] for cp in cps)


# ------------------------------------- the cluster's snap, pinned across patch releases (docs/adr/0039)


def pinned(track: str) -> dict[str, object]:
    """settings.kubernetes.snap as the fake store first serves the track (ud.snap_pin's fields)."""
    t = fake_tracks.from_channel(f"{track}/stable")
    return {"snap_version": t.kubernetes_version,
            "snap_revisions": (("amd64", int(t.revision)), ("arm64", int(t.revision) + 1))}


def next_patch(s: SimCluster, track: str) -> str:
    """The publisher releases the track's next patch (amd64 and arm64): the channel moves on."""
    t = fake_tracks.from_channel(f"{track}/stable")
    major, minor, patch = t.kubernetes_version.lstrip("v").split(".")
    version = f"v{major}.{minor}.{int(patch) + 1}"
    with s.fleet.mutate() as state:
        for i, arch in enumerate(("amd64", "arm64")):
            fake_tracks.publish(state, track, arch, version, str(int(t.revision) + 100 + i))
    return version


def node_versions(s: SimCluster) -> dict[str, str]:
    cluster = s.fleet.cluster
    assert cluster is not None
    return {n: node["version"] for n, node in cluster["nodes"].items()}


def replace_control_plane(s: SimCluster, survivor: Instance, old: Instance, index: int) -> Instance:
    """What `ck8s-gpu replace-node` does to a control plane (docs/adr/0016): leave, then a new instance."""
    assert survivor.exec(["k8s", "remove-node", old.name]).returncode == 0
    s.fleet.terminate(old)
    return s.control_plane(index)


# The node script's pin reads the track only as a channel name and the revision it is handed
# (ud.snap_pin); every track still assembles a cluster in the happy path above (all of TRACKS), so
# the edge tracks stand for the middle one here (each-choice coverage, as for the failure paths).
@pytest.mark.parametrize("track", EDGE_TRACKS)
def test_a_pinned_cluster_keeps_its_patch_after_the_channel_moves_on(sim: Sim, track: str) -> None:
    s = sim("aws-prod", track, boot_override=pinned(track), store=True)
    cps = control_planes(s)
    worker = ok(s.worker())
    version = fake_tracks.from_channel(f"{track}/stable").kubernetes_version
    newer = next_patch(s, track)
    new_cp = ok(replace_control_plane(s, cps[0], cps[1], 1))
    s.fleet.terminate(worker)  # its group launches a replacement
    healed = ok(s.worker())
    revision = str(dict(pinned(track)["snap_revisions"])["amd64"])  # type: ignore[call-overload]
    for inst in (new_cp, healed):
        assert inst.state["node"]["snap_release"]["k8s"] == {"revision": revision, "version": version}
        assert inst.state["node"]["snap"]["k8s"] == f"{track}/stable" and inst.state["node"]["held"] is True
        assert f"snap install k8s ({track}/stable --revision={revision})" not in inst.log  # no retry needed
    assert set(node_versions(s).values()) == {version} and newer != version
    cluster = s.fleet.cluster
    assert cluster is not None and {new_cp.name, healed.name} <= set(cluster["members"])
    assert cluster.get("violations", []) == []


@pytest.mark.parametrize("track", EDGE_TRACKS)  # a failure path: the edges, as above
def test_unpinned_a_replaced_control_plane_on_the_new_patch_is_refused_as_k8sd_refuses_it(
        sim: Sim, track: str) -> None:
    s = sim("aws-prod", track, store=True)  # unpinned: from the store
    cps = control_planes(s)
    newer = next_patch(s, track)
    new_cp = replace_control_plane(s, cps[0], cps[1], 1)
    assert new_cp.run(CK8S_JOIN_ATTEMPTS="1").returncode == 1
    assert new_cp.state["node"]["snap_release"]["k8s"]["version"] == newer  # what the channel serves now
    # k8sd's text (app/hooks_join.go handleNoUpgradeInProgress), through `k8s join-cluster`
    assert "failed to handle rollout-upgrade: the joining node has a different patch version than cluster nodes" \
        in new_cp.log
    assert f"{FAILED}: control-plane {new_cp.name}: could not join cluster" in new_cp.console
    cluster = s.fleet.cluster
    assert cluster is not None and new_cp.name not in cluster["members"]


def test_unpinned_a_self_healed_worker_on_the_new_patch_blocks_every_later_control_plane(sim: Sim) -> None:
    """k8sd lets the worker in (no rollout check on a worker's join), then refuses any control plane:
    the cluster's Nodes no longer agree on one version."""
    track = "1.34-classic"
    s = sim("aws-prod", track, store=True)  # unpinned: from the store
    cps = control_planes(s)
    worker = ok(s.worker())
    newer = next_patch(s, track)
    s.fleet.terminate(worker)
    healed = ok(s.worker())
    assert node_versions(s)[healed.name] == newer
    new_cp = replace_control_plane(s, cps[0], cps[1], 1)
    assert new_cp.run(CK8S_JOIN_ATTEMPTS="1").returncode == 1
    old = fake_tracks.from_channel(f"{track}/stable").kubernetes_version.lstrip("v")
    assert (f'the cluster has nodes with different Kubernetes versions "{old}" and "{newer.lstrip("v")}" - upgrade '
            "all nodes to the same version before joining a new one") in new_cp.log


def test_a_hand_broken_pin_is_refused_on_the_node_before_it_joins(sim: Sim) -> None:
    track = "1.34-classic"
    pin = pinned(track)
    first = fake_tracks.from_channel(f"{track}/stable")
    # another architecture's build: the store has no such amd64 revision
    s = sim("aws-dev", track, boot_override={**pin, "snap_revisions": (("amd64", int(first.revision) + 1),)},
            store=True)
    cp = s.control_plane(0)
    assert cp.run(CK8S_RETRY_BASE_SECONDS="0").returncode == 1
    assert f"{FAILED}: bootstrap {cp.name}: could not install the k8s snap --revision={int(first.revision) + 1}" \
        in cp.console
    assert f'error: snap "k8s" revision {int(first.revision) + 1} not available (see \'snap info k8s\')' in cp.log
    # a revision of another patch under the cluster's version: installed, then refused on the node
    s2 = sim("aws-dev", track, boot_override=pin, store=True)
    ok(s2.control_plane(0))
    newer = next_patch(s2, track)
    broken = s2.worker(boot=dataclasses.replace(s2.boot, snap_revisions=(("amd64", int(first.revision) + 100),)))
    assert broken.run().returncode == 1
    assert (f"{FAILED}: worker {broken.name}: k8s snap is not {first.kubernetes_version} revision "
            f"{int(first.revision) + 100} (docs/adr/0039)") in broken.console
    assert broken.state["node"]["snap_release"]["k8s"]["version"] == newer  # what that revision is
    cluster = s2.fleet.cluster
    assert cluster is not None and broken.name not in cluster["members"]

"""Smoke case computeDomain: the check on passing and failing worlds, its settings refusals, values and
render, and the runner recording the ComputeDomain while the barrier holds the pods.

Shapes follow kubernetes-sigs/dra-driver-nvidia-gpu 95932046: ComputeDomain status as
cmd/compute-domain-controller/cdstatus.go + computedomain.go write it (status Ready, nodes[] with
name/ipAddress/cliqueID/index/status); the compute-domain kubelet plugin's slice (driver
compute-domain.nvidia.com, pool = node, devices channel-0 and daemon-0 with type/id attributes).
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import replace
from typing import Any

import pytest

from components.kube.charts import render
from components.settings.model import Settings
from components.smoke.cases import compute_domain as cdc
from components.smoke.collect import collect
from components.smoke.expectations import CaseExpectation, object_name
from components.smoke.run import Runner, RunSpec
from components.smoke.snapshot import Obj
from components.smoke.verifier import FAILED, PASSED, SKIPPED, verify
from components.smoke.view import View
from tests.unit.helpers import by_path, raised_problems
from tests.unit.smoke import fixtures as fx
from tests.unit.smoke import settings_fixtures as sf
from tests.unit.smoke.fake_cluster import FakeClock, FakeCluster

CD_NAME = object_name(fx.RELEASE, "compute-domain", fx.RUN)
CHANNEL_TEMPLATE = object_name(fx.RELEASE, "imex-channel", fx.RUN)
CHANNEL = "/dev/nvidia-caps-imex-channels/channel0"
CLIQUE = "0f5e8c47-2b1a-4c9d-9e3f-7a6b5c4d3e2f.1"


def cd_slice(node: str) -> Obj:
    """cmd/compute-domain-kubelet-plugin driver.go: one pool per node, channel-0 and daemon-0."""
    return {"apiVersion": fx.API, "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-compute-domain.nvidia.com-x8k2d"},
            "spec": {"driver": cdc.CD_DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "channel-0", "attributes": {"type": {"string": "channel"}, "id": {"int": 0}}},
                                 {"name": "daemon-0", "attributes": {"type": {"string": "daemon"}, "id": {"int": 0}}}]}}


def channel_claim(pod: str, node: str, device: str = "channel-0") -> Obj:
    c = fx.claim(pod, node, device, driver=cdc.CD_DRIVER, device_class="compute-domain-default-channel.nvidia.com")
    c["metadata"]["name"] = f"{pod}-channel-4xq9z"
    c["metadata"]["annotations"] = {"resource.kubernetes.io/pod-claim-name": cdc.CHANNEL_CLAIM}
    c["spec"]["devices"]["requests"][0]["name"] = "channel"
    c["status"]["allocation"]["devices"]["results"][0]["request"] = "channel"
    return c


def domain(nodes: tuple[str, ...], *, status: str = "Ready", num_nodes: int = 2, node_status: str = "Ready") -> Obj:
    return {"apiVersion": cdc.CD_API, "kind": "ComputeDomain",
            "metadata": {"name": CD_NAME, "namespace": fx.NS, "labels": {"ck8s-gpu.io/smoke-run": fx.RUN},
                         "uid": str(uuid.uuid5(uuid.NAMESPACE_OID, CD_NAME))},
            "spec": {"numNodes": num_nodes, "channel": {"resourceClaimTemplate": {"name": CHANNEL_TEMPLATE},
                                                        "allocationMode": "Single"}},
            "status": {"status": status, "nodes": [
                {"name": n, "ipAddress": f"10.0.{i}.17", "cliqueID": CLIQUE, "index": i, "status": node_status}
                for i, n in enumerate(nodes)]}}


def case_expectation(pods: int = 2) -> CaseExpectation:
    return CaseExpectation(cdc.CASE, object_name(fx.RELEASE, cdc.CASE, fx.RUN), pods, ("probe",), "gpu.nvidia.com",
                           True, params=(("computeDomain", CD_NAME), ("channelTemplate", CHANNEL_TEMPLATE),
                                         ("pool", "gpu")))


def world(*, in_container: bool = True) -> fx.World:
    """The g6 world's two nodes (gpu-1 each: the gpus case holds gpu-0) with a Ready ComputeDomain,
    one compute-domain pod per node holding its GPU and channel 0, which each container saw."""
    w = fx.real_world(gpus_per_node=2, nodes=fx.NODES)
    w.exp = replace(w.exp, cases=(*w.exp.cases, case_expectation()), in_container=in_container)
    w.snap.slices += [cd_slice(n) for n in fx.NODES]
    w.snap.compute_domains = [domain(fx.NODES)]
    for i, node in enumerate(fx.NODES):
        p = fx.pod_name(cdc.CASE, i)
        gpu = fx.claim(p, node, "gpu-1")
        ch = channel_claim(p, node)
        w.snap.claims += [gpu, ch]
        pod = fx.pod(p, cdc.CASE, node, gpu["metadata"]["name"])
        pod["spec"]["resourceClaims"].append({"name": "channel", "resourceClaimTemplateName": CHANNEL_TEMPLATE})
        pod["status"]["resourceClaimStatuses"].append({"name": "channel", "resourceClaimName": ch["metadata"]["name"]})
        w.snap.pods.append(pod)
        w.snap.events.append(fx.scheduled_event(p, node, "kai-scheduler", 5 + i))
        log = fx.nvidia_smi_log(p, node, cdc.CASE, "probe", [fx.gpu_uuid(node, 1)])
        w.snap.logs[f"{p}/probe"] = log.replace("CK8S-SMOKE barrier", f"CK8S-SMOKE imex channel={CHANNEL}\n"
                                                "CK8S-SMOKE barrier", 1)
    w.snap.jobs.append(fx.job(cdc.CASE, 2))
    return w


def result(w: fx.World) -> Any:
    return cdc.check_compute_domain(View(w.exp, w.snap))


def failed(w: fx.World) -> str:
    r = result(w)
    assert r.status == FAILED, r.message
    assert r.hop == "IMEX channel"
    return "\n".join(r.details)


def pod_of(w: fx.World, i: int) -> Obj:
    return w.obj("Pod", fx.pod_name(cdc.CASE, i))


def channel_of(w: fx.World, i: int) -> Obj:
    return w.obj("ResourceClaim", f"{fx.pod_name(cdc.CASE, i)}-channel-4xq9z")


# --- the check -----------------------------------------------------------------------------------


def test_a_ready_domain_with_a_channel_in_every_container_passes_and_the_whole_run_with_it() -> None:
    w = world()
    r = result(w)
    assert r.status == PASSED, r.details
    assert r.message == (f"ComputeDomain {CD_NAME} Ready on 2 nodes; channels {fx.NODES[0]}:channel0, "
                         f"{fx.NODES[1]}:channel0; every container saw its channel")
    failures = {x.name: x.message for x in verify(w.exp, w.snap) if x.status == FAILED}
    assert failures == {}


def test_skipped_when_the_case_is_off() -> None:
    r = cdc.check_compute_domain(View(fx.real_world().exp, fx.real_world().snap))
    assert (r.status, r.message) == (SKIPPED, "smokeTest.computeDomain is off")


def test_a_container_without_the_channel_device_fails_naming_the_injection() -> None:
    w = world()
    p = fx.pod_name(cdc.CASE, 1)
    w.snap.logs[f"{p}/probe"] = w.snap.logs[f"{p}/probe"].replace(f"CK8S-SMOKE imex channel={CHANNEL}\n", "")
    assert failed(w) == (f"container {p}/probe saw no IMEX channel: the channel claim was prepared but not injected "
                         f"(expected {CHANNEL})")


def test_a_container_seeing_another_channel_than_allocated_fails() -> None:
    w = world()
    p = fx.pod_name(cdc.CASE, 0)
    w.snap.logs[f"{p}/probe"] = w.snap.logs[f"{p}/probe"].replace("channel0", "channel3")
    assert failed(w) == (f"container {p}/probe saw /dev/nvidia-caps-imex-channels/channel3, not its allocated "
                         f"{CHANNEL}")


def test_the_domain_missing_fails() -> None:
    w = world()
    w.snap.compute_domains = []
    assert failed(w) == (f"ComputeDomain {CD_NAME} was never seen (is its CRD installed, was it created with the "
                         "chart?)")


def test_a_domain_not_ready_with_one_node_fails_listing_its_nodes() -> None:
    w = world()
    w.snap.compute_domains = [domain(fx.NODES[:1], status="NotReady")]
    assert failed(w) == (f"ComputeDomain {CD_NAME} is 'NotReady' with 1 of 2 nodes Ready (status.nodes: "
                         f"{fx.NODES[0]} (Ready)): the controller never saw every IMEX daemon join")


def test_a_domain_listing_a_not_ready_daemon_fails() -> None:
    w = world()
    w.snap.compute_domains = [domain(fx.NODES, node_status="NotReady")]
    assert "with 0 of 2 nodes Ready" in failed(w)


def test_a_domain_ready_on_other_nodes_than_the_pods_fails() -> None:
    """Issue 45: judged on the nodes the pods ran on. A domain Ready on two nodes is not ready for
    pods that ran on one of them and a third."""
    w = world()
    w.snap.compute_domains = [domain((fx.NODES[0], "other-node"))]
    assert failed(w) == (f"pod(s) {fx.pod_name(cdc.CASE, 1)} ran on node {fx.NODES[1]}, which ComputeDomain "
                         f"{CD_NAME} does not list Ready (Ready: {fx.NODES[0]}, other-node): no IMEX daemon of the "
                         "domain serves that node")


def test_the_wrong_num_nodes_fails() -> None:
    w = world()
    w.snap.compute_domains = [domain(fx.NODES, num_nodes=0)]
    assert failed(w) == f"ComputeDomain {CD_NAME} has numNodes 0, expected 2"


def test_a_channel_claim_never_allocated_fails() -> None:
    w = world()
    channel_of(w, 0)["status"] = {}
    p = fx.pod_name(cdc.CASE, 0)
    assert failed(w) == (f"pod {p}'s 'channel' claim was never allocated by compute-domain.nvidia.com (claim "
                         f"{p}-channel-4xq9z holds no compute-domain.nvidia.com device)")


def test_a_channel_claim_on_another_node_fails() -> None:
    w = world()
    c = channel_of(w, 1)
    c["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] = [fx.NODES[0]]
    p = fx.pod_name(cdc.CASE, 1)
    assert failed(w) == (f"pod {p} ran on node {fx.NODES[1]}, but its channel claim {p}-channel-4xq9z is on "
                         f"{fx.NODES[0]}")


def test_a_claim_of_a_daemon_device_is_no_channel() -> None:
    w = world()
    c = channel_of(w, 0)
    c["status"]["allocation"]["devices"]["results"][0]["device"] = "daemon-0"
    # The slice's daemon-0 has id 0 too: only a `channel` device is an IMEX channel.
    for s in w.snap.slices:
        if s["spec"]["driver"] == cdc.CD_DRIVER:
            s["spec"]["devices"] = [d for d in s["spec"]["devices"] if d["name"] != "daemon-0"]
    p = fx.pod_name(cdc.CASE, 0)
    assert failed(w) == f"claim {p}-channel-4xq9z holds daemon-0: no IMEX channel"


def test_two_pods_on_one_node_fail_naming_it() -> None:
    w = world()
    pod_of(w, 1)["spec"]["nodeName"] = fx.NODES[0]
    channel_of(w, 1)["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] = [
        fx.NODES[0]]
    p0, p1 = fx.pod_name(cdc.CASE, 0), fx.pod_name(cdc.CASE, 1)
    assert f"pods {p0}, {p1} share node {fx.NODES[0]}: the case needs 2 distinct nodes" in failed(w)


def test_a_missing_or_pending_pod_fails() -> None:
    w = world()
    w.snap.pods = [p for p in w.snap.pods if p["metadata"]["name"] != fx.pod_name(cdc.CASE, 1)]
    assert failed(w).startswith(f"only 1 of 2 pods of Job {object_name(fx.RELEASE, cdc.CASE, fx.RUN)} exist")
    w = world()
    del pod_of(w, 1)["spec"]["nodeName"]
    assert f"pod {fx.pod_name(cdc.CASE, 1)} was never scheduled" in failed(w)


def test_without_a_kubelet_the_containers_are_not_judged() -> None:
    w = world(in_container=False)
    w.snap.logs = {}
    r = result(w)
    assert r.status == PASSED and r.message.endswith("containers not checked: no kubelet on simulated nodes")


# --- settings, values, render ----------------------------------------------------------------------


def problems(doc: dict[str, Any]) -> dict[str, str]:
    return by_path(raised_problems(sf.plan, doc))  # the gate, then the smoke test's plan


def local(**over: Any) -> dict[str, Any]:
    doc = copy.deepcopy(sf.LOCAL_CD_FA)
    doc["smokeTest"]["firstAvailable"] = {"enabled": False}
    for key, value in over.items():
        doc[key] = value
    return doc


def test_values_expectations_and_render_agree() -> None:
    plan = sf.plan(local())
    assert plan.values["computeDomain"] == {"enabled": True, "nodes": 2,
                                            "nodeSelector": {"run.ai/simulated-gpu-node-pool": "gb200"}}
    case = plan.expectations.case(cdc.CASE)
    assert case is not None and case.pods == 2 and case.param("pool") == "gb200"
    objs = render("gpu-smoke-test", plan.values, release=plan.release, namespace=plan.namespace)
    cd = next(o for o in objs if o["kind"] == "ComputeDomain")
    assert cd["metadata"]["name"] == case.param("computeDomain")
    assert cd["spec"] == {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": case.param("channelTemplate")}}}
    job = next(o for o in objs if o["kind"] == "Job" and o["metadata"]["name"] == case.job)
    spec = job["spec"]["template"]["spec"]
    assert spec["resourceClaims"][1] == {"name": "channel", "resourceClaimTemplateName": case.param("channelTemplate")}
    assert spec["containers"][0]["resources"]["claims"] == [{"name": "gpu"}, {"name": "channel"}]
    term = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term == {"labelSelector": {"matchLabels": {"ck8s-gpu.io/smoke-run": plan.run_id,
                                                      "ck8s-gpu.io/smoke-case": cdc.CASE}},
                    "topologyKey": "kubernetes.io/hostname"}
    assert spec["nodeSelector"] == {"run.ai/simulated-gpu-node-pool": "gb200"}


def test_the_pool_defaults_to_smoke_pool_then_the_first_multi_node_nvlink_pool() -> None:
    doc = local(local={"kubeletPools": ["h100", "gb200"]})
    doc["smokeTest"]["computeDomain"] = {"enabled": True}
    # On local smokeTest.pool defaults to the first kubelet pool (h100), which is no multi-node pool.
    assert problems(doc)["settings.smokeTest.pool"].startswith("pool 'h100' (p5.48xlarge) has NVLink scope")
    model = Settings.model_validate({**local(local={}), "platform": "aws", "region": "eu-west-1",
                                     "smokeTest": {"computeDomain": {"enabled": True}}})
    pool = cdc.case_pool(model)
    assert pool is not None and pool.name == "gb200"  # the first (and only) p6e-gb200 pool


def test_refused_without_compute_domains() -> None:
    doc = local(gpuStack={"computeDomains": False})
    assert "needs ComputeDomains" in problems(doc)["settings.smokeTest.computeDomain.enabled"]


def test_refused_on_a_pool_without_multi_node_nvlink() -> None:
    doc = local()
    doc["smokeTest"]["computeDomain"]["pool"] = "h100"
    assert problems(doc)["settings.smokeTest.computeDomain.pool"] == (
        "pool 'h100' (p5.48xlarge) has NVLink scope 'single-node', not multi-node: IMEX channels join GPUs across "
        "nodes of one NVLink domain")


def test_refused_on_an_unknown_pool_and_on_a_kwok_pool() -> None:
    doc = local()
    doc["smokeTest"]["computeDomain"]["pool"] = "nope"
    assert problems(doc)["settings.smokeTest.computeDomain.pool"].startswith("'nope' is not a node pool")
    doc = local(local={"kubeletPools": ["h100"]})
    assert "is no kubelet pool" in problems(doc)["settings.smokeTest.computeDomain.pool"]


def test_refused_with_more_nodes_than_the_pool_has() -> None:
    doc = local()
    doc["smokeTest"]["computeDomain"]["nodes"] = 3
    assert problems(doc)["settings.smokeTest.computeDomain.nodes"] == (
        "needs 3 nodes of pool 'gb200', which has 2 at its desired size (settings.nodePools[0].desiredSize): one pod "
        "per node")


def test_refused_on_kind_and_without_any_multi_node_pool() -> None:
    doc = copy.deepcopy(sf.KIND)
    doc["smokeTest"] = {"gpus": 2, "computeDomain": {"enabled": True}}
    doc["gpuStack"] = {"computeDomains": True}
    found = problems(doc)["settings.smokeTest.computeDomain.enabled"]
    assert "runs no compute-domain.nvidia.com kubelet plugin" in found
    doc = copy.deepcopy(sf.AWS)
    doc["smokeTest"] = {"gpus": 2, "computeDomain": {"enabled": True}}
    doc["gpuStack"] = {"computeDomains": True}
    assert problems(doc)["settings.smokeTest.computeDomain.pool"].startswith(
        "no node pool's instance type has multi-node NVLink")


# --- the runner and collect ------------------------------------------------------------------------


def test_the_runner_keeps_the_domain_as_it_was_while_the_pods_held_their_claims() -> None:
    gw = FakeCluster()
    clock = FakeClock(gw)
    gw.create(domain(fx.NODES[:1], status="NotReady"))
    exp = replace(fx.expectations(pools=None, cases=()), cases=(case_expectation(),))
    runner = Runner(gw, RunSpec(fx.RELEASE, fx.NS, fx.RUN, 600, 10, exp), clock=clock, poll_seconds=1)
    runner.record_domain(case_expectation())  # never Ready: waits its 30 s, keeps the last version seen
    assert runner.compute_domains[CD_NAME]["status"]["status"] == "NotReady"
    assert clock.now - 1000.0 >= 30
    gw.patch(cdc.CD_API, "ComputeDomain", CD_NAME, fx.NS, {"status": domain(fx.NODES)["status"]}, subresource="status")
    runner.record_domain(case_expectation())
    held = runner.compute_domains[CD_NAME]
    assert [n["name"] for n in held["status"]["nodes"]] == list(fx.NODES)
    # After the Job the nodes left the domain: collect keeps the recorded version, not the listed one.
    gw.patch(cdc.CD_API, "ComputeDomain", CD_NAME, fx.NS, {"status": {"status": "Ready", "nodes": []}},
             subresource="status")
    snap = collect(gw, replace(exp, dcgm=False), compute_domains=runner.compute_domains)
    assert snap.compute_domains == [held]
    assert collect(gw, replace(exp, dcgm=False)).compute_domains[0]["status"]["nodes"] == []


@pytest.mark.parametrize("odd", [{"spec": "x", "status": ["y"]}, {"spec": {"numNodes": "2"}, "status": {"nodes": 3}},
                                 {"status": {"status": "Ready", "nodes": ["node", None]}}])
def test_a_domain_of_any_shape_fails_without_a_crash(odd: Obj) -> None:
    w = world()
    w.snap.compute_domains = [{"metadata": {"name": CD_NAME}, **odd}]
    assert failed(w).startswith(f"ComputeDomain {CD_NAME} ")

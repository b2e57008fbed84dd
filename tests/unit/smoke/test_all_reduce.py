"""Smoke case allReduce: the nccl-tests parser and verdict on recorded outputs, the hook into the
verifier, the rendered objects, and every settings refusal.

tests/data/nccl/*.log are written in the formats of nccl-tests v2.18.3 (src/util.cu) and NCCL
v2.30.4-1 / aws-ofi-nccl v1.19.0 INFO lines (components/smoke/all_reduce.py names each source),
for 2 nodes x 8 GPUs: a pass, a missing rank (rank 13, mpirun aborted), the socket fallback,
bandwidth under the p5.48xlarge floor, and wrong results. Every version's spelling, the look-alikes
that must pass and each failure's named cause: tests/unit/smoke/test_all_reduce_formats.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.kube.charts import render
from components.policies.namespaces import smoke_isolation_problem
from components.settings import SettingsError
from components.smoke import all_reduce
from components.smoke.expectations import CASE_LABEL, RUN_LABEL
from components.smoke.verifier import FAILED, PASSED, Snapshot, verify
from components.tables import pins
from components.validate import parse
from tests.unit.helpers import settings_problems
from tests.unit.smoke import settings_fixtures as sf

DATA = Path(__file__).resolve().parents[2] / "data" / "nccl"
P5 = all_reduce.FLOORS["p5.48xlarge"]


def text(name: str) -> str:
    return (DATA / f"{name}.log").read_text()


def verdict(name: str, **kw: Any) -> all_reduce.Verdict:
    args: dict[str, Any] = {"nodes": 2, "gpus": 8, "floor_gbps": P5.gbps, "source": P5.source} | kw
    return all_reduce.verdict(text(name), **args)


def hops(v: all_reduce.Verdict) -> list[str]:
    return [hop for hop, _ in v.problems]


# --- parser and verdict -----------------------------------------------------------------------


def test_the_parser_reads_every_part_of_a_real_report() -> None:
    r = all_reduce.parse(text("pass"))
    assert r.started and len(r.ranks) == 16
    assert {x.host for x in r.ranks} == {"gpu-smoke-test-all-reduce-40b6a1ba-0", "gpu-smoke-test-all-reduce-40b6a1ba-1"}
    assert r.ranks[9] == all_reduce.Rank(9, "gpu-smoke-test-all-reduce-40b6a1ba-1", 1, "NVIDIA H100 80GB HBM3")
    assert [row.size for row in r.rows] == [1073741824, 2147483648]
    assert r.rows[1].busbw_out == 443.72 and r.rows[1].busbw_in == 442.06 and r.rows[1].wrong_in == 0
    assert r.avg_busbw == 440.923 and r.out_of_bounds == 0
    assert len(r.networks) == 2 and all(n == {"Libfabric"} for n in r.networks.values())
    assert all(p == {"efa"} for p in r.providers.values()) and len(r.providers) == 2


def test_a_healthy_run_passes_with_its_numbers() -> None:
    v = verdict("pass")
    assert v.problems == ()
    assert "16 ranks on 2 node(s) over Libfabric (efa)" in v.summary and "440.923 GB/s >= 352" in v.summary


def test_a_missing_rank_fails_at_the_ranks_hop_naming_it() -> None:
    v = verdict("rank-missing")
    assert hops(v)[0] == all_reduce.HOP_RANKS
    first = v.problems[0][1]
    assert "15 of 16 ranks reported" in first and "missing rank(s) 13" in first
    # The aborted run never printed its footer: results and bandwidth say so too.
    assert any("did not conclude" in p for h, p in v.problems if h == all_reduce.HOP_RESULTS)
    assert all_reduce.HOP_BANDWIDTH in hops(v)


def test_the_socket_fallback_fails_at_the_network_hop() -> None:
    v = verdict("socket-fallback")
    assert hops(v)[0] == all_reduce.HOP_NETWORK
    network = [p for h, p in v.problems if h == all_reduce.HOP_NETWORK]
    assert len([p for p in network if "fell back to sockets" in p]) == 2  # one per host
    assert all_reduce.HOP_RANKS not in hops(v)
    assert any("22.3" in p and "352" in p for h, p in v.problems if h == all_reduce.HOP_BANDWIDTH)


def test_bandwidth_under_the_floor_fails_with_both_numbers_and_the_source() -> None:
    v = verdict("under-floor")
    assert hops(v) == [all_reduce.HOP_BANDWIDTH]
    assert v.problems[0][1] == (f"average bus bandwidth 248.282 GB/s is under the floor 352 GB/s ({P5.source})")
    assert verdict("under-floor", floor_gbps=200.0).problems == ()  # an own, lower floor passes it


def test_wrong_results_fail_at_the_results_hop() -> None:
    v = verdict("wrong-results")
    assert hops(v) == [all_reduce.HOP_RESULTS]
    assert v.problems[0][1] == "2147483648 B: 1.04858e+06 wrong element(s) out-of-place, 1.04858e+06 in-place"


def test_other_networks_and_providers_and_unchecked_runs_fail() -> None:
    ib = text("pass").replace("Using network Libfabric", "Using network IB")
    assert any("used network IB" in p for _, p in all_reduce.verdict(ib, nodes=2, gpus=8, floor_gbps=1, source="s")
               .problems)
    tcp = text("pass").replace("Selected provider is efa, fabric is efa", "Selected provider is tcp, fabric is tcp")
    assert any("selected provider tcp" in p for _, p in all_reduce.verdict(tcp, nodes=2, gpus=8, floor_gbps=1,
                                                                           source="s").problems)
    quiet = "\n".join(line for line in text("pass").splitlines() if "NCCL INFO" not in line)
    assert any("NCCL_DEBUG=INFO" in p for _, p in all_reduce.verdict(quiet, nodes=2, gpus=8, floor_gbps=1,
                                                                     source="s").problems)
    # Three nodes expected, two reported.
    assert "ranks ran on 2 host(s)" in " ".join(p for _, p in verdict("pass", nodes=3).problems)


def test_no_report_and_a_launcher_that_never_started_fail_at_the_first_hop() -> None:
    assert all_reduce.verdict(None, nodes=2, gpus=8, floor_gbps=1, source="s").problems[0][0] == all_reduce.HOP_RANKS
    v = all_reduce.verdict("CK8S-SMOKE end rc=0\nCK8S-SMOKE all-reduce peer x unreachable\n", nodes=2, gpus=8,
                           floor_gbps=1, source="s")
    assert v.problems == ((all_reduce.HOP_RANKS, "all_reduce_perf never started: CK8S-SMOKE end rc=0 | "
                                                 "CK8S-SMOKE all-reduce peer x unreachable"),)


def test_mpirun_tagged_output_parses_like_plain_output() -> None:
    tagged = "".join(f"[1,0]<stdout>:{line}\n" for line in text("pass").splitlines())
    assert all_reduce.verdict(tagged, nodes=2, gpus=8, floor_gbps=P5.gbps, source="s").problems == ()


def test_sizes_follow_nccl_tests_binary_units() -> None:
    assert [all_reduce.size_bytes(s) for s in ("8", "1K", "32M", "2G")] == [8, 1024, 32 * 1024**2, 2 * 1024**3]


# --- the verifier hook --------------------------------------------------------------------------


def _result(log: str | None) -> Any:
    plan = sf.plan(sf.AWS_ALL_REDUCE)
    case = plan.expectations.case(all_reduce.CASE)
    assert case is not None and case.pods == 2 and case.gpus_per_pod == 8 and case.min_bus_bandwidth == P5.gbps
    pods = [{"metadata": {"name": f"{case.job}-{i}-abcde", "labels": {RUN_LABEL: plan.run_id,
                                                                      CASE_LABEL: all_reduce.CASE}}}
            for i in range(2)]
    logs = {f"{pods[0]['metadata']['name']}/all-reduce": log} if log is not None else {}
    snap = Snapshot(pods=pods, logs=logs)
    return next(r for r in verify(plan.expectations, snap) if r.name == "case-all-reduce")


def test_the_verifier_runs_the_case_and_names_the_failing_hop() -> None:
    ok = _result(text("pass"))
    assert ok.status == PASSED and ok.hop == all_reduce.HOP
    bad = _result(text("socket-fallback"))
    assert bad.status == FAILED and bad.hop == all_reduce.HOP_NETWORK
    assert bad.message.startswith("[all-reduce/nccl network] NCCL on gpu-smoke-test-all-reduce-40b6a1ba-0 fell back")
    assert any(d.startswith("[all-reduce/bus bandwidth]") for d in bad.details)
    assert _result(None).hop == all_reduce.HOP_RANKS


def test_expectations_survive_the_engine_round_trip() -> None:
    from components.smoke.expectations import Expectations

    exp = sf.plan(sf.AWS_ALL_REDUCE).expectations
    floats = exp.to_dict()
    for c in floats["cases"]:
        c["pods"], c["gpus_per_pod"] = float(c["pods"]), float(c["gpus_per_pod"])
    assert Expectations.from_dict(floats) == exp


# --- the chart ------------------------------------------------------------------------------------


def test_the_case_renders_a_topology_bound_gang_of_whole_nodes_with_their_efa() -> None:
    plan = sf.plan(sf.AWS_ALL_REDUCE)
    objs = render("gpu-smoke-test", plan.values, release=plan.release, namespace=plan.namespace)
    mine = {o["kind"]: o for o in objs if "-all-reduce-" in o["metadata"]["name"]}
    assert set(mine) == {"ConfigMap", "Service", "NetworkPolicy", "PodGroup", "ResourceClaimTemplate", "Job"}
    assert mine["PodGroup"]["spec"]["minMember"] == 2
    assert mine["PodGroup"]["spec"]["topologyConstraint"] == {
        "topology": "aws-network", "requiredTopologyLevel": "topology.k8s.aws/network-node-layer-3"}
    request = mine["ResourceClaimTemplate"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert request["count"] == 8 and request["allocationMode"] == "ExactCount"
    job = mine["Job"]["spec"]
    assert job["completionMode"] == "Indexed" and job["parallelism"] == job["completions"] == 2
    pod = job["template"]["spec"]
    assert pod["subdomain"] == mine["Service"]["metadata"]["name"] and pod["nodeSelector"]
    res = pod["containers"][0]["resources"]
    assert res["limits"]["vpc.amazonaws.com/efa"] == "32" and res["requests"]["hugepages-2Mi"] == "5120Mi"
    assert pod["containers"][0]["image"] == pins.image("nccl-tests").ref
    # The restricted Pod Security Standard still holds.
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    preferred = sf.plan(sf.AWS_ALL_REDUCE, allReduce={"enabled": True, "placement": "preferred",
                                                       "topologyLevel": "zone"})
    group = next(o for o in render("gpu-smoke-test", preferred.values, release="gpu-smoke-test",
                                   namespace="gpu-smoke-test") if o["kind"] == "PodGroup")
    assert group["spec"]["topologyConstraint"]["preferredTopologyLevel"] == "topology.kubernetes.io/zone"


def test_its_network_policy_opens_the_case_to_itself_only() -> None:
    from components.kube.charts import release_chart_path
    from components.smoke.values import CHART

    plan = sf.plan(sf.AWS_ALL_REDUCE)
    props = {"chart": release_chart_path(CHART), "namespace": plan.namespace, "name": plan.release,
             "values": plan.values}
    assert smoke_isolation_problem([("kubernetes:helm.sh/v3:Release", props)], plan.namespace) is None


# --- settings ---------------------------------------------------------------------------------------


def problems(raw: dict[str, Any], **all_reduce_settings: Any) -> dict[str, str]:
    doc = {**raw, "smokeTest": {**raw.get("smokeTest", {}),
                                "allReduce": {"enabled": True, **all_reduce_settings}}}
    return settings_problems(doc)


def test_the_case_is_off_by_default_and_valid_on_an_efa_pool() -> None:
    assert parse({"platform": "aws", "region": "eu-north-1"}).smoke_test.all_reduce.enabled is False
    assert parse(sf.AWS_ALL_REDUCE).smoke_test.all_reduce.enabled is True


@pytest.mark.parametrize("raw", [sf.LOCAL, sf.KIND], ids=["local", "kind"])
def test_simulated_platforms_refuse_it_with_the_reason(raw: dict[str, Any]) -> None:
    p = problems(raw)
    assert "simulated" in p["settings.smokeTest.allReduce.enabled"]
    assert "no NCCL, no EFA" in p["settings.smokeTest.allReduce.enabled"]


def test_local_kubelet_pools_are_refused_too() -> None:
    raw = {**sf.LOCAL, "local": {"kubeletPools": ["gpu"]}}
    assert "simulated" in problems(raw)["settings.smokeTest.allReduce.enabled"]


BASE = sf.AWS_ALL_REDUCE


@pytest.mark.parametrize(("change", "path", "fragment"), [
    ({"smokeTest": {"scheduler": "default"}}, "settings.smokeTest.allReduce.enabled", "scheduler kai"),
    ({"gpuStack": {"topology": {"enabled": False}}}, "settings.smokeTest.allReduce.enabled", "KAI Topology"),
    ({"nodePools": [{**BASE["nodePools"][0], "efa": False}]}, "settings.nodePools[0].efa", "is off for pool 'h100'"),
    ({"nodePools": [{**BASE["nodePools"][0], "minSize": 1, "desiredSize": 1, "maxSize": 1, "efa": True}]},
     "settings.smokeTest.allReduce.nodes", "holds at most 1 (settings.nodePools[0].maxSize)"),
    ({"nodePools": [{**BASE["nodePools"][0], "instanceType": "p5e.48xlarge"}]},
     "settings.smokeTest.allReduce.minBusBandwidthGBps", "no published bus-bandwidth floor for p5e.48xlarge"),
    ({"queues": [{"name": "smoke-test", "gpu": {"quota": 8}}]}, "settings.queues[0].gpu.quota",
     "holds 16 non-preemptible GPU(s)"),
])
def test_each_refusal_names_its_field(change: dict[str, Any], path: str, fragment: str) -> None:
    raw = {**BASE, **change}
    raw["smokeTest"] = {**change.get("smokeTest", {}), "allReduce": {"enabled": True}}
    with pytest.raises(SettingsError) as err:
        parse(raw)
    found = dict(err.value.problems)
    assert fragment in found.get(path, ""), found


@pytest.mark.parametrize(("own", "path", "fragment"), [
    ({"topologyLevel": "rack"}, "settings.smokeTest.allReduce.topologyLevel", "'rack' is no level of Topology"),
    ({"minBytes": "4G", "maxBytes": "1G"}, "settings.smokeTest.allReduce.minBytes", "4G is above maxBytes 1G"),
    ({"pool": "nope"}, "settings.smokeTest.allReduce.pool", "'nope' is not a node pool (h100)"),
    ({"nodes": 1}, "settings.smokeTest.allReduce.nodes", "greater than or equal to 2"),
    ({"image": "public.ecr.aws/hpc-cloud/nccl-tests:latest"}, "settings.smokeTest.allReduce.image", "match"),
])
def test_own_fields_are_checked(own: dict[str, Any], path: str, fragment: str) -> None:
    found = problems(BASE, **own)
    assert fragment in found.get(path, ""), found


def test_no_efa_pool_at_all_is_refused_at_the_pool_field() -> None:
    raw = {**sf.AWS, "nodePools": [{"name": "l4", "instanceType": "g6.xlarge", "maxSize": 3}], "smokeTest": {}}
    found = problems(raw)
    assert "no node pool's instance type has EFA" in found["settings.smokeTest.allReduce.pool"]


def test_an_own_floor_replaces_the_missing_published_one() -> None:
    raw = {**BASE, "nodePools": [{**BASE["nodePools"][0], "instanceType": "p5e.48xlarge"}],
           "smokeTest": {"allReduce": {"enabled": True, "minBusBandwidthGBps": 300}}}
    case = sf.plan(raw).expectations.case(all_reduce.CASE)
    assert case is not None and case.min_bus_bandwidth == 300 and "minBusBandwidthGBps" in case.floor_source


def test_every_floor_names_a_source_and_a_type_with_efa() -> None:
    from components.facts.efa import efa_supported

    for instance_type, f in all_reduce.FLOORS.items():
        assert efa_supported(instance_type) and f.gbps > 0 and "awsome-distributed-training" in f.source

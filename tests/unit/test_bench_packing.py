"""scripts/bench_packing.py's pure parts: each mode's plan holds the workload by its own rule, and
the objects ask for what the mode gives (docs/benchmarks.md, "Packing")."""

from __future__ import annotations

import math
from collections import Counter

from components.tables.mig_profiles import layout_problem
from tests.helpers.tools import load_script

bench = load_script("bench_packing")


def test_the_mig_nodes_layout_fits_an_h100() -> None:
    assert layout_problem(bench.GPU, bench.MIG_LAYOUT) is None


def test_each_plan_has_room_for_every_pod_by_its_rule() -> None:
    jobs = sum(k.count * k.gpus for k in bench.WORKLOAD)
    small = [k for k in bench.WORKLOAD if not k.gpus]
    whole = bench.plan("whole")
    assert whole.gpus_paid >= jobs + sum(k.count for k in small) > whole.gpus_paid - bench.GPUS_PER_NODE
    mig = bench.plan("mig")
    assert mig.whole_nodes * bench.GPUS_PER_NODE >= jobs
    for k in small:  # instances of its profile on the MIG nodes
        assert mig.mig_nodes * bench.GPUS_PER_NODE * bench.MIG_LAYOUT[k.profile] >= k.count
    ts = bench.plan("timeslicing")
    for k in small:  # a shared GPU's memory holds its pods
        assert ts.shared[k.name] * k.memory_gb <= bench.GPU_MEMORY_GB
    assert ts.gpus_paid >= jobs + sum(math.ceil(k.count / ts.shared[k.name]) for k in small)


def test_time_slicing_puts_pods_on_shared_claims_and_mig_asks_by_profile() -> None:
    objs = bench.objects(bench.plan("timeslicing"))
    claims = Counter(o["spec"]["resourceClaims"][0]["resourceClaimName"] for o in objs if o["kind"] == "Pod")
    assert claims["small-inference-shared-0"] == 8 and claims["medium-inference-shared-0"] == 2
    mig = bench.objects(bench.plan("mig"))
    small = next(o for o in mig if o["kind"] == "ResourceClaim" and o["metadata"]["name"] == "small-inference-0")
    exactly = small["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["deviceClassName"] == "mig.nvidia.com"
    assert "'1g.10gb'" in exactly["selectors"][0]["cel"]["expression"]
    assert sum(o["kind"] == "Pod" for o in mig) == sum(k.count for k in bench.WORKLOAD)


def test_busy_gpu_time_is_the_workloads_declared_compute() -> None:
    assert bench.busy_gpu_hours() == sum(k.count * max(k.gpus, 1) * k.busy for k in bench.WORKLOAD)

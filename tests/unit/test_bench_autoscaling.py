"""scripts/bench_autoscaling.py's pure parts: the trace is the one its SHAPE describes, the same for
a seed, and fixed pools are sized for its true peak (docs/benchmarks.md, "Autoscaling")."""

from __future__ import annotations

import math
import statistics

from tests.helpers.tools import load_script

bench = load_script("bench_autoscaling")


def test_a_seed_gives_one_trace_and_another_seed_another() -> None:
    a, b, c = (bench.trace(bench.SHAPE, 6, seed) for seed in (7, 7, 8))
    assert a == b and a != c


def test_the_trace_has_the_shape_it_cites() -> None:
    jobs = bench.trace(bench.SHAPE, 200, 1)  # long enough for the statistics to settle
    assert abs(len(jobs) / 200 - bench.SHAPE.jobs_per_hour) < 0.1 * bench.SHAPE.jobs_per_hour
    share_1 = sum(j.gpus == 1 for j in jobs) / len(jobs)
    assert abs(share_1 - dict(bench.SHAPE.gpu_mix)[1]) < 0.05  # Helios: median 1 GPU
    minutes = sorted(j.duration / 60 for j in jobs)
    # the median is Helios' 206 s, up to the 60 s floor every job has
    assert 2.5 < statistics.median(minutes) < 5.0
    assert max(minutes) <= bench.SHAPE.max_minutes
    # busiest in the middle of the window: the middle third has more arrivals than the first
    third = 200 * 3600 / 3
    middle = sum(third <= j.arrive < 2 * third for j in jobs)
    first = sum(j.arrive < third for j in jobs)
    assert middle > 1.3 * first


def test_fixed_pools_hold_the_peak_and_not_a_node_more() -> None:
    jobs = [bench.Job("a", 0, 100, 1), bench.Job("b", 50, 100, 1), bench.Job("c", 120, 10, 1),
            bench.Job("d", 0, 100, 8), bench.Job("e", 10, 10, 4)]
    sizes = bench.peak_nodes(jobs)
    assert sizes == {"l4": 2, "l4x4": 1, "h100": 1}  # a and b overlap; c starts after a ended


def test_percentiles_and_the_summary() -> None:
    run = bench.Run("x", created={"a": 0, "b": 0}, running={"a": 10, "b": 100}, finished={"a": 3610, "b": 100})
    run.found_free = {"a"}
    s = bench.summary(run, [bench.Job("a", 0, 3600, 2), bench.Job("b", 0, 60, 1)])
    assert s["gpu_hours_allocated"] == 2.0 and s["scale_up_p50_s"] == 100
    assert math.isclose(bench._pct([1.0, 2.0, 3.0, 4.0], 50), 2.5)

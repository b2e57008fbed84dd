"""Benchmark the offline plan (a benchmark, not a test): `python scripts/bench_plan.py [--write FILE]`.

For each committed stack and a synthetic stack whose pools total 1,000 GPU nodes it measures, each
in a fresh process: resources registered, plan wall time, peak RSS; and, in the same run, the
floor: the bare Pulumi SDK registering the same number of resources of the same types with fixed
inputs under the same recording mock engine. The ratio plan/floor is the project's own overhead.
Then every region botocore knows that a stamp of aws-dev accepts (scripts/bench_stamp.py
accepted_regions) is planned in long-lived parallel processes (one per core).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import copy
import json
import os
import platform
import resource
import runpy
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_stamp import accepted_regions  # noqa: E402  (scripts/bench_stamp.py)
from docsection import write_marked_section  # noqa: E402  (scripts/docsection.py)


def _config_for(stack: str) -> tuple[dict[str, Any], str]:
    from components.plan.run import stack_file
    from components.settings.load import read_stack_file

    if stack == "synthetic-1000":
        config = read_stack_file(stack_file("aws-prod"))
        settings = copy.deepcopy(config["ck8s-gpu:settings"])
        # 50 pools x 20 nodes = 1,000 GPU nodes (8,000 GPUs): node count lives in ASGs, so what grows
        # with the fleet is the number of pools.
        # Each pool boots the template's GPU image (its gpuStack.driver is host: the image carries the driver).
        ami = settings["nodePools"][0]["ami"]
        settings["nodePools"] = [
            {"name": f"pool-{i:02d}", "instanceType": "p5.48xlarge", "minSize": 20, "desiredSize": 20, "maxSize": 20,
             "ami": ami}
            for i in range(50)
        ]
        settings["queues"][0]["gpu"]["quota"] = -1
        config["ck8s-gpu:settings"] = settings
        return config, stack
    return read_stack_file(stack_file(stack)), stack


def _measure(stack: str, mode: str) -> dict[str, Any]:
    """Runs in a fresh process: plan (real program) or floor (bare SDK, same type counts)."""
    import pulumi

    from components.plan.mockengine import run_program
    from components.plan.run import PROJECT_DIR, offline_config
    from components.validate import from_config as settings_from_config

    config, name = _config_for(stack)
    start = time.perf_counter()
    settings = settings_from_config(config, name, offline=True)
    wire, secret_keys = offline_config(config, settings)
    validation = time.perf_counter() - start
    program: Callable[[], object]
    if mode == "plan":
        program = lambda: runpy.run_path(str(PROJECT_DIR / "__main__.py"), run_name="__main__")  # noqa: E731
    else:
        types = {(k.split("|")[0], k.split("|")[1] == "1"): v for k, v in json.loads(os.environ["BENCH_TYPES"]).items()}

        def program() -> None:
            for (typ, custom), n in types.items():
                for i in range(n):
                    if custom:
                        pulumi.CustomResource(typ, f"r{i}", {"fixed": "value", "n": i})
                    else:
                        pulumi.ComponentResource(typ, f"c{i}", None, None)

    # The first run pays for importing the providers' modules and warming caches: reported apart
    # as "first run"; the median of the following runs is what the program itself costs.
    times, run = [], None
    for _ in range(int(os.environ.get("BENCH_RUNS", "4"))):
        begin = time.perf_counter()
        run = run_program(program, wire, stack=name, region=settings.region or "", secret_keys=secret_keys)
        times.append(time.perf_counter() - begin)
    assert run is not None
    kinds = Counter(f"{r.type}|{int(r.custom)}" for r in run.resources)
    return {"resources": len(run.resources), "first": times[0] + validation, "seconds": statistics.median(times[1:]),
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "types": dict(kinds)}


def _child(stack: str, mode: str, types: dict[str, int] | None = None) -> dict[str, Any]:
    env = {**os.environ, "BENCH_TYPES": json.dumps(types or {})}
    out = subprocess.run([sys.executable, __file__, "--child", stack, mode], env=env, check=True,
                         capture_output=True, text=True, cwd=ROOT)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _region_plan(region: str) -> float:
    from components.plan.run import plan_config, stack_file
    from components.settings.load import read_stack_file

    config = read_stack_file(stack_file("aws-dev"))
    config["ck8s-gpu:settings"] = {**config["ck8s-gpu:settings"], "region": region}
    start = time.perf_counter()
    plan_config(config, f"aws-dev-{region}", f"aws-dev in {region}")
    return time.perf_counter() - start


def _warm_worker(region: str) -> None:
    _region_plan(region)  # imports the providers' modules once per worker process


def _regions(workers: int) -> dict[str, Any]:
    regions = accepted_regions("aws-dev")
    start = time.perf_counter()
    # One long-lived process per core plans region after region (each plan resets the SDK's
    # runtime state, see components/plan/mockengine.py); processes, because the SDK is not thread-safe.
    ctx = __import__("multiprocessing").get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=ctx, initializer=_warm_worker,
                                                initargs=(regions[0],)) as pool:
        times = list(pool.map(_region_plan, regions))
    return {"regions": len(regions), "workers": workers, "wall_seconds": time.perf_counter() - start,
            "median_plan_seconds": statistics.median(times)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--child", nargs=2, metavar=("STACK", "MODE"), help=argparse.SUPPRESS)
    parser.add_argument("--stacks", default="kind,local,existing,aws-dev,aws-prod,synthetic-1000")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median is reported)")
    parser.add_argument("--write", type=Path, help="replace the plan section of this markdown file")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(*args.child)))
        return 0

    rows = []
    for stack in args.stacks.split(","):
        plans = [_child(stack, "plan") for _ in range(args.repeat)]
        floors = [_child(stack, "floor", plans[0]["types"]) for _ in range(args.repeat)]
        assert floors[0]["resources"] == plans[0]["resources"], (stack, floors[0]["resources"], plans[0]["resources"])
        plan_s = statistics.median(p["seconds"] for p in plans)
        floor_s = statistics.median(f["seconds"] for f in floors)
        first_s = statistics.median(p["first"] for p in plans)
        rows.append((stack, plans[0]["resources"], plan_s, floor_s, plan_s / floor_s,
                     max(p["peak_rss_mib"] for p in plans), max(f["peak_rss_mib"] for f in floors), first_s))
        print(f"{stack}: {rows[-1][1]} resources, plan {plan_s:.3f}s, floor {floor_s:.3f}s, ratio {rows[-1][4]:.2f}",
              file=sys.stderr)
    regions = _regions(os.cpu_count() or 2)
    print(f"{regions['regions']} regions: {regions['wall_seconds']:.1f}s with {regions['workers']} workers",
          file=sys.stderr)

    lines = [
        "<!-- bench_plan:start (generated by scripts/bench_plan.py; do not edit by hand) -->",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}; "
        f"{args.repeat} fresh processes per measurement; in each, the first run (imports of the provider "
        "modules, settings validation) is reported apart and the median of the next 3 runs is the cost.",
        "",
        "| stack | resources | first run (s) | plan (s) | SDK floor (s) | ratio | plan peak RSS (MiB) "
        "| floor peak RSS (MiB) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *(f"| {s} | {n} | {fr:.2f} | {p:.3f} | {f:.3f} | {r:.2f}x | {m:.0f} | {fm:.0f} |"
          for s, n, p, f, r, m, fm, fr in rows),
        "",
        f"{regions['regions']} regions of `aws-dev` (every region botocore knows that a stamp of it accepts) "
        f"planned in {regions['wall_seconds']:.1f} s wall time with {regions['workers']} worker processes, "
        f"wall time including interpreter start and imports (median {regions['median_plan_seconds']:.2f} s per "
        "region plan once a worker is warm); the CLI end to end: the stamp section below (scripts/bench_stamp.py).",
        "<!-- bench_plan:end -->",
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_marked_section(args.write, "<!-- bench_plan:start", "<!-- bench_plan:end -->", text, "Offline plan")
    return 0


if __name__ == "__main__":
    sys.exit(main())

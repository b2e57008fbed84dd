"""`stamp --offline` plans regions in warm, reused workers (components/stamping/offline.py): every
region's plan from a reused worker is the plan a fresh process makes, file for file; an --out
that cannot be written stops the command before anything is written, with one line."""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.cli.outputs import output_problem
from components.plan.run import PROJECT_DIR
from components.stamping import offline
from components.stamping.derive import derive_all
from components.stamping.overrides import load_overrides
from tests.unit.stamping.helpers import DATA, STACKS, template


def _tree(root: Path) -> dict[str, Any]:
    """Every file's bytes; manifests/objects.yaml as its documents in a fixed order. It lists the
    Kubernetes objects in the order the program registered them, which varies from run to run in
    one process and between fresh processes alike (the SDK's RPCs run on a thread pool)."""
    tree: dict[str, Any] = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            name = str(p.relative_to(root))
            tree[name] = (sorted(json.dumps(d, sort_keys=True) for d in yaml.safe_load_all(p.read_text()))
                          if name.endswith("/manifests/objects.yaml") else p.read_bytes())
    return tree


def _jobs(out: Path, bad_out: Path) -> list[offline._Job]:
    """Two templates interleaved (different resources, pools, backups), a region refused by its
    settings and one whose plan cannot be written between them: what a worker planned before
    must not show in what it plans next."""
    prod_config, _ = template("aws-prod")
    dev_config, _ = template("aws-dev")
    prod_overrides = load_overrides(DATA / "aws-prod.regions.yaml")
    prod = derive_all("aws-prod", prod_config, ["eu-central-1", "us-east-2"], prod_overrides)
    dev = derive_all("aws-dev", dev_config, ["us-west-2", "eu-north-1"], {})
    refused = {**dev_config, "ck8s-gpu:settings": {**dev_config["ck8s-gpu:settings"], "region": "eu-west-1"}}
    jobs = [offline._Job(s.stack, s.region, s.config, str(out)) for s in prod + dev]
    return [jobs[0], jobs[2], offline._Job("aws-dev-eu-west-1", "eu-west-1", refused, str(out)), jobs[1],
            offline._Job(jobs[3].stack, jobs[3].region, jobs[3].config, str(bad_out)), jobs[3]]


def test_a_reused_worker_plans_every_region_as_a_fresh_process_does(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder\n")
    bad_out = tmp_path / "a-file" / "plans"
    reused_jobs = _jobs(tmp_path / "reused", bad_out)
    reused = offline._run_jobs(reused_jobs, parallel=1)
    assert len({o.pid for o in reused}) == 1  # one worker planned them all, one after another

    fresh_jobs = _jobs(tmp_path / "fresh", bad_out)
    # The baseline: each region in a new interpreter that imports nothing before the plan (the
    # pool stamp --offline used before, max_tasks_per_child=1, without the warm initializer).
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"), max_tasks_per_child=1) as pool:
        fresh = list(pool.map(offline._plan, fresh_jobs))
    assert len({o.pid for o in fresh}) == len(fresh_jobs)

    assert [(o.ok, o.resources, o.counts) for o in reused] == [(o.ok, o.resources, o.counts) for o in fresh]
    assert [o.error.replace(str(tmp_path / "fresh"), "OUT") for o in fresh] == \
        [o.error.replace(str(tmp_path / "reused"), "OUT") for o in reused]
    assert [o.ok for o in reused] == [True, True, False, True, False, True]
    assert "g6.xlarge" in reused[2].error  # refused by its settings, not by the worker
    assert reused[4].error == f"plan not written: {bad_out / reused_jobs[4].stack}: Not a directory"
    reused_tree, fresh_tree = _tree(tmp_path / "reused"), _tree(tmp_path / "fresh")
    assert sorted({name.split("/")[0] for name in reused_tree}) == sorted(
        j.stack for j in reused_jobs if j.region != "eu-west-1" and j.out != str(bad_out))
    assert reused_tree.keys() == fresh_tree.keys()
    different = [name for name in reused_tree if reused_tree[name] != fresh_tree[name]]
    assert different == []  # resources.json (every resource, input, output), user-data, values, manifests


def _descriptors_and_threads(jobs: list[offline._Job]) -> list[tuple[int, int]]:
    """In a worker: its open file descriptors and threads before the first plan and after each."""
    def settled() -> tuple[int, int]:
        deadline = time.monotonic() + 10
        while threading.active_count() > 1 and time.monotonic() < deadline:
            time.sleep(0.05)  # a closed loop's executor threads end on their own
        gc.collect()  # those threads' own event loops are freed in reference cycles
        return len(os.listdir("/proc/self/fd")), threading.active_count()

    seen = [settled()]
    for job in jobs:
        assert offline._plan(job).ok
        seen.append(settled())
    return seen


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_a_worker_keeps_no_descriptor_or_thread_of_the_plans_it_made() -> None:
    """Each run of the mock engine leaves its event loop open (21 descriptors and 6 threads a plan,
    before the worker closed it): a worker planning dozens of regions would run out of descriptors."""
    config, _ = template("aws-dev")
    jobs = [offline._Job(s.stack, s.region, s.config, None)
            for s in derive_all("aws-dev", config, ["us-east-2", "us-west-2", "ca-central-1"], {})]
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                             initializer=offline._start_worker) as pool:
        seen = pool.submit(_descriptors_and_threads, jobs).result()
    assert seen[1:] == [seen[0]] * len(jobs), seen


def test_an_out_folder_that_cannot_be_written_exits_2_naming_it_and_writes_nothing(tmp_path: Path) -> None:
    shutil.copy(STACKS / "Pulumi.aws-dev.yaml", tmp_path)
    (tmp_path / "a-file").write_text("not a folder\n")
    out = tmp_path / "a-file" / "plans"
    before = sorted(p.name for p in tmp_path.iterdir())
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from components.cli.main import main; sys.exit(main(sys.argv[1:]))",
         "stamp", "--template", "aws-dev", "--regions", "us-east-2,us-west-2", "--offline", "--parallel", "2",
         "--stacks-dir", str(tmp_path), "--out", str(out)],
        cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (f"ck8s-gpu stamp: --out {out}: cannot write the plans there: "
                           f"{tmp_path / 'a-file'} is not a folder\n")
    assert proc.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no stack file, no plan, no probe


def test_a_folder_even_root_cannot_write_into_is_named_with_the_reason() -> None:
    # A permission bit does not stop root (CI runs as root); procfs refuses every new entry to anyone.
    why = output_problem(Path("/proc/ck8s-gpu-plans/plans"), folder=True)
    assert why is not None and why.startswith("/proc") and not Path("/proc/ck8s-gpu-plans").exists()


def test_a_writable_out_passes_and_the_probe_leaves_nothing(tmp_path: Path) -> None:
    assert output_problem(tmp_path / "new" / "plans", folder=True) is None
    assert output_problem(tmp_path, folder=True) is None
    assert list(tmp_path.iterdir()) == []  # not even the folders --out names: the plans make them

"""A queue's GPU limit against the jobs the stack declares in it (issue 46 c): KAI v0.17.0 never
schedules a job whose GPUs would take its queue, or any queue above it, past a finite limit
(pkg/scheduler/plugins/proportion/capacity_policy/max_allowed_check.go resultsOverLimit: the job's
queue, then each ParentQueue; isOverLimit: MaxAllowed < allocated + requested; -1 unlimited). Every
smoke case holds its GPUs at once, so a job bigger than the limit would stay Pending on any cluster.

The jobs, with the GPUs each holds at once (components/settings/rules/smoke.py, components/smoke/):
the whole-GPU Job and the gang (`gpus`), allReduce (`nodes` x the pool's GPUs per node, one gang),
nvlinkGroup (`gpus` in one claim), inference (maxReplicas + the canary). Each runs in smokeTest.queue."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.validate import parse
from tests.unit.helpers import raised_problems
from tests.unit.smoke import settings_fixtures as sf


def _queues(smoke: dict[str, Any], root: dict[str, Any] | None = None,
            other: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """gpu-root (queues[0]) above training (queues[1]) and smoke-test (queues[2])."""
    return [{"name": "gpu-root", "gpu": root or {}},
            {"name": "training", "parent": "gpu-root", "gpu": other or {}},
            {"name": "smoke-test", "parent": "gpu-root", "gpu": smoke}]


def _all_reduce(queues: list[dict[str, Any]]) -> dict[str, Any]:
    """allReduce over 2 x p5.48xlarge (8 GPUs each): one 16-GPU gang in smoke-test."""
    return {**copy.deepcopy(sf.AWS_ALL_REDUCE), "queues": queues}


def _gang(queues: list[dict[str, Any]], **smoke: Any) -> dict[str, Any]:
    """kind, one g6.12xlarge (4 GPUs) mirrored: the whole-GPU Job and the gang of 4 in smoke-test."""
    return {"platform": "kind", "nodePools": [{"name": "gpu", "instanceType": "g6.12xlarge"}],
            "queues": queues, "smokeTest": {"gpus": 4, "gang": True, **smoke}}


def _nvlink(queues: list[dict[str, Any]]) -> dict[str, Any]:
    """nvlinkGroup: 4 GPUs of one partition in one claim (the whole-GPU Job holds 2)."""
    return {**copy.deepcopy(sf.AWS_NVLINK_GROUP), "queues": queues}


def _compute_domain(queues: list[dict[str, Any]]) -> dict[str, Any]:
    """computeDomain over 2 GB200 nodes: one GPU on each, held at once (the whole-GPU Job holds 2)."""
    raw = copy.deepcopy(sf.LOCAL_CD_FA)
    raw["smokeTest"] = {"timeoutSeconds": 300, "scheduler": "kai",
                        "computeDomain": {"enabled": True, "pool": "gb200", "nodes": 2}}
    raw["gpuStack"] = {"addons": {"kaiScheduler": {"enabled": True}}}
    return {**raw, "queues": queues}


def _inference(queues: list[dict[str, Any]]) -> dict[str, Any]:
    """inference: maxReplicas 2 stable replicas and the canary, 3 GPUs scaled out (whole-GPU Job: 2)."""
    raw = copy.deepcopy(sf.AWS)
    raw["smokeTest"] = {"image": sf.PROBE_IMAGE, "inference": {"enabled": True}}
    raw["gpuStack"] = {"addons": {"inferenceGateway": {"enabled": True}, "keda": {"enabled": True}}}
    return {**raw, "queues": queues}


def _queue_problems(raw: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path, why in raised_problems(parse, raw):
        if path.startswith("settings.queues"):
            out.setdefault(path, []).append(why)
    return out


REFUSED = [
    # (the stack, {path: fragments every reason there must hold})
    pytest.param(_all_reduce(_queues({"quota": -1, "limit": 8})),
                 {"settings.queues[2].gpu.limit": ["queue 'smoke-test' has a GPU limit of 8",
                                                   "smokeTest.allReduce (nodes x GPUs per node) holds 16 GPU(s)",
                                                   "raise the limit to at least 16 (-1 = unlimited)",
                                                   "or lower smokeTest.allReduce.nodes"]},
                 id="allReduce-gang-over-its-queue"),
    pytest.param(_all_reduce(_queues({}, root={"limit": 8})),
                 {"settings.queues[0].gpu.limit": ["queue 'gpu-root', a parent of queue 'smoke-test'",
                                                   "GPU limit of 8", "holds 16 GPU(s)"]},
                 id="allReduce-gang-over-a-parent"),
    pytest.param(_all_reduce(_queues({"limit": 15}, root={"limit": 12})),
                 {"settings.queues[0].gpu.limit": ["limit of 12", "holds 16"],
                  "settings.queues[2].gpu.limit": ["limit of 15", "holds 16"]},
                 id="allReduce-over-both-in-one-message"),
    pytest.param(_gang(_queues({"limit": 3})),
                 {"settings.queues[2].gpu.limit": ["the smoke test (settings.smokeTest.queue 'smoke-test') holds 4",
                                                   "limit of 3", "or lower smokeTest.gpus"]},
                 id="gang-over-its-queue"),
    pytest.param(_gang(_queues({"limit": 3}), gang=False),
                 {"settings.queues[2].gpu.limit": ["holds 4 GPU(s)", "limit of 3"]},
                 id="whole-gpu-job-over-its-queue"),
    pytest.param(_gang(_queues({"limit": 0})),
                 {"settings.queues[2].gpu.limit": ["limit of 0", "holds 4"]},
                 id="limit-zero"),
    pytest.param(_nvlink(_queues({"limit": 3})),
                 {"settings.queues[2].gpu.limit": ["smokeTest.nvlinkGroup holds 4", "limit of 3",
                                                   "or lower smokeTest.nvlinkGroup.gpus"]},
                 id="nvlinkGroup-over-its-queue"),
    pytest.param(_compute_domain(_queues({"limit": 1})),
                 {"settings.queues[2].gpu.limit": ["smokeTest.computeDomain (one GPU on each of its nodes) holds 2",
                                                   "limit of 1", "or lower smokeTest.computeDomain.nodes"]},
                 id="computeDomain-over-its-queue"),
    pytest.param(_inference(_queues({"limit": 2})),
                 {"settings.queues[2].gpu.limit": ["smokeTest.inference (maxReplicas stable replicas and one canary, "
                                                   "scaled out) holds 3", "or lower smokeTest.inference.maxReplicas"]},
                 id="inference-over-its-queue"),
]


@pytest.mark.parametrize(("raw", "expected"), REFUSED)
def test_a_job_over_the_limit_of_its_queue_or_a_parent_is_refused_there(
        raw: dict[str, Any], expected: dict[str, list[str]]) -> None:
    found = _queue_problems(raw)
    assert set(found) == set(expected), found
    for path, fragments in expected.items():
        reason = next((why for why in found[path] if "GPU limit" in why), "")
        for fragment in fragments:
            assert fragment in reason, (path, reason)


ACCEPTED = [
    pytest.param(_all_reduce(_queues({"quota": -1, "limit": 16})), id="allReduce-equal-to-the-limit"),
    pytest.param(_all_reduce(_queues({"quota": -1, "limit": -1}, root={"limit": -1})), id="unlimited"),
    pytest.param(_all_reduce(_queues({"limit": 16}, root={"limit": 16})), id="parent-equal-to-the-job"),
    pytest.param(_all_reduce(_queues({}, other={"quota": 4, "limit": 8})), id="a-small-limit-in-another-queue"),
    pytest.param(_gang(_queues({"limit": 4})), id="gang-equal-to-the-limit"),
    pytest.param(_gang(_queues({"limit": 2}), gpus=2), id="gang-of-two-under-two"),
    pytest.param(_nvlink(_queues({"limit": 4})), id="nvlinkGroup-equal-to-the-limit"),
    pytest.param(_inference(_queues({"limit": 3})), id="inference-equal-to-the-limit"),
    pytest.param(_compute_domain(_queues({"limit": 2})), id="computeDomain-equal-to-the-limit"),
]


@pytest.mark.parametrize("raw", ACCEPTED)
def test_look_alikes_are_accepted(raw: dict[str, Any]) -> None:
    parse(raw)


def test_kube_scheduler_is_not_held_to_a_kai_limit() -> None:
    raw = _gang(_queues({"limit": 1}), gang=False, scheduler="default")
    parse(raw)  # 4 whole-GPU pods, a 1-GPU limit: KAI schedules nothing here

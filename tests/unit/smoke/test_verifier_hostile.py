"""The verifier against what a broken or hostile cluster hands it (issue 14): DeviceClasses judged
by their selectors, device taints, unreserved claims, and objects of any shape."""

from __future__ import annotations

import copy
import dataclasses
import random
from typing import Any

import pytest

from components.smoke.cases import inference
from components.smoke.device_class import implied_terms, selects
from components.smoke.verifier import CHECK_NAMES, FAILED, HOPS, PASSED, SKIPPED, verify
from tests.unit.smoke import fixtures as fx


def results(w: fx.World) -> dict[str, Any]:
    return {r.name: r for r in verify(w.exp, w.snap)}


def _class_with(expression: str, name: str = "gpu.nvidia.com") -> dict[str, Any]:
    dc = fx.device_class(name)
    dc["spec"]["selectors"] = [{"cel": {"expression": expression}}]
    return dc


@pytest.mark.parametrize(("expression", "fragment"), [
    ("true", "selects devices of any driver"),
    ("device.attributes['gpu.nvidia.com'].type == 'gpu'", "selects devices of any driver"),
    ("device.driver == 'gpu.nvidia.com' || device.driver == 'other.example.com'", "selects devices of any driver"),
    ("device.driver == 'gpu.example.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
     "selects driver gpu.example.com, not gpu.nvidia.com"),
    ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
     "selects devices of type mig, the smoke test wants type gpu"),
])
def test_a_device_class_is_judged_by_what_it_selects_not_its_name(expression: str, fragment: str) -> None:
    w = fx.real_world()
    w.snap.device_classes[0] = _class_with(expression)
    r = results(w)["device-class"]
    assert r.status == FAILED and fragment in r.message, r.message


@pytest.mark.parametrize("expression", [
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "(device.driver == 'gpu.nvidia.com') && (device.attributes['gpu.nvidia.com'].type == 'gpu')",
    "'gpu.nvidia.com' == device.driver",
    "(device.attributes['gpu.nvidia.com'].productName == 'A' || true) && device.driver == \"gpu.nvidia.com\"",
])
def test_equivalent_spellings_of_the_right_class_pass(expression: str) -> None:
    w = fx.real_world()
    w.snap.device_classes[0] = _class_with(expression)
    assert results(w)["device-class"].status == PASSED


def test_implied_terms_ignore_operators_inside_strings_and_brackets() -> None:
    assert implied_terms("device.attributes['a && b'].x == 'c || d' && device.driver == 'x'") == [
        "device.attributes['a && b'].x == 'c || d'", "device.driver == 'x'"]
    assert selects({"spec": {"selectors": "not a list"}}).drivers == frozenset()


def test_a_tainted_gpu_fails_the_slices_and_a_claim_that_got_it_without_a_toleration() -> None:
    w = fx.real_world()
    node = fx.NODES[0]
    taint = {"key": "gpu.nvidia.com/unhealthy", "value": "xid-79", "effect": "NoExecute"}
    fx_slice = w.obj("ResourceSlice", next(s["metadata"]["name"] for s in w.snap.slices
                                           if s["spec"]["nodeName"] == node))
    fx_slice["spec"]["devices"][0]["taints"] = [taint]
    r = results(w)
    assert r["resource-slices"].status == FAILED
    assert "gpu.nvidia.com/unhealthy=xid-79:NoExecute" in r["resource-slices"].message
    assert r["claims-allocated"].status == FAILED and "without a toleration" in r["claims-allocated"].message

    for tolerations in ([{"operator": "Exists"}], [{"key": "gpu.nvidia.com/unhealthy", "operator": "Exists"}],
                        [{"key": "gpu.nvidia.com/unhealthy", "value": "xid-79", "effect": "NoExecute"}]):
        tolerant = w.copy()
        for c in tolerant.snap.claims:
            c["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = tolerations
        assert results(tolerant)["claims-allocated"].status == PASSED, tolerations
    wrong = w.copy()
    for c in wrong.snap.claims:
        c["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [
            {"key": "gpu.nvidia.com/unhealthy", "value": "xid-48", "effect": "NoExecute"}]
    assert results(wrong)["claims-allocated"].status == FAILED


def test_a_taint_that_does_not_block_allocation_is_not_a_failure() -> None:
    w = fx.real_world()
    w.snap.slices[0]["spec"]["devices"][0]["taints"] = [{"key": "maintenance", "effect": "None"}]
    r = results(w)
    assert r["resource-slices"].status == PASSED and r["claims-allocated"].status == PASSED


def test_an_allocated_claim_never_reserved_for_its_pod_fails() -> None:
    w = fx.real_world()
    for c in w.snap.claims:
        c["status"]["reservedFor"] = []
    r = results(w)["claims-allocated"]
    assert r.status == FAILED and "never reserved for pod" in r.message
    # The claim controller clears reservedFor when the pod is done: an earlier version counts.
    history = fx.real_world()
    history.snap.claim_history = [{"type": "MODIFIED", "object": copy.deepcopy(c)} for c in history.snap.claims]
    for c in history.snap.claims:
        c["status"]["reservedFor"] = []
    assert results(history)["claims-allocated"].status == PASSED
    other = fx.real_world()
    for c in other.snap.claims:
        c["status"]["reservedFor"] = [{"resource": "pods", "name": "someone-else"}]
    assert results(other)["claims-allocated"].status == FAILED


def test_results_are_named_and_ordered_by_hop() -> None:
    w = fx.real_world()
    out = verify(w.exp, w.snap)
    assert [r.name for r in out] == list(CHECK_NAMES) and [r.hop for r in out] == list(HOPS)


JUNK: tuple[Any, ...] = (None, "", "x", 0, -1, 1.5, float("nan"), [], {}, [None], {"": None}, True)


def _mutate(obj: Any, rng: random.Random) -> Any:
    """Replace one random subtree of `obj` with junk of another type."""
    if isinstance(obj, dict) and obj and rng.random() < 0.8:
        key = rng.choice(sorted(obj, key=str))
        obj[key] = _mutate(obj[key], rng) if rng.random() < 0.7 else rng.choice(JUNK)
        return obj
    if isinstance(obj, list) and obj and rng.random() < 0.8:
        i = rng.randrange(len(obj))
        obj[i] = _mutate(obj[i], rng) if rng.random() < 0.7 else rng.choice(JUNK)
        return obj
    return rng.choice(JUNK)


@pytest.mark.parametrize("seed", range(300))
def test_objects_of_any_shape_end_in_failed_checks_never_a_crash(seed: int) -> None:
    rng = random.Random(seed)
    w = fx.real_world(gpus_per_node=2, cases=("gpus", "shared", "shared-named", "gang", "mig"), sharing="MPS",
                      mig_profile="1g.10gb")
    w.exp = dataclasses.replace(w.exp, gpu_health=True)  # case-gpu-health judges every case's claims
    # case-all-reduce reads log text only (tests/unit/smoke/test_all_reduce.py); the fixture runs no such case.
    # case-nvlink-group needs partitioned 8-GPU slices (tests/unit/smoke/test_nvlink_group.py); the
    # computeDomain, firstAvailable and inference cases have their own worlds too (inference's hostile
    # observations: tests/unit/smoke/test_inference.py).
    not_run = {"case-all-reduce", "case-nvlink-group", "case-compute-domain", "case-first-available",
               *(check for check, _hop in inference.HOPS)}
    assert {r.status for r in verify(w.exp, w.snap) if r.name not in not_run} == {PASSED}, \
        "every check has something to read"
    buckets = [w.snap.device_classes, w.snap.slices, w.snap.nodes, w.snap.claims, w.snap.pods, w.snap.jobs,
               w.snap.events, w.snap.pod_groups]
    for _ in range(rng.randint(1, 4)):
        bucket = rng.choice([b for b in buckets if b])
        i = rng.randrange(len(bucket))
        bucket[i] = _mutate(bucket[i], rng)
    out = verify(w.exp, w.snap)
    assert [r.name for r in out] == list(CHECK_NAMES)
    assert all(r.status in (PASSED, FAILED, SKIPPED) and isinstance(r.message, str) for r in out)


def test_a_malformed_object_names_what_was_wrong_on_the_hop_that_read_it() -> None:
    w = fx.real_world()
    w.snap.slices[0]["spec"]["devices"][0] = "gpu-0"  # a string where a device object belongs
    out = verify(w.exp, w.snap)
    bad = [r for r in out if "malformed object in the cluster snapshot" in r.message]
    assert bad and all(r.status == FAILED for r in bad)
    assert len(bad[0].message) < 300


def test_the_benchmark_cluster_passes_every_hop_at_small_scale() -> None:
    """scripts/bench_verifier.py times this world at 1,000 x 8 with 8,000 pods; it must be a passing
    one, or the benchmark would time the failure paths."""
    w = fx.scale_world(12, 8, 96)
    out = {r.name: r for r in verify(w.exp, w.snap)}
    assert {n for n, r in out.items() if r.status == FAILED} == set(), {n: r.message for n, r in out.items()}
    assert out["distinct-gpus"].message.startswith("96 allocations")

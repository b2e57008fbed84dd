"""Settings of the node tier and of aiming the smoke test: local.kubeletPools, smokeTest.pool,
smokeTest.image and smokeTest.stuckSeconds. Each rule refuses what could never pass, naming its
path; what is accepted reaches the chart values and the verifier's expectations."""

from __future__ import annotations

import pytest

from components.facts.cluster import cluster_facts
from components.smoke.plan import smoke_plan
from components.tables import pins
from components.tables.labels import POOL_TAG, SIMULATED_POOL_LABEL
from components.validate import parse
from tests.unit.smoke.test_settings_smoke import problems, with_smoke

DIGEST = "sha256:" + "ab" * 32
POOL = {"instanceType": "g6.12xlarge", "minSize": 2, "desiredSize": 2, "maxSize": 2}
LOCAL = {"platform": "local", "environment": "ci",
         "nodePools": [{"name": "gpu", **POOL}, {"name": "kubelet", **POOL}],
         "local": {"kubeletPools": ["kubelet"]}, "smokeTest": {"gpus": 4}}


def test_kubelet_pools_make_a_local_stack_run_containers_and_aim_the_smoke_pods_there() -> None:
    s = parse(LOCAL)
    assert s.has_kubelet and s.smoke_test.pool == "kubelet"
    facts = cluster_facts(s)
    assert facts.has_kubelet and facts.gpu_view == "nvidia-smi"
    plan = smoke_plan(s, facts, pins.image("smoke-test"))
    assert plan.values["nodeSelector"] == {SIMULATED_POOL_LABEL: "kubelet"}
    assert plan.values["probe"]["expect"] == "nvidia-smi"
    assert plan.expectations.in_container and plan.expectations.probe_expect == "nvidia-smi"
    # Without kubelet pools nothing runs in a container: the in-container checks skip there.
    kwok = parse({**LOCAL, "local": {}})
    assert not kwok.has_kubelet and kwok.smoke_test.pool is None
    assert not cluster_facts(kwok).has_kubelet


def test_kind_keeps_reading_the_simulated_drivers_environment() -> None:
    facts = cluster_facts(parse({"platform": "kind"}))
    assert facts.gpu_view == "env"


def test_a_kubelet_pool_must_be_a_local_pool_of_the_stack() -> None:
    p = problems({**LOCAL, "local": {"kubeletPools": ["kubelet", "nope", "kubelet"]}})
    assert "'nope' is not a node pool (gpu, kubelet)" in p["settings.local.kubeletPools[1]"][0]
    assert "listed twice" in p["settings.local.kubeletPools[2]"][0]
    aws = problems({"platform": "aws", "region": "eu-north-1", "local": {"kubeletPools": ["gpu"]}})
    assert "only the local platform runs kubelet nodes" in aws["settings.local.kubeletPools"][0]


def test_the_smoke_pool_must_run_containers_and_exist() -> None:
    p = problems(with_smoke(LOCAL, pool="gpu"))
    assert "'gpu' is a KWOK pool" in p["settings.smokeTest.pool"][0]
    p = problems(with_smoke(LOCAL, pool="missing"))
    assert "'missing' is not a node pool" in p["settings.smokeTest.pool"][0]
    p = problems({"platform": "existing", "smokeTest": {"pool": "gpu"}})
    assert "does not label its nodes by pool" in p["settings.smokeTest.pool"][0]


def test_the_smoke_pool_alone_must_hold_the_gpus_asked_for() -> None:
    p = problems(with_smoke(LOCAL, gpus=9))
    assert p["settings.smokeTest.gpus"] == [
        "needs 9 GPUs but pool 'kubelet' (smokeTest.pool) provides 8 at its desired size"]
    parse(with_smoke(LOCAL, gpus=8))


def test_an_aws_pool_is_selected_by_the_pool_tag_label() -> None:
    s = parse({"platform": "aws", "region": "eu-north-1", "smokeTest": {"pool": "gpu", "scheduler": "default"}})
    plan = smoke_plan(s, cluster_facts(s), pins.image("smoke-test"))
    assert plan.values["nodeSelector"] == {POOL_TAG: "gpu"}


@pytest.mark.parametrize("ref", [
    f"ck8s-gpu.local/smoke-probe:7d471774d526@{DIGEST}",
    f"mirror.example:5000/team/probe:1.0@{DIGEST}",
    f"ubuntu:24.04@{DIGEST}",
])
def test_a_probe_image_pinned_by_digest_replaces_the_pin(ref: str) -> None:
    s = parse(with_smoke(LOCAL, image=ref))
    image = smoke_plan(s, cluster_facts(s), pins.image("smoke-test")).values["image"]
    repository, tag = ref.split("@")[0].rsplit(":", 1)
    assert image["digest"] == DIGEST and image["tag"] == tag
    assert (f"{image['registry']}/{image['repository']}" if image["registry"] else image["repository"]) == repository


@pytest.mark.parametrize("ref", [
    "ck8s-gpu.local/smoke-probe:latest",            # no digest: not pinned
    f"ck8s-gpu.local/smoke-probe@{DIGEST}",         # no tag to show
    f"Upper/case:1@{DIGEST}",                       # not a reference
    "ck8s-gpu.local/smoke-probe:1@sha256:abc",      # short digest
])
def test_an_unpinned_or_malformed_probe_image_is_refused(ref: str) -> None:
    assert "settings.smokeTest.image" in problems(with_smoke(LOCAL, image=ref))


@pytest.mark.parametrize(("value", "ok"), [(5, True), (3600, True), (4, False), (3601, False)])
def test_stuck_seconds_bounds(value: int, ok: bool) -> None:
    raw = with_smoke(LOCAL, stuckSeconds=value)
    if ok:
        s = parse(raw)
        assert smoke_plan(s, cluster_facts(s), pins.image("smoke-test")).spec()["stuckSeconds"] == value
    else:
        assert "settings.smokeTest.stuckSeconds" in problems(raw)

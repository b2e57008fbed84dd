"""smokeTest settings for MIG-only clusters, the named shared claim and GPU sharing: every rule
refuses what could never pass (all problems in one message, each naming its path), and what is
accepted reaches the chart values, the expectations and the DRA driver's feature gates."""

from __future__ import annotations

from typing import Any

import pytest

from components.addons import dra_driver
from components.addons.base import AddonContext
from components.facts.cluster import cluster_facts
from components.settings import SettingsError
from components.settings.model import Settings
from components.settings.rules.smoke import mig_profile_problems
from components.validate import parse as parse_settings
from tests.unit.helpers import listed_by_path, raised_problems
from tests.unit.smoke import settings_fixtures as sf

AWS_MIG = {"platform": "aws", "region": "eu-north-1", "gpuStack": {"migStrategy": "mixed"},
           "nodePools": [{"name": "h100", "instanceType": "p5.48xlarge", "minSize": 1, "desiredSize": 1,
                          "maxSize": 1}]}
AWS_L4 = {"platform": "aws", "region": "eu-north-1",
          "nodePools": [{"name": "l4", "instanceType": "g6.12xlarge", "minSize": 1, "desiredSize": 1, "maxSize": 1}]}


def with_smoke(raw: dict[str, Any], **smoke: Any) -> dict[str, Any]:
    return {**raw, "smokeTest": {**raw.get("smokeTest", {}), **smoke}}


def problems(raw: dict[str, Any]) -> dict[str, list[str]]:
    return listed_by_path(raised_problems(parse_settings, raw))


def ok(raw: dict[str, Any]) -> Settings:
    return parse_settings(raw)


# --- a MIG-only cluster ------------------------------------------------------------------------


def test_a_mig_only_smoke_test_is_accepted_and_runs_only_the_mig_case() -> None:
    s = ok(with_smoke(AWS_MIG, wholeGpu=False, migProfile="1g.10gb"))
    assert s.smoke_test.mig is True  # the profile turned the MIG case on
    plan = sf.plan(sf.AWS_MIG_ONLY)
    assert [c.case for c in plan.expectations.cases] == ["mig"]
    assert plan.expectations.cases[0].profile == "1g.10gb"
    assert plan.values["cases"]["wholeGpu"] is False
    assert plan.values["cases"]["mig"] == {"enabled": True, "deviceClassName": "mig.nvidia.com", "profile": "1g.10gb",
                                           "pools": []}  # no pool has a layout: the one cluster-wide pod


def test_pools_with_layouts_get_a_pod_per_profile_each_on_its_pool() -> None:
    def mig_pool(name: str, itype: str, **layout: object) -> dict[str, object]:
        return {"name": name, "instanceType": itype, "minSize": 1, "desiredSize": 1, "maxSize": 1, "mig": layout}

    raw = {**AWS_MIG, "nodePools": [mig_pool("h100", "p5.48xlarge", config="all-balanced"),
                                    mig_pool("a100", "p4d.24xlarge", devices={"3g.20gb": 2})]}
    raw.pop("gpuStack", None)  # the layouts need no cluster-wide strategy
    plan = sf.plan(raw)
    cases = [(c.case, c.param("pool"), c.profile, c.device_type) for c in plan.expectations.cases]
    assert cases == [("mig0-0", "h100", "1g.10gb", "mig"), ("mig0-1", "h100", "2g.20gb", "mig"),
                     ("mig0-2", "h100", "3g.40gb", "mig"), ("mig1-0", "a100", "3g.20gb", "mig")]
    pools = plan.values["cases"]["mig"]["pools"]
    assert [(p["case"], p["profile"], p["nodeSelector"]) for p in pools][-1] == (
        "mig1-0", "3g.20gb", {"ck8s-gpu/pool": "a100"})
    assert plan.values["cases"]["wholeGpu"] is False  # no whole GPU left anywhere


def test_the_mig_case_stays_off_without_a_profile_or_mig() -> None:
    s = ok(AWS_MIG)
    assert s.smoke_test.mig is False and s.smoke_test.mig_profile is None
    assert [c.case for c in sf.plan(AWS_MIG).expectations.cases] == ["gpus"]


def test_a_smoke_test_with_no_case_proves_nothing() -> None:
    p = problems(with_smoke(AWS_MIG, wholeGpu=False))
    assert list(p) == ["settings.smokeTest.wholeGpu"]
    assert "no other case is on: the smoke test would prove nothing" in p["settings.smokeTest.wholeGpu"][0]


def test_without_whole_gpus_every_whole_gpu_setting_is_refused_in_one_message() -> None:
    p = problems(with_smoke(AWS_MIG, wholeGpu=False, migProfile="1g.10gb", sharedClaim=True, sharedNamedClaim=True,
                            gang=True, gpus=2, productNamePattern="^NVIDIA H100", minMemoryGiB=40))
    assert set(p) == {f"settings.smokeTest.{k}" for k in ("sharedClaim", "sharedNamedClaim", "gang", "gpus",
                                                          "productNamePattern", "minMemoryGiB")}
    assert p["settings.smokeTest.gang"] == [
        "allocates whole GPUs, and wholeGpu false says the cluster hands out none (all GPUs MIG-partitioned): turn "
        "it off or set wholeGpu true"]
    assert p["settings.smokeTest.gpus"] == ["is 2, but with wholeGpu false no case runs whole-GPU pods to count"]


def test_a_profile_contradicting_mig_false_is_refused() -> None:
    p = problems(with_smoke(AWS_MIG, mig=False, migProfile="1g.10gb"))
    assert list(p) == ["settings.smokeTest.migProfile"]
    assert "smokeTest.mig is false" in p["settings.smokeTest.migProfile"][0]


def test_a_profile_still_needs_a_mig_strategy() -> None:
    p = problems(with_smoke(AWS_L4, migProfile="1g.10gb"))
    assert p == {"settings.smokeTest.mig": ["the MIG case needs MIG devices (a pool's nodePools[].mig layout, or "
                                           "gpuStack.migStrategy single|mixed) and allocation dra"]}


@pytest.mark.parametrize("platform", ["kind", "local"])
def test_simulated_gpus_have_no_mig_devices(platform: str) -> None:
    raw = with_smoke({"platform": platform, "gpuStack": {"migStrategy": "mixed"},
                      "nodePools": [{"name": "gpu", "instanceType": "p5.48xlarge", "minSize": 1, "desiredSize": 1,
                                     "maxSize": 1}]}, migProfile="1g.10gb", scheduler="default")
    p = problems(raw)
    assert list(p) == ["settings.smokeTest.mig"]
    assert "publishes whole GPUs only (type gpu): no MIG device exists" in p["settings.smokeTest.mig"][0]


@pytest.mark.parametrize("profile", ["1g.10gb", "7g.80gb", "1c.2g.20gb", "1g.10gb+me", "1g.20gb+me.all",
                                     "1g.12gb-me", "2g.20gb+gfx,me", "4c.7g.80gb"])
def test_profiles_the_driver_publishes_are_accepted(profile: str) -> None:
    assert mig_profile_problems(profile) == []
    assert ok(with_smoke(AWS_MIG, migProfile=profile)).smoke_test.mig_profile == profile
    sf.plan(with_smoke(AWS_MIG, migProfile=profile))  # and the chart's schema takes it


@pytest.mark.parametrize(("profile", "fragment"), [
    ("1g10gb", "is not a MIG profile as the DRA driver publishes it"),
    ("1G.10GB", "is not a MIG profile"),
    ("1g.10gb+", "is not a MIG profile"),
    ("1g.10gb+me-gfx", "is not a MIG profile"),
    ("MIG 1g.10gb", "is not a MIG profile"),
    ("1g.10gb\n", "is not a MIG profile"),
    ("0g.5gb", "slice and memory counts start at 1"),
    ("2c.2g.20gb", "is published as '2g.20gb'"),
    ("3c.2g.20gb", "c cannot exceed g"),
    ("1g.10gb+me,me", "repeats an attribute"),
])
def test_profiles_no_device_can_have_are_refused(profile: str, fragment: str) -> None:
    p = problems(with_smoke(AWS_MIG, migProfile=profile))
    assert list(p) == ["settings.smokeTest.migProfile"]
    assert fragment in p["settings.smokeTest.migProfile"][0]


# --- two pods on one named claim ---------------------------------------------------------------


def test_the_named_claim_case_has_two_pods_naming_the_chart_claim() -> None:
    plan = sf.plan(sf.AWS_MPS)
    case = next(c for c in plan.expectations.cases if c.case == "shared-named")
    assert (case.pods, case.containers, case.claim) == (2, ("probe",), case.job)
    assert case.claim == f"gpu-smoke-test-shared-named-{plan.run_id}"
    assert plan.values["cases"]["sharedNamedClaim"] is True


# --- GPU sharing ---------------------------------------------------------------------------------


def test_time_slicing_reaches_the_shared_claims_and_the_driver_gate() -> None:
    s = ok(with_smoke(AWS_L4, sharedClaim=True, sharing="timeSlicing", timeSlicingInterval="Short"))
    plan = sf.plan(with_smoke(AWS_L4, sharedClaim=True, sharing="timeSlicing", timeSlicingInterval="Short"))
    assert plan.values["sharing"] == {"driver": "gpu.nvidia.com", "gpuSharing": {
        "strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Short"}}}
    assert {c.case: c.sharing for c in plan.expectations.cases} == {"gpus": "", "shared": "TimeSlicing"}
    assert driver_values(s)["featureGates"] == {"TimeSlicingSettings": True}


def test_time_slicing_without_an_interval_names_the_default() -> None:
    plan = sf.plan(with_smoke(AWS_L4, sharedClaim=True, sharing="timeSlicing"))
    assert plan.values["sharing"]["gpuSharing"]["timeSlicingConfig"] == {"interval": "Default"}


def test_mps_options_reach_the_gpu_config_and_the_driver_gate() -> None:
    plan = sf.plan(sf.AWS_MPS)
    assert plan.values["sharing"]["gpuSharing"] == {"strategy": "MPS", "mpsConfig": {
        "defaultActiveThreadPercentage": 50, "defaultPinnedDeviceMemoryLimit": "1024Mi"}}
    assert driver_values(ok(sf.AWS_MPS))["featureGates"] == {"MPSSupport": True}
    bare = sf.plan(with_smoke(AWS_L4, sharedNamedClaim=True, sharing="mps"))
    assert bare.values["sharing"]["gpuSharing"] == {"strategy": "MPS", "mpsConfig": {}}


def test_no_sharing_leaves_the_driver_gates_alone() -> None:
    assert "featureGates" not in driver_values(ok(AWS_L4))
    off = ok(with_smoke(AWS_L4, enabled=False, sharedClaim=True, sharing="mps"))
    assert "featureGates" not in driver_values(off)  # no smoke test, nothing to share
    assert sf.plan(AWS_L4).values["sharing"] == {"driver": "gpu.nvidia.com", "gpuSharing": {}}


def driver_values(s: Settings) -> dict[str, Any]:
    return dra_driver.values(AddonContext(s, cluster_facts(s), frozenset(), frozenset(), "0.4.1"))


def test_sharing_without_a_shared_case_is_refused() -> None:
    p = problems(with_smoke(AWS_L4, sharing="mps"))
    assert p == {"settings.smokeTest.sharing": [
        "configures the claims of the shared cases, and neither sharedClaim nor sharedNamedClaim is on: no case "
        "would share a GPU"]}


@pytest.mark.parametrize(("platform", "fragment"), [
    ("kind", "decodes opaque configs as gpu.resource.example.com/v1alpha1 only"),
    ("local", "nothing would act on the GpuConfig"),
])
def test_sharing_where_the_simulated_driver_cannot_apply_it_is_refused(platform: str, fragment: str) -> None:
    raw = with_smoke({"platform": platform, "nodePools": [{"name": "gpu", "instanceType": "g6.12xlarge", "minSize": 1,
                                                           "desiredSize": 1, "maxSize": 1}]},
                     sharedNamedClaim=True, sharing="timeSlicing", scheduler="default")
    p = problems(raw)
    assert list(p) == ["settings.smokeTest.sharing"]
    assert fragment in p["settings.smokeTest.sharing"][0]


def test_options_of_another_strategy_are_refused() -> None:
    p = problems(with_smoke(AWS_L4, sharedClaim=True, sharing="timeSlicing", mpsActiveThreadPercentage=10,
                            mpsPinnedMemoryLimitMiB=512))
    assert set(p) == {"settings.smokeTest.mpsActiveThreadPercentage", "settings.smokeTest.mpsPinnedMemoryLimitMiB"}
    assert p["settings.smokeTest.mpsPinnedMemoryLimitMiB"] == ["applies to sharing mps only (sharing is timeSlicing)"]
    p = problems(with_smoke(AWS_L4, timeSlicingInterval="Long"))
    assert p == {"settings.smokeTest.timeSlicingInterval": ["applies to sharing timeSlicing only (sharing is none)"]}


def test_a_driver_gate_switched_off_by_hand_is_refused() -> None:
    raw = with_smoke({**AWS_L4, "gpuStack": {"addons": {"draDriver": {"values": {
        "featureGates": {"MPSSupport": "false", "DynamicMIG": True}}}}}}, sharedNamedClaim=True, sharing="mps")
    p = problems(raw)
    assert set(p) == {"settings.gpuStack.addons.draDriver.values.featureGates.MPSSupport",
                      "settings.gpuStack.addons.draDriver.values.featureGates.DynamicMIG"}
    assert "refuses to start with both" in p["settings.gpuStack.addons.draDriver.values.featureGates.DynamicMIG"][0]


@pytest.mark.parametrize(("key", "value"), [("mpsActiveThreadPercentage", 101), ("mpsActiveThreadPercentage", -1),
                                            ("mpsPinnedMemoryLimitMiB", 0), ("sharing", "MPS"),
                                            ("timeSlicingInterval", "long"), ("migProfile", "")])
def test_out_of_range_values_are_refused_with_their_path(key: str, value: Any) -> None:
    assert f"settings.smokeTest.{key}" in problems(with_smoke(AWS_L4, **{key: value}))


def test_every_problem_of_one_stack_comes_in_one_message() -> None:
    raw = with_smoke(AWS_MIG, wholeGpu=False, sharing="timeSlicing", migProfile="2c.2g.20gb", gang=True,
                     mpsPinnedMemoryLimitMiB=64)
    with pytest.raises(SettingsError) as err:
        parse_settings(raw)
    message = str(err.value)
    assert message.count("invalid settings in") == 1
    for path in ("smokeTest.gang", "smokeTest.migProfile", "smokeTest.sharing", "smokeTest.mpsPinnedMemoryLimitMiB"):
        assert f"  settings.{path}: " in message, message


def test_without_whole_gpus_the_whole_gpu_dra_cases_are_refused_too() -> None:
    # computeDomain and firstAvailable pods each hold a whole GPU (their claim `gpu`).
    p = problems(with_smoke(AWS_MIG, wholeGpu=False, migProfile="1g.10gb", computeDomain={"enabled": True},
                            firstAvailable={"enabled": True, "preferredPool": "h100", "fallbackPool": "h100"}))
    why = ("allocates whole GPUs, and wholeGpu false says the cluster hands out none (all GPUs MIG-partitioned): "
           "turn it off or set wholeGpu true")
    assert why in p["settings.smokeTest.computeDomain.enabled"]
    assert why in p["settings.smokeTest.firstAvailable.enabled"]

"""Cross-field rules, one behaviour each (the bad stack files cover the file/CLI path)."""

from __future__ import annotations

import pytest

from components.settings import SettingsError
from components.settings.facts import gpus_provided, pool_gpus
from components.validate import from_config as settings_from_config
from components.validate import parse as parse_settings
from tests.unit.helpers import settings_problems

problems = settings_problems  # every problem the one gate (components.validate) reports


AWS = {"platform": "aws", "region": "eu-north-1"}


def test_defaults_are_valid_on_every_platform() -> None:
    for platform in ("aws", "kind", "local", "existing"):
        s = parse_settings({"platform": platform, "region": "eu-north-1"})
        assert s.gpu_stack.allocation == "dra"
        assert s.kubernetes.track == "1.34-classic"


def test_cluster_name_derives_from_environment_and_region() -> None:
    a = parse_settings({**AWS, "environment": "prod", "production": True})
    b = parse_settings({**AWS, "environment": "prod", "production": True, "region": "us-east-1"})
    assert a.cluster_name == "ck8s-prod-eu-north-1"
    assert a.cluster_name != b.cluster_name


def test_device_plugin_mode_refuses_dra_gpu_allocation() -> None:
    p = problems({**AWS, "gpuStack": {"allocation": "device-plugin",
                                      "addons": {"draDriver": {"values": {"gpuResourcesEnabledOverride": True}}}}})
    assert "settings.gpuStack.addons.draDriver.values.gpuResourcesEnabledOverride" in p


def test_dra_on_old_track_is_allowed_with_explicit_gates() -> None:
    raw = {**AWS, "kubernetes": {"track": "1.33-classic"}}
    assert "settings.gpuStack.allocation" in problems(raw)
    ok = parse_settings({**AWS, "kubernetes": {"track": "1.33-classic",
                                               "featureGates": ["DynamicResourceAllocation=true"]}})
    assert ok.kubernetes.track == "1.33-classic"


def test_declared_gpu_facts_make_an_unknown_instance_type_acceptable() -> None:
    s = parse_settings({**AWS, "nodePools": [{"name": "x", "instanceType": "gr6.4xlarge", "desiredSize": 2,
                                                "gpu": {"count": 2, "productName": "NVIDIA X", "memoryGiB": 32}}]})
    facts = pool_gpus(s.node_pools[0])
    assert facts is not None and facts.count == 2 and facts.memory_mib == 32 * 1024
    assert gpus_provided(s) == 4


def test_children_quota_must_fit_the_parent_and_unlimited_children_do_not() -> None:
    base = [{"name": "root", "gpu": {"quota": 4}}, {"name": "smoke-test", "parent": "root", "gpu": {"quota": 2}}]
    assert parse_settings({"platform": "kind", "queues": base}).queues[0].gpu.quota == 4
    p = problems({"platform": "kind", "queues": [*base, {"name": "team", "parent": "root"}]})
    assert "unlimited children ['team']" in p["settings.queues[0].gpu.quota"]


def test_the_non_preemptible_smoke_test_must_fit_its_queues_gpu_quota() -> None:
    """KAI schedules a non-preemptible job only within the quota of its queue and every parent."""
    queues = [{"name": "root", "gpu": {"quota": 1}}, {"name": "smoke-test", "parent": "root", "gpu": {"quota": 1}}]
    p = problems({"platform": "kind", "queues": queues, "smokeTest": {"gpus": 2}})
    assert {k for k in p if k.startswith("settings.queues")} == {"settings.queues[0].gpu.quota",
                                                                 "settings.queues[1].gpu.quota"}
    assert "holds 2 non-preemptible GPU(s) at once" in p["settings.queues[1].gpu.quota"]
    one = problems({"platform": "kind", "queues": queues, "smokeTest": {"gpus": 2, "wholeGpu": False,
                                                                         "sharedNamedClaim": True}})
    assert not {k for k in one if k.startswith("settings.queues")}  # only the one-GPU named-claim case runs
    default = problems({"platform": "kind", "queues": queues, "smokeTest": {"gpus": 2, "scheduler": "default"}})
    assert not {k for k in default if k.startswith("settings.queues")}  # kube-scheduler knows no KAI quota


def test_smoke_queue_must_be_a_leaf_and_kai_must_be_on() -> None:
    p = problems({"platform": "kind", "smokeTest": {"queue": "gpu-root"},
                  "gpuStack": {"addons": {"kaiScheduler": {"enabled": False}}}})
    assert set(p) == {"settings.smokeTest.queue", "settings.smokeTest.scheduler"}
    ok = parse_settings({"platform": "kind", "smokeTest": {"scheduler": "default", "queue": "gpu-root"},
                         "gpuStack": {"addons": {"kaiScheduler": {"enabled": False}}}})
    assert ok.smoke_test.scheduler == "default"


def test_gang_needs_two_gpus_per_member_count_and_kai() -> None:
    p = problems({"platform": "kind", "nodePools": [{"name": "g", "instanceType": "g6.xlarge"}],
                  "smokeTest": {"gang": True, "scheduler": "default"}})
    assert set(p) == {"settings.smokeTest.gang", "settings.smokeTest.gpus"}


def test_existing_network_needs_two_private_subnets() -> None:
    p = problems({**AWS, "network": {"existing": {"vpcId": "vpc-0123456789abcdef0",
                                                   "privateSubnetIds": ["subnet-1"]}}})
    assert "settings.network.existing.privateSubnetIds" in p


@pytest.mark.parametrize("platform", ["existing", "local"])
def test_a_handed_cluster_needs_a_kubeconfig_to_deploy_but_not_to_plan(platform: str) -> None:
    config = {"ck8s-gpu:settings": {"platform": platform}}
    with pytest.raises(SettingsError) as err:
        settings_from_config(config, "t")
    reason = f"required for platform {platform}: the program is handed its cluster (set it with --secret)"
    assert err.value.problems == [("config.ck8s-gpu:kubeconfig", reason)]
    assert settings_from_config(config, "t", offline=True).platform == platform


def test_settings_are_immutable() -> None:
    s = parse_settings(AWS)
    with pytest.raises(Exception):  # noqa: B017 (pydantic raises ValidationError on frozen models)
        s.region = "us-east-1"  # type: ignore[misc]


def test_smoke_test_defaults_on_under_dra_and_off_under_the_device_plugin() -> None:
    assert parse_settings(AWS).smoke_test.enabled is True
    assert parse_settings({**AWS, "gpuStack": {"allocation": "device-plugin"}}).smoke_test.enabled is False
    p = problems({**AWS, "gpuStack": {"allocation": "device-plugin"}, "smokeTest": {"enabled": True}})
    assert set(p) == {"settings.smokeTest.enabled"}


@pytest.mark.parametrize("value", [True, "true", "True", 1, "yes"])
def test_a_device_plugin_switched_on_in_any_spelling_is_refused_under_dra(value: object) -> None:
    p = problems({**AWS, "gpuStack": {"addons": {"gpuOperator": {"values": {"devicePlugin": {"enabled": value}}}}}})
    assert "settings.gpuStack.addons.gpuOperator.values.devicePlugin.enabled" in p


@pytest.mark.parametrize("value", [False, "false", 0, ""])
def test_a_device_plugin_switched_off_in_any_spelling_is_accepted(value: object) -> None:
    raw = {**AWS, "gpuStack": {"addons": {"gpuOperator": {"values": {"devicePlugin": {"enabled": value}}}}}}
    assert parse_settings(raw).gpu_stack.allocation == "dra"


@pytest.mark.parametrize("environment", ["prod", "production", "prd", "live", "eu-prod", "prod-eu-1"])
def test_an_environment_named_like_production_must_say_production(environment: str) -> None:
    found = problems({**AWS, "environment": environment})
    assert list(found) == ["settings.production"]
    assert "production: true" in found["settings.production"]
    for explicit in (True, False):
        assert parse_settings({**AWS, "environment": environment, "production": explicit}).is_production is explicit

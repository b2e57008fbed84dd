"""The DRA driver's feature gates: what the stack turns on, per version, and what the driver refuses
(components/addons/dra_driver_gates.py, upstream pkg/featuregates/featuregates.go)."""

from __future__ import annotations

from typing import Any

import pytest

from components.addons import dra_driver
from components.addons.dra_driver_gates import EXCLUSIVE, KNOWN_GATES, REQUIRES, release_line
from components.tables import pins
from components.validate import validate
from tests.unit.addons.helpers import final_values, settings

HEALTHY_TRACK = {"track": "1.36-classic"}  # DRADeviceTaints beta and on: gpuHealth may be on


def gates(**raw: Any) -> dict[str, bool]:
    return dict(final_values(dra_driver.ADDON, settings("aws", **raw)).get("featureGates", {}))


def problems(**raw: Any) -> list[tuple[str, str]]:
    return validate(settings("aws", **raw))


def with_values(values: dict[str, Any], version: str | None = None, **gpu_stack: Any) -> dict[str, Any]:
    own: dict[str, Any] = {"values": values}
    if version is not None:
        own["version"] = version
    return {**gpu_stack, "addons": {"draDriver": own}}


def test_the_pin_is_a_release_line_the_gate_table_knows() -> None:
    assert pins.chart("dra-driver-nvidia-gpu").version == "0.5.0"
    assert release_line(pins.chart("dra-driver-nvidia-gpu").version) in KNOWN_GATES


def test_no_gate_by_default_leaves_the_chart_defaults() -> None:
    assert gates() == {}
    assert "featureGates" not in final_values(dra_driver.ADDON, settings("aws"))


@pytest.mark.parametrize(("raw", "expected"), [
    ({"gpuStack": {"nvlinkPartitions": True}}, {"FabricManagerPartitioning": True}),
    ({"gpuStack": {"gpuHealth": True}, "kubernetes": HEALTHY_TRACK}, {"NVMLDeviceHealthCheck": True}),
    ({"kubernetes": HEALTHY_TRACK}, {"NVMLDeviceHealthCheck": True}),  # null: on where DRADeviceTaints is
    ({"smokeTest": {"sharing": "timeSlicing", "sharedClaim": True}}, {"TimeSlicingSettings": True}),
    ({"smokeTest": {"sharing": "mps", "sharedClaim": True}}, {"MPSSupport": True}),
])
def test_each_setting_turns_on_its_gate(raw: dict[str, Any], expected: dict[str, bool]) -> None:
    assert problems(**raw) == []
    assert gates(**raw) == expected


def test_gpu_health_without_dra_allocation_sets_no_health_gate() -> None:
    raw = {"gpuStack": {"allocation": "device-plugin", "computeDomains": True}, "smokeTest": {"enabled": False},
           "kubernetes": HEALTHY_TRACK}
    assert "NVMLDeviceHealthCheck" not in gates(**raw)


def test_nvlink_partitions_with_the_device_plugin_is_refused() -> None:
    raw = {"gpuStack": {"nvlinkPartitions": True, "allocation": "device-plugin", "computeDomains": True},
           "smokeTest": {"enabled": False}}
    found = problems(**raw)
    assert [p for p, _ in found] == ["settings.gpuStack.nvlinkPartitions"], found
    assert "settings.gpuStack.allocation is device-plugin" in found[0][1]


def test_a_gate_the_version_does_not_have_is_refused_naming_the_setting() -> None:
    found = problems(gpuStack=with_values({}, "0.4.1", nvlinkPartitions=True))
    assert found == [("settings.gpuStack.nvlinkPartitions",
                      "sets FabricManagerPartitioning, a feature gate dra-driver-nvidia-gpu 0.4.1 does not have: "
                      "its components refuse to start (\"unrecognized feature gate\")")]
    assert problems(gpuStack=with_values({}, "0.5.0", nvlinkPartitions=True)) == []
    # An override naming a gate 0.4.1 lacks fails the same way, even switched off: the name is unknown.
    for value in (True, False):
        found = problems(gpuStack=with_values({"featureGates": {"HostManagedIMEXDaemon": value}}, "0.4.1"))
        assert [p for p, _ in found] == ["settings.gpuStack.addons.draDriver.values.featureGates.HostManagedIMEXDaemon"]
    # The logging gates every component registers are known to both.
    assert problems(gpuStack=with_values({"featureGates": {"LoggingAlphaOptions": True}}, "0.4.1")) == []


@pytest.mark.parametrize(("a", "b", "source"), EXCLUSIVE)
def test_every_mutual_exclusion_is_refused_in_one_message_naming_both_fields(a: str, b: str, source: str) -> None:
    found = problems(gpuStack=with_values({"featureGates": {a: True, b: True}}))
    assert len(found) == 1, found
    field, why = found[0]
    assert field == f"settings.gpuStack.addons.draDriver.values.featureGates.{a}"
    for gate in (a, b):
        assert f"{gate} (settings.gpuStack.addons.draDriver.values.featureGates.{gate})" in why
    assert source in why


def test_an_exclusion_between_a_setting_and_an_override_names_both() -> None:
    found = problems(kubernetes=HEALTHY_TRACK,
                     gpuStack=with_values({"featureGates": {"PassthroughSupport": True}}, gpuHealth=True))
    assert len(found) == 1, found
    assert "NVMLDeviceHealthCheck (settings.gpuStack.gpuHealth)" in found[0][1]
    assert "PassthroughSupport (settings.gpuStack.addons.draDriver.values.featureGates.PassthroughSupport)" \
        in found[0][1]


def test_the_pair_validate_refuses_already_is_said_once() -> None:
    # components/validate.py _smoke_sharing has its own words for DynamicMIG with sharing mps.
    found = problems(smokeTest={"sharing": "mps", "sharedClaim": True},
                     gpuStack=with_values({"featureGates": {"DynamicMIG": True}}))
    assert len(found) == 1 and "MPSSupport (smokeTest.sharing mps)" in found[0][1], found


@pytest.mark.parametrize(("gate", "needs", "source"), REQUIRES)
def test_a_gate_without_what_it_requires_is_refused(gate: str, needs: str, source: str) -> None:
    found = problems(gpuStack=with_values({"featureGates": {gate: True, needs: False}}))
    assert len(found) == 1, found
    assert f"{gate} (settings.gpuStack.addons.draDriver.values.featureGates.{gate}) needs {needs}" in found[0][1]
    assert source in found[0][1]
    assert problems(gpuStack=with_values({"featureGates": {gate: True, needs: True}})) == []


def test_compute_domains_turn_on_no_gate_upstream_defaults_serve_them() -> None:
    assert gates(gpuStack={"computeDomains": True}) == {}
    assert KNOWN_GATES[(0, 5)]["ComputeDomainCliques"] and KNOWN_GATES[(0, 5)]["IMEXDaemonsWithDNSNames"]
    # Turning the DNS names off leaves the default-on cliques without what they need.
    found = problems(gpuStack=with_values({"featureGates": {"IMEXDaemonsWithDNSNames": False}}, computeDomains=True))
    assert len(found) == 1 and "ComputeDomainCliques (the driver's default) needs" in found[0][1], found


def test_consumable_shares_need_their_gate_and_exclude_mps() -> None:
    found = problems(gpuStack=with_values({"consumableShares": "memory"}))
    assert found == [("settings.gpuStack.addons.draDriver.values.consumableShares",
                      "needs the DRA driver's ConsumableShares gate on: its GPU kubelet plugin refuses to start")]
    on = {"consumableShares": "memory", "featureGates": {"ConsumableShares": True}}
    assert problems(gpuStack=with_values(on)) == []
    found = problems(gpuStack=with_values(on), smokeTest={"sharing": "mps", "sharedClaim": True})
    assert len(found) == 1 and "MPSSupport (settings.smokeTest.sharing)" in found[0][1], found


def test_gates_are_judged_only_where_the_driver_is_installed() -> None:
    bad = with_values({"featureGates": {"DynamicMIG": True, "PassthroughSupport": True}})
    assert len(problems(gpuStack=bad)) == 1
    bad["addons"]["draDriver"]["enabled"] = False
    assert problems(gpuStack=bad) == []


def test_gpu_health_asked_for_beside_mps_sharing_is_refused_naming_both() -> None:
    # The driver's feature-gate reference lists MPSSupport and NVMLDeviceHealthCheck as exclusive.
    found = problems(kubernetes=HEALTHY_TRACK, gpuStack={"gpuHealth": True},
                     smokeTest={"sharing": "mps", "sharedClaim": True})
    text = " ".join(f"{f}: {r}" for f, r in found)
    assert "settings.gpuStack.gpuHealth" in text and "settings.smokeTest.sharing" in text, found


def test_derived_gpu_health_stays_off_beside_mps_sharing() -> None:
    # 1.36 derives gpu health on; with MPS sharing it derives off instead of refusing a default.
    assert gates(kubernetes=HEALTHY_TRACK) == {"NVMLDeviceHealthCheck": True}
    mps = {"sharing": "mps", "sharedClaim": True}
    assert gates(kubernetes=HEALTHY_TRACK, smokeTest=mps) == {"MPSSupport": True}
    assert problems(kubernetes=HEALTHY_TRACK, smokeTest=mps) == []

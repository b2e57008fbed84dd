"""The stand-in of the DRA driver's chart (tests/fakes/dra_driver_chart) that the `local` upgrade test
serves: rendered by Helm's own library with the add-on's real values, at both versions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

from components.addons import dra_driver
from components.addons.crds_first import chart_crds
from tests.fakes import dra_driver_chart
from tests.helpers.tools import load_tool
from tests.unit.addons.helpers import final_values, settings

GPU_CLASSES = {"gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"}
DOMAIN_CLASSES = {"compute-domain-daemon.nvidia.com", "compute-domain-default-channel.nvidia.com"}


def render(archive: bytes, values: dict[str, Any]) -> list[dict[str, Any]]:
    out = helm_python.Chart.load_archive(archive).render(values, name="dra-driver-nvidia-gpu",
                                                         namespace=dra_driver.NAMESPACE, is_install=True)
    return [d for path in sorted(out) if path.endswith(".yaml") for d in yaml.safe_load_all(out[path]) if d]


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder: Path = tmp_path_factory.mktemp("standin")
    return {v: dra_driver_chart.package(folder, v).read_bytes() for v in dra_driver_chart.VERSIONS}


@pytest.mark.parametrize("version", dra_driver_chart.VERSIONS)
def test_the_addon_values_render_the_device_classes_and_the_crds_come_along(
    archives: dict[str, bytes], version: str,
) -> None:
    values = final_values(dra_driver.ADDON, settings("aws", gpuStack={"computeDomains": True}))
    objects = render(archives[version], values)
    classes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "DeviceClass"}
    assert set(classes) == GPU_CLASSES | DOMAIN_CLASSES
    assert {o["apiVersion"] for o in classes.values()} == {values["resourceApiVersion"]}
    gpu = classes["gpu.nvidia.com"]["spec"]
    # The selector the local tier's publisher writes slices for (tools/dra_publisher.py), upstream's.
    assert gpu["selectors"] == [{"cel": {"expression": load_tool("dra_publisher").DEVICE_CLASS_SELECTOR}}]
    assert gpu["extendedResourceName"] == "nvidia.com/gpu"
    assert sorted(c["metadata"]["name"] for c in chart_crds(archives[version])) == sorted(dra_driver_chart.CRD_NAMES)


def test_gpus_without_the_device_plugin_override_are_refused(archives: dict[str, bytes]) -> None:
    values = final_values(dra_driver.ADDON, settings("aws"))
    with pytest.raises(helm_python.HelmError, match="gpuResourcesEnabledOverride"):
        render(archives["0.5.0"], {**values, "gpuResourcesEnabledOverride": False})


def test_only_0_5_0_knows_host_managed_imex(archives: dict[str, bytes]) -> None:
    values = final_values(dra_driver.ADDON, settings("aws", gpuStack={"computeDomains": True}))
    host = {**values, "resources": {**values["resources"],
                                    "computeDomains": {"enabled": True, "imex": {"mode": "hostManaged"}}}}
    with pytest.raises(helm_python.HelmError, match="HostManagedIMEXDaemon"):
        render(archives["0.5.0"], host)
    gated = render(archives["0.5.0"], {**host, "featureGates": {"HostManagedIMEXDaemon": True}})
    assert "compute-domain-daemon.nvidia.com" not in {o["metadata"]["name"] for o in gated}
    assert "compute-domain-daemon.nvidia.com" in {o["metadata"]["name"] for o in render(archives["0.4.1"], host)}


def test_a_version_without_a_stand_in_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"no stand-in for dra-driver-nvidia-gpu 0\.6\.0"):
        dra_driver_chart.package(tmp_path, "0.6.0")

"""gpuStack.toolkit (operator | host): what the settings refuse, naming the field, and what the GPU
Operator and the GPU workers are told (docs/adr/0046)."""

from __future__ import annotations

from typing import Any

import pytest

from components.addons.gpu_operator import K8S_SNAP_TOOLKIT_ENV, toolkit_values
from components.addons.selected import addon_facts
from components.aws import userdata as ud
from components.settings import parse_settings
from tests.unit.aws.conftest import settings_for
from tests.unit.helpers import model_problems

VALUES = "settings.gpuStack.addons.gpuOperator.values"


problems = model_problems  # the settings' own rules (components.settings.parse_settings)


def test_operator_is_the_default_and_keeps_the_values_existing_stacks_had() -> None:
    s = parse_settings({"platform": "existing"})
    assert s.gpu_stack.toolkit == "operator"
    assert toolkit_values(s) == {"enabled": True, "env": [{"name": k, "value": v} for k, v in K8S_SNAP_TOOLKIT_ENV]}


def test_host_turns_the_operators_toolkit_off() -> None:
    s = parse_settings({"platform": "existing", "gpuStack": {"driver": "host", "toolkit": "host"}})
    assert toolkit_values(s) == {"enabled": False}


@pytest.mark.parametrize("driver", ["operator", "precompiled"])
def test_host_needs_the_driver_in_the_image_too(driver: str) -> None:
    got = problems({"platform": "existing", "gpuStack": {"driver": driver, "toolkit": "host"}})
    assert got == {"settings.gpuStack.toolkit": f"host needs gpuStack.driver host (is {driver}): the GPU node image "
                                                "carries driver and toolkit together (docs/adr/0046)"}


@pytest.mark.parametrize(("toolkit", "enabled"), [("host", True), ("operator", False)])
def test_a_values_override_that_contradicts_the_mode_is_refused(toolkit: str, enabled: bool) -> None:
    override = {"gpuOperator": {"values": {"toolkit": {"enabled": enabled}}}}
    raw = {"platform": "existing", "gpuStack": {"driver": "host", "toolkit": toolkit, "addons": override}}
    assert set(problems(raw)) == {f"{VALUES}.toolkit.enabled"}


def test_an_unknown_mode_names_the_field() -> None:
    assert set(problems({"platform": "existing", "gpuStack": {"toolkit": "image"}})) == {"settings.gpuStack.toolkit"}


def test_gpu_workers_are_told_the_mode_and_control_planes_nothing() -> None:
    s = settings_for("aws-dev")
    boot = ud.cluster_boot(s, "arn:auth", "doc", addon_facts(s))
    assert boot.host_toolkit == "cdi"  # 1.34: containerd does CDI, as the operator's toolkit would set it up
    worker = ud.render_gpu_worker(boot, ud.worker_boot(s, s.node_pools[0]))
    assert "CK8S_HOST_TOOLKIT=cdi" in ud.decoded_files(worker)["/etc/ck8s-gpu/node.env"]
    cp = ud.render_joining_control_plane(boot)
    assert "CK8S_HOST_TOOLKIT" not in ud.decoded_files(cp)["/etc/ck8s-gpu/node.env"]

    # containerd 1.6 (track 1.32) has no CDI: nvidia becomes the default runtime
    no_cdi = parse_settings({"platform": "existing", "kubernetes": {"track": "1.32-classic"},
                             "gpuStack": {"allocation": "device-plugin", "driver": "host", "toolkit": "host"}})
    assert ud.host_toolkit(no_cdi) == "default-runtime"

    def operator(raw: dict[str, Any]) -> None:
        raw["gpuStack"]["toolkit"] = "operator"

    dev = settings_for("aws-dev", operator)
    assert ud.cluster_boot(dev, "arn:auth", "doc", addon_facts(dev)).host_toolkit == ""


def test_the_node_tier_builds_the_toolkit_the_node_image_carries() -> None:
    """One toolkit: the GPU node image's packages (pins), the tools module the node tier's
    nvidia-ctk and runtimes are built from (go.mod), and the version they report (build.sh)."""
    import re
    from pathlib import Path

    from components.tables import pins

    root = Path(__file__).resolve().parents[2]
    version = pins.NVIDIA_CONTAINER_TOOLKIT.version
    go_mod = (root / "tools/mod/nvidia-container-toolkit/go.mod").read_text()
    assert re.search(rf"^require github\.com/NVIDIA/nvidia-container-toolkit v{re.escape(version)}$", go_mod, re.M)
    assert re.search(rf"^ctk_version={re.escape(version)}$", (root / "tools/build.sh").read_text(), re.M)

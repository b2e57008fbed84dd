from typing import Any

from components.policies.helm import HELM_RELEASE_PINNED, ONE_GPU_ADVERTISER, PROJECT_DIR, RELEASE
from components.tables import pins
from tests.unit.policies.helpers import res, stack_violations, violations


def release(name: str, values: dict[str, Any] | None = None, **over: Any) -> dict[str, Any]:
    """A release of pinned chart `name`, shaped as the add-on set builds it."""
    pin = pins.chart(name)
    props: dict[str, Any] = {"name": name, "namespace": name, "version": pin.version, "values": values or {}}
    if pin.is_oci:
        props["chart"] = f"{pin.repo}/{pin.name}"
    else:
        props.update(chart=pin.name, repositoryOpts={"repo": pin.repo})
    props.update(over)
    return props


def test_every_pinned_chart_passes() -> None:
    for name in pins.CHARTS:
        assert violations(HELM_RELEASE_PINNED, RELEASE, release(name)) == [], name


def test_floating_or_missing_versions_violate() -> None:
    for version in ("latest", ">=26.0.0", "v26", "", "26.7.x"):
        assert violations(HELM_RELEASE_PINNED, RELEASE, release("gpu-operator", version=version)), version
    no_version = release("gpu-operator")
    del no_version["version"]
    assert violations(HELM_RELEASE_PINNED, RELEASE, no_version) == [
        "no version: Helm would install whatever is latest at deploy time"
    ]


def test_repositories_must_be_allowed() -> None:
    foreign = release("gpu-operator", repositoryOpts={"repo": "https://charts.example.com/nvidia"})
    assert "is not allowed" in violations(HELM_RELEASE_PINNED, RELEASE, foreign)[0]
    oci = release("kai-scheduler", chart="oci://ghcr.io/someone-else/kai-scheduler")
    assert "is not allowed" in violations(HELM_RELEASE_PINNED, RELEASE, oci)[0]
    alias = release("gpu-operator", chart="nvidia/gpu-operator", repositoryOpts=None)
    assert "names no repository" in violations(HELM_RELEASE_PINNED, RELEASE, alias)[0]
    # The pack's config may allow a mirror.
    assert violations(HELM_RELEASE_PINNED, RELEASE, foreign,
                      config={"allowedRepositories": ["https://charts.example.com/nvidia/"]}) == []


def test_local_charts_only_from_this_project() -> None:
    ours = {"name": "kai-queues", "chart": str(PROJECT_DIR / "charts" / "kai-queues"), "values": {}}
    assert violations(HELM_RELEASE_PINNED, RELEASE, ours) == []
    assert violations(HELM_RELEASE_PINNED, RELEASE, {**ours, "chart": "charts/kai-queues"}) == []
    outside = {**ours, "chart": "/tmp/someone/charts/kai-queues"}
    assert "outside this project's charts/" in violations(HELM_RELEASE_PINNED, RELEASE, outside)[0]
    escaping = {**ours, "chart": "charts/../../elsewhere"}
    assert violations(HELM_RELEASE_PINNED, RELEASE, escaping)


# --- one GPU advertiser -------------------------------------------------------------------------

DRA_ON = {"gpuResourcesEnabledOverride": True, "resources": {"gpus": {"enabled": True}}}


def test_dra_mode_with_the_device_plugin_off_passes() -> None:
    resources = [res(RELEASE, release("gpu-operator", {"devicePlugin": {"enabled": False}}), name="op"),
                 res(RELEASE, release("dra-driver-nvidia-gpu", DRA_ON), name="dra")]
    assert stack_violations(ONE_GPU_ADVERTISER, resources) == []


def test_device_plugin_mode_passes_with_dra_gpus_off() -> None:
    resources = [res(RELEASE, release("gpu-operator"), name="op"),  # chart default: device plugin on
                 res(RELEASE, release("dra-driver-nvidia-gpu", {"resources": {"gpus": {"enabled": False}}}),
                     name="dra")]
    assert stack_violations(ONE_GPU_ADVERTISER, resources) == []


def test_both_advertisers_violate_on_each_release() -> None:
    op = res(RELEASE, release("gpu-operator"), name="op")  # devicePlugin.enabled defaults to true
    dra = res(RELEASE, release("dra-driver-nvidia-gpu", DRA_ON), name="dra")
    found = stack_violations(ONE_GPU_ADVERTISER, [op, dra])
    assert {urn for _, urn in found} == {op.urn, dra.urn}
    assert "gpu-operator (devicePlugin.enabled)" in found[0][0]


def test_a_string_switch_is_truthy_as_helm_sees_it() -> None:
    op = res(RELEASE, release("gpu-operator", {"devicePlugin": {"enabled": "false"}}), name="op")
    dra = res(RELEASE, release("dra-driver-nvidia-gpu", DRA_ON), name="dra")
    assert stack_violations(ONE_GPU_ADVERTISER, [op, dra])


def test_fake_gpu_operator_defaults_include_device_plugins() -> None:
    # v0.2.0 defaults: devicePlugin and kwokGpuDevicePlugin on. Turning only draPlugin on is not enough.
    half = res(RELEASE, release("fake-gpu-operator", {"draPlugin": {"enabled": True},
                                                      "devicePlugin": {"enabled": False}}))
    assert "kwokGpuDevicePlugin.enabled" in stack_violations(ONE_GPU_ADVERTISER, [half])[0][0]
    clean = res(RELEASE, release("fake-gpu-operator", {"draPlugin": {"enabled": True},
                                                       "devicePlugin": {"enabled": False},
                                                       "kwokGpuDevicePlugin": {"enabled": False}}))
    assert stack_violations(ONE_GPU_ADVERTISER, [clean]) == []


def test_unknown_switches_are_not_judged() -> None:
    op = res(RELEASE, release("gpu-operator", {"devicePlugin": {"enabled": "<computed>"}}), name="op")
    dra = res(RELEASE, release("dra-driver-nvidia-gpu", DRA_ON), name="dra")
    assert stack_violations(ONE_GPU_ADVERTISER, [op, dra]) == []

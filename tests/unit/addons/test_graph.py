"""The install graph: one clear error for every problem; defaults per platform; parallel installs."""

from __future__ import annotations

from typing import Any

import pytest

from components.addons import catalog
from components.addons.base import Addon, AddonContext
from components.addons.graph import AddonGraphError, build, install_graph
from tests.unit.addons.helpers import settings


def _values(_ctx: AddonContext) -> dict[str, Any]:
    return {}


def spec(name: str, **kw: Any) -> Addon:
    return Addon(name=name, settings_key="velero", description=name, namespace=name,
                 pod_security="baseline", values=_values, local_chart=name, **kw)


def test_missing_dependency_is_one_clear_error() -> None:
    with pytest.raises(AddonGraphError) as err:
        build([spec("queues", depends_on=("scheduler",))], settings(), ())
    assert str(err.value) == (
        "add-on graph is invalid (1 problem):\n"
        "  - queues: missing dependency 'scheduler' (not enabled in this stack)"
    )


def test_cycle_is_one_clear_error() -> None:
    addons = [spec("a", depends_on=("c",)), spec("b", depends_on=("a",)), spec("c", depends_on=("b",))]
    with pytest.raises(AddonGraphError) as err:
        build(addons, settings(), ())
    assert err.value.problems == ["dependency cycle: a -> c -> b -> a"]


def test_every_problem_in_one_error() -> None:
    addons = [
        spec("a", depends_on=("b",)), spec("b", depends_on=("a",)),
        spec("c", depends_on=("gone",)),
        spec("d", needs=("monitoring-crds",)),
        spec("e", conflicts=("a",)),
    ]
    with pytest.raises(AddonGraphError) as err:
        build(addons, settings(), ())
    text = str(err.value)
    assert text.startswith("add-on graph is invalid (4 problems):")
    for part in ("dependency cycle: a -> b -> a", "c: missing dependency 'gone'",
                 "d: unmet capability 'monitoring-crds'", "a and e cannot both be enabled"):
        assert part in text


def test_capability_from_an_addon_is_an_edge_from_the_cluster_is_not() -> None:
    provider = spec("prom", provides=lambda _s: ("monitoring-crds",))
    user = spec("dash", needs=("monitoring-crds",))
    assert build([provider, user], settings(), ()).edges["dash"] == ("prom",)
    assert build([user], settings(), ("monitoring-crds",)).edges["dash"] == ()


def test_toposort_puts_dependencies_first() -> None:
    graph = build([spec("c", depends_on=("b",)), spec("b", depends_on=("a",)), spec("a")], settings(), ())
    assert [a.name for a in graph.order] == ["a", "b", "c"]
    assert graph.longest_chain() == ("a", "b", "c")


@pytest.mark.parametrize(("platform", "expected"), [
    ("aws", ["aws-cloud-controller-manager", "gpu-operator", "dra-driver", "kai-scheduler", "kai-queues",
             "kube-prometheus-stack", "observability"]),
    ("existing", ["gpu-operator", "dra-driver", "kai-scheduler", "kai-queues"]),
    ("kind", ["fake-gpu-operator", "kai-scheduler", "kai-queues", "kube-prometheus-stack", "observability"]),
    ("local", []),
])
def test_platform_defaults(platform: str, expected: list[str]) -> None:
    extra = {"smokeTest": {"scheduler": "default"}} if platform == "local" else {}  # as stacks/Pulumi.local.yaml
    assert sorted(install_graph(settings(platform, **extra)).names) == sorted(expected)


def test_auto_addons_follow_their_capabilities() -> None:
    local = settings("local", gpuStack={"clusterProvides": ["kai-crds", "monitoring-crds"]},
                     smokeTest={"scheduler": "default"})
    assert install_graph(local).names == {"kai-queues", "observability"}
    existing = settings("existing", gpuStack={"clusterProvides": ["monitoring-crds"]})
    assert "observability" in install_graph(existing).names
    no_kai = settings("aws", gpuStack={"addons": {"kaiScheduler": {"enabled": False}}},
                      smokeTest={"scheduler": "default"})
    assert "kai-queues" not in install_graph(no_kai).names


def test_explicit_enable_with_unmet_need_is_rejected() -> None:
    s = settings("existing", gpuStack={"addons": {"observability": {"enabled": True}}})
    with pytest.raises(AddonGraphError, match="observability: unmet capability 'monitoring-crds'"):
        install_graph(s)


def test_device_plugin_mode_drops_the_dra_driver_unless_compute_domains() -> None:
    plugin = settings("aws", gpuStack={"allocation": "device-plugin"})
    assert "dra-driver" not in install_graph(plugin).names
    domains = settings("aws", gpuStack={"allocation": "device-plugin", "computeDomains": True})
    assert "dra-driver" in install_graph(domains).names
    forced = settings("aws", gpuStack={"allocation": "device-plugin", "addons": {"draDriver": {"enabled": True}}})
    with pytest.raises(AddonGraphError, match="dra-driver: has nothing to serve"):
        install_graph(forced)


def test_real_and_fake_operator_conflict() -> None:
    s = settings("kind", gpuStack={"addons": {"gpuOperator": {"enabled": True}}})
    with pytest.raises(AddonGraphError, match="fake-gpu-operator and gpu-operator cannot both be enabled"):
        install_graph(s)


def test_velero_needs_backup_settings() -> None:
    with pytest.raises(AddonGraphError, match=r"velero: needs settings\.backup\.region"):
        install_graph(settings("aws", gpuStack={"addons": {"velero": {"enabled": True}}}))
    ok = settings("aws", gpuStack={"addons": {"velero": {"enabled": True}}}, backup={"region": "eu-central-1"})
    assert "velero" in install_graph(ok).names


def test_kai_queues_and_observability_are_off_the_gpu_chain() -> None:
    graph = install_graph(settings("aws"))
    assert graph.edges["dra-driver"] == ()  # it *uses* the driver: no install edge (docs/adr/0019)
    for name in ("kai-scheduler", "kai-queues", "kube-prometheus-stack", "observability"):
        assert not {"gpu-operator", "dra-driver"} & set(graph.edges[name])


def test_catalog_covers_every_addon_setting() -> None:
    """The cloud controller manager included: no release is made outside the add-on machinery."""
    from components.settings.model import AddonsSettings

    keys = {a.settings_key for a in catalog.ADDONS}
    assert keys == set(AddonsSettings.model_fields)
    assert set(catalog.PLATFORM_DEFAULTS) == set(catalog.BY_NAME)
    for row in catalog.PLATFORM_DEFAULTS.values():
        assert set(row) == set(catalog.PLATFORMS)


def test_smoke_test_on_kai_needs_kai() -> None:
    with pytest.raises(AddonGraphError, match=r"smokeTest\.scheduler is kai but KAI is neither installed"):
        install_graph(settings("local", smokeTest={"scheduler": "kai"}))  # KAI is off on local
    assert install_graph(settings("local", smokeTest={"scheduler": "kai"},
                                  gpuStack={"clusterProvides": ["kai-crds"]})).names == {"kai-queues"}

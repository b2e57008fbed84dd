"""What KAI v0.17.0 refuses in a Topology is refused in settings first, each at its level's field:
the CRD's CEL rules (nodeLabel unique, kubernetes.io/hostname only last; docs/compatibility.md has
the real CRD refusing the same two) and the webhook's alias rules (topology_validator.go)."""

from __future__ import annotations

from typing import Any

import pytest

from components.validate import validate
from tests.unit.addons.helpers import settings

PATH = "settings.gpuStack.topology.levels"


def _problems(*levels: dict[str, Any], **topology: Any) -> dict[str, str]:
    s = settings("aws", gpuStack={"topology": {"levels": list(levels), **topology}})
    return {path: why for path, why in validate(s) if path.startswith(PATH)}


def test_the_default_topology_passes() -> None:
    assert validate(settings("aws")) == []


@pytest.mark.parametrize(("levels", "path", "fragment"), [
    (({"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "topology.kubernetes.io/zone"}),
     f"{PATH}[0].nodeLabel", "can only be the lowest (last) level"),
    (({"nodeLabel": "a"}, {"nodeLabel": "a"}), f"{PATH}[1].nodeLabel", "is already level 0"),
    (({"nodeLabel": "a", "alias": "x"}, {"nodeLabel": "b", "alias": "x"}), f"{PATH}[1].alias",
     "aliases are unique"),
    (({"nodeLabel": "a"}, {"nodeLabel": "b", "alias": "a"}), f"{PATH}[1].alias", "must not equal one"),
])
def test_what_kai_refuses_is_named_at_its_level(levels: tuple[dict[str, Any], ...], path: str,
                                                fragment: str) -> None:
    problems = _problems(*levels)
    assert path in problems and fragment in problems[path], problems


def test_a_topology_that_is_off_is_not_judged() -> None:
    bad = ({"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "a"})
    assert _problems(*bad, enabled=False) == {}
    assert f"{PATH}[0].nodeLabel" in _problems(*bad)


# --- which network layers the nodes really get (EC2 instance topology, per instance type) ----------

LAYER = "topology.k8s.aws/network-node-layer-{}"


def _pools(*types: str) -> list[dict[str, Any]]:
    return [{"name": f"pool-{i}", "instanceType": t} for i, t in enumerate(types)]


def _default_labels(*types: str) -> list[str]:
    from components.addons.kai_queues import ADDON
    from tests.unit.addons.helpers import final_values

    s = settings("aws", nodePools=_pools(*types))
    (topology,) = final_values(ADDON, s)["topologies"]
    return [lv["nodeLabel"] for lv in topology["levels"]]


@pytest.mark.parametrize(("types", "layers"), [
    (("p5.48xlarge",), 3),                   # 3 network nodes
    (("p5.48xlarge", "g6e.48xlarge"), 3),    # both 3
    (("p6-b200.48xlarge",), 3),              # 4 network nodes; the defaults stop at 3
    (("g6.xlarge",), 0),                     # no EC2 instance topology for g6
    (("p5.48xlarge", "g6.12xlarge"), 0),     # one pool without: its nodes would fall out of the Topology
    (("p5.4xlarge",), 0),                    # only p5.48xlarge of the p5 sizes has one
])
def test_default_levels_are_the_network_layers_every_gpu_pool_gets(types: tuple[str, ...], layers: int) -> None:
    expected = ["topology.kubernetes.io/zone", *(LAYER.format(n) for n in range(1, layers + 1)),
                "kubernetes.io/hostname"]
    assert _default_labels(*types) == expected


@pytest.mark.parametrize(("types", "layer", "refused"), [
    (("p5.48xlarge", "g6.xlarge"), 1, "pool-1 (g6.xlarge: 0)"),
    (("p5.48xlarge",), 4, "pool-0 (p5.48xlarge: 3)"),        # any N: a fourth layer too
    (("p5.48xlarge",), 12, "pool-0 (p5.48xlarge: 3)"),
    (("p6-b200.48xlarge",), 4, None),                         # four network nodes: layer 4 is there
    (("p5.48xlarge", "g6e.xlarge"), 3, None),
])
def test_an_explicit_network_layer_some_gpu_pool_never_gets_is_refused(types: tuple[str, ...], layer: int,
                                                                       refused: str | None) -> None:
    s = settings("aws", nodePools=_pools(*types), gpuStack={"topology": {"levels": [
        {"nodeLabel": "topology.kubernetes.io/zone"}, {"nodeLabel": LAYER.format(layer)},
        {"nodeLabel": "kubernetes.io/hostname"}]}})
    problems = {path: why for path, why in validate(s) if path.startswith(PATH)}
    if refused is None:
        assert problems == {}
    else:
        assert list(problems) == [f"{PATH}[1].nodeLabel"], problems
        assert refused in problems[f"{PATH}[1].nodeLabel"] and "leave levels unset" in problems[f"{PATH}[1].nodeLabel"]


def test_a_label_that_only_looks_like_a_layer_is_not_judged_as_one() -> None:
    from components.tables.instance_types import network_layer

    assert [network_layer(x) for x in (LAYER.format(2), "topology.k8s.aws/network-node-layer-0",
                                       "topology.k8s.aws/network-node-layer-x", "example.com/network-node-layer-1",
                                       "topology.k8s.aws/network-node-layer-2/")] == [2, None, None, None, None]

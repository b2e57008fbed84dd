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

"""The template <- override merge of ck8s-gpu:settings mappings."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from components.stamping.merge import merge_settings

BASE: dict[str, Any] = {
    "platform": "aws",
    "network": {"vpcCidr": "10.40.0.0/16", "azCount": 3, "apiAllowList": ["10.0.0.0/8"]},
    "nodePools": [
        {"name": "l40s", "instanceType": "g6e.12xlarge", "maxSize": 8, "labels": {"workload": "inference"}},
        {"name": "h100", "instanceType": "p5.48xlarge", "maxSize": 4},
    ],
    "backup": {"region": "us-west-2"},
}


def test_mappings_merge_key_by_key() -> None:
    out = merge_settings(BASE, {"network": {"vpcCidr": "10.41.0.0/16"}})
    assert out["network"] == {"vpcCidr": "10.41.0.0/16", "azCount": 3, "apiAllowList": ["10.0.0.0/8"]}


def test_named_lists_merge_item_by_item_and_keep_order() -> None:
    out = merge_settings(BASE, {"nodePools": [{"name": "h100", "instanceType": "p5.4xlarge"},
                                              {"name": "l4", "instanceType": "g6.xlarge"}]})
    assert [p["name"] for p in out["nodePools"]] == ["l40s", "h100", "l4"]
    assert out["nodePools"][0] == BASE["nodePools"][0]
    assert out["nodePools"][1] == {"name": "h100", "instanceType": "p5.4xlarge", "maxSize": 4}


def test_plain_lists_are_replaced_and_null_removes() -> None:
    out = merge_settings(BASE, {"network": {"apiAllowList": ["192.168.0.0/16"]}, "backup": None})
    assert out["network"]["apiAllowList"] == ["192.168.0.0/16"]
    assert "backup" not in out


def test_inputs_are_not_modified() -> None:
    base, override = copy.deepcopy(BASE), {"nodePools": [{"name": "h100", "maxSize": 1}], "network": {"azCount": 2}}
    before = copy.deepcopy(override)
    out = merge_settings(base, override)
    out["network"]["vpcCidr"] = "changed"
    out["nodePools"][0]["labels"]["workload"] = "changed"
    assert base == BASE and override == before


leaf = st.one_of(st.integers(), st.text(max_size=5), st.booleans())
tree = st.recursive(leaf, lambda kids: st.dictionaries(st.text(max_size=3), kids, max_size=3), max_leaves=8)


@given(st.dictionaries(st.text(max_size=3), tree, max_size=4), st.dictionaries(st.text(max_size=3), tree, max_size=4))
def test_every_override_leaf_wins_and_empty_override_is_identity(base: dict[str, Any], over: dict[str, Any]) -> None:
    assert merge_settings(base, {}) == base
    out = merge_settings(base, over)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            assert merge_settings(base[key], value) == out[key]
        else:
            assert out[key] == value
    for key in base.keys() - over.keys():
        assert out[key] == base[key]

"""Kubernetes' label/taint syntax and NodeRestriction's kubelet label rule, as components/settings/k8s_syntax.py
models them from apimachinery validation.go and noderestriction/admission.go."""

from __future__ import annotations

import pytest

from components.settings import k8s_syntax as k


@pytest.mark.parametrize("key,ok", [
    ("workload", True), ("example.com/team", True), ("a.b-c_d", True), ("x" * 63, True),
    ("Work Load", False), ("-lead", False), ("trail-", False), ("x" * 64, False), ("a/b/c", False),
    ("/name", False), ("Example.com/x", False), ("example.com/", False), ("", False),
])
def test_qualified_names(key: str, ok: bool) -> None:
    assert (k.qualified_name_problems(key) == []) is ok


@pytest.mark.parametrize("value,ok", [
    ("", True), ("l40s", True), ("a.b_c-d", True), ("v" * 63, True),
    ("ml platform", False), ("v" * 64, False), ("-x", False), ("x/y", False),
])
def test_label_values(value: str, ok: bool) -> None:
    assert (k.label_value_problems(value) == []) is ok


@pytest.mark.parametrize("key,ok", [
    ("ck8s-gpu/pool", True), ("nvidia.com/dra-kubelet-plugin", True), ("node.kubernetes.io/gpu", True),
    ("topology.kubernetes.io/zone", True), ("kubelet.kubernetes.io/x", True), ("team", True),
    ("node-role.kubernetes.io/gpu", False), ("kubernetes.io/role", False), ("example.k8s.io/x", False),
    ("node-restriction.kubernetes.io/pool", False), ("a.node-restriction.kubernetes.io/b", False),
])
def test_what_a_kubelet_may_label_itself_with(key: str, ok: bool) -> None:
    assert k.kubelet_may_set(key) is ok

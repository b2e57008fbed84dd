"""A provisioned GPU node, checked in place (needs --hosts; see docs/node-validation.md).

Each test asserts one check's verdict; GPU checks skip, with the reason, on nodes without an
NVIDIA GPU (control planes, CPU pools).
"""

from __future__ import annotations

import pytest

from tests.node import checks
from tests.node.checks import Expectations, Node, Verdict


def _assert(verdict: Verdict) -> None:
    if verdict.skipped:
        pytest.skip(f"{verdict.check}: {verdict.skipped}")
    assert not verdict.problems, f"{verdict.check}: " + "; ".join(verdict.problems)


def test_k8s_snap_on_the_configured_track(node: Node, expectations: Expectations) -> None:
    _assert(checks.check_snap(node, expectations))


def test_k8s_services_running(node: Node) -> None:
    _assert(checks.check_services(node))


def test_node_joined_and_ready(node: Node) -> None:
    _assert(checks.check_node_ready(node))


def test_containerd_nvidia_runtime_drop_in(node: Node) -> None:
    _assert(checks.check_containerd_nvidia(node))


def test_cdi_specs(node: Node, expectations: Expectations) -> None:
    _assert(checks.check_cdi(node, expectations))


def test_nvidia_kernel_modules(node: Node) -> None:
    _assert(checks.check_kernel_modules(node))


def test_nvidia_smi_lists_the_expected_gpus(node: Node, expectations: Expectations) -> None:
    _assert(checks.check_nvidia_smi(node, expectations))


def test_dcgm_exporter_answers(node: Node, expectations: Expectations) -> None:
    _assert(checks.check_dcgm_exporter(node, expectations))

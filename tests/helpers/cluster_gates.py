"""What the gate table (components/facts/feature_gates.py) says a local stack's loopback cluster needs:
LocalCluster's `feature_gates`/`runtime_config` and the node tier kubelets' gates. tools/ stays
stdlib-only, so the tests compute this and hand it over."""

from __future__ import annotations

from typing import Any

from components.facts.feature_gates import CONTROL_PLANE, ClusterGates, required
from components.settings.model import Settings
from tests.helpers.tools import load_tool


def local_minor() -> int:
    """The minor the loopback control plane runs (tools/localcluster.py KUBE_VERSION), not the track's:
    a gate that minor lacks would stop its components from starting."""
    return int(load_tool("localcluster").KUBE_VERSION.split(".")[1])


def local_required(raw_settings: dict[str, Any]) -> ClusterGates:
    return required(Settings.model_validate(raw_settings), local_minor())


def local_cluster_gates(raw_settings: dict[str, Any]) -> dict[str, Any]:
    """LocalCluster keyword arguments: kwokctl takes one gate set for the whole control plane."""
    gates = local_required(raw_settings)
    return {"feature_gates": gates.of(*CONTROL_PLANE), "runtime_config": gates.runtime_config}


def kubelet_gates(raw_settings: dict[str, Any]) -> dict[str, bool]:
    return local_required(raw_settings).of("kubelet")

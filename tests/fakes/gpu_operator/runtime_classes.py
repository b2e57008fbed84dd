"""The RuntimeClasses the GPU Operator creates for a ClusterPolicy rendered from chart values.

NVIDIA/gpu-operator tag v26.7.0:
- deployments/gpu-operator/templates/clusterpolicy.yaml: no ClusterPolicy without
  `clusterPolicy.deployCR`; `spec.operator.runtimeClass` from `operator.runtimeClass` (values.yaml:
  `nvidia`) when set; `spec.cdi.enabled` from `cdi.enabled` (values.yaml: true);
  `spec.cdi.nriPluginEnabled` only where both are true.
- api/nvidia/v1/clusterpolicy_types.go CDIConfigSpec.IsEnabled (unset: true), IsNRIPluginEnabled
  (unset: false).
- controllers/state_manager.go isStateEnabled: `pre-requisites` runs unless the NRI plugin is on;
  controllers/object_controls.go RuntimeClasses: a disabled pre-requisites state clears the classes;
  otherwise each of assets/pre-requisites/0200_runtime_class.yaml (name and handler
  FILLED_BY_OPERATOR: getRuntimeClassName, `nvidia` by default), 0210_runtime_class_legacy.yaml
  (`nvidia-legacy`) and 0220_runtime_class_cdi.yaml (`nvidia-cdi`) is created, the last two only
  with CDI enabled (deleted otherwise). Handler = name for all three.
"""

from __future__ import annotations

from typing import Any

DEFAULT_RUNTIME_CLASS = "nvidia"  # controllers/object_controls.go DefaultRuntimeClass
MODE_CLASSES = ("nvidia-cdi", "nvidia-legacy")


def created(values: dict[str, Any]) -> dict[str, str]:
    """RuntimeClass name -> handler the operator creates for these (final) chart values."""
    if not values.get("clusterPolicy", {}).get("deployCR", True):
        return {}
    cdi = values.get("cdi", {})
    cdi_on = cdi.get("enabled", True) is not False
    if cdi_on and cdi.get("nriPluginEnabled", False):
        return {}
    name = values.get("operator", {}).get("runtimeClass") or DEFAULT_RUNTIME_CLASS
    classes = {name: name}
    if cdi_on:
        classes.update({c: c for c in MODE_CLASSES})
    return classes

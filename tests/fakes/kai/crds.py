"""KAI's PodGroup CRD as far as the stand-in reads it (KAI-Scheduler
pkg/apis/scheduling/v2alpha2/podgroup_types.go: group scheduling.run.ai, version v2alpha2,
namespaced, spec.minMember int32 and spec.queue string); every other field kept as sent. Written
here from the Go types, not copied from KAI's generated CRD."""

from __future__ import annotations

from typing import Any

POD_GROUP_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "podgroups.scheduling.run.ai"},
    "spec": {
        "group": "scheduling.run.ai", "scope": "Namespaced",
        "names": {"kind": "PodGroup", "plural": "podgroups", "singular": "podgroup", "listKind": "PodGroupList",
                  "shortNames": ["pg"]},
        "versions": [{"name": "v2alpha2", "served": True, "storage": True, "subresources": {"status": {}},
                      "schema": {"openAPIV3Schema": {
                          "type": "object", "x-kubernetes-preserve-unknown-fields": True,
                          "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                                  "properties": {"minMember": {"type": "integer", "format": "int32",
                                                                               "minimum": 0},
                                                                 "queue": {"type": "string"}}}}}}}],
    },
}

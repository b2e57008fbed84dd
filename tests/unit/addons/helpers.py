"""Shared builders for the add-on tests: settings from raw dicts, contexts, a stand-in cluster."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.addons.base import Addon, AddonContext
from components.addons.graph import install_graph
from components.facts.cluster import ClusterFacts, cluster_facts
from components.plan.mockengine import PlanRun, Recorded
from components.settings import Settings, parse_settings

TRACKS = ("1.32-classic", "1.33-classic", "1.34-classic", "1.35-classic", "1.36-classic")
DRIVER_MODES = ("operator", "precompiled", "host")
# On aws, driver modes host and precompiled need every pool to name its image (docs/adr/0018).
POOL_AMI = "ami-0123456789abcdef0"
KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://10.0.0.1:6443'}}]\n"


def settings(platform: str = "aws", **raw: Any) -> Settings:
    doc: dict[str, Any] = {"platform": platform, **raw}
    if platform == "aws":
        doc.setdefault("region", "eu-north-1")
    return parse_settings(doc)


def stack(track: str, driver: str, allocation: str, platform: str = "aws", **raw: Any) -> Settings:
    """Settings for one (track, driver mode, allocation mode) cell; DRA below 1.34 needs the gate."""
    k8s_raw: dict[str, Any] = {"track": track}
    if allocation == "dra" and int(track.split(".")[1].split("-")[0]) < 34:
        k8s_raw["featureGates"] = ["DynamicResourceAllocation=true"]
    gpu_stack = {"driver": driver, "allocation": allocation, **raw.pop("gpuStack", {})}
    if platform == "aws" and driver != "operator":
        raw.setdefault("nodePools", [{"name": "gpu", "ami": POOL_AMI}])
    return settings(platform, kubernetes=k8s_raw, gpuStack=gpu_stack, **raw)


def context(addon: Addon, s: Settings) -> AddonContext:
    graph = install_graph(s)
    return AddonContext(s, cluster_facts(s), graph.capabilities, graph.names, addon.version(s))


def final_values(addon: Addon, s: Settings) -> dict[str, Any]:
    return addon.final_values(context(addon, s))


class StandInCluster:
    """A ClusterHandle for mock-engine runs: a provider, a secret kubeconfig, a ready gate."""

    def __init__(self, s: Settings) -> None:
        self.kubeconfig = pulumi.Output.secret(KUBECONFIG)
        self.provider = k8s.Provider("cluster-k8s", kubeconfig=self.kubeconfig)
        self.ready = k8s.core.v1.ConfigMap(
            "cluster-api-ready", metadata={"name": "api-ready", "namespace": "kube-system"},
            opts=pulumi.ResourceOptions(provider=self.provider),
        )
        self.facts: ClusterFacts = cluster_facts(s)


def by_name(r: PlanRun) -> dict[str, Recorded]:
    return {x.name: x for x in r.resources}


def ancestors(r: PlanRun, name: str) -> set[str]:
    """Every resource `name` waits for, directly or through others (by resource name)."""
    urn_to_name = {x.urn: x.name for x in r.resources}
    res = by_name(r)
    seen: set[str] = set()
    todo = [name]
    while todo:
        for dep in res[todo.pop()].dependencies:
            dep_name = urn_to_name[dep]
            if dep_name not in seen:
                seen.add(dep_name)
                todo.append(dep_name)
    return seen

"""Our gang gate (tools/mod/ganggate, built by tools/build.sh as `ck8s-gang-gate`) as a process
against a test cluster, and the gang pods it judges: KAI's pod-group annotation, the scheduling
gate, and a claim for a node's GPUs in one autoscaled pool (issue 41). The real autoscaler beside it
is tests/helpers/karpenter.py; the scenarios are in tests/integration/test_karpenter_local.py."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from components.facts.autoscaling import NODEPOOL_LABEL
from components.settings.model import Settings
from components.tables.instance_types import gpu_facts
from components.tables.labels import GANG_GATE
from tests.helpers import karpenter as kp
from tests.helpers.controller_env import Process

BINARY = "ck8s-gang-gate"
GATE = GANG_GATE  # components/tables/labels.py
# KAI-Scheduler pkg/common/constants PodGroupAnnotationForPod: the pod's PodGroup.
POD_GROUP_ANNOTATION = "pod-group-name"
POD_GROUP_API = "scheduling.run.ai/v2alpha2"


def missing(bin_dir: Path) -> list[str]:
    return [] if (bin_dir / BINARY).is_file() else [str(bin_dir / BINARY)]


def pool_args(settings: Settings) -> list[str]:
    """`--pool NAME=GPUS_PER_NODE` for each autoscaled pool of the settings (the table's GPU count)."""
    out = []
    for pool in settings.node_pools:
        facts = gpu_facts(pool.instance_type)
        if pool.autoscaling is not None and facts is not None:
            out += ["--pool", f"{pool.name}={facts.count}"]
    return out


class GangGate(Process):
    """One ck8s-gang-gate process against `kubeconfig`, its log in `<workdir>/ck8s-gang-gate.log`."""

    def __init__(self, workdir: Path, kubeconfig: Path, bin_dir: Path, settings: Settings,
                 interval: str = "1s", settle: str = "2s") -> None:
        super().__init__(BINARY, workdir)
        self.args = [str(bin_dir / BINARY), "--kubeconfig", str(kubeconfig), *pool_args(settings),
                     "--gate", GATE, "--interval", interval, "--settle", settle]

    def start(self) -> GangGate:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.run(self.args, {})
        return self


def pod_group(name: str, min_member: int, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": POD_GROUP_API, "kind": "PodGroup", "metadata": {"name": name, "namespace": namespace},
            "spec": {"minMember": min_member, "queue": "default"}}


def gang_pod(name: str, group: str, *, pool: str, product: str, count: int,
             tolerate: Sequence[Mapping[str, str]] = (), namespace: str = "default") -> list[dict[str, Any]]:
    """kp.gpu_claim_pod, held by the gate, in PodGroup `group`, on NodePool `pool`."""
    template, pod = kp.gpu_claim_pod(name, product=product, count=count, namespace=namespace,
                                     annotations={POD_GROUP_ANNOTATION: group}, tolerate=tolerate)
    pod["spec"]["schedulingGates"] = [{"name": GATE}]
    pod["spec"]["nodeSelector"] = {NODEPOOL_LABEL: pool}
    return [template, pod]


def gate_events(kubectl: Callable[..., str], pod: str, namespace: str = "default") -> list[tuple[str, str]]:
    """(reason, message) of the events the gate wrote about `pod`."""
    items = json.loads(kubectl("get", "events", "-n", namespace, "--field-selector",
                               f"involvedObject.name={pod}", "-o", "json"))["items"]
    return [(e.get("reason", ""), e.get("message", "")) for e in items
            if (e.get("source") or {}).get("component") == BINARY or e.get("reportingComponent") == BINARY]


def gated(pod: dict[str, Any]) -> bool:
    return any(g.get("name") == GATE for g in pod["spec"].get("schedulingGates") or [])

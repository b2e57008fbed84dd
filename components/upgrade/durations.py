"""Expected seconds per upgrade step, as (low, high), each with what it rests on.

None of these is measured on AWS by this project yet: they are our estimates from the work each
step does, stated so `upgrade --plan` can give an order of magnitude and an operator can plan a
window. Waits that a setting bounds (GPU job grace, drain timeout) are reported separately as
worst cases, not folded into the expected range.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Duration:
    low: int
    high: int
    basis: str


DURATIONS: dict[str, Duration] = {
    "preflight": Duration(5, 30, "one `kubectl get nodes` through SSM on a control plane (SSM round trip: seconds)"),
    "cordon-drain": Duration(20, 180, "evicting a node's pods with default 30 s grace periods; a PDB-blocked "
                                      "eviction waits up to drainTimeoutSeconds (worst case, reported apart)"),
    "snap-refresh": Duration(60, 300, "downloading the k8s snap of the next track (a few hundred MB) and "
                                      "restarting its services (k8s-snap post-refresh hook)"),
    "node-ready": Duration(30, 240, "kubelet re-registers on the new minor; a control plane also waits for its "
                                    "kube-apiserver and etcd member"),
    "pulumi-up": Duration(60, 600, "launch templates and add-on releases for the new track (Helm upgrades wait "
                                   "for their rollouts; the GPU Operator re-rolls its toolkit)"),
    "smoke": Duration(60, 900, "the smoke test's Job (settings.smokeTest.timeoutSeconds bounds it)"),
}


def node_upgrade() -> tuple[int, int]:
    parts = [DURATIONS[k] for k in ("cordon-drain", "snap-refresh", "node-ready")]
    return sum(p.low for p in parts), sum(p.high for p in parts)

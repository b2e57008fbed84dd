"""What the upgrade reads from Kubernetes, projected ON the control plane to a few fields.

SSM returns at most 24,000 characters of a command's output (GetCommandInvocation
StandardOutputContent), and a Node's JSON alone can pass 10 KB (status.images), so the full
`kubectl get -o json` never travels: the node's python3 (Ubuntu ships it) keeps the fields below,
for the control planes and the nodes asked about only.

Shapes read: core/v1 NodeList and PodList (k8s.io/api core/v1 types.go: Node.spec.unschedulable,
status.nodeInfo.kubeletVersion, status.conditions[type=Ready]; Pod.metadata.ownerReferences with
`controller: true`, spec.resourceClaims, containers[].resources.limits, status.phase).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

CONTROL_PLANE_LABEL = "node-role.kubernetes.io/control-plane"  # k8sd pkg/k8sd/setup/kubelet.go
GPU_RESOURCE = "nvidia.com/gpu"  # the device plugin's extended resource
UPGRADE_LABEL = "ck8s-gpu/upgrade"  # set while OUR upgrade holds the node cordoned

# Run as `python3 -c NODES_PY name...` on `k8s kubectl get nodes -o json`: one JSON line per node.
NODES_PY = """
import json, sys
want = set(sys.argv[1:])
CP, HELD = @CP@, @HELD@
for n in json.load(sys.stdin)["items"]:
    m, s = n["metadata"], n.get("status", {})
    labels = m.get("labels") or {}
    if want and m["name"] not in want and CP not in labels:
        continue
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in s.get("conditions") or [])
    print(json.dumps({"name": m["name"], "version": (s.get("nodeInfo") or {}).get("kubeletVersion", "v0.0.0"),
                      "ready": ready, "unschedulable": bool(n.get("spec", {}).get("unschedulable")),
                      "controlPlane": CP in labels, "held": HELD in labels}))
""".replace("@CP@", repr(CONTROL_PLANE_LABEL)).replace("@HELD@", repr(UPGRADE_LABEL))

# Run on `k8s kubectl get pods -A --field-selector spec.nodeName=X -o json`: running GPU Job pods.
GPU_JOB_PODS_PY = """
import json, sys
for p in json.load(sys.stdin)["items"]:
    m, spec = p["metadata"], p.get("spec", {})
    owner = next((o for o in m.get("ownerReferences") or [] if o.get("controller")), {})
    phase = (p.get("status") or {}).get("phase", "")
    limits = [(c.get("resources") or {}).get("limits") or {} for c in spec.get("containers") or []]
    gpus = sum(int(lim.get(@GPU@, 0) or 0) for lim in limits)
    gpus += len(spec.get("resourceClaims") or [])
    if owner.get("kind") == "Job" and phase not in ("Succeeded", "Failed") and gpus > 0:
        print(m.get("namespace", "") + "/" + m["name"])
""".replace("@GPU@", repr(GPU_RESOURCE))


# Run on `k8s kubectl get upgrades -o json` (upgrades.k8sd.io/v1alpha, cluster-scoped; status
# phase NodeUpgrade|FeatureUpgrade|Completed|Failed, strategy, upgradedNodes: k8s-snap-api
# api/v1alpha/upgrade_types.go).
UPGRADES_PY = """
import json, sys
for u in json.load(sys.stdin)["items"]:
    s = u.get("status") or {}
    print(json.dumps({"name": u["metadata"]["name"], "phase": s.get("phase", ""),
                      "strategy": s.get("strategy", ""), "upgradedNodes": s.get("upgradedNodes") or []}))
"""


@dataclass(frozen=True)
class UpgradeView:
    name: str
    phase: str
    strategy: str
    upgraded_nodes: tuple[str, ...]

    @property
    def in_progress(self) -> bool:
        """k8s-snap pkg/client/kubernetes/upgrades.go GetInProgressUpgrade: not Failed, not Completed."""
        return self.phase not in ("Completed", "Failed")


def upgrades_command() -> list[str]:
    return ["sh", "-c", f"k8s kubectl get upgrades -o json | python3 -c {shlex.quote(UPGRADES_PY)}"]


def upgrades(text: str) -> list[UpgradeView]:
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            out.append(UpgradeView(str(d["name"]), str(d["phase"]), str(d["strategy"]),
                                   tuple(str(n) for n in d["upgradedNodes"])))
        except (ValueError, KeyError, TypeError) as exc:
            raise ViewError(f"unreadable upgrade line {line[:200]!r}: {exc}") from None
    return sorted(out, key=lambda u: u.name)


class ViewError(ValueError):
    pass


@dataclass(frozen=True)
class NodeView:
    name: str
    kubelet_version: str
    ready: bool
    unschedulable: bool
    control_plane: bool
    held_by_upgrade: bool

    @property
    def minor(self) -> int:
        return int(self.kubelet_version.lstrip("v").split(".")[1])


def nodes_command(names: Iterable[str] = ()) -> list[str]:
    """The control planes and `names` (all nodes when empty), one JSON line each."""
    script = f"k8s kubectl get nodes -o json | python3 -c {shlex.quote(NODES_PY)} {shlex.join(sorted(names))}"
    return ["sh", "-c", script.strip()]


def gpu_job_pods_command(node: str) -> list[str]:
    selector = shlex.quote(f"spec.nodeName={node}")
    return ["sh", "-c", f"k8s kubectl get pods --all-namespaces --field-selector {selector} -o json "
                        f"| python3 -c {shlex.quote(GPU_JOB_PODS_PY)}"]


def nodes(text: str) -> dict[str, NodeView]:
    out = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            view = NodeView(str(d["name"]), str(d["version"]), bool(d["ready"]), bool(d["unschedulable"]),
                            bool(d["controlPlane"]), bool(d["held"]))
            view.minor  # noqa: B018 (a malformed version fails here, not later)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise ViewError(f"unreadable node line {line[:200]!r}: {exc}") from None
        out[view.name] = view
    return out


def gpu_job_pods(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]

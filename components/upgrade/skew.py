"""Which track changes and version mixes are allowed, from Kubernetes' version-skew policy.

https://kubernetes.io/releases/version-skew-policy/ (kept for 1.34-1.36):
- kube-apiserver instances in an HA cluster differ by at most one minor;
- a kubelet is never newer than the OLDEST kube-apiserver, and at most three minors older than it;
- upgrade order: every kube-apiserver first, then kubelets.
Canonical Kubernetes upgrades one minor at a time (`snap refresh k8s --channel=<next>/stable`,
control planes first); nothing in k8s-snap refuses a skipped minor or a downgrade, so we do.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..tables import pins, tokens

MAX_KUBELET_LAG = 3  # minors a kubelet may trail the oldest kube-apiserver (since Kubernetes 1.28)


def minor(track: str) -> int:
    return pins.track(track).minor


def minor_of_version(version: str) -> int:
    """`v1.35.7` -> 35 (a Node's kubeletVersion)."""
    return int(version.lstrip("v").split(".")[1])


def track_for_minor(value: int) -> str | None:
    return next((t.track for t in pins.SNAP_TRACKS.values() if t.minor == value), None)


def track_change_problems(deployed: str, requested: str) -> list[str]:
    """Why going from `deployed` to `requested` must be refused (empty: allowed, or no change)."""
    if deployed not in pins.SNAP_TRACKS or requested not in pins.SNAP_TRACKS:
        return []  # unknown tracks are the track rule's problem, reported there
    old, new = minor(deployed), minor(requested)
    if new < old:
        return [f"{deployed} -> {requested} is a downgrade: Canonical Kubernetes cannot go back a minor in "
                "place (the datastore and API objects move forward); rebuild from backup instead"]
    if new > old + 1:
        hops = " -> ".join(upgrade_path(deployed, requested))
        return [f"{deployed} -> {requested} skips {new - old - 1} minor(s); upgrade one minor at a time: {hops} "
                f"(ck8s-gpu upgrade --to {track_for_minor(old + 1)})"]
    return []


def upgrade_path(deployed: str, target: str) -> list[str]:
    """Every track from `deployed` to `target`, one minor per hop (tracks missing from the pin table
    are named by their minor so the message still shows the gap)."""
    old, new = minor(deployed), minor(target)
    return [track_for_minor(m) or f"1.{m}" for m in range(old, new + 1)]


def kubelet_problems(kubelet_minor: int, apiserver_minors: Iterable[int]) -> list[str]:
    """A kubelet at `kubelet_minor` beside these kube-apiservers breaks the policy when:"""
    servers = list(apiserver_minors)
    if not servers:
        return []
    oldest, newest = min(servers), max(servers)
    out = []
    if kubelet_minor > oldest:
        out.append(f"kubelet 1.{kubelet_minor} would be newer than kube-apiserver 1.{oldest}: upgrade every "
                   "control plane first")
    if newest - kubelet_minor > MAX_KUBELET_LAG:
        out.append(f"kubelet 1.{kubelet_minor} would trail kube-apiserver 1.{newest} by more than "
                   f"{MAX_KUBELET_LAG} minors")
    return out


def apiserver_problems(minors: Iterable[int]) -> list[str]:
    values = list(minors)
    if values and max(values) - min(values) > 1:
        return [f"kube-apiservers would span 1.{min(values)}..1.{max(values)}: at most one minor apart"]
    return []


UPGRADE_TYPES = (tokens.DYNAMIC_NODE_UPGRADE, tokens.DYNAMIC_POOL_UPGRADE,
                 tokens.DYNAMIC_UPGRADE_COMPLETE)


def deployed_track(resources: Iterable[dict[str, object]]) -> str | None:
    """The track an earlier plan or state recorded on its node-upgrade resources (oldest if mixed:
    an interrupted upgrade leaves some on the old one)."""
    found = {str(inputs["track"]) for r in resources if r.get("type") in UPGRADE_TYPES
             and isinstance(inputs := r.get("inputs") or r.get("outputs"), dict) and inputs.get("track")}
    known = [t for t in found if t in pins.SNAP_TRACKS]
    return min(known, key=minor) if known else None

"""Invariant recorders: what must never happen to a cluster during day-2 operations, written to
`cluster["violations"]` (a list of strings) when it starts to hold. They never refuse anything
(reality does not either); tests read the list.

Checked at every state change the fake models that could break them: a snap refresh starting or
ending, a join, a node removal, an instance terminated (fleet.py, aws_cli.py).

- etcd quorum: fewer than a majority of the control-plane members up. A member is down while its
  snap refreshes (k8s-snap restarts every service, etcd included) or when its instance is not
  running. Membership is k8sd's (a removed member no longer counts).
- version skew (kubernetes.io/releases/version-skew-policy, as of v1.34): kube-apiservers more than
  one minor apart; a kubelet newer than the kube-apiserver it talks to; a kubelet more than three
  minors older than the newest kube-apiserver. A control plane's kubelet talks to its own,
  same-snap apiserver (k8s-snap setup/util_kubeconfig.go SetupControlPlaneKubeconfigs: kubelet.conf
  -> the local address); a worker's goes through k8s-apiserver-proxy to every control plane
  (SetupWorkerKubeconfigs), so it is compared with the OLDEST running kube-apiserver. Only running
  components count (a refreshing or stopped node's kubelet/apiserver is not running).
- an in-place minor kubelet upgrade of a node still running pods: the policy's kubelet note, "Before
  performing a minor version kubelet upgrade, drain pods from that node. In-place minor version
  kubelet upgrades are not supported." A snap refresh to another track is exactly that; pods a
  drain leaves (DaemonSet-managed, finished) do not count.
- unsupported version changes: a refresh that skips a minor or goes back a minor. Upstream does not
  refuse either (snapd switches channels freely; k8s-snap's pre-/post-refresh hooks check no
  versions; its upgrade how-to only warns that skipping minors is unsupported, docs/canonicalk8s/
  snap/howto/upgrades.md), so the fake lets them happen and records them.

Each condition is recorded once when it begins (open conditions are kept in
`cluster["open_violations"]` and dropped when they end, so a second outage is recorded again).
"""

from __future__ import annotations

from typing import Any

from tests.fakes.k8s_snap import tracks, workloads


def record(state: dict[str, Any], message: str) -> None:
    state["cluster"].setdefault("violations", []).append(message)


def _up(inst: dict[str, Any] | None) -> bool:
    return inst is not None and inst["state"] == "running" and not inst["node"].get("refreshing")


def _apiservers(state: dict[str, Any]) -> dict[str, str]:
    """Running kube-apiservers: control-plane members up; their version is their snap's."""
    out = {}
    for name, member in state["cluster"]["members"].items():
        inst = workloads.node_instance(state, name)
        if member["role"] == "control-plane" and _up(inst) and inst is not None:
            out[name] = tracks.installed(inst["node"]).kubernetes_version
    return out


def _conditions(state: dict[str, Any]) -> dict[str, str]:
    cluster = state["cluster"]
    found: dict[str, str] = {}
    planes = [n for n, m in cluster["members"].items() if m["role"] == "control-plane"]
    up = [n for n in planes if _up(workloads.node_instance(state, n))]
    if planes and len(up) < len(planes) // 2 + 1:
        down = sorted(set(planes) - set(up))
        found["quorum"] = (f"etcd quorum lost: {len(up)} of {len(planes)} control-plane members up "
                           f"(down: {', '.join(down)})")
    apis = _apiservers(state)
    if not apis:
        return found
    minors = {n: tracks.minor_of(v) for n, v in apis.items()}
    oldest = min(apis.items(), key=lambda kv: minors[kv[0]])
    newest = max(apis.items(), key=lambda kv: minors[kv[0]])
    if minors[newest[0]] - minors[oldest[0]] > 1:
        found["apiservers"] = (f"version skew: kube-apiservers more than 1 minor apart: {oldest[1]} on {oldest[0]}, "
                               f"{newest[1]} on {newest[0]}")
    for name, node in sorted(cluster["nodes"].items()):
        inst = workloads.node_instance(state, name)
        if not _up(inst) or inst is None:
            continue
        kubelet = tracks.minor_of(node["version"])
        if inst["node"].get("role") == "control-plane" and name in apis:
            continue  # talks to its own apiserver, same snap
        if kubelet > minors[oldest[0]]:
            found[f"newer:{name}"] = (f"version skew: kubelet {node['version']} on {name} is newer than the oldest "
                                      f"kube-apiserver {oldest[1]} on {oldest[0]}")
        if minors[newest[0]] - kubelet > 3:
            found[f"older:{name}"] = (f"version skew: kubelet {node['version']} on {name} is more than 3 minors older "
                                      f"than kube-apiserver {newest[1]} on {newest[0]}")
    return found


def check(state: dict[str, Any], when: str) -> None:
    """Record every condition that holds now and did not at the previous check."""
    if state.get("cluster") is None:
        return
    cluster = state["cluster"]
    now = _conditions(state)
    before = set(cluster.get("open_violations", []))
    for key, message in sorted(now.items()):
        if key not in before:
            record(state, f"{message} [{when}]")
    cluster["open_violations"] = sorted(now)


def version_change(state: dict[str, Any], node: str, old: tracks.Track, new: tracks.Track) -> None:
    if state.get("cluster") is None:
        return
    if new.minor != old.minor and node in state["cluster"]["nodes"]:
        running = [f"{p['namespace']}/{p['name']}" for p in workloads.pods_on(state, node)
                   if workloads.phase(state, p) == "Running" and (p["owner"] or {}).get("kind") != "DaemonSet"]
        if running:
            record(state, f"undrained minor upgrade: {node} refreshed from {old.name} to {new.name} while running "
                          f"{', '.join(running)} [refresh start]")
    if new.minor > old.minor + 1:
        record(state, f"unsupported upgrade: {node} refreshed from {old.name} to {new.name}, skipping a minor "
                      "version [refresh start]")
    elif new.minor < old.minor:
        record(state, f"unsupported downgrade: {node} refreshed from {old.name} to {new.name} [refresh start]")

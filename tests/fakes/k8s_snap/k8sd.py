"""k8sd's cluster state and rules, shared by the fake `k8s` CLI and the fake k8sd HTTP API.

Each rule names the upstream file it models (paths under src/k8s/ on 1.34/1.35 and the k8sd
repository root on 1.36; see tracks.py for the commits). State lives in the world's `cluster`:
members (microcluster), Kubernetes Nodes, control-plane and worker token tables, the CAPI token,
the Upgrade custom resources (upgrades.k8sd.io/v1alpha1) of snap refreshes and rolling joins.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from typing import Any

from tests.fakes.k8s_snap import tracks, workloads, world
from tests.fakes.k8s_snap.tracks import Track

DEFAULT_TTL_SECONDS = 24 * 3600  # pkg/k8sd/api/cluster_tokens.go: ttl 0 means 24h
WORKER_LABELS = {"node-role.kubernetes.io/worker": "", "k8sd.io/role": "worker"}  # pkg/k8sd/setup/kubelet.go
CONTROL_PLANE_LABELS = {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": "",
                        "k8sd.io/role": "control-plane"}


class K8sdError(Exception):
    """An error answer: `status` is the HTTP status k8sd gives, `str()` its message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# --------------------------------------------------------------------------- feature defaults


def features_from_bootstrap(config: dict[str, Any]) -> dict[str, bool]:
    """pkg/k8sd/types/cluster_config_defaults.go: every feature left unset is off, except
    metrics-server (on). cluster_config_validate.go: gateway and ingress need network."""
    cc = config.get("cluster-config") or {}
    out = {}
    for feature in ("network", "dns", "gateway", "ingress", "load-balancer", "local-storage"):
        out[feature] = bool((cc.get(feature) or {}).get("enabled", False))
    out["metrics-server"] = bool((cc.get("metrics-server") or {}).get("enabled", True))
    for needs_network in ("gateway", "ingress"):
        if out[needs_network] and not out["network"]:
            raise K8sdError(400, f"invalid cluster configuration: {needs_network} requires network to be enabled")
    return out


# ----------------------------------------------------------------------------------- tokens


def _encode(doc: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(doc, separators=(",", ":")).encode()).decode()


def decode_token(token: str) -> dict[str, Any]:
    try:
        return dict(json.loads(base64.b64decode(token, validate=True)))
    except (ValueError, TypeError) as exc:
        raise K8sdError(400, f"failed to parse token: {exc}") from None


def is_worker_token(doc: dict[str, Any]) -> bool:
    """pkg/k8sd/types/worker.go Decode: a worker token carries the magic `_: m!!`."""
    return doc.get("_") == "m!!"


def _join_addresses(state: dict[str, Any]) -> list[str]:
    cluster = state["cluster"]
    return sorted(f"{m['address']}:6400" for m in cluster["members"].values() if m["role"] == "control-plane")


def _check_name_available(state: dict[str, Any], track: Track, name: str) -> None:
    """1.36 only (k8sd pkg/k8sd/api/cluster_tokens.go checkNodeNameAvailable, commit d49f150)."""
    if not track.node_name_checked_at_mint:
        return
    if name == "":
        raise K8sdError(400, f'failed to check whether node name is available in cluster: "{name}": '
                             "resource name may not be empty")
    if name in state["cluster"]["nodes"]:
        raise K8sdError(500, f'a node with this name is already part of the cluster: "{name}"')


def _faults(state: dict[str, Any], secret: str, table: dict[str, Any]) -> None:
    """Test knobs for timing the script cannot control: a token that expired before its join
    (`expire_minted`) or that another joiner spent first (`steal_minted`)."""
    faults = state.setdefault("faults", {})
    if faults.get("expire_minted", 0) > 0:
        faults["expire_minted"] -= 1
        table[secret]["expiry"] = world.now(state) - 1
    elif faults.get("steal_minted", 0) > 0:
        faults["steal_minted"] -= 1
        del table[secret]


def mint(state: dict[str, Any], track: Track, name: str, worker: bool, ttl_seconds: float) -> str:
    """POST k8sd/cluster/tokens and x/capi/generate-join-token (pkg/k8sd/api/cluster_tokens.go)."""
    token = _mint(state, track, name, worker, ttl_seconds)
    doc = decode_token(token)
    _faults(state, doc["secret"], state["cluster"]["worker_tokens" if worker else "cp_tokens"])
    return token


def _mint(state: dict[str, Any], track: Track, name: str, worker: bool, ttl_seconds: float) -> str:
    cluster = state["cluster"]
    ttl = ttl_seconds or DEFAULT_TTL_SECONDS
    _check_name_available(state, track, name)
    if worker:
        # database/worker.go GetOrCreateWorkerNodeToken: always a new row, bound to `name` ("" = any).
        secret = f"worker::{secrets.token_hex(20)}"
        cluster["worker_tokens"][secret] = {"name": name, "expiry": world.now(state) + ttl}
        return _encode({"token": "", "secret": secret, "join_addresses": _join_addresses(state),
                        "fingerprint": cluster["fingerprint"], "_": "m!!"})
    # getOrCreateJoinToken: a live token of that name is returned again (new TTL ignored).
    if not name:
        raise K8sdError(400, "A node name is required for control-plane nodes.")
    for secret, record in cluster["cp_tokens"].items():
        if record["name"] == name and record["expiry"] > world.now(state):
            return _encode({"secret": secret, "fingerprint": cluster["fingerprint"],
                            "join_addresses": _join_addresses(state)})
    # microcluster internal/rest/resources/tokens.go: expired records are purged on each create.
    cluster["cp_tokens"] = {s: r for s, r in cluster["cp_tokens"].items() if r["expiry"] > world.now(state)}
    secret = secrets.token_hex(32)
    cluster["cp_tokens"][secret] = {"name": name, "expiry": world.now(state) + ttl}
    return _encode({"secret": secret, "fingerprint": cluster["fingerprint"], "join_addresses": _join_addresses(state)})


# ------------------------------------------------------------------------------ membership


def new_cluster(state: dict[str, Any], name: str, address: str, features: dict[str, bool], track: str,
                installed: Track | None = None) -> None:
    """`installed`: the bootstrapping node's snap as `snap list k8s` shows it (its Kubernetes
    patch and revision, which its kubelet registers), else the channel's newest."""
    state["cluster"] = {
        "fingerprint": hashlib.sha256(secrets.token_bytes(16)).hexdigest(),
        "track": track,
        "features": features,
        "capi_token": None,
        "members": {name: {"role": "control-plane", "address": address}},
        "nodes": {},
        "cp_tokens": {},
        "worker_tokens": {},
        "joining": None,
        "upgrades": {},
        "pods": {},
        "pdbs": {},
        "job_restarts": {},
        "violations": [],
    }
    register_node(state, name, "control-plane", installed or tracks.TRACKS[track])


def register_node(state: dict[str, Any], name: str, role: str, track: Track) -> None:
    """The kubelet registers its Node with k8sd's role labels (--node-labels, setup/kubelet.go) and
    its version (status.nodeInfo.kubeletVersion: the snap's Kubernetes); Ready only with a CNI
    (network feature): bootstrap's own message says so."""
    cluster = state["cluster"]
    cluster["nodes"][name] = {
        "labels": dict(CONTROL_PLANE_LABELS if role == "control-plane" else WORKER_LABELS),
        "registered_at": world.now(state),
        # A kubelet that registers its Node late (after `k8s join-cluster` returned): the first
        # this-many lookups of the Node find nothing. Counted, not timed, so a loaded machine
        # cannot let the Node appear before the first lookup.
        "late_lookups": int(state.get("node_registration_late_lookups", 0)),
        "ready": bool(cluster["features"]["network"]),
        "version": track.kubernetes_version,
        "revision": track.revision,  # the k8sd.io/version annotation (controllers/node_label.go)
        "unschedulable": False,
        "gpus": 0,
    }


def node_registered(state: dict[str, Any], name: str) -> bool:
    """Whether a lookup of the Node finds it (a lookup while it is still late counts one down)."""
    node = state["cluster"]["nodes"].get(name) if state.get("cluster") else None
    if node is None or node["registered_at"] > world.now(state):
        return False
    if node.get("late_lookups", 0) > 0:
        node["late_lookups"] -= 1
        return False
    return True


def cluster_ready(state: dict[str, Any]) -> bool:
    """pkg/k8sd/api/cluster.go: any Ready Node (and, with dns on, CoreDNS serving, which needs the CNI)."""
    cluster = state["cluster"]
    ready = any(workloads.node_ready(state, n) for n in cluster["nodes"])
    return ready and (not cluster["features"]["dns"] or cluster["features"]["network"])


def check_worker_token(state: dict[str, Any], secret: str, name: str) -> None:
    """database/worker.go CheckWorkerNodeToken (name "" matches any joiner; expiry) and
    api/worker.go postWorkerInfo (Node name collision; the token row deleted once used)."""
    cluster = state["cluster"]
    record = cluster["worker_tokens"].get(secret)
    if record is None or (record["name"] not in ("", name)) or record["expiry"] <= world.now(state):
        raise K8sdError(401, "invalid token")
    if name in cluster["nodes"]:
        raise K8sdError(400, f"node name already exists: {name}")
    del cluster["worker_tokens"][secret]


def take_cp_token(state: dict[str, Any], secret: str, name: str, extra_sans: list[str]) -> None:
    """microcluster internal/rest/resources/cluster.go: by secret; expiry; the joiner's certificate
    SANs (its name + extra-sans) must contain the token name; deleted on use."""
    cluster = state["cluster"]
    record = cluster["cp_tokens"].get(secret)
    if record is None:
        raise K8sdError(404, "CoreTokenRecord not found")
    if record["expiry"] <= world.now(state):
        raise K8sdError(400, "Token expired")
    if record["name"] not in (name, *extra_sans):
        raise K8sdError(400, "Joining server certificate SAN does not contain join token name")
    del cluster["cp_tokens"][secret]
    if name in cluster["members"]:
        raise K8sdError(409, 'This "core_cluster_members" entry already exists')


# --------------------------------------------------------------------------------- upgrades
# Upgrade CRs (k8s-snap-api api/v1alpha upgrades.k8sd.io): name, status.phase (NodeUpgrade ->
# FeatureUpgrade -> Completed | Failed), status.strategy (InPlace | RollingUpgrade |
# RollingDowngrade), status.upgradedNodes. Same logic on 1.34/1.35 (src/k8s/pkg/...) and 1.36 (k8sd).
IN_PLACE, ROLLING_UP, ROLLING_DOWN = "InPlace", "RollingUpgrade", "RollingDowngrade"


def _bare(version: str) -> str:
    """versionutil.Version.String() as k8sd formats it: `v1.35.7` -> `1.35.7`."""
    return version.lstrip("v")


def upgrade_name(track: Track) -> str:
    """pkg/upgrade/upgrade.go GetName: `cluster-upgrade-to-k8s-<version>-rev-<revision>`."""
    return f"cluster-upgrade-to-k8s-{_bare(track.kubernetes_version)}-rev-{track.revision}"


def in_progress_upgrade(state: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """client/kubernetes/upgrades.go GetInProgressUpgrade: not Failed/Completed; the last by name."""
    found = sorted((n, u) for n, u in state["cluster"].setdefault("upgrades", {}).items()
                   if u["phase"] not in ("Failed", "Completed"))
    return found[-1] if found else None


def post_refresh(state: dict[str, Any], name: str, track: Track) -> None:
    """app/hooks_post_refresh.go, once k8sd is back after `snap refresh`: a worker skips it; a
    control plane marks itself upgraded in the in-progress Upgrade, creating one (InPlace,
    NodeUpgrade) named after its new version and revision if there is none."""
    current = in_progress_upgrade(state)
    if current is None:
        upgrade: dict[str, Any] = {"phase": "NodeUpgrade", "strategy": IN_PLACE, "upgradedNodes": []}
        state["cluster"]["upgrades"][upgrade_name(track)] = upgrade
    else:
        upgrade = current[1]
        upgrade.update(phase="NodeUpgrade", strategy=IN_PLACE)  # PatchUpgradeStatus replaces the status
    if name not in upgrade["upgradedNodes"]:
        upgrade["upgradedNodes"].append(name)
    reconcile_upgrades(state)


def reconcile_upgrades(state: dict[str, Any]) -> None:
    """controllers/upgrade/reconcile.go: a Node whose k8sd.io/version annotation (its snap's version
    and revision, controllers/node_label.go) names an Upgrade in NodeUpgrade joins its
    upgradedNodes; once every Node is in, FeatureUpgrade, then (the feature controllers reconciling
    at once in the fake) Completed."""
    cluster = state["cluster"]
    for name, upgrade in sorted(cluster.setdefault("upgrades", {}).items()):
        if upgrade["phase"] != "NodeUpgrade":
            continue
        for node_name, node in sorted(cluster["nodes"].items()):
            mine = f"cluster-upgrade-to-k8s-{_bare(node['version'])}-rev-{node.get('revision', '')}"
            if mine == name and node_name not in upgrade["upgradedNodes"]:
                upgrade["upgradedNodes"].append(node_name)
        if all(n in upgrade["upgradedNodes"] for n in cluster["nodes"]):
            upgrade["phase"] = "Completed"


def check_control_plane_join(state: dict[str, Any], name: str, track: Track) -> None:
    """app/hooks_join.go handleRollOutUpgrade (onPostJoin, control planes only; a worker's join has
    no such step). Raises K8sdError with upstream's text, or records a rolling upgrade.

    What is compared is Kubernetes versions, not snap revisions: the joiner's from its snap's
    bom.json (pkg/snap/snap.go NodeKubernetesVersion), the cluster's from every other Node's
    status.nodeInfo.kubeletVersion, workers included (client/kubernetes/node.go NodeVersions). So a
    worker on another patch joins, and then every control plane's join is refused ("different
    Kubernetes versions"); a control plane on the cluster's minor but another patch is refused
    ("different patch version"); another revision of the same version joins (docs/adr/0039)."""
    versions = {n: node["version"] for n, node in state["cluster"]["nodes"].items() if n != name}
    mine = track.kubernetes_version
    current = in_progress_upgrade(state)
    if current is None:
        distinct = sorted(set(versions.values()), key=_version_key)
        if len(distinct) > 1:
            raise K8sdError(500, f'the cluster has nodes with different Kubernetes versions "{_bare(distinct[0])}" and '
                                 f'"{_bare(distinct[1])}" - upgrade all nodes to the same version before joining a '
                                 "new one")
        if not distinct:
            raise K8sdError(500, "the cluster has no nodes - cannot determine cluster Kubernetes version")
        cluster_version = distinct[0]
        if mine == cluster_version:
            return
        if tracks.minor_of(mine) == tracks.minor_of(cluster_version):
            raise K8sdError(500, "the joining node has a different patch version than cluster nodes")
        strategy = ROLLING_UP if _version_key(mine) > _version_key(cluster_version) else ROLLING_DOWN
        state["cluster"]["upgrades"][upgrade_name(track)] = {"phase": "NodeUpgrade", "strategy": strategy,
                                                              "upgradedNodes": [name]}
        return
    _, upgrade = current
    ordered = sorted(versions.values(), key=_version_key)
    if upgrade["strategy"] == ROLLING_UP and ordered and mine != ordered[-1]:
        raise K8sdError(500, f'joining node version "{_bare(mine)}" needs to match highest version '
                             f'"{_bare(ordered[-1])}"')
    if upgrade["strategy"] == ROLLING_DOWN and ordered and mine != ordered[0]:
        raise K8sdError(500, f'joining node version "{_bare(mine)}" needs to match lowest version '
                             f'"{_bare(ordered[0])}"')
    if upgrade["strategy"] == IN_PLACE:
        raise K8sdError(500, "can not join a new node while an in-place upgrade is in progress")
    if name not in upgrade["upgradedNodes"]:
        upgrade["upgradedNodes"].append(name)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in _bare(version).split("."))

"""k8sd's cluster state and rules, shared by the fake `k8s` CLI and the fake k8sd HTTP API.

Each rule names the upstream file it models (paths under src/k8s/ on 1.34/1.35 and the k8sd
repository root on 1.36; see tracks.py for the commits). State lives in the world's `cluster`:
members (microcluster), Kubernetes Nodes, control-plane and worker token tables, the CAPI token.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from typing import Any

from tests.fakes.k8s_snap import world
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


def new_cluster(state: dict[str, Any], name: str, address: str, features: dict[str, bool], track: str) -> None:
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
    }
    register_node(state, name, "control-plane")


def register_node(state: dict[str, Any], name: str, role: str) -> None:
    """The kubelet registers its Node with k8sd's role labels (--node-labels, setup/kubelet.go);
    Ready only with a CNI (network feature): bootstrap's own message says so."""
    cluster = state["cluster"]
    delay = float(state.get("node_registration_delay", 0))
    cluster["nodes"][name] = {
        "labels": dict(CONTROL_PLANE_LABELS if role == "control-plane" else WORKER_LABELS),
        "registered_at": world.now(state) + delay,
        "ready": bool(cluster["features"]["network"]),
    }


def node_registered(state: dict[str, Any], name: str) -> bool:
    node = state["cluster"]["nodes"].get(name) if state.get("cluster") else None
    return node is not None and node["registered_at"] <= world.now(state)


def cluster_ready(state: dict[str, Any]) -> bool:
    """pkg/k8sd/api/cluster.go: any Ready Node (and, with dns on, CoreDNS serving, which needs the CNI)."""
    cluster = state["cluster"]
    ready = any(n["ready"] and n["registered_at"] <= world.now(state) for n in cluster["nodes"].values())
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

"""What differs between the Canonical Kubernetes tracks the project supports, and the config schemas.

Read from canonical/k8s-snap release-1.34 (f7e1b7c7), release-1.35 (ee72ef7b) and, for 1.36 (whose
branch has no Go source: k8sd moved out), canonical/k8sd main (1417866d); config types from
canonical/k8s-snap-api v1.1.1 / v1.2.1 (api/v1) and v2.1.1 (api). Paths below are relative to
src/k8s/ on 1.34/1.35 and to the k8sd repository root on 1.36.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Track:
    name: str
    # cmd/k8s/k8s_kubectl.go: 1.34 refuses on workers; 1.35+ fall back to kubelet.conf.
    kubectl_refused_on_workers: bool
    # pkg/k8sd/api/cluster_tokens.go: 1.36 checks the name against Nodes when minting (k8sd d49f150).
    node_name_checked_at_mint: bool
    # api type names in yaml.v2 UnmarshalStrict errors (k8s-snap-api v1 vs v2).
    api_package: str
    bootstrap_type: str
    # type_bootstrap_config.go: k8s-dqlite keys exist on 1.34/1.35 only; kube-proxy-enabled on 1.36 only.
    dqlite: bool
    kube_proxy_key: bool
    # What `snap refresh`/`install` brings on this track: the Kubernetes version of every binary in the
    # snap (kubelet, kube-apiserver; `snap info k8s` shows it as the snap's version) and a snap
    # revision. The patch levels are the ones the project pins today; the revisions are the fake
    # store's own numbers (real ones differ per architecture and move with every publish).
    kubernetes_version: str = ""
    revision: str = ""

    @property
    def minor(self) -> int:
        return int(self.name.split(".")[1])


_V1_BOOTSTRAP_TYPE = (
    'struct { apiv1.Alias "yaml:\\",inline\\""; AltKey *string '
    '"yaml:\\"kube-controller-manager-client-key,omitempty\\"" }'
)
TRACKS = {
    "1.34": Track("1.34", True, False, "apiv1", _V1_BOOTSTRAP_TYPE, dqlite=True, kube_proxy_key=False,
                  kubernetes_version="v1.34.11", revision="4104"),
    "1.35": Track("1.35", False, False, "apiv1", _V1_BOOTSTRAP_TYPE, dqlite=True, kube_proxy_key=False,
                  kubernetes_version="v1.35.7", revision="4507"),
    "1.36": Track("1.36", False, True, "api", "api.BootstrapConfig", dqlite=False, kube_proxy_key=True,
                  kubernetes_version="v1.36.4", revision="4904"),
}
# The fake store knows these tracks only: a channel on any other (1.32, 1.33, ...) is refused as
# non-existing by `snap install` and `snap refresh` alike.


# ------------------------------------------------------------------------------ the snap store
# What the fake Snap Store serves: per track and CPU architecture, the revisions published to
# `<track>/stable` in order, the channel serving the last one. A revision is one architecture's
# build (snapcraft.io/docs/revisions: "a unique identity within, and across, its channels"; the
# Snap Store Proxy docs, "Revisions and Architectures"): the fake's arm64 builds are numbered one
# above the amd64 ones. Every published revision stays installable with `--revision` by anyone
# (snapd ce63d447, #12817: "the access to revisions limitations have been dropped in the store").
ARCHES = ("amd64", "arm64")


def initial_store() -> dict[str, dict[str, list[dict[str, str]]]]:
    return {t.name: {arch: [{"revision": str(int(t.revision) + i), "version": t.kubernetes_version}]
                     for i, arch in enumerate(ARCHES)} for t in TRACKS.values()}


def store(state: dict[str, Any]) -> dict[str, dict[str, list[dict[str, str]]]]:
    found: dict[str, dict[str, list[dict[str, str]]]] = state.setdefault("snap_store", initial_store())
    return found


def publish(state: dict[str, Any], track: str, arch: str, version: str, revision: str) -> None:
    """The publisher releases `revision` (`version`) to `<track>-classic/stable` for `arch`: the
    channel now serves it; earlier revisions stay installable by number."""
    store(state)[track.split("-", 1)[0]][arch].append({"revision": revision, "version": version})


def channel_head(state: dict[str, Any], channel: str, arch: str) -> dict[str, str]:
    """The revision `channel` serves on `arch` (KeyError: no such track in the fake store)."""
    return dict(store(state)[from_channel(channel).name][arch][-1])


def find_revision(state: dict[str, Any], revision: str, arch: str) -> tuple[str, dict[str, str]] | None:
    """(track, release) of a published revision of `arch`; None: not available on this architecture."""
    for track, arches in store(state).items():
        for release in arches.get(arch, []):
            if release["revision"] == revision:
                return track, dict(release)
    return None


def installed(node: dict[str, Any]) -> Track:
    """The track a node's snap tracks, with the Kubernetes version and revision it actually has
    (`snap list k8s`): not necessarily the channel's newest."""
    track = from_channel(node["snap"]["k8s"])
    release = node.get("snap_release", {}).get("k8s")
    if not release:
        return track
    return replace(track, kubernetes_version=release["version"], revision=release["revision"])


def minor_of(version: str) -> int:
    """`v1.35.7` -> 35."""
    return int(version.lstrip("v").split(".")[1])


def from_channel(channel: str) -> Track:
    """`1.34-classic/stable` -> the 1.34 track (KeyError for a track the fake store does not have)."""
    return TRACKS[channel.split("-", 1)[0]]


# ---------------------------------------------------------------------------------- schemas
# type_bootstrap_config.go, type_cluster_config.go, type_control_plane_join_config.go,
# type_worker_node_join_config.go. "bool"/"str"/"int"/"list"/"map" or a nested schema.

_CERTS = ("front-proxy-client", "admin-client", "kube-proxy-client", "kube-scheduler-client",
          "kube-controller-manager-client", "apiserver", "kubelet", "kubelet-client")
_EXTRA_ARGS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubelet",
               "containerd", "etcd")


def cluster_config_schema(track: Track) -> dict[str, object]:
    network: dict[str, object] = {"enabled": "bool"}
    if track.kube_proxy_key:
        network["kube-proxy-enabled"] = "bool"
    return {
        "network": network,
        "dns": {"enabled": "bool", "cluster-domain": "str", "service-ip": "str", "upstream-nameservers": "list"},
        "ingress": {"enabled": "bool", "default-tls-secret": "str", "enable-proxy-protocol": "bool"},
        "load-balancer": {"enabled": "bool", "cidrs": "list", "l2-mode": "bool", "l2-interfaces": "list",
                          "bgp-mode": "bool", "bgp-local-asn": "int", "bgp-peer-address": "str",
                          "bgp-peer-asn": "int", "bgp-peer-port": "int"},
        "local-storage": {"enabled": "bool", "local-path": "str", "reclaim-policy": "str", "default": "bool"},
        "gateway": {"enabled": "bool"},
        "metrics-server": {"enabled": "bool"},
        "cloud-provider": "str",
        "annotations": "map",
    }


# Keys every node config (bootstrap, control-plane join, worker join) has.
_NODE_COMMON: dict[str, object] = {"disable-system-tuning": "bool", "extra-node-config-files": "map",
                                   "extra-node-containerd-config": "map", "containerd-base-dir": "str"}


def _cert_pairs(*prefixes: str) -> dict[str, object]:
    return {f"{p}-{part}": "str" for p in prefixes for part in ("crt", "key")}


def _extra_args(*components: str) -> dict[str, object]:
    return {f"extra-node-{c}-args": "map" for c in components}


def bootstrap_schema(track: Track) -> dict[str, object]:
    schema: dict[str, object] = {
        "cluster-config": cluster_config_schema(track),
        "control-plane-taints": "list", "pod-cidr": "str", "service-cidr": "str", "disable-rbac": "bool",
        "secure-port": "int", "datastore-type": "str",
        "datastore-servers": "list", "datastore-ca-crt": "str", "datastore-client-crt": "str",
        "datastore-client-key": "str", "etcd-port": "int", "etcd-peer-port": "int", "extra-sans": "list",
        "apiserver-kubelet-client-crt": "str", "apiserver-kubelet-client-key": "str", "service-account-key": "str",
        **_NODE_COMMON,
        **_cert_pairs("ca", "client-ca", "front-proxy-ca", "etcd-ca", "etcd-server", "etcd-peer",
                      "etcd-apiserver-client", *_CERTS),
        **_extra_args(*_EXTRA_ARGS),
    }
    if track.dqlite:
        schema["k8s-dqlite-port"] = "int"
        schema["extra-node-k8s-dqlite-args"] = "map"
        schema["kube-ControllerManager-client-key"] = "str"  # the v1 struct tag; the alias is accepted too
    return schema


def control_plane_join_schema(track: Track) -> dict[str, object]:
    schema: dict[str, object] = {"extra-sans": "list", **_NODE_COMMON,
                                 **_cert_pairs(*_CERTS, "etcd-server", "etcd-peer"), **_extra_args(*_EXTRA_ARGS)}
    if track.dqlite:
        schema["extra-node-k8s-dqlite-args"] = "map"
    return schema


def worker_join_schema(track: Track) -> dict[str, object]:
    return {**_NODE_COMMON, **_cert_pairs("kubelet", "kubelet-client", "kube-proxy-client"),
            **_extra_args("kube-proxy", "kubelet", "containerd", "k8s-apiserver-proxy")}


TYPE_NAMES = {  # nested schema -> Go type name in yaml.v2 errors
    "cluster-config": "UserFacingClusterConfig", "network": "NetworkConfig", "dns": "DNSConfig",
    "ingress": "IngressConfig", "load-balancer": "LoadBalancerConfig", "local-storage": "LocalStorageConfig",
    "gateway": "GatewayConfig", "metrics-server": "MetricsServerConfig",
}

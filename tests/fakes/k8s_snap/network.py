"""Who a simulated node can reach, and every attempt to reach the internet.

The world's NETWORK-CUT mode (`state["network_cut"] = True`) is an offline VPC (docs/adr/0043): no
NAT gateway, AWS's APIs through VPC endpoints. Reachable: AWS service hosts (`*.amazonaws.com`,
the fake `aws` calls no host at all), the fleet's own instances and loopback. Anything else (the
Snap Store, public registries, any other host) is the internet: every attempt is recorded in
`state["internet_attempts"]`, also when the network is not cut, and fails while it is cut.

A VPC without a route out still resolves public names (the Route 53 Resolver answers them), so an
attempt does not fail on DNS: the connection times out. The errors are the clients' own for that:
Go's net package `dial tcp <ip>:<port>: i/o timeout` (snapd, containerd; net/net.go OpError with
a timeout) and curl's CURLE_OPERATION_TIMEDOUT (exit 28). The addresses are the fake's (TEST-NET-3,
RFC 5737), not the hosts' real ones.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from tests.fakes.k8s_snap import world

AWS_SUFFIXES = (".amazonaws.com", ".amazonaws.com.cn")
# containerd remotes/docker/config/hosts.go (v1.7): docker.io's registry API is served by
# registry-1.docker.io, the host a pull of a docker.io image connects to.
REGISTRY_API_HOST = {"docker.io": "registry-1.docker.io"}
SNAP_STORE = "api.snapcraft.io"  # snapd store/store.go: the default store's API base


def fake_address(host: str) -> str:
    return f"203.0.113.{sum(host.encode()) % 250 + 1}"


def is_internet(state: dict[str, Any], host: str) -> bool:
    if host.endswith(AWS_SUFFIXES) or host == "localhost":
        return False
    try:
        if ipaddress.ip_address(host).is_loopback:  # the fleet's instances live on 127.x.y.z
            return False
    except ValueError:
        pass
    return host not in {i["ip"] for i in state["instances"].values()}


def attempt(state: dict[str, Any], instance: str, client: str, host: str, what: str) -> bool:
    """Whether `client` on `instance` reaches `host`; an internet host's attempt is recorded."""
    if not is_internet(state, host):
        return True
    state.setdefault("internet_attempts", []).append(
        {"instance": instance, "client": client, "host": host, "what": what, "at": world.now(state)})
    return not state.get("network_cut")


def dial_timeout(host: str, port: int = 443) -> str:
    return f"dial tcp {fake_address(host)}:{port}: i/o timeout"

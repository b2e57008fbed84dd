"""The fake `k8s` CLI (installed by the fake `snap install k8s` into the node's snap dir).

Commands the node script and the SSM mint document use, with k8s-snap's flags, outputs, errors
and exit codes (cmd/k8s/*.go at the track the node installed; see tracks.py). Differences from
upstream, on purpose: no root check (tests run unprivileged too), `--timeout` waits are not
slept out (a command that would wait until its deadline fails at once with the deadline error).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.fakes.k8s_snap import containerd, invariants, k8sd, strict_yaml, tracks, workloads, world

NOT_MEMBER = ("Error: The node is not part of a Kubernetes cluster. You can bootstrap a new cluster with:\n\n"
              "  sudo k8s bootstrap")
RESTRICTED = "this action is restricted on workers"  # api/worker_access_handler.go restrictWorkers


class Exit(Exception):
    def __init__(self, code: int, stderr: str = "", stdout: str = "") -> None:
        super().__init__(stderr)
        self.code, self.stderr, self.stdout = code, stderr, stdout


def _flags(args: Sequence[str], valued: set[str], bools: set[str]) -> tuple[list[str], dict[str, Any]]:
    """cobra-style: positionals plus `--flag value` / `--flag=value` / `--bool`; unknown flags exit 1."""
    positional: list[str] = []
    flags: dict[str, Any] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            if name in bools:
                flags[name] = True
            elif name in valued:
                if not eq:
                    i += 1
                    if i >= len(args):
                        raise Exit(1, f"Error: flag needs an argument: --{name}")
                    value = args[i]
                flags[name] = value
            else:
                raise Exit(1, f"Error: unknown flag: --{name}")
        else:
            positional.append(a)
        i += 1
    return positional, flags


def _me(state: dict[str, Any]) -> dict[str, Any]:
    me: dict[str, Any] = state["instances"][os.environ["FAKE_INSTANCE"]]
    return me


def _track(state: dict[str, Any]) -> tracks.Track:
    return tracks.installed(_me(state)["node"])  # the revision it has: k8sd compares versions


def _duration_seconds(text: str) -> float:
    units = {"h": 3600, "m": 60, "s": 1}
    total, number = 0.0, ""
    for ch in text:
        if ch.isdigit() or ch == ".":
            number += ch
        elif ch in units and number:
            total += float(number) * units[ch]
            number = ""
        else:
            raise Exit(1, f'Error: invalid argument "{text}" for "--expires-in" flag: time: invalid duration "{text}"')
    if number:
        raise Exit(1, f'Error: invalid argument "{text}" for "--expires-in" flag: time: missing unit in '
                      f'duration "{text}"')
    return total


def _write_node_files(me: dict[str, Any], role: str, name: str) -> None:
    """pkg/k8sd/setup/util_kubeconfig.go: control planes get admin/controller/proxy/scheduler/kubelet
    .conf, workers kubelet.conf and proxy.conf only, all in /etc/kubernetes; the CA in pki/.
    pkg/snap/util/node.go: a worker is marked by $SNAP_COMMON/lock/worker."""
    root = Path(me["root"])
    kube = root / "etc/kubernetes"
    (kube / "pki").mkdir(parents=True, exist_ok=True)
    (kube / "pki/ca.crt").write_text("fake cluster CA\n")
    confs = ("kubelet", "proxy") if role == "worker" else ("admin", "controller", "proxy", "scheduler", "kubelet")
    for conf in confs:
        user = f"system:node:{name}" if conf == "kubelet" else ("admin" if conf == "admin" else f"system:{conf}")
        (kube / f"{conf}.conf").write_text(f"# fake kubeconfig\nuser: {user}\nserver: https://127.0.0.1:6443\n")
    if role == "worker":
        lock = root / "var/snap/k8s/common/lock"
        lock.mkdir(parents=True, exist_ok=True)
        (lock / "worker").write_text("")


def _start_containerd(state: dict[str, Any], me: dict[str, Any], why: str, prefix: str = "Error: ") -> None:
    """setup.Containerd writes the config, then k8sd starts the services (containerd.py)."""
    containerd.write_config(Path(me["root"]))
    try:
        containerd.start(state, me)
    except containerd.StartError as exc:
        raise Exit(1, f"{prefix}{why}: {exc}") from None


def _cluster_alive(state: dict[str, Any]) -> bool:
    """A cluster exists while one of its control-plane members runs on a running instance."""
    cluster = state.get("cluster")
    if cluster is None:
        return False
    running = {i["node"].get("name") for i in state["instances"].values()
               if i["state"] == "running" and i["node"].get("role") == "control-plane"}
    return any(m["role"] == "control-plane" and n in running for n, m in cluster["members"].items())


def _initialized(me: dict[str, Any]) -> bool:
    return bool(me["node"].get("role"))


# --------------------------------------------------------------------------------- commands


def bootstrap(args: Sequence[str]) -> str:
    """cmd/k8s/k8s_bootstrap.go; pkg/k8sd/app/hooks_bootstrap.go; pkg/k8sd/api/cluster_bootstrap.go."""
    _, flags = _flags(args, {"file", "name", "address", "timeout", "output-format"}, {"interactive"})
    with world.locked() as state:
        me = _me(state)
        track = _track(state)
        if _initialized(me):
            raise Exit(1, "Error: The node is already part of a cluster")
        text = Path(flags["file"]).read_text() if "file" in flags else None
        if text is None:
            config: dict[str, Any] = {"cluster-config": {f: {"enabled": True} for f in
                                                         ("network", "dns", "gateway", "local-storage")}}
        else:
            try:
                config = strict_yaml.unmarshal_strict(text, tracks.bootstrap_schema(track), track.bootstrap_type,
                                                      track.api_package)
            except strict_yaml.StrictYamlError as exc:
                raise Exit(1, f'Error: Failed to read bootstrap configuration from "{flags["file"]}".\n\n'
                              f"The error was: failed to parse YAML config file: {exc}") from None
        try:
            features = k8sd.features_from_bootstrap(config)
        except k8sd.K8sdError as exc:
            raise Exit(1, f"Bootstrap config verification failed: {exc}") from None
        name = flags.get("name", me["name"])
        address = flags.get("address", me["ip"])
        if _cluster_alive(state):
            # A second cluster (behind the same load balancer) is the failure the node script guards
            # against: the world keeps the first and records the second for the test to refuse.
            state.setdefault("second_bootstraps", []).append(name)
        else:
            k8sd.new_cluster(state, name, address, features, track.name, track)
            state["cluster"]["ca"] = {k: config.get(k) for k in ("ca-crt", "ca-key", "client-ca-crt", "client-ca-key")}
        # "extra SANs to be added to certificates" (docs/canonicalk8s/_parts/bootstrap_config.md,
        # control_plane_join_config.md): tests read them to prove the API NLB's DNS name is among them.
        me["node"].update(role="control-plane", name=name, extra_sans=list(config.get("extra-sans") or []))
        world.record(state, os.environ["FAKE_INSTANCE"], "k8s bootstrap")
        _write_node_files(me, "control-plane", name)
        _start_containerd(state, me, "failed to start services")  # app/hooks_bootstrap.go
    return (f'Bootstrapped a new Kubernetes cluster with node address "{address}:6400".\n'
            "The node will be 'Ready' to host workloads after the CNI is deployed successfully.")


def join_cluster(args: Sequence[str]) -> str:
    """cmd/k8s/k8s_join_cluster.go + validate.go (config type chosen by the token), api/cluster_join.go,
    microcluster cluster.go (control-plane token), database/worker.go (worker token), and
    app/hooks_join.go (etcd learner add refused while another member joins)."""
    positional, flags = _flags(args, {"file", "name", "address", "timeout", "output-format"}, set())
    if len(positional) != 1:
        raise Exit(1, f"Error: accepts 1 arg(s), received {len(positional)}")
    fail = "Error: Failed to join the cluster using the provided token.\n\nThe error was: " \
           "failed after potential retry: failed to POST /k8sd/cluster/join: "
    with world.locked() as state:
        me = _me(state)
        track = _track(state)
        if _initialized(me):
            raise Exit(1, "Error: The node is already part of a cluster")
        try:
            token = k8sd.decode_token(positional[0])
        except k8sd.K8sdError as exc:
            raise Exit(1, f"{fail}{exc}") from None
        worker = k8sd.is_worker_token(token)
        schema = tracks.worker_join_schema(track) if worker else tracks.control_plane_join_schema(track)
        kind = "WorkerJoinConfig" if worker else "ControlPlaneJoinConfig"
        text = Path(flags["file"]).read_text() if "file" in flags else ""
        try:
            config = strict_yaml.unmarshal_strict(text, schema, f"{track.api_package}.{kind}", track.api_package)
        except strict_yaml.StrictYamlError as exc:
            what = "worker" if worker else "control plane"
            raise Exit(1, f"Join cluster config verification failed: failed to unmarshal {what} join config: "
                          f"{exc}") from None
        name = flags.get("name", me["name"])
        cluster = state.get("cluster")
        reachable = cluster is not None and any(
            a.split(":")[0] in {i["ip"] for i in state["instances"].values() if i["state"] == "running"}
            for a in token.get("join_addresses", [])
        )
        if not reachable or cluster is None or token.get("fingerprint") != cluster["fingerprint"]:
            raise Exit(1, f"{fail}failed to get certificate of cluster member: connection refused")
        try:
            if worker:
                k8sd.check_worker_token(state, token["secret"], name)
            else:
                k8sd.take_cp_token(state, token["secret"], name, list(config.get("extra-sans") or []))
        except k8sd.K8sdError as exc:
            chain = ("failed to join k8sd cluster as worker: Failed to run post-bootstrap actions: "
                     "HTTP request for worker node info failed: " if worker else
                     "failed to join k8sd cluster as control plane: 1 join attempts were unsuccessful. Last error: ")
            raise Exit(1, f"{fail}{chain}{exc}") from None
        if not worker:
            joining = cluster.get("joining")
            if joining and joining["until"] > world.now(state):
                raise Exit(1, f"{fail}failed to join k8sd cluster as control plane: failed to add learner member "
                              f"{name} to etcd cluster: cluster is unhealthy or another node is currently joining "
                              "the cluster")
            try:
                k8sd.check_control_plane_join(state, name, track)
            except k8sd.K8sdError as exc:
                raise Exit(1, f"{fail}failed to join k8sd cluster as control plane: failed to handle rollout-upgrade: "
                              f"{exc}") from None
            cluster["joining"] = {"name": name, "until": world.now(state) + float(state.get("join_seconds", 0))}
        world.record(state, os.environ["FAKE_INSTANCE"], f"k8s join-cluster {'worker' if worker else 'control-plane'}")
        join_seconds = float(state.get("join_seconds", 0))
    # The etcd learner catching up: another join meanwhile is refused. A control plane's catch-up
    # lasts until its `joining.until`, read again as it waits, so a test can hold it open (and let
    # it end) instead of betting on how long the other node takes to boot.
    if worker:
        time.sleep(join_seconds)
    else:
        while True:
            now = world.read()
            joining = (now.get("cluster") or {}).get("joining") or {}
            if joining.get("name") != name or joining["until"] <= world.now(now):
                break
            time.sleep(0.05)
    with world.locked() as state:
        me = _me(state)
        role = "worker" if worker else "control-plane"
        # app/hooks_bootstrap.go (a worker's join), hooks_join.go (a control plane's); the hooks'
        # reverter undoes the membership when they fail, so the fake records it only after.
        _start_containerd(state, me, "failed to start worker services" if worker else
                          "failed after retry: failed to start services", fail)
        state["cluster"]["members"][name] = {"role": role, "address": flags.get("address", me["ip"])}
        if not worker:
            state["cluster"]["joining"] = None
            me["node"]["extra_sans"] = list(config.get("extra-sans") or [])
        k8sd.register_node(state, name, role, _track(state))
        me["node"].update(role=role, name=name)
        _write_node_files(me, role, name)
        k8sd.reconcile_upgrades(state)
        workloads.schedule_pending(state)
        invariants.check(state, f"join of {name}")
    address = flags.get("address", me["ip"])
    return (f'Cluster services have started on "{address}:6400".\n'
            "Please allow some time for initial Kubernetes node registration.")


def status(args: Sequence[str]) -> str:
    """cmd/k8s/k8s_status.go; api/cluster.go Ready; restrictWorkers on GET k8sd/cluster."""
    _, flags = _flags(args, {"timeout", "output-format"}, {"wait-ready"})
    state = world.read()
    me = _me(state)
    if not _initialized(me):
        raise Exit(1, NOT_MEMBER)
    base = "Error: Failed to retrieve the cluster status.\n\nThe error was: "
    if me["node"].get("refreshing"):
        # k8sd restarts with the snap: the CLI's first call, GET /1.0/k8sd/node, gets no answer
        # before the deadline (k8s_status.go; facts: the NodeStatus deadline message, derived)
        raise Exit(1, "Error: Failed to check the current node status.\n\nThe error was: context deadline exceeded")
    if me["node"]["role"] == "worker":
        raise Exit(1, f"{base}wait check failed: failed after potential retry: failed to GET /k8sd/cluster: "
                      f"{RESTRICTED}")
    ready = k8sd.cluster_ready(state)
    if flags.get("wait-ready") and not ready:
        raise Exit(1, f"{base}context deadline exceeded")
    return f"{'cluster status:':<25}{'ready' if ready else 'not ready'}"


def get_join_token(args: Sequence[str]) -> str:
    """cmd/k8s/k8s_get_join_token.go; api/cluster_tokens.go (restrictWorkers)."""
    positional, flags = _flags(args, {"timeout", "expires-in"}, {"worker"})
    if len(positional) > 1:
        raise Exit(1, f"Error: accepts at most 1 arg(s), received {len(positional)}")
    name = positional[0] if positional else ""
    if not name and not flags.get("worker"):
        raise Exit(1, "Error: A node name is required for control-plane nodes.")
    ttl = _duration_seconds(flags["expires-in"]) if "expires-in" in flags else 0.0
    with world.locked() as state:
        me = _me(state)
        if not _initialized(me):
            raise Exit(1, NOT_MEMBER)
        fail = f'Error: Could not generate a join token for "{name}".\n\nThe error was: '
        if me["node"]["role"] == "worker":
            raise Exit(1, f"{fail}failed after potential retry: failed to POST /k8sd/cluster/tokens: {RESTRICTED}")
        try:
            token = k8sd.mint(state, _track(state), name, bool(flags.get("worker")), ttl)
        except k8sd.K8sdError as exc:
            raise Exit(1, f"{fail}failed after potential retry: failed to POST /k8sd/cluster/tokens: {exc}") from None
        kind = "--worker" if flags.get("worker") else "control-plane"
        world.record(state, os.environ["FAKE_INSTANCE"], f"k8s get-join-token {kind}")
    return token


def x_capi(args: Sequence[str]) -> str:
    """cmd/k8s/k8s_x_capi.go set-auth-token; api/capi_auth.go; database/capi_auth.go (upsert)."""
    if not args or args[0] != "set-auth-token":
        raise Exit(1, f"Error: unknown command {args[:1]} for \"k8s x-capi\"")
    if len(args) != 2:
        raise Exit(1, f"Error: accepts 1 arg(s), received {len(args) - 1}")
    if not args[1]:
        raise Exit(1, "Error: The token must be provided.")
    with world.locked() as state:
        me = _me(state)
        if not _initialized(me):
            raise Exit(1, NOT_MEMBER)
        if me["node"]["role"] == "worker":
            me["node"]["local_capi_token"] = args[1]  # a worker's own single-node microcluster
        else:
            state["cluster"]["capi_token"] = args[1]
        world.record(state, os.environ["FAKE_INSTANCE"], "k8s x-capi set-auth-token")
    return ""


def kubectl(args: Sequence[str]) -> str:
    """cmd/k8s/k8s_kubectl.go: 1.34 refuses on workers; 1.35+ fall back to admin.conf, then kubelet.conf."""
    state = world.read()
    me = _me(state)
    track = _track(state)
    kube = Path(me["root"]) / "etc/kubernetes"
    if track.kubectl_refused_on_workers:
        if not _initialized(me):
            raise Exit(1, NOT_MEMBER)
        if me["node"]["role"] == "worker":
            raise Exit(1, "Error: k8s kubectl commands are not allowed on worker nodes.")
    config = next((str(kube / c) for c in ("admin.conf", "kubelet.conf") if (kube / c).exists()), None)
    config = os.environ.get("KUBECONFIG") or config
    if config is None:
        raise Exit(1, "Error: /etc/kubernetes/admin.conf and /etc/kubernetes/kubelet.conf do not exist; "
                      "please set KUBECONFIG.")
    from tests.fakes.k8s_snap import kubectl_cli

    try:
        out, err = kubectl_cli.run(["--kubeconfig", config, *args])
    except kubectl_cli.KubectlError as exc:
        raise Exit(exc.code, str(exc), exc.stdout) from None
    if err:
        print(err, file=sys.stderr)
    return out


def remove_node(args: Sequence[str]) -> str:
    """cmd/k8s/k8s_remove_node.go; api/cluster_remove.go: the Kubernetes Node goes first (a missing
    one is no error), then, for a control plane (or with --force), the datastore and microcluster
    membership. The last control plane cannot leave: etcd has no endpoint left (errors only logged
    with --force)."""
    positional, flags = _flags(args, {"timeout", "output-format"}, {"force"})
    if len(positional) != 1:
        raise Exit(1, f"Error: accepts 1 arg(s), received {len(positional)}")
    name = positional[0]
    fail = f'Error: Failed to remove node "{name}" from the cluster.\n\nThe error was: '
    with world.locked() as state:
        me = _me(state)
        if not _initialized(me):
            raise Exit(1, NOT_MEMBER)
        if me["node"]["role"] == "worker":
            raise Exit(1, f"{fail}failed after potential retry: failed to POST /k8sd/cluster/remove: {RESTRICTED}")
        cluster = state["cluster"]
        member = cluster["members"].get(name)
        control_plane = member is not None and member["role"] == "control-plane"
        if cluster["nodes"].pop(name, None) is not None:
            workloads.node_gone(state, name)
        if control_plane or flags.get("force"):
            planes = [n for n, m in cluster["members"].items() if m["role"] == "control-plane"]
            if control_plane and planes == [name] and not flags.get("force"):
                raise Exit(1, f"{fail}failed to delete node from datastore: failed to remove node from etcd cluster: "
                              "failed to create etcd client: failed to create etcd client: etcdclient: no available "
                              "endpoints")
            cluster["members"].pop(name, None)
        elif member is not None:
            cluster["members"].pop(name)  # a worker: only its Node and our bookkeeping
        k8sd.reconcile_upgrades(state)
        invariants.check(state, f"removal of {name}")
        world.record(state, os.environ["FAKE_INSTANCE"], f"k8s remove-node {name}")
    return f"Removed {name} from cluster."


COMMANDS = {
    "bootstrap": bootstrap,
    "join-cluster": join_cluster,
    "status": status,
    "get-join-token": get_join_token,
    "x-capi": x_capi,
    "kubectl": kubectl,
    "remove-node": remove_node,
}


def main(argv: Sequence[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(f'Error: unknown command "{argv[0] if argv else ""}" for "k8s"', file=sys.stderr)
        return 1
    try:
        out = COMMANDS[argv[0]](argv[1:])
    except Exit as exc:
        if exc.stdout:
            print(exc.stdout)
        print(exc.stderr, file=sys.stderr)
        return exc.code
    if out:
        print(out)
    return 0

"""The node script as rendered into user-data, run with stand-in `snap`, `k8s`, `curl`, `aws` and
`cloud-init` commands on PATH that record their calls. Real bash, real python3 (token parsing).

Each test renders the user-data of a role from a committed stack, lays its files out in a temporary
config dir (CK8S_CONFIG_DIR), and runs the embedded script with every path redirected (state, run,
log, PKI dirs), zero retry delays and small attempt counts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.aws import userdata as ud
from components.aws.secrets import pki_secret_document
from tests.unit.aws.conftest import settings_for

NODE = "ip-10-0-0-11.eu-west-1.compute.internal"
NODE_IP = "10.0.0.11"
AUTH_TOKEN = "authTOKENsecret0123456789abcdefXYZ"
JOIN_TOKEN = "joinTOKENsecret9876543210"
CA_KEY = "-----BEGIN RSA PRIVATE KEY-----\nCAKEYsecret\n-----END RSA PRIVATE KEY-----\n"
CLIENT_CA_KEY = "-----BEGIN RSA PRIVATE KEY-----\nCLIENTKEYsecret\n-----END RSA PRIVATE KEY-----\n"
SECRETS = (AUTH_TOKEN, JOIN_TOKEN, "CAKEYsecret", "CLIENTKEYsecret")
LB = "api.example.elb.amazonaws.com"
PEM = "-----BEGIN CERTIFICATE-----\nCACERT\n-----END CERTIFICATE-----\n"

# Each stand-in appends "<name> <args>" to $FAKE_CALLS and behaves as FAKE_* variables say.
FAKES = {
    "snap": r"""
echo "snap $*" >>"$FAKE_CALLS"
if [ "$1" = install ] && [ "$2" = k8s ]; then
  n=$(cat "$FAKE_DIR/snap-failures" 2>/dev/null || echo 0)
  if [ "$n" -lt "${FAKE_SNAP_FAILS:-0}" ]; then
    echo $((n + 1)) >"$FAKE_DIR/snap-failures"
    echo 'error: cannot install "k8s": Post "https://api.snapcraft.io/v2/snaps/refresh": EOF' >&2
    exit 1
  fi
fi
""",
    "cloud-init": r"""
echo "cloud-init $*" >>"$FAKE_CALLS"
case "$2" in
  ds.meta_data.local-hostname) echo "$FAKE_NODE_NAME" ;;
  ds.meta_data.local-ipv4) echo "$FAKE_NODE_IP" ;;
  *) exit 1 ;;
esac
""",
    "aws": r"""
echo "aws $*" >>"$FAKE_CALLS"
case "$1 $2" in
  "secretsmanager get-secret-value")
    case "$*" in
      *join-auth*) printf '%s\n' "$FAKE_AUTH_TOKEN" ;;
      *ca-keys*) cat "$FAKE_DIR/ca-keys.yaml" ;;
      *) echo "ResourceNotFoundException" >&2; exit 254 ;;
    esac ;;
  "ec2 describe-instances")
    [ -z "${FAKE_DESCRIBE_FAIL:-}" ] || { echo "AccessDenied" >&2; exit 254; }
    n=$(cat "$FAKE_DIR/describe-calls" 2>/dev/null || echo 0)
    echo $((n + 1)) >"$FAKE_DIR/describe-calls"
    if [ "$n" -ge "${FAKE_PEERS_AFTER:-0}" ]; then printf '%s\n' "$FAKE_PEERS"; fi ;;
  *) exit 2 ;;
esac
""",
    "curl": r"""
echo "curl $*" >>"$FAKE_CALLS"
url=; header=; body=
while [ $# -gt 0 ]; do
  case "$1" in
    -H) case "$2" in @*) header=${2#@} ;; esac; shift ;;
    --data) body=${2#@}; shift ;;
    https://*) url=$1 ;;
  esac
  shift
done
cp "$header" "$FAKE_DIR/curl-header"
cat "$body" >>"$FAKE_DIR/curl-bodies"; echo >>"$FAKE_DIR/curl-bodies"
case "$url" in *"${FAKE_CURL_DOWN:-none}"*) echo "curl: (7) Failed to connect" >&2; exit 7 ;; esac
if grep -qx "capi-auth-token: $FAKE_CLUSTER_TOKEN" "$header"; then
  printf '{"type":"sync","status":"Success","status_code":200,"error_code":0,"error":"",'
  printf '"metadata":{"token":"%s"}}' "$FAKE_JOIN_TOKEN"
else
  printf '{"type":"error","status":"","status_code":0,"error_code":401,"error":"invalid token","metadata":null}'
fi
""",
    "k8s": r"""
echo "k8s $*" >>"$FAKE_CALLS"
case "$1" in
  bootstrap)
    cp "$3" "$FAKE_DIR/bootstrap-file.yaml"
    [ -z "${FAKE_BOOTSTRAP_FAIL:-}" ] || { echo "Error: failed to bootstrap" >&2; exit 1; }
    mkdir -p "$CK8S_KUBE_PKI_DIR" && touch "$CK8S_KUBE_PKI_DIR/ca.crt" ;;
  join-cluster)
    [ -z "${FAKE_JOIN_FAIL:-}" ] || { echo "Error: another node is currently joining the cluster" >&2; exit 1; }
    mkdir -p "$CK8S_KUBE_PKI_DIR" && touch "$CK8S_KUBE_PKI_DIR/ca.crt" ;;
esac
exit 0
""",
}


@dataclass
class Node:
    """One simulated instance: its config dir from user-data, its state, the fakes' records."""

    root: Path
    user_data: str
    env: dict[str, str] = field(default_factory=dict)

    @property
    def calls_file(self) -> Path:
        return self.root / "calls"

    @property
    def log(self) -> str:
        logs = list((self.root / "log").glob("ck8s-gpu-*.log"))
        return "\n".join(p.read_text() for p in logs)

    def calls(self, *prefixes: str) -> list[str]:
        lines = self.calls_file.read_text().splitlines() if self.calls_file.exists() else []
        return [line for line in lines if not prefixes or line.startswith(prefixes)]

    def run(self, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(self.root / "ck8s-gpu-node")],
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )


@pytest.fixture
def node(tmp_path: Path) -> Callable[[str], Node]:
    def make(user_data: str) -> Node:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        for name, body in FAKES.items():
            (bin_dir / name).write_text("#!/bin/bash\nset -u\n" + body)
            (bin_dir / name).chmod(0o755)
        config = tmp_path / "config"
        config.mkdir()
        for f in yaml.safe_load(user_data)["write_files"]:
            target = tmp_path / "ck8s-gpu-node" if f["path"] == ud.SCRIPT_PATH else config / Path(f["path"]).name
            target.write_text(f["content"])
        fake = tmp_path / "fake"
        fake.mkdir()
        (fake / "ca-keys.yaml").write_text(pki_secret_document(CA_KEY, CLIENT_CA_KEY))
        env = {
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "CK8S_CONFIG_DIR": str(config),
            "CK8S_STATE_DIR": str(tmp_path / "state"),
            "CK8S_RUN_DIR": str(tmp_path / "run"),
            "CK8S_LOG_DIR": str(tmp_path / "log"),
            "CK8S_KUBE_PKI_DIR": str(tmp_path / "pki"),
            "CK8S_RETRY_BASE_SECONDS": "0",
            "CK8S_JOIN_ATTEMPTS": "3",
            "FAKE_CALLS": str(tmp_path / "calls"),
            "FAKE_DIR": str(fake),
            "FAKE_NODE_NAME": NODE,
            "FAKE_NODE_IP": NODE_IP,
            "FAKE_AUTH_TOKEN": AUTH_TOKEN,  # what Secrets Manager answers
            "FAKE_CLUSTER_TOKEN": AUTH_TOKEN,  # what k8sd accepts
            "FAKE_JOIN_TOKEN": JOIN_TOKEN,
            "FAKE_PEERS": "10.0.0.10\t10.0.1.10",
        }
        return Node(tmp_path, user_data, env)

    return make


def boot(stack: str, change: Callable[[dict[str, Any]], None] | None = None) -> tuple[Any, ud.ClusterBoot]:
    settings = settings_for(stack, change)
    arn = f"arn:aws:secretsmanager:{settings.region}:123456789012:secret:{settings.cluster_name}-{{}}-AbCdEf"
    return settings, ud.cluster_boot(settings, arn.format("join-auth"), LB)


def seed_user_data(stack: str) -> str:
    settings, c = boot(stack)
    arn = f"arn:aws:secretsmanager:{settings.region}:123456789012:secret:{settings.cluster_name}-ca-keys-AbCdEf"
    return ud.render_bootstrap_control_plane(c, ud.control_plane_boot(settings, arn, PEM, PEM))


def worker_user_data(stack: str = "aws-prod") -> str:
    settings, c = boot(stack)
    return ud.render_gpu_worker(c, ud.worker_boot(settings, settings.node_pools[0]))


def joiner_user_data(stack: str = "aws-prod") -> str:
    return ud.render_joining_control_plane(boot(stack)[1])


def steps(node: Node) -> list[str]:
    """The calls that change the node, in order, shortened to their verb."""
    out = []
    for line in node.calls("snap", "aws", "curl", "k8s"):
        words = line.split()
        if words[0] == "aws" and words[1] == "secretsmanager":
            out.append("read " + ("join-auth" if "join-auth" in line else "ca-keys"))
        elif words[0] == "curl":
            out.append("mint " + next(w for w in words if w.startswith("https://")))
        else:
            out.append(" ".join(words[:3] if words[0] == "snap" else words[:2]))
    return out


def assert_no_secret_left(node: Node, result: subprocess.CompletedProcess[str]) -> None:
    for secret in SECRETS:
        assert secret not in node.log, f"secret {secret[:8]}... in the log"
        assert secret not in result.stdout + result.stderr
    assert not (node.root / "run").exists(), "the run dir holding fetched secrets must be removed"


# --------------------------------------------------------------------------------------------


def test_bootstrap_control_plane_steps_in_order(node: Callable[[str], Node]) -> None:
    n = node(seed_user_data("aws-dev"))
    result = n.run()
    assert result.returncode == 0, n.log
    assert steps(n) == [
        "snap wait system",
        "snap install k8s",
        "snap refresh --hold",
        "read join-auth",
        "read ca-keys",
        "k8s bootstrap",
        "k8s status",
        "k8s x-capi",
    ]
    (boot_call,) = n.calls("k8s bootstrap")
    assert f"--name {NODE} --address {NODE_IP}" in boot_call
    assert "snap install k8s --classic --channel=1.34-classic/stable" in n.calls("snap")
    # One control plane: nothing to discover, never asks EC2 for peers.
    assert not n.calls("aws ec2")
    # What k8s bootstrap read: the user-data part plus the CA keys from Secrets Manager.
    config = yaml.safe_load((n.root / "fake" / "bootstrap-file.yaml").read_text())
    assert config["ca-key"] == CA_KEY and config["client-ca-key"] == CLIENT_CA_KEY
    assert config["ca-crt"] == PEM and config["extra-sans"] == [LB]
    assert n.calls("k8s x-capi") == [f"k8s x-capi set-auth-token {AUTH_TOKEN}"]
    assert (n.root / "state" / "done").exists()
    assert_no_secret_left(n, result)


def test_a_transient_snap_failure_is_retried(node: Callable[[str], Node]) -> None:
    n = node(seed_user_data("aws-dev"))
    result = n.run(FAKE_SNAP_FAILS="1")
    assert result.returncode == 0, n.log
    assert len(n.calls("snap install k8s")) == 2
    assert "snap install k8s (1.34-classic/stable): attempt 1 of 8 failed; retrying" in n.log


def test_a_snap_store_that_stays_down_fails_after_bounded_retries(node: Callable[[str], Node]) -> None:
    n = node(seed_user_data("aws-dev"))
    result = n.run(FAKE_SNAP_FAILS="100")
    assert result.returncode != 0
    assert len(n.calls("snap install k8s")) == 8
    assert "FAILED: could not install the k8s snap" in n.log
    assert not n.calls("k8s")


def test_second_run_changes_nothing(node: Callable[[str], Node]) -> None:
    n = node(seed_user_data("aws-dev"))
    assert n.run().returncode == 0, n.log
    n.calls_file.unlink()
    result = n.run()
    assert result.returncode == 0, n.log
    assert n.calls() == []
    assert "nothing to do" in n.log


def test_a_member_that_did_not_finish_never_bootstraps_again(node: Callable[[str], Node]) -> None:
    """Rebooted after bootstrap but before the end: the remaining steps run, bootstrap does not."""
    n = node(seed_user_data("aws-dev"))
    (n.root / "pki").mkdir()
    (n.root / "pki" / "ca.crt").write_text(PEM)
    result = n.run()
    assert result.returncode == 0, n.log
    assert not n.calls("k8s bootstrap", "k8s join-cluster")
    assert "already a cluster member" in n.log
    assert steps(n)[-2:] == ["k8s status", "k8s x-capi"]


def test_failed_bootstrap_exits_non_zero_with_a_message(node: Callable[[str], Node]) -> None:
    n = node(seed_user_data("aws-dev"))
    result = n.run(FAKE_BOOTSTRAP_FAIL="1")
    assert result.returncode != 0
    assert "FAILED: k8s bootstrap failed" in n.log and "replace this instance" in n.log
    assert not (n.root / "state" / "member").exists()
    assert_no_secret_left(n, result)


def test_worker_mints_its_own_token_joins_and_labels_itself(node: Callable[[str], Node]) -> None:
    n = node(worker_user_data())
    result = n.run()
    assert result.returncode == 0, n.log
    assert steps(n) == [
        "snap wait system",
        "snap install k8s",
        "snap refresh --hold",
        "read join-auth",
        "aws ec2",
        "mint https://10.0.0.10:6400/1.0/x/capi/generate-join-token",
        "k8s join-cluster",
        "k8s kubectl",
    ]
    body = json.loads((n.root / "fake" / "curl-bodies").read_text().splitlines()[0])
    assert body == {"name": NODE, "worker": True, "ttl": 900_000_000_000}
    # The auth token travels in a header file, never on curl's command line.
    assert (n.root / "fake" / "curl-header").read_text() == f"capi-auth-token: {AUTH_TOKEN}\n"
    assert all(AUTH_TOKEN not in c for c in n.calls("curl"))
    (join,) = n.calls("k8s join-cluster")
    assert join.startswith(f"k8s join-cluster {JOIN_TOKEN} --name {NODE} --address {NODE_IP} --file ")
    assert join.split("--file ")[1].split()[0].endswith("/config/join.yaml")
    (label,) = n.calls("k8s kubectl")
    assert label == (
        f"k8s kubectl label node {NODE} --overwrite "
        "ck8s-gpu/pool=l40s nvidia.com/dra-kubelet-plugin=true workload=inference"
    )
    # Workers never see the CA keys and never register anything with k8sd.
    assert not any("ca-keys" in c for c in n.calls("aws")) and not n.calls("k8s x-capi")
    filters = n.calls("aws ec2")[0]
    assert "Name=tag:ck8s-gpu/cluster,Values=ck8s-prod-us-east-1" in filters
    assert "Name=tag:ck8s-gpu/role,Values=control-plane" in filters
    assert_no_secret_left(n, result)


def test_worker_join_failure_exits_non_zero_with_a_message(node: Callable[[str], Node]) -> None:
    n = node(worker_user_data())
    result = n.run(FAKE_JOIN_FAIL="1")
    assert result.returncode != 0
    assert "FAILED: could not join cluster ck8s-prod-us-east-1 after 3 attempts" in n.log
    assert len(n.calls("k8s join-cluster")) == 3 * 2  # every attempt tries both control planes
    assert not n.calls("k8s kubectl")
    assert not (n.root / "state" / "done").exists()
    assert_no_secret_left(n, result)


def test_worker_waits_for_control_planes_to_appear(node: Callable[[str], Node]) -> None:
    n = node(worker_user_data())
    result = n.run(FAKE_PEERS_AFTER="2")
    assert result.returncode == 0, n.log
    assert len(n.calls("aws ec2")) == 3
    assert n.log.count("no running control plane found yet") == 2


def test_an_unreachable_control_plane_is_skipped(node: Callable[[str], Node]) -> None:
    n = node(worker_user_data())
    result = n.run(FAKE_CURL_DOWN="10.0.0.10")
    assert result.returncode == 0, n.log
    assert "no join token from 10.0.0.10" in n.log
    assert "joined through 10.0.1.10" in n.log


def test_a_rejected_auth_token_is_reported_without_leaking_it(node: Callable[[str], Node]) -> None:
    n = node(worker_user_data())
    result = n.run(FAKE_AUTH_TOKEN="another-token-the-cluster-does-not-know")
    assert result.returncode != 0
    assert "generate-join-token: invalid token" in n.log
    assert not n.calls("k8s join-cluster")
    assert "another-token-the-cluster-does-not-know" not in n.log


def test_joining_control_plane_mints_a_control_plane_token_for_itself(node: Callable[[str], Node]) -> None:
    n = node(joiner_user_data())
    result = n.run()
    assert result.returncode == 0, n.log
    assert steps(n)[3:] == [
        "read join-auth",
        "aws ec2",
        "mint https://10.0.0.10:6400/1.0/x/capi/generate-join-token",
        "k8s join-cluster",
        "k8s status",
        "k8s x-capi",
    ]
    body = json.loads((n.root / "fake" / "curl-bodies").read_text().splitlines()[0])
    assert body == {"name": NODE, "worker": False, "ttl": 900_000_000_000}
    assert_no_secret_left(n, result)


def test_replaced_first_control_plane_joins_running_peers_instead_of_bootstrapping(
    node: Callable[[str], Node],
) -> None:
    n = node(seed_user_data("aws-prod"))
    result = n.run(FAKE_PEERS=f"{NODE_IP}\t10.0.1.10")
    assert result.returncode == 0, n.log
    assert not n.calls("k8s bootstrap")
    assert not any("ca-keys" in c for c in n.calls("aws"))
    assert [c.split("https://")[1].split(":")[0] for c in n.calls("curl")] == ["10.0.1.10"]  # never itself
    assert "are running: joining them, not bootstrapping" in n.log
    assert json.loads((n.root / "fake" / "curl-bodies").read_text().splitlines()[0])["worker"] is False


def test_first_control_plane_alone_bootstraps(node: Callable[[str], Node]) -> None:
    n = node(seed_user_data("aws-prod"))
    result = n.run(FAKE_PEERS=NODE_IP)  # only itself is running
    assert result.returncode == 0, n.log
    assert len(n.calls("k8s bootstrap")) == 1 and not n.calls("k8s join-cluster")


def test_first_control_plane_never_bootstraps_blind(node: Callable[[str], Node]) -> None:
    n = node(seed_user_data("aws-prod"))
    result = n.run(FAKE_DESCRIBE_FAIL="1")
    assert result.returncode != 0
    assert "refusing to bootstrap blind" in n.log
    assert not n.calls("k8s bootstrap", "k8s join-cluster")


def test_bash_is_real() -> None:
    """The script needs bash >= 4.4 (empty arrays under set -u)."""
    out = subprocess.run(["bash", "-c", "echo ${BASH_VERSINFO[0]}${BASH_VERSINFO[1]}"], capture_output=True, text=True)
    assert shutil.which("bash") and int(out.stdout.strip()[:2]) >= 44
    assert os.access(ud.SCRIPT_SOURCE, os.R_OK)

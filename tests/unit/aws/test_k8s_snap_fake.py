"""The k8s-snap fake refuses what k8s-snap refuses (rules named in tests/fakes/k8s_snap/*), and a GPU
worker's credentials reach nothing that can make a control plane (issue: worker credential scope).

Each test drives the fake through the same commands a node uses, on simulated instances of a
committed stack, at every supported track where upstream behaviour differs.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.aws import iam
from components.aws.inventory import mint_document_name
from tests.fakes import aws_iam
from tests.fakes.k8s_snap import k8sd
from tests.fakes.k8s_snap.fleet import Instance
from tests.unit.aws.cluster_sim import ACCOUNT, TRACKS, SimCluster, simulate

# Runs the node scripts in bash against the k8s-snap fake: seconds per case (the `slow` tier;
# `make check` leaves it out, `make test` and CI run it).
pytestmark = pytest.mark.slow

WORKER_LOCK = "var/snap/k8s/common/lock/worker"


@pytest.fixture
def made(tmp_path: Path) -> Iterator[list[SimCluster]]:
    sims: list[SimCluster] = []
    yield sims
    for s in sims:
        s.fleet.close()


def cluster(made: list[SimCluster], tmp: Path, track: str = "1.34-classic", stack: str = "aws-dev",
            store: bool = False) -> SimCluster:
    """`store`: the stack's nodes install the channel's snap from the store (cluster_sim.from_the_store)."""
    s = simulate(tmp / f"w{len(made)}", stack, track, store=store)
    made.append(s)
    assert s.control_plane(0).run().returncode == 0
    return s


def cp0(s: SimCluster) -> Instance:
    return next(iter(s.fleet.instances.values()))


def run(inst: Instance, tool: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    path = inst.root / ("snap/bin" if tool == "k8s" else "fakebin") / tool
    if tool == "kubectl":
        path = inst.root / "snap/k8s/current/bin/kubectl"
    return subprocess.run([str(path), *args], capture_output=True, text=True, input=stdin, timeout=60, check=False)


def bare_node(s: SimCluster, track: str, role: str = "worker") -> Instance:
    """A fresh instance with the snap installed and nothing else."""
    inst = s.worker() if role == "worker" else s.control_plane(1)
    assert run(inst, "snap", "install", "k8s", "--classic", f"--channel={track}/stable").returncode == 0
    return inst


def config_file(inst: Instance, text: str) -> str:
    path = inst.root / "cfg.yaml"
    path.write_text(text)
    return str(path)


# --------------------------------------------------------------------------------- bootstrap


@pytest.mark.parametrize("track", TRACKS)
def test_bootstrap_twice_is_refused(made: list[SimCluster], tmp_path: Path, track: str) -> None:
    s = cluster(made, tmp_path, track)
    again = run(cp0(s), "k8s", "bootstrap", "--file", config_file(cp0(s), ""))
    assert again.returncode == 1 and "Error: The node is already part of a cluster" in again.stderr


@pytest.mark.parametrize("track,text,expected", [
    ("1.34-classic", "cluster-cidr: 10.0.0.0/8\n", "line 1: field cluster-cidr not found in type struct { apiv1.Alias"),
    ("1.36-classic", "cluster-cidr: 10.0.0.0/8\n", "line 1: field cluster-cidr not found in type api.BootstrapConfig"),
    ("1.36-classic", "k8s-dqlite-port: 9000\n", "field k8s-dqlite-port not found in type api.BootstrapConfig"),
    ("1.34-classic", "cluster-config:\n  network:\n    kube-proxy-enabled: true\n",
     "line 3: field kube-proxy-enabled not found in type apiv1.NetworkConfig"),
    ("1.35-classic", "cluster-config:\n  network: {enabled: true}\n  network: {enabled: true}\n",
     "field network already set in type apiv1.UserFacingClusterConfig"),
    ("1.35-classic", "cluster-config:\n  dns:\n    enabled: yes\n", "line 3: cannot unmarshal !!bool `yes` into bool"),
])
def test_bootstrap_files_are_parsed_strictly(made: list[SimCluster], tmp_path: Path, track: str, text: str,
                                             expected: str) -> None:
    s = simulate(tmp_path / "w", "aws-dev", track)
    made.append(s)
    node = bare_node(s, track, role="control-plane")
    result = run(node, "k8s", "bootstrap", "--file", config_file(node, text))
    assert result.returncode == 1 and "failed to parse YAML config file" in result.stderr
    assert expected in result.stderr
    assert s.fleet.cluster is None


@pytest.mark.parametrize("track", TRACKS)
def test_features_left_unset_are_off_and_nothing_becomes_ready(made: list[SimCluster], tmp_path: Path,
                                                               track: str) -> None:
    s = simulate(tmp_path / "w", "aws-dev", track)
    made.append(s)
    node = bare_node(s, track, role="control-plane")
    assert run(node, "k8s", "bootstrap", "--file", config_file(node, "cluster-config:\n  cloud-provider: external\n"),
               "--name", node.name, "--address", node.ip).returncode == 0
    cluster_state = s.fleet.cluster
    assert cluster_state and cluster_state["features"] == {
        "network": False, "dns": False, "gateway": False, "ingress": False, "load-balancer": False,
        "local-storage": False, "metrics-server": True}
    status = run(node, "k8s", "status", "--wait-ready", "--timeout", "2m")
    assert status.returncode == 1 and "context deadline exceeded" in status.stderr


def test_gateway_without_network_is_refused(made: list[SimCluster], tmp_path: Path) -> None:
    s = simulate(tmp_path / "w", "aws-dev", "1.34-classic")
    made.append(s)
    node = bare_node(s, "1.34-classic", role="control-plane")
    text = "cluster-config:\n  network: {enabled: false}\n  gateway: {enabled: true}\n"
    result = run(node, "k8s", "bootstrap", "--file", config_file(node, text))
    assert result.returncode == 1
    assert "Bootstrap config verification failed: invalid cluster configuration: gateway requires network" \
        in result.stderr


# ------------------------------------------------------------------------------------ tokens


def _join(node: Instance, token: str, name: str | None = None, text: str = "") -> subprocess.CompletedProcess[str]:
    return run(node, "k8s", "join-cluster", token, "--name", name or node.name, "--address", node.ip,
               "--file", config_file(node, text))


@pytest.mark.parametrize("track", TRACKS)
def test_worker_tokens_are_single_use_name_bound_and_expire(made: list[SimCluster], tmp_path: Path,
                                                            track: str) -> None:
    s = cluster(made, tmp_path, track)
    a, b = bare_node(s, track), bare_node(s, track)
    token = run(cp0(s), "k8s", "get-join-token", a.name, "--worker").stdout.strip()
    assert k8sd.is_worker_token(k8sd.decode_token(token))
    wrong = _join(b, token)  # bound to a's name
    assert wrong.returncode == 1
    assert wrong.stderr.rstrip().endswith("HTTP request for worker node info failed: invalid token")
    assert _join(a, token).returncode == 0
    assert (a.root / WORKER_LOCK).exists()
    spent = _join(b, token, name=a.name + "x")
    assert spent.returncode == 1 and "invalid token" in spent.stderr
    late = run(cp0(s), "k8s", "get-join-token", b.name, "--worker", "--expires-in", "15m").stdout.strip()
    with s.fleet.mutate() as state:
        state["clock_offset"] = 16 * 60
    expired = _join(b, late)
    assert expired.returncode == 1 and "invalid token" in expired.stderr
    again = _join(a, late, name=a.name)
    assert again.returncode == 1 and "Error: The node is already part of a cluster" in again.stderr


@pytest.mark.parametrize("track,accepted", [("1.34-classic", True), ("1.35-classic", True), ("1.36-classic", False)])
def test_an_unnamed_worker_token_and_a_taken_name(made: list[SimCluster], tmp_path: Path, track: str,
                                                  accepted: bool) -> None:
    """k8sd main (1.36) checks the name against Nodes when minting (checkNodeNameAvailable)."""
    s = cluster(made, tmp_path, track)
    unnamed = run(cp0(s), "k8s", "get-join-token", "--worker")
    assert (unnamed.returncode == 0) is accepted
    taken = run(cp0(s), "k8s", "get-join-token", cp0(s).name, "--worker")
    if accepted:
        assert taken.returncode == 0
    else:
        assert f'a node with this name is already part of the cluster: "{cp0(s).name}"' in taken.stderr


@pytest.mark.parametrize("track", TRACKS)
def test_control_plane_tokens_are_got_or_created_by_name_and_bound_to_it(made: list[SimCluster], tmp_path: Path,
                                                                         track: str) -> None:
    # bare_node installs the channel's head from the store, so the cluster's first node does too:
    # next to the committed stack's pinned v1.34.4 (from its image) the head v1.34.11 is another
    # patch, whose control-plane join k8sd refuses before any token check (k8sd.py
    # check_control_plane_join). This test is about the tokens.
    s = cluster(made, tmp_path, track, stack="aws-prod", store=True)
    node = bare_node(s, track, role="control-plane")
    first = run(cp0(s), "k8s", "get-join-token", node.name).stdout.strip()
    assert run(cp0(s), "k8s", "get-join-token", node.name).stdout.strip() == first
    other = _join(node, first, name="ip-10-9-9-9.ec2.internal")
    assert other.returncode == 1 and "CoreTokenRecord not found" not in other.stderr
    assert "Joining server certificate SAN does not contain join token name" in other.stderr
    # the SAN check comes before the record is deleted: the token still serves its own node
    fresh = run(cp0(s), "k8s", "get-join-token", node.name).stdout.strip()
    assert fresh == first
    assert _join(node, fresh).returncode == 0
    reused = _join(bare_node(s, track, role="control-plane"), fresh)
    assert reused.returncode == 1 and "CoreTokenRecord not found" in reused.stderr


def test_a_worker_join_file_with_control_plane_keys_is_refused(made: list[SimCluster], tmp_path: Path) -> None:
    s = cluster(made, tmp_path)
    node = bare_node(s, "1.34-classic")
    token = run(cp0(s), "k8s", "get-join-token", node.name, "--worker").stdout.strip()
    result = _join(node, token, text="extra-sans: [api.example.com]\n")
    assert result.returncode == 1
    assert ("Join cluster config verification failed: failed to unmarshal worker join config: yaml: unmarshal "
            "errors:\n  line 1: field extra-sans not found in type apiv1.WorkerJoinConfig") in result.stderr


# ----------------------------------------------------------------------------- worker nodes


@pytest.mark.parametrize("track,refused", [("1.34-classic", True), ("1.35-classic", False), ("1.36-classic", False)])
def test_k8s_kubectl_on_a_worker(made: list[SimCluster], tmp_path: Path, track: str, refused: bool) -> None:
    """Regression for the old label step (`k8s kubectl label`): refused on 1.34 workers."""
    s = cluster(made, tmp_path, track)
    node = bare_node(s, track)
    assert _join(node, run(cp0(s), "k8s", "get-join-token", node.name, "--worker").stdout.strip()).returncode == 0
    result = run(node, "k8s", "kubectl", "label", "node", node.name, "--overwrite", "ck8s-gpu/pool=x")
    if refused:
        assert result.returncode == 1 and "k8s kubectl commands are not allowed on worker nodes" in result.stderr
    else:
        assert result.returncode == 0, result.stderr  # falls back to kubelet.conf
    assert run(node, "k8s", "get-join-token", "--worker").returncode == 1
    assert "this action is restricted on workers" in run(node, "k8s", "get-join-token", "x", "--worker").stderr


def test_a_kubelet_may_label_only_itself_and_only_outside_kubernetes_io(made: list[SimCluster], tmp_path: Path) -> None:
    s = cluster(made, tmp_path)
    node = bare_node(s, "1.34-classic")
    assert _join(node, run(cp0(s), "k8s", "get-join-token", node.name, "--worker").stdout.strip()).returncode == 0
    kubelet = str(node.root / "etc/kubernetes/kubelet.conf")
    other = run(node, "kubectl", "--kubeconfig", kubelet, "label", "node", cp0(s).name, "a=b")
    assert other.returncode == 1 and "cannot modify node" in other.stderr
    restricted = run(node, "kubectl", "--kubeconfig", kubelet, "label", "node", node.name,
                     "node-role.kubernetes.io/gpu=")
    assert restricted.returncode == 1 and "is not allowed to modify labels: node-role.kubernetes.io/gpu" \
        in restricted.stderr
    assert run(node, "kubectl", "--kubeconfig", kubelet, "label", "node", node.name, "Work Load=x").returncode == 1
    assert run(node, "kubectl", "--kubeconfig", kubelet, "label", "node", node.name, "node.kubernetes.io/gpu=l4",
               "team=ml").returncode == 0


# -------------------------------------------------------------------------------- k8sd CAPI


def test_capi_refuses_until_an_auth_token_is_registered(made: list[SimCluster], tmp_path: Path) -> None:
    s = cluster(made, tmp_path)
    with s.fleet.mutate() as state:
        state["cluster"]["capi_token"] = None

    def call(headers: list[str], body: str) -> dict[str, object]:
        args = ["curl", "-sS", "-k", "--max-time", "10", "-X", "POST"]
        for h in headers:
            args += ["-H", h]
        url = f"https://{cp0(s).ip}:6400/1.0/x/capi/generate-join-token"
        done = subprocess.run([*args, "--data", body, url], capture_output=True, text=True, check=True)
        return dict(json.loads(done.stdout))

    body = json.dumps({"name": "n", "worker": False})
    assert call([], body)["error"] == 'missing header "capi-auth-token"'
    assert call([f"capi-auth-token: {s.auth_token}"], body)["error"] == "invalid token"
    assert run(cp0(s), "k8s", "x-capi", "set-auth-token", s.auth_token).returncode == 0
    assert call([f"capi-auth-token: {s.auth_token}"], json.dumps({"name": "n", "bogus": 1}))["error"] == \
        'failed to parse request: json: unknown field "bogus"'
    answer = call([f"capi-auth-token: {s.auth_token}"], body)
    assert answer["error_code"] == 0 and not k8sd.is_worker_token(k8sd.decode_token(answer["metadata"]["token"]))  # type: ignore[index]


# --------------------------------------------------------------------- worker credential scope


def test_the_worker_policy_grants_nothing_on_secrets_or_other_documents() -> None:
    """Over the IAM documents alone: the worker role (inline + the SSM managed policy) cannot read
    any secret, and may send no document but the mint document, to control planes only."""
    cluster_name, region = "ck8s-prod-us-east-1", "us-east-1"
    doc = mint_document_name(cluster_name)
    worker = [iam.worker_policy(iam.Scope("aws", region, ACCOUNT, cluster_name), doc),
              aws_iam.SSM_MANAGED_INSTANCE_CORE]
    secret = f"arn:aws:secretsmanager:{region}:{ACCOUNT}:secret:{cluster_name}-secrets-join-auth-AbCdEf"
    for action in ("secretsmanager:GetSecretValue", "secretsmanager:ListSecrets", "ssm:StartSession",
                   "ssm:GetParameter", "kms:Decrypt"):
        assert not aws_iam.allowed(worker[:1], aws_iam.Request(action, secret)), action
    assert not aws_iam.allowed(worker, aws_iam.Request("secretsmanager:GetSecretValue", secret))
    run_shell = f"arn:aws:ssm:{region}::document/AWS-RunShellScript"
    assert not aws_iam.allowed(worker, aws_iam.Request("ssm:SendCommand", run_shell))
    mine = f"arn:aws:ssm:{region}:{ACCOUNT}:document/{doc}"
    assert aws_iam.allowed(worker, aws_iam.Request("ssm:SendCommand", mine))
    instance = f"arn:aws:ec2:{region}:{ACCOUNT}:instance/i-0123"
    cp_tags = {"ssm:resourceTag/ck8s-gpu/cluster": cluster_name, "ssm:resourceTag/ck8s-gpu/role": "control-plane"}
    assert aws_iam.allowed(worker, aws_iam.Request("ssm:SendCommand", instance, cp_tags))
    for tags in ({**cp_tags, "ssm:resourceTag/ck8s-gpu/role": "worker"},
                 {**cp_tags, "ssm:resourceTag/ck8s-gpu/cluster": "ck8s-other-us-east-1"}, {}):
        assert not aws_iam.allowed(worker, aws_iam.Request("ssm:SendCommand", instance, tags))
    # the control plane role does read both cluster secrets (and nothing here lets a worker assume it)
    control = [iam.control_plane_policy([secret, secret.replace("join-auth", "ca-keys")], ccm=True)]
    assert aws_iam.allowed(control, aws_iam.Request("secretsmanager:GetSecretValue", secret))
    assert not any(a.startswith(("sts:", "iam:")) for s in worker[0]["Statement"] for a in s["Action"])


@pytest.mark.parametrize("track", TRACKS)
def test_nothing_a_worker_can_obtain_mints_a_control_plane_token(made: list[SimCluster], tmp_path: Path,
                                                                 track: str) -> None:
    s = cluster(made, tmp_path, track, stack="aws-prod")
    worker = s.worker()
    for arn in (s.auth_arn, s.pki_arn):
        denied = run(worker, "aws", "secretsmanager", "get-secret-value", "--region", s.fleet.region,
                     "--secret-id", arn, "--query", "SecretString", "--output", "text")
        assert denied.returncode == 254 and "AccessDeniedException" in denied.stderr
    doc = mint_document_name(s.cluster)

    def send(document: str, target: str, name: str) -> subprocess.CompletedProcess[str]:
        return run(worker, "aws", "ssm", "send-command", "--region", s.fleet.region, "--document-name", document,
                   "--instance-ids", target, "--parameters", f"NodeName={name}", "--query", "Command.CommandId",
                   "--output", "text")

    assert "AccessDenied" in send("AWS-RunShellScript", cp0(s).id, worker.name).stderr
    other_worker = s.worker()
    assert "AccessDenied" in send(doc, other_worker.id, worker.name).stderr  # only to control planes
    injected = send(doc, cp0(s).id, "x' --worker=false; k8s get-join-token 'cp")
    assert injected.returncode == 254 and "InvalidParameters" in injected.stderr
    # --parameters is ONE map value (shorthand Key=v,Key2=v): a second word is an unknown option
    two_words = run(worker, "aws", "ssm", "send-command", "--region", s.fleet.region, "--document-name", doc,
                    "--instance-ids", cp0(s).id, "--parameters", f"NodeName={worker.name}", "KubeletMinor=1.34")
    assert two_words.returncode == 252 and "Unknown options: KubeletMinor=1.34" in two_words.stderr
    newer = send(doc, cp0(s).id, f"{worker.name},KubeletMinor=1.99")  # shorthand: both in one word
    assert newer.returncode == 0, newer.stderr
    command = send(doc, cp0(s).id, worker.name)
    assert command.returncode == 0, command.stderr
    answer: dict[str, object] = {}
    for _ in range(3):
        got = run(worker, "aws", "ssm", "get-command-invocation", "--region", s.fleet.region, "--command-id",
                  command.stdout.strip(), "--instance-id", cp0(s).id, "--output", "json")
        if got.returncode == 0:
            answer = json.loads(got.stdout)
    assert answer["Status"] == "Success", answer.get("StandardErrorContent")
    token = k8sd.decode_token(str(answer["StandardOutputContent"]).strip())
    assert k8sd.is_worker_token(token)  # a worker token only: it can never join a control plane
    node = bare_node(s, track, role="control-plane")
    as_cp = _join(node, str(answer["StandardOutputContent"]).strip(), name=worker.name, text="extra-sans: [x]\n")
    assert as_cp.returncode == 1 and "failed to unmarshal worker join config" in as_cp.stderr


@pytest.mark.parametrize("track", TRACKS)
def test_the_last_control_plane_cannot_leave_and_workers_cannot_remove(made: list[SimCluster], tmp_path: Path,
                                                                       track: str) -> None:
    s = cluster(made, tmp_path, track)
    last = run(cp0(s), "k8s", "remove-node", cp0(s).name)
    assert last.returncode == 1 and "etcdclient: no available endpoints" in last.stderr
    node = bare_node(s, track)
    assert _join(node, run(cp0(s), "k8s", "get-join-token", node.name, "--worker").stdout.strip()).returncode == 0
    refused = run(node, "k8s", "remove-node", cp0(s).name)
    assert refused.returncode == 1 and "this action is restricted on workers" in refused.stderr
    gone = run(cp0(s), "k8s", "remove-node", node.name)
    assert gone.returncode == 0 and s.fleet.cluster and node.name not in s.fleet.cluster["nodes"]
    assert run(cp0(s), "k8s", "remove-node", "ip-10-9-9-9.ec2.internal").returncode == 0  # unknown: no error

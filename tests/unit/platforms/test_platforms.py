"""make_cluster per platform under the mock engine: the graph, secrets, identity, facts, refusals."""

from __future__ import annotations

import base64
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from components.facts.cluster import AddonFacts
from components.kind import commands
from components.kind.config import render_kind_config
from components.plan.mockengine import Recorded, run_program
from components.platforms import make_cluster
from components.platforms.identity import cluster_identity
from components.settings.model import Settings
from components.validate import load_stack
from components.validate import parse as parse_settings
from tests.unit.platforms.conftest import KIND_KUBECONFIG

ROOT = Path(__file__).resolve().parents[3]
CA_A = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n").decode()
CA_B = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----\n").decode()


def kubeconfig(ca: str | None = CA_A, server: str = "https://10.0.0.1:6443", token: str = "t0ken") -> str:
    cluster: dict[str, Any] = {"server": server}
    if ca:
        cluster["certificate-authority-data"] = ca
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": {"token": token}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    })


def by_type(run: Any, typ: str) -> list[Recorded]:
    return [r for r in run.resources if r.type == typ]


def one(run: Any, typ: str) -> Recorded:
    (found,) = by_type(run, typ)
    return found


def capture(settings: Settings, kc: str | None = None) -> tuple[Any, dict[str, Any]]:
    handle: dict[str, Any] = {}

    def program() -> None:
        h = make_cluster("cluster", settings, kc)
        handle["h"] = h
        pulumi.export("kubeconfig", h.kubeconfig)

    return run_program(program, {}, stack="test"), handle


# ---------------------------------------------------------------------------- kind


def test_kind_graph_command_then_api_gate_then_provider() -> None:
    s = load_stack(ROOT / "stacks" / "Pulumi.kind.yaml")
    run, handle = capture(s)
    comp = one(run, "ck8s-gpu:index:KindCluster")
    cmd = one(run, "command:local:Command")
    ready = one(run, "pulumi-python:dynamic/ck8s-gpu:ApiReady")
    provider = one(run, "pulumi:providers:kubernetes")
    assert {cmd.parent, ready.parent, provider.parent} == {comp.urn}
    assert cmd.urn in ready.dependencies
    assert ready.urn in provider.dependencies
    # The generated config is what the command runs; any change to it replaces the cluster.
    text = render_kind_config(s)
    raw = cmd.raw_inputs
    assert raw["environment"] == commands.environment("ck8s-gpu", text)
    assert raw["triggers"] == ["ck8s-gpu", text]
    assert (raw["create"], raw["update"], raw["delete"]) == (commands.CREATE, commands.UPDATE, commands.DELETE)
    # stdout is the kubeconfig: not logged, not passed to the next run.
    assert raw["logging"] == "stderr" and raw["addPreviousOutputInEnv"] is False
    assert cmd.timeouts.get("create") == "30m"
    # The gate waits for the control plane and every simulated GPU worker.
    assert ready.inputs["minReadyNodes"] == 3
    assert "kubeconfig" in ready.secret_paths and "kubeconfig" in provider.secret_paths
    # An unreachable cluster never drops state (ADR 0021): said explicitly, so that an ambient
    # PULUMI_K8S_DELETE_UNREACHABLE cannot turn it on.
    assert provider.inputs["deleteUnreachable"] in (False, "false")
    # The cluster is identified by the CA in kind's kubeconfig (a rebuilt cluster has a new one).
    assert provider.inputs["clusterIdentifier"] == cluster_identity(KIND_KUBECONFIG)
    assert "client-key-data" not in str([r.inputs for r in run.resources])
    assert run.outputs["kubeconfig"] == "[secret]"
    facts = handle["h"].facts
    assert [(p.name, p.nodes, p.gpus_per_node, p.product_name) for p in facts.pools] == [("gpu", 2, 4, "NVIDIA L4")]
    assert facts.simulated_gpus and facts.has_kubelet


def test_kind_refuses_settings_it_cannot_preview_before_creating_anything() -> None:
    s = parse_settings({"platform": "kind", "nodePools": [{"name": "a", "instanceType": "g6.xlarge"}]})
    empty = s.model_copy(update={"node_pools": (s.node_pools[0].model_copy(update={"desired_size": 0}),)})
    with pytest.raises(ValueError, match=r"settings\.nodePools\[0\]\.desiredSize: kind mirrors pool 'a'"):
        capture(empty)


# ---------------------------------------------------------------------------- existing / local


@pytest.mark.parametrize(("stack", "typ", "simulated"), [
    ("existing", "ck8s-gpu:index:ExistingCluster", False),
    ("local", "ck8s-gpu:index:LocalCluster", True),
])
def test_kubeconfig_platforms(stack: str, typ: str, simulated: bool) -> None:
    s = load_stack(ROOT / "stacks" / f"Pulumi.{stack}.yaml") if stack == "local" else parse_settings(
        {"platform": "existing", "nodePools": [{"name": "gpu", "instanceType": "g5.12xlarge"}]})
    kc = kubeconfig()
    run, handle = capture(s, kc)
    comp = one(run, typ)
    ready = one(run, "pulumi-python:dynamic/ck8s-gpu:ApiReady")
    provider = one(run, "pulumi:providers:kubernetes")
    assert {ready.parent, provider.parent} == {comp.urn}
    assert ready.urn in provider.dependencies
    assert "kubeconfig" in ready.secret_paths and "kubeconfig" in provider.secret_paths
    assert "t0ken" not in str([r.inputs for r in run.resources])
    assert provider.inputs["clusterIdentifier"] == cluster_identity(kc)
    assert provider.inputs["deleteUnreachable"] in (False, "false")
    assert not by_type(run, "command:local:Command")
    facts = handle["h"].facts
    assert facts.simulated_gpus is simulated and facts.has_kubelet is (stack != "local")


def test_platform_and_kubeconfig_must_agree() -> None:
    existing = parse_settings({"platform": "existing"})
    with pytest.raises(ValueError, match="platform existing needs the kubeconfig"):
        make_cluster("c", existing)
    kind = load_stack(ROOT / "stacks" / "Pulumi.kind.yaml")
    with pytest.raises(ValueError, match="must not be set"):
        make_cluster("c", kind, kubeconfig())


def test_aws_dispatches_lazily_to_the_aws_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[str, Settings, AddonFacts]] = []
    fake = types.ModuleType("components.aws.cluster")

    class AwsCluster:
        def __init__(self, name: str, settings: Settings, addons: AddonFacts, opts: object = None) -> None:
            made.append((name, settings, addons))

    fake.AwsCluster = AwsCluster  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "components.aws.cluster", fake)
    s = parse_settings({"platform": "aws", "region": "eu-north-1"})
    assert isinstance(make_cluster("prod", s), AwsCluster)
    # the platform is told what the add-on set needs of it (it never imports the add-ons)
    assert made == [("prod", s, AddonFacts(cloud_controller_manager=True, backup_target=False))]


def test_kind_and_kubeconfig_platforms_never_import_the_aws_sdk() -> None:
    code = ("import sys, components.platforms, components.platforms.kind, components.platforms.existing; "
            "print('pulumi_aws' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------- identity


def test_identity_is_the_ca_not_the_credentials_or_the_endpoint() -> None:
    base = cluster_identity(kubeconfig())
    assert base.startswith("ca-") and len(base) == 19
    assert cluster_identity(kubeconfig(token="rotated")) == base
    assert cluster_identity(kubeconfig(server="https://new-lb.example:6443")) == base
    assert cluster_identity(kubeconfig(ca=CA_B)) != base  # a rebuilt cluster: everything is recreated


def test_identity_without_inline_ca_falls_back_to_the_server() -> None:
    a = cluster_identity(kubeconfig(ca=None))
    assert a.startswith("server-")
    assert a != cluster_identity(kubeconfig(ca=None, server="https://other:6443"))


def test_identity_follows_the_current_context() -> None:
    doc = yaml.safe_load(kubeconfig())
    doc["clusters"].append({"name": "d", "cluster": {"server": "https://d", "certificate-authority-data": CA_B}})
    doc["contexts"].append({"name": "y", "context": {"cluster": "d", "user": "u"}})
    doc["current-context"] = "y"
    assert cluster_identity(yaml.safe_dump(doc)) == cluster_identity(kubeconfig(ca=CA_B))
    doc["current-context"] = "nope"
    with pytest.raises(ValueError, match="current context"):
        cluster_identity(yaml.safe_dump(doc))

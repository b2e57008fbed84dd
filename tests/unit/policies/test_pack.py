"""The pack entry point assembles exactly the importable policies; the real pack reads the stack's
settings from the config the engine hands it."""

import json
import runpy
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi_policy import EnforcementLevel, ResourceValidationArgs

from components import policies
from components.policies.facts import facts_from_config_env
from components.policies.network import NO_WORLD_INGRESS
from components.policies.offline import options

PACK_DIR = Path(__file__).resolve().parents[3] / "policy"

# The issue's list, by level. A policy moving level is a deliberate change of this test.
EXPECTED_MANDATORY = {
    "imdsv2-required", "encrypted-volumes", "no-world-ingress", "no-world-ingress-set", "no-world-ssh",
    "no-wildcard-iam", "node-role-managed-policies", "no-public-resource-policy", "offline-images",
    "no-plaintext-secrets", "user-data-without-secrets", "helm-release-pinned", "one-gpu-advertiser",
    "gpu-namespace-pod-security", "smoke-test-required", "smoke-test-isolated", "prod-protects-dr-state",
    "secrets-only-in-secret-objects", "secret-readers-least-privilege", "grafana-admin-credentials",
    "workload-images-pinned", "workload-host-access", "iam-delegates-own-roles",
}
EXPECTED_ADVISORY = {"prod-no-spot", "prod-single-control-plane"}


def test_levels_are_the_issues() -> None:
    assert policies.MANDATORY == EXPECTED_MANDATORY
    assert policies.ADVISORY == EXPECTED_ADVISORY
    names = [p.name for p in policies.POLICIES]
    assert len(names) == len(set(names))


def test_entry_point_only_assembles(monkeypatch: pytest.MonkeyPatch) -> None:
    built: dict[str, Any] = {}

    class FakePack:  # the real one starts a gRPC server and blocks forever
        def __init__(self, **kwargs: Any) -> None:
            built.update(kwargs)

    monkeypatch.setattr("pulumi_policy.PolicyPack", FakePack)
    runpy.run_path(str(PACK_DIR / "__main__.py"), run_name="__main__")
    assert built["name"] == policies.PACK_NAME
    assert [p.name for p in built["policies"]] == [p.name for p in policies.POLICIES]
    assert built["enforcement_level"] == EnforcementLevel.MANDATORY


def test_pack_project_files() -> None:
    project = yaml.safe_load((PACK_DIR / "PulumiPolicy.yaml").read_text())
    assert project["runtime"]["name"] == "python"
    for line in (PACK_DIR / "requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            assert "==" in line, f"unpinned requirement: {line}"


def _real_pack_args(props: dict[str, Any]) -> ResourceValidationArgs:
    """What the real pack passes: plain ResourceValidationArgs, no offline extras."""
    return ResourceValidationArgs("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", props, "urn:x", "x",
                                  options(), None)


def test_real_pack_reads_settings_from_the_engines_config(monkeypatch: pytest.MonkeyPatch) -> None:
    world_api = {"ipProtocol": "tcp", "fromPort": 6443, "toPort": 6443, "cidrIpv4": "0.0.0.0/0"}
    settings = {"platform": "aws", "region": "eu-north-1", "network": {"apiAllowList": ["0.0.0.0/0"]}}
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"ck8s-gpu:settings": json.dumps(settings)}))
    facts = facts_from_config_env()
    assert facts is not None and facts.api_allow_list == ("0.0.0.0/0",) and not facts.prod
    found: list[str] = []
    NO_WORLD_INGRESS.validate(_real_pack_args(world_api), lambda m, _u=None: found.append(m))
    assert found == []  # declared outside prod: accepted

    prod = {**settings, "environment": "prod", "production": True}
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"ck8s-gpu:settings": json.dumps(prod)}))
    NO_WORLD_INGRESS.validate(_real_pack_args(world_api), lambda m, _u=None: found.append(m))
    assert len(found) == 1 and "in prod" in found[0]


def test_real_pack_without_settings_is_strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULUMI_CONFIG", raising=False)
    assert facts_from_config_env() is None
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"ck8s-gpu:settings": "{not json"}))
    assert facts_from_config_env() is None
    found: list[str] = []
    NO_WORLD_INGRESS.validate(_real_pack_args({"ipProtocol": "tcp", "fromPort": 6443, "toPort": 6443,
                                               "cidrIpv4": "0.0.0.0/0"}), lambda m, _u=None: found.append(m))
    assert found == ["rule: tcp/6443 open to 0.0.0.0/0"]

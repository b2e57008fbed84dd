"""An ECR mirror (issue 29, docs/adr/0043): the pull-through cache rules ECR accepts, the pull
statements the node roles get, and what they do not reach (IAM evaluator)."""

from __future__ import annotations

from typing import Any

from components.aws.iam import Scope, control_plane_policy, worker_policy
from components.aws.registry import PREFIX, UPSTREAMS, cache_rules, mirror_pull_statements
from tests.fakes.aws_iam import Request, allowed
from tests.unit.aws.conftest import of_type, run_cluster, settings_for

ECR = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
RULE = "aws:ecr/pullThroughCacheRule:PullThroughCacheRule"


def _mirrored(**images: Any) -> Any:
    def change(raw: dict[str, Any]) -> None:
        raw["images"] = {"mirror": ECR, **images}
    return change


def test_the_airgap_stack_caches_every_upstream_ecr_can_and_not_nvcr() -> None:
    """ECR User Guide, pull-through-cache.html: no rule for nvcr.io; credential upstreams only with a secret."""
    rules = cache_rules(settings_for("aws-airgap"))
    assert [r.prefix for r in rules] == ["docker.io", "ghcr.io", "public.ecr.aws", "quay.io", "registry.k8s.io"]
    assert {r.prefix: r.upstream_url for r in rules}["docker.io"] == "registry-1.docker.io"
    assert all(r.credential_arn for r in rules if r.prefix in ("docker.io", "ghcr.io"))
    assert all(r.credential_arn is None for r in rules if r.prefix not in ("docker.io", "ghcr.io"))
    without_secrets = cache_rules(settings_for("aws-dev", _mirrored(pullThroughCache="create")))
    assert [r.prefix for r in without_secrets] == ["public.ecr.aws", "quay.io", "registry.k8s.io"]


def test_prefixes_are_ones_ecr_accepts() -> None:
    """CreatePullThroughCacheRule ecrRepositoryPrefix: 2-30 characters of its pattern."""
    for u in UPSTREAMS:
        assert PREFIX.match(u.host) and 2 <= len(u.host) <= 30
    assert not PREFIX.match("Docker.io") and not PREFIX.match("a..b")


def test_the_plan_makes_one_rule_per_cached_upstream() -> None:
    run = run_cluster(settings_for("aws-airgap"), "aws-airgap")
    made = sorted(r.inputs["ecrRepositoryPrefix"] for r in of_type(run, RULE))
    assert made == ["docker.io", "ghcr.io", "public.ecr.aws", "quay.io", "registry.k8s.io"]
    assert of_type(run_cluster(settings_for("aws-dev"), "aws-dev"), RULE) == []


def _request(action: str, resource: str) -> Request:
    return Request(action=action, resource=resource, context={})


def test_node_roles_pull_only_the_mirror_folders_and_fill_only_the_cache() -> None:
    s = settings_for("aws-airgap")
    mirror = mirror_pull_statements(s)
    policies = [worker_policy(Scope("aws", "us-east-1", "123456789012", s.cluster_name), "mint", mirror),
                control_plane_policy(["arn:aws:secretsmanager:us-east-1:123456789012:secret:x"], True, mirror)]
    repo = "arn:aws:ecr:us-east-1:123456789012:repository/"
    for policy in policies:
        assert allowed([policy], _request("ecr:GetAuthorizationToken", "*"))
        assert allowed([policy], _request("ecr:BatchGetImage", repo + "nvcr.io/nvidia/gpu-operator"))
        assert allowed([policy], _request("ecr:BatchImportUpstreamImage", repo + "quay.io/prometheus/node-exporter"))
        # Not the account's other repositories, not writes, not another account's mirror.
        assert not allowed([policy], _request("ecr:BatchGetImage", repo + "team-app/api"))
        assert not allowed([policy], _request("ecr:PutImage", repo + "nvcr.io/nvidia/gpu-operator"))
        assert not allowed([policy], _request("ecr:BatchImportUpstreamImage", repo + "nvcr.io/nvidia/gpu-operator"))
        assert not allowed([policy], _request(
            "ecr:BatchGetImage", "arn:aws:ecr:us-east-1:210987654321:repository/nvcr.io/nvidia/gpu-operator"))


def test_no_ecr_mirror_no_statement_and_another_region_or_a_prefix_scopes_them() -> None:
    """Pull statements follow the mirror: none without an ECR one; an ECR mirror in another Region
    (reached through NAT) or under a repository prefix gets them there, and only there."""
    assert mirror_pull_statements(settings_for("aws-dev")) == []
    plain = settings_for("aws-dev", lambda r: r.update(images={"mirror": "harbor.internal:8443/mirror"}))
    assert mirror_pull_statements(plain) == []
    other = "123456789012.dkr.ecr.eu-north-1.amazonaws.com/platform"
    policy = {"Version": "2012-10-17", "Statement": mirror_pull_statements(
        settings_for("aws-dev", lambda r: r.update(images={"mirror": other})))}
    repo = "arn:aws:ecr:eu-north-1:123456789012:repository/"
    assert allowed([policy], _request("ecr:BatchGetImage", repo + "platform/nvcr.io/nvidia/gpu-operator"))
    assert not allowed([policy], _request("ecr:BatchGetImage", repo + "nvcr.io/nvidia/gpu-operator"))
    assert not allowed([policy], _request(
        "ecr:BatchGetImage", "arn:aws:ecr:us-east-1:123456789012:repository/platform/nvcr.io/nvidia/gpu-operator"))


def test_the_airgap_plan_has_no_nat_and_reaches_aws_and_its_mirror_through_endpoints() -> None:
    """Issue 29 done-when: the offline stack plans with no NAT gateway (and no route out)."""
    from components.plan.run import plan_stack

    plan = plan_stack("aws-airgap")
    types = [r.type for r in plan.resources]
    assert "aws:ec2/natGateway:NatGateway" not in types and "aws:ec2/eip:Eip" not in types
    private_default = [r for r in plan.resources if r.type == "aws:ec2/route:Route" and "-private-" in r.name]
    assert private_default == []
    services = sorted(r.inputs["serviceName"].rsplit(".us-east-1.", 1)[1] for r in plan.resources
                      if r.type == "aws:ec2/vpcEndpoint:VpcEndpoint")
    assert {"ecr.api", "ecr.dkr", "s3", "ssm", "secretsmanager"} <= set(services)

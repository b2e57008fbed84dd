"""The fake AWS CLI's IAM evaluator (tests/fakes/aws_iam.py) judges like IAM or refuses to judge; with it,
the worker role is shown to act on no instance, its own included (docs/adr/0040)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from components.aws import iam, mint
from components.aws.inventory import mint_document_name
from tests.fakes.aws_iam import (
    ACCESS_LEVELS,
    SSM_MANAGED_INSTANCE_CORE,
    Request,
    UnmodelledPolicy,
    allowed,
    granted_actions,
)


def doc(*statements: Mapping[str, object]) -> dict[str, object]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


ALLOW_READ = {"Effect": "Allow", "Action": "secretsmanager:Get*", "Resource": "arn:aws:secretsmanager:*:1:secret:a-*"}


SECRET = "arn:aws:secretsmanager:eu-west-1:1:secret:"


@pytest.mark.parametrize("request_,expected", [
    (Request("secretsmanager:GetSecretValue", SECRET + "a-x"), True),
    (Request("SecretsManager:getsecretvalue", SECRET + "a-x"), True),  # actions: any case
    (Request("secretsmanager:GetSecretValue", SECRET + "A-x"), False),  # ARNs: exact case
    (Request("secretsmanager:PutSecretValue", SECRET + "a-x"), False),
    (Request("secretsmanager:GetSecretValue", "arn:aws:secretsmanager:eu-west-1:2:secret:b-x"), False),
])
def test_actions_and_resources_match_with_iam_wildcards(request_: Request, expected: bool) -> None:
    assert allowed([doc(ALLOW_READ)], request_) is expected


def test_conditions_need_every_key_and_a_missing_key_does_not_match() -> None:
    tagged = {"Effect": "Allow", "Action": "ssm:SendCommand", "Resource": "*",
              "Condition": {"StringEquals": {"ssm:resourceTag/role": "control-plane", "ssm:resourceTag/c": "x"}}}
    both = {"ssm:resourceTag/role": "control-plane", "ssm:resourceTag/c": "x"}
    assert allowed([doc(tagged)], Request("ssm:SendCommand", "i", both))
    assert not allowed([doc(tagged)], Request("ssm:SendCommand", "i", {"ssm:resourceTag/role": "control-plane"}))
    assert not allowed([doc(tagged)], Request("ssm:SendCommand", "i", {**both, "ssm:resourceTag/c": "y"}))


def test_an_explicit_deny_wins() -> None:
    deny = {"Effect": "Deny", "Action": "*", "Resource": "*"}
    assert not allowed([doc(ALLOW_READ, deny)], Request("secretsmanager:GetSecretValue",
                                                        "arn:aws:secretsmanager:x:1:secret:a-1"))


@pytest.mark.parametrize("statement", [
    {"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"},
    {"Effect": "Allow", "Action": "*", "NotResource": "x"},
    {"Effect": "Allow", "Action": "*", "Resource": "*", "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}},
])
def test_what_it_does_not_model_is_an_error_not_a_verdict(statement: dict[str, object]) -> None:
    with pytest.raises(UnmodelledPolicy):
        allowed([doc(statement)], Request("s3:GetObject", "arn:aws:s3:::b/k"))


def test_granted_actions_lists_names_and_refuses_what_it_cannot_list() -> None:
    named = {"Effect": "Allow", "Action": ["ec2:DescribeInstances", "ssm:SendCommand"], "Resource": "*"}
    assert granted_actions([doc(named), doc({**named, "Action": "ssm:SendCommand"})]) == {
        "ec2:DescribeInstances", "ssm:SendCommand"}
    for statement in (ALLOW_READ, {"Effect": "Deny", "Action": "ec2:DescribeInstances", "Resource": "*"},
                      {"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}):
        with pytest.raises(UnmodelledPolicy):
            granted_actions([doc(statement)])


# ------------------------------------- a worker acts on no instance but itself (docs/adr/0040)

REGION, ACCOUNT, CLUSTER = "us-east-1", "123456789012", "ck8s-prod-us-east-1"
MINT = mint_document_name(CLUSTER)
WORKER = [iam.worker_policy(iam.Scope("aws", REGION, ACCOUNT, CLUSTER), MINT)]
WORKER_ROLE = [*WORKER, SSM_MANAGED_INSTANCE_CORE]  # what the role holds (components/aws/iam.py NodeRole)


def _tagged(arn: str, **tags: str) -> Request:
    """A resource with its tags under every tag condition key the services use (EC2, Auto Scaling,
    SSM, global: Service Authorization Reference), so a policy narrowed by any of them may match."""
    prefixes = ("aws:ResourceTag", "ec2:ResourceTag", "autoscaling:ResourceTag", "ssm:resourceTag")
    names = {"cluster": "ck8s-gpu/cluster", "role": "ck8s-gpu/role", "pool": "ck8s-gpu/pool"}
    return Request("", arn, {f"{p}/{names[k]}": v for p in prefixes for k, v in tags.items()})


def _instance(iid: str, **tags: str) -> Request:
    return _tagged(f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/{iid}", **tags)


def _group(name: str, **tags: str) -> Request:
    return _tagged(f"arn:aws:autoscaling:{REGION}:{ACCOUNT}:autoScalingGroup:"
                   f"00000000-0000-0000-0000-000000000000:autoScalingGroupName/{name}", **tags)


THIS_CP = _instance("i-0cp", cluster=CLUSTER, role="control-plane")
TARGETS = {
    "itself": _instance("i-0self", cluster=CLUSTER, role="worker", pool="h100"),
    "another worker of its group": _instance("i-0peer", cluster=CLUSTER, role="worker", pool="h100"),
    "a worker of another pool": _instance("i-0other", cluster=CLUSTER, role="worker", pool="l40s"),
    "this cluster's control plane": THIS_CP,
    "another cluster's control plane": _instance("i-0far", cluster="ck8s-dev-us-east-1", role="control-plane"),
    "an untagged instance": _instance("i-0bare"),
    "its own group": _group(f"{CLUSTER}-pool-h100-asg", cluster=CLUSTER, role="worker", pool="h100"),
    "another pool's group": _group(f"{CLUSTER}-pool-l40s-asg", cluster=CLUSTER, role="worker", pool="l40s"),
}
# What changes an instance's health, state, membership, tags, role or runs code on it
# (Service Authorization Reference, Write actions of Auto Scaling, EC2 and Systems Manager).
INSTANCE_ACTIONS = (
    "autoscaling:SetInstanceHealth", "autoscaling:TerminateInstanceInAutoScalingGroup",
    "autoscaling:CompleteLifecycleAction", "autoscaling:RecordLifecycleActionHeartbeat",
    "autoscaling:EnterStandby", "autoscaling:ExitStandby", "autoscaling:DetachInstances",
    "autoscaling:SetDesiredCapacity", "autoscaling:UpdateAutoScalingGroup", "autoscaling:SuspendProcesses",
    "autoscaling:PutLifecycleHook", "autoscaling:CreateOrUpdateTags",
    "ec2:StopInstances", "ec2:TerminateInstances", "ec2:RebootInstances", "ec2:ModifyInstanceAttribute",
    "ec2:CreateTags", "ec2:DeleteTags", "ec2:ReplaceIamInstanceProfileAssociation",
    "ec2:DisassociateIamInstanceProfile", "ec2:ModifyInstanceMetadataOptions",
    "ssm:StartSession", "ssm:CancelCommand", "ssm:StartAutomationExecution", "ssm:CreateAssociation",
)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_no_action_that_changes_an_instance_is_allowed_on_any_instance_or_group(target: str) -> None:
    resource = TARGETS[target]
    granted = [a for a in INSTANCE_ACTIONS
               if allowed(WORKER_ROLE, Request(a, resource.resource, resource.context))]
    assert granted == [], f"the worker role may {granted} on {target}"


def test_every_action_the_worker_policy_allows_is_read_only_or_the_mint_on_its_control_planes() -> None:
    actions = granted_actions(WORKER)
    assert actions <= set(ACCESS_LEVELS), f"judge {actions - set(ACCESS_LEVELS)} here first"
    writes = {a for a in actions if ACCESS_LEVELS[a] not in ("List", "Read")}
    assert writes == {"ssm:SendCommand"}
    # SendCommand is authorised on the document and on every target instance.
    documents = [f"arn:aws:ssm:{REGION}:{ACCOUNT}:document/{d}" for d in (MINT, "ck8s-dev-us-east-1-mint-worker-token")]
    documents.append(f"arn:aws:ssm:{REGION}::document/AWS-RunShellScript")
    assert [d for d in documents if allowed(WORKER_ROLE, Request("ssm:SendCommand", d))] == [documents[0]]
    reachable = [t for t, r in TARGETS.items()
                 if allowed(WORKER_ROLE, Request("ssm:SendCommand", r.resource, r.context))]
    assert reachable == ["this cluster's control plane"]
    # ...where the one document reads the Nodes and mints a worker token: nothing that changes the
    # control plane (components/aws/mint.py).
    setup, guard, mint_line = mint.run_command()
    assert setup == "set -eu" and guard.startswith(f"{mint.K8S_CLI} kubectl get nodes -o json | python3 -c ")
    assert mint_line == mint.mint_command() and mint_line.split()[1:2] == ["get-join-token"] and "--worker" in mint_line


def test_the_ssm_managed_policy_names_no_auto_scaling_or_ec2_action() -> None:
    """AmazonSSMManagedInstanceCore's actions are the SSM agent's own channel (ssm, ssmmessages,
    ec2messages); none reaches Auto Scaling or EC2, whichever instance it names."""
    assert {a.split(":")[0] for a in granted_actions([SSM_MANAGED_INSTANCE_CORE])} == {
        "ssm", "ssmmessages", "ec2messages"}

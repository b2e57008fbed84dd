"""The fake AWS CLI's IAM evaluator (tests/fakes/aws_iam.py) judges like IAM or refuses to judge."""

from __future__ import annotations

import pytest

from tests.fakes.aws_iam import Request, UnmodelledPolicy, allowed


def doc(*statements: dict[str, object]) -> dict[str, object]:
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

import base64

import pytest
from pulumi_policy.policy import _NotApplicableError

from components.policies.aws_nodes import INSTANCE, LAUNCH_TEMPLATE
from components.policies.secrets import NO_PLAINTEXT_SECRETS, STACK, USER_DATA_WITHOUT_SECRETS
from tests.unit.policies.helpers import violations

KEY = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n"
KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- name: a\n  user:\n    token: Zm9vYmFyYmF6cXV4\n"
PROVIDER = "pulumi:providers:kubernetes"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_secret_inputs_pass_and_plain_ones_violate() -> None:
    assert violations(NO_PLAINTEXT_SECRETS, PROVIDER, {"kubeconfig": KUBECONFIG}, secret_paths=["kubeconfig"]) == []
    found = violations(NO_PLAINTEXT_SECRETS, PROVIDER, {"kubeconfig": KUBECONFIG})
    assert found == ["input kubeconfig holds kubeconfig credentials (token) but is not a Pulumi secret; "
                     "wrap it with pulumi.Output.secret (or mark the output secret)"]


def test_nested_paths_and_whole_object_secrets() -> None:
    props = {"values": {"auth": {"key": KEY}, "replicas": 2}}
    assert violations(NO_PLAINTEXT_SECRETS, "kubernetes:helm.sh/v3:Release", props, secret_paths=["values.auth"]) == []
    assert violations(NO_PLAINTEXT_SECRETS, "kubernetes:helm.sh/v3:Release", props, secret_paths=["$"]) == []
    found = violations(NO_PLAINTEXT_SECRETS, "kubernetes:helm.sh/v3:Release", props, secret_paths=["values.auth.k"])
    assert len(found) == 1 and "values.auth.key holds PEM private key" in found[0]


def test_user_data_is_checked_decoded() -> None:
    lt = {"userData": b64(f"#cloud-config\nwrite_files:\n- path: /etc/k/ca.key\n  content: |\n    {KEY}")}
    assert "input userData holds PEM private key" in violations(NO_PLAINTEXT_SECRETS, LAUNCH_TEMPLATE, lt)[0]
    assert violations(NO_PLAINTEXT_SECRETS, LAUNCH_TEMPLATE, lt, secret_paths=["userData"]) == []


def test_stack_outputs_must_be_secret() -> None:
    assert violations(NO_PLAINTEXT_SECRETS, STACK, {"kubeconfig": "[secret]", "endpoint": "https://x"},
                      secret_paths=["kubeconfig"]) == []
    assert "stack output kubeconfig" in violations(NO_PLAINTEXT_SECRETS, STACK, {"kubeconfig": KUBECONFIG})[0]


def test_without_secret_knowledge_the_policy_is_not_applicable() -> None:
    # What the real pack sees: pulumi-policy's Python SDK unwraps secrets before validate.
    with pytest.raises(_NotApplicableError) as exc:
        violations(NO_PLAINTEXT_SECRETS, PROVIDER, {"kubeconfig": KUBECONFIG}, secret_paths=None)
    assert "offline" in (exc.value.reason or "")


def test_user_data_carries_no_secret_even_as_a_pulumi_secret() -> None:
    fetched = "#!/bin/bash\nTOKEN=$(aws secretsmanager get-secret-value --secret-id j --query SecretString " \
              "--output text)\nk8s join-cluster \"$TOKEN\"\n"
    assert violations(USER_DATA_WITHOUT_SECRETS, LAUNCH_TEMPLATE, {"userData": b64(fetched)}) == []
    baked = {"userData": b64("#!/bin/bash\ncurl -H 'capi-auth-token: 0123456789abcdef0123' https://cp:6400\n")}
    assert violations(USER_DATA_WITHOUT_SECRETS, LAUNCH_TEMPLATE, baked, secret_paths=["userData"])
    assert violations(USER_DATA_WITHOUT_SECRETS, INSTANCE, {"userData": f"#cloud-config\n# {KEY}"})
    assert violations(USER_DATA_WITHOUT_SECRETS, PROVIDER, {"kubeconfig": KUBECONFIG}) == []  # not user-data

import base64
import gzip
from typing import Any

import pytest
from pulumi_policy.policy import _NotApplicableError

from components.policies.aws_nodes import INSTANCE, LAUNCH_TEMPLATE
from components.policies.secrets import (
    NO_PLAINTEXT_SECRETS,
    SECRETS_ONLY_IN_SECRET_OBJECTS,
    STACK,
    USER_DATA_WITHOUT_SECRETS,
)
from tests.unit.policies.helpers import res, stack_violations, violations

KEY = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n"
KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- name: a\n  user:\n    token: Zm9vYmFyYmF6cXV4\n"
PROVIDER = "pulumi:providers:kubernetes"


def b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


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


# --- the same material in Kubernetes objects (issue 14) -----------------------------------------

def pod_template(container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [container], **spec}}}


def workload(kind: str, container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A `kind` object (typed-resource inputs) whose pod spec has `container`."""
    if kind == "Pod":
        return {"metadata": {"name": "p", "namespace": "apps"}, "spec": {"containers": [container], **spec}}
    if kind == "CronJob":
        return {"metadata": {"name": "c", "namespace": "apps"},
                "spec": {"schedule": "@daily", "jobTemplate": {"spec": pod_template(container, **spec)}}}
    return {"metadata": {"name": "w", "namespace": "apps"}, "spec": pod_template(container, **spec)}


def typed(kind: str, props: dict[str, Any]) -> Any:
    group = {"Pod": "core/v1", "ConfigMap": "core/v1", "Secret": "core/v1", "CronJob": "batch/v1",
             "Job": "batch/v1"}.get(kind, "apps/v1")
    return res(f"kubernetes:{group}:{kind}", props, name=f"{kind.lower()}-r")


def config_group(*objs: dict[str, Any]) -> Any:
    return res("kubernetes:yaml/v2:ConfigGroup", {"objs": list(objs)}, name="manifests")


APP = {"name": "app", "image": "registry.example/app:1.2.3"}
VIEWABLE_SECRETS = [
    ("ConfigMap data PEM", typed("ConfigMap", {"metadata": {"name": "cm"}, "data": {"tls.key": KEY}})),
    ("ConfigMap binaryData base64 PEM", typed("ConfigMap", {"metadata": {"name": "cm"},
                                                           "binaryData": {"tls.key": b64(KEY)}})),
    ("ConfigMap for envFrom", typed("ConfigMap", {"metadata": {"name": "cm"}, "data": {"DB_PASSWORD": "hunter2"}})),
    ("ConfigMap kubeconfig gzip+base64", typed("ConfigMap", {"data": {"k": b64(gzip.compress(KUBECONFIG.encode()))}})),
    ("Deployment env literal", typed("Deployment", workload("Deployment", {
        **APP, "env": [{"name": "DB_PASSWORD", "value": "hunter2"}]}))),
    ("DaemonSet env PEM under an innocent name", typed("DaemonSet", workload("DaemonSet", {
        **APP, "env": [{"name": "CONFIG", "value": KEY}]}))),
    ("StatefulSet args kubeconfig base64", typed("StatefulSet", workload("StatefulSet", {
        **APP, "args": ["--kubeconfig-data", b64(KUBECONFIG)]}))),
    ("Pod initContainer env", typed("Pod", workload("Pod", APP, initContainers=[
        {**APP, "env": [{"name": "GITHUB_TOKEN", "value": "ghp_0123456789abcdef"}]}]))),
    ("CronJob jobTemplate env", typed("CronJob", workload("CronJob", {
        **APP, "env": [{"name": "AWS_SECRET_ACCESS_KEY", "value": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}]}))),
    ("Job command with a join token", typed("Job", workload("Job", {
        **APP, "command": ["sh", "-c", "k8s join-cluster eyJzZWNyZXQiOiJhYmMiLCJqb2luX2FkZHJlc3NlcyI6W119"]}))),
    ("raw manifest in a ConfigGroup", config_group({"apiVersion": "apps/v1", "kind": "Deployment",
                                                    **workload("Deployment", {**APP, "env": [
                                                        {"name": "API_KEY", "value": "k-0123456789"}]})})),
    ("manifest text in a ConfigGroup", res("kubernetes:yaml/v2:ConfigGroup", {"yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  REDIS_PASSWORD: hunter2\n")}, name="y")),
]


@pytest.mark.parametrize("resource", [r for _, r in VIEWABLE_SECRETS], ids=[i for i, _ in VIEWABLE_SECRETS])
def test_secrets_in_configmaps_and_pod_specs_violate_even_as_pulumi_secrets(resource: Any) -> None:
    found = stack_violations(SECRETS_ONLY_IN_SECRET_OBJECTS, [resource])
    assert found and all(urn == resource.urn for _, urn in found), found
    assert "view role" in found[0][0]


VIEWABLE_FINE = [
    ("env from a Secret", typed("Deployment", workload("Deployment", {**APP, "env": [
        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]}))),
    ("envFrom a Secret", typed("Deployment", workload("Deployment", {
        **APP, "envFrom": [{"secretRef": {"name": "db"}}]}))),
    ("a Secret holds it", typed("Secret", {"metadata": {"name": "s"}, "data": {"tls.key": b64(KEY)}})),
    ("a CA bundle in a ConfigMap", typed("ConfigMap", {"data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nMIIB\n"
                                                                         "-----END CERTIFICATE-----\n"}})),
    ("ordinary variables", typed("Deployment", workload("Deployment", {**APP, "env": [
        {"name": "DB_HOST", "value": "db"}, {"name": "PASSWORD_FILE", "value": "/run/secrets/db"}]}))),
]


@pytest.mark.parametrize("resource", [r for _, r in VIEWABLE_FINE], ids=[i for i, _ in VIEWABLE_FINE])
def test_references_to_secrets_pass(resource: Any) -> None:
    assert stack_violations(SECRETS_ONLY_IN_SECRET_OBJECTS, [resource]) == []


RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.mark.parametrize(("rtype", "props"), [
    (RELEASE, {"values": {"env": {"GF_SECURITY_ADMIN_PASSWORD": "admin"}}}),
    (RELEASE, {"values": {"extraEnv": [{"name": "DB_PASSWORD", "value": "hunter2"}]}}),
    (RELEASE, {"values": {"tls": {"key": b64(gzip.compress(KEY.encode()))}}}),
    ("kubernetes:core/v1:ConfigMap", {"binaryData": {"k": b64(KEY)}}),
    ("kubernetes:yaml/v2:ConfigGroup", {"yaml": f"apiVersion: v1\nkind: Secret\ndata:\n  tls.key: {b64(KEY)}\n"}),
    ("kubernetes:yaml/v2:ConfigGroup", {"objs": [{"kind": "Secret", "stringData": {"tls.key": KEY}}]}),
])
def test_plaintext_inputs_violate_however_the_secret_is_spelled(rtype: str, props: dict[str, Any]) -> None:
    found = violations(NO_PLAINTEXT_SECRETS, rtype, props)
    assert found and "not a Pulumi secret" in found[0], found
    # The same input as a Pulumi secret passes (the state encrypts it).
    top = next(iter(props))
    assert violations(NO_PLAINTEXT_SECRETS, rtype, props, secret_paths=[top]) == []

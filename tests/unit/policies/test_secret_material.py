import base64
import json

import pytest

from components.policies.secret_material import findings

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443"}}]
users:
- name: admin
  user:
    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQ==
current-context: c
"""


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE...\n-----END RSA PRIVATE KEY-----", "PEM private key"),
        ("-----BEGIN PRIVATE KEY-----\nMC4CAQ...", "PEM private key"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl", "PEM private key"),
        (KUBECONFIG, "kubeconfig credentials (client-key-data)"),
        ("kind: Config\nusers:\n- name: u\n  user:\n    token: abcdef0123456789\n", "kubeconfig credentials (token)"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS secret access key"),
        ("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "static AWS access key id"),
        ("kubeadm join 10.0.0.1:6443 --token abcdef.0123456789abcdef", "bootstrap token"),
        ("curl -H 'Authorization: Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6In0.payload'", "bearer token"),
        ("k8s join-cluster eyJzZWNyZXQiOiJhYmMiLCJqb2luX2FkZHJlc3NlcyI6WyIxMC4wLjAuMTo2NDAwIl19",
         "Canonical Kubernetes join token"),
        ("curl -H 'capi-auth-token: 6f1c2e8a9b7d4c3e2f1a0b9c8d7e6f5a' https://cp:6400", "join auth token"),
    ],
)
def test_secret_material_is_recognised(text: str, kind: str) -> None:
    assert kind in findings(text)


def test_a_pasted_k8s_join_token_is_recognised_by_its_content() -> None:
    token = base64.b64encode(json.dumps({
        "name": "cp-2", "secret": "s3cr3t-value", "fingerprint": "ab12", "join_addresses": ["10.0.0.10:6400"],
    }).encode()).decode()
    assert findings(f"#cloud-config\nwrite_files:\n- content: {token}\n") == ["Canonical Kubernetes join token"]
    # The worker variant is unpadded (base64.RawStdEncoding).
    worker = base64.b64encode(json.dumps({"secret": "w" * 20, "join_addresses": ["10.0.0.10:6400"]}).encode())
    assert findings(worker.decode().rstrip("=")) == ["Canonical Kubernetes join token"]


@pytest.mark.parametrize(
    "text",
    [
        "#cloud-config\npackages: [jq]\nruncmd:\n- [snap, install, k8s, --classic]\n",
        # Secrets fetched at boot: variables and command substitutions, not values.
        'TOKEN=$(aws secretsmanager get-secret-value --secret-id x --query SecretString --output text)\n'
        'curl -H "capi-auth-token: $TOKEN" https://cp:6400\nk8s join-cluster "$JOIN_TOKEN"\n',
        "-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----",  # public material
        "-----BEGIN PUBLIC KEY-----\nMIIB...",
        "kind: Config\nusers:\n- name: u\n  user:\n    token: [secret]\n",  # masked by the plan
        "kind: Config\nusers:\n- name: u\n  user:\n    exec: {command: aws, args: [eks, get-token]}\n",
        "",
    ],
)
def test_non_secrets_are_not_flagged(text: str) -> None:
    assert findings(text) == []

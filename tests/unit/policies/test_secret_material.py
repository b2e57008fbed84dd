import base64
import functools
import gzip
import hashlib
import json
from urllib.parse import quote

import pytest

from components.settings.credentials import credential_literals, findings, is_credential_key
from components.settings.decodings import MAX_LAYERS
from tests.unit.helpers import cpu_seconds

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


# --- meaning, not spelling: every encoding of the same material (issue 14) ----------------------

KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAsecretsecretsecret\n-----END RSA PRIVATE KEY-----\n"
CLOUD_CONFIG = f"#cloud-config\nwrite_files:\n- path: /etc/kubernetes/pki/ca.key\n  content: |\n    {KEY}"


def b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def gz(data: str) -> bytes:
    return gzip.compress(data.encode(), mtime=0)


def wrap(text: str, width: int, indent: str = "") -> str:
    return "\n".join(indent + text[i:i + width] for i in range(0, len(text), width))


def der(tag: int, body: bytes) -> bytes:
    """One DER TLV (definite length, short or long form)."""
    size = len(body)
    length = bytes([size]) if size < 0x80 else bytes([0x80 | ((size.bit_length() + 7) // 8)]) + size.to_bytes(
        (size.bit_length() + 7) // 8, "big")
    return bytes([tag]) + length + body


SEQ, INT, OCTETS, OID, BITS = 0x30, 0x02, 0x04, 0x06, 0x03
EC_OID = der(OID, bytes.fromhex("2a8648ce3d0201"))
# Synthetic key structures (zero key material): PKCS#8 (RFC 5208), SEC1 EC (RFC 5915), PKCS#1 RSA (RFC 8017).
PKCS8 = der(SEQ, der(INT, b"\0") + der(SEQ, EC_OID) + der(OCTETS, bytes(40)))
SEC1 = der(SEQ, der(INT, b"\1") + der(OCTETS, bytes(32)))
PKCS1 = der(SEQ, der(INT, b"\0") + der(INT, b"\0" + bytes(128)) + der(INT, b"\1\0\1") + der(INT, bytes(128)))
# Public look-alikes: a SubjectPublicKeyInfo and a certificate (tbsCertificate first, not a version INTEGER).
SPKI = der(SEQ, der(SEQ, EC_OID) + der(BITS, bytes(66)))
CERT_DER = der(SEQ, der(SEQ, der(0xA0, der(INT, b"\2")) + der(INT, b"\1")) + der(SEQ, EC_OID) + der(BITS, bytes(64)))
AWS_FILE = "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = " \
           "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
MIME = ("Content-Type: multipart/mixed; boundary=\"b\"\nMIME-Version: 1.0\n\n--b\nContent-Type: text/cloud-config\n"
        f"Content-Transfer-Encoding: base64\n\n{wrap(b64(CLOUD_CONFIG), 76)}\n--b--\n")

ENCODINGS = [
    ("pem", KEY, "PEM private key"),
    ("base64", b64(KEY), "PEM private key"),
    ("base64 unpadded", b64(KEY).rstrip("="), "PEM private key"),
    ("base64 url-safe", base64.urlsafe_b64encode(f"{KEY}# ~~~???>>>\n".encode()).decode(), "PEM private key"),
    ("base64 wrapped at 76 (MIME, base64 CLI)", wrap(b64(KEY), 76), "PEM private key"),
    ("base64 in a YAML block scalar", "data:\n  tls.key: |\n" + wrap(b64(KEY), 64, "    ") + "\n", "PEM private key"),
    ("base64 of base64", b64(b64(KEY)), "PEM private key"),
    ("gzip+base64 user-data", b64(gz(CLOUD_CONFIG)), "PEM private key"),
    ("cloud-init write_files gz+b64", f"#cloud-config\nwrite_files:\n- encoding: gz+b64\n  content: {b64(gz(KEY))}\n",
     "PEM private key"),
    ("MIME multipart part in base64", MIME, "PEM private key"),
    ("JSON-escaped newlines", json.dumps({"key": KEY}), "PEM private key"),
    ("JSON unicode escapes", KEY.replace("-", "\\u002d").replace("K", "\\u004b"), "PEM private key"),
    ("hex", KEY.encode().hex(), "PEM private key"),
    ("percent-encoded", "https://x/?k=" + quote(KEY, safe=""), "PEM private key"),
    ("Secret manifest data", f"apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\ndata:\n  tls.key: {b64(KEY)}\n",
     "PEM private key"),
    ("Secret object as JSON", json.dumps({"kind": "Secret", "data": {"tls.key": b64(KEY)}}), "PEM private key"),
    ("client-key-data without its kubeconfig", f"client-key-data: {b64(KEY)}", "PEM private key"),
    ("PKCS#8 DER in base64", b64(PKCS8), "private key (DER)"),
    ("SEC1 EC DER in base64", b64(SEC1), "private key (DER)"),
    ("PKCS#1 RSA DER in base64, wrapped", wrap(b64(PKCS1), 64), "private key (DER)"),
    ("PuTTY key", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n", "PEM private key"),
    ("kubeconfig", KUBECONFIG, "kubeconfig credentials (client-key-data)"),
    ("kubeconfig base64", b64(KUBECONFIG), "kubeconfig credentials (client-key-data)"),
    ("kubeconfig gzip+base64 in base64", b64(b64(gz(KUBECONFIG))), "kubeconfig credentials (client-key-data)"),
    ("kubeconfig JSON-escaped", json.dumps(KUBECONFIG), "kubeconfig credentials (client-key-data)"),
    ("kubeconfig as JSON (kubectl config view -o json)",
     json.dumps({"kind": "Config", "users": [{"name": "a", "user": {"token": "abcdef0123456789"}}]}),
     "kubeconfig credentials (token)"),
    ("kubeconfig in flow YAML", "{kind: Config, users: [{name: a, user: {password: hunter2hunter2}}]}",
     "kubeconfig credentials (password)"),
    ("kubeconfig percent-encoded", quote(KUBECONFIG), "kubeconfig credentials (client-key-data)"),
    ("AWS credentials file in base64", b64(AWS_FILE), "AWS secret access key"),
    ("AWS key as JSON", json.dumps({"aws_secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}),
     "AWS secret access key"),
    ("join token inside gzip+base64", b64(gz("k8s join-cluster " + base64.b64encode(json.dumps(
        {"secret": "s" * 20, "join_addresses": ["10.0.0.1:6400"]}).encode()).decode())),
     "Canonical Kubernetes join token"),
]


@pytest.mark.parametrize(("text", "kind"), [(t, k) for _, t, k in ENCODINGS], ids=[i for i, _, _ in ENCODINGS])
def test_every_encoding_of_secret_material_is_found(text: str, kind: str) -> None:
    assert kind in findings(text)


def _random(size: int, seed: str) -> bytes:
    """Deterministic bytes that look random (no flaky tests)."""
    out = b""
    while len(out) < size:
        out += hashlib.sha256(f"{seed}{len(out)}".encode()).digest()
    return out[:size]


CA = "-----BEGIN CERTIFICATE-----\nMIIBkTCB+wIJAKHHIG\n-----END CERTIFICATE-----\n"
EXEC_KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    exec: {command: aws, args: [eks]}\n"
LOOK_ALIKES = [
    ("certificate", CA),
    ("CA bundle", CA * 3),
    ("CA bundle base64 (certificate-authority-data)", b64(CA * 2)),
    ("CA bundle gzip+base64", b64(gz(CA))),
    ("certificate DER base64", b64(CERT_DER)),
    ("public key PEM", "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n"),
    ("public key DER base64", b64(SPKI)),
    ("sha256 digest", "sha256:" + hashlib.sha256(b"x").hexdigest()),
    ("image pinned by digest", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0@sha256:" + hashlib.sha256(b"y").hexdigest()),
    ("random base64", b64(_random(300, "a"))),
    ("random base64 wrapped", wrap(b64(_random(3000, "b")), 76)),
    ("random hex", _random(64, "c").hex()),
    ("kubeconfig with an exec plugin, base64", b64(EXEC_KUBECONFIG)),
    ("kubeconfig with a masked token, JSON",
     json.dumps({"kind": "Config", "users": [{"user": {"token": "[secret]"}}]})),
    ("cloud-config gzip+base64", b64(gz("#cloud-config\npackages: [jq]\nruncmd:\n- [snap, install, k8s]\n"))),
    ("JSON-escaped certificate", json.dumps(CA)),
    ("kebab-case and paths",
     "/var/lib/kubelet/plugins_registry/gpu.nvidia.com-reg.sock kube-prometheus-stack-operator"),
]


@pytest.mark.parametrize("text", [t for _, t in LOOK_ALIKES], ids=[i for i, _ in LOOK_ALIKES])
def test_public_and_random_look_alikes_are_not_secrets(text: str) -> None:
    assert findings(text) == []


@pytest.mark.parametrize("text", [
    b64(gzip.compress(b"\0" * 100_000_000, mtime=0)),  # a gzip bomb
    b64(gzip.compress(b" " * 100_000_000, mtime=0)),  # a bomb that is text
    functools.reduce(lambda s, _: b64(s), range(30), KEY),  # nested far deeper than any consumer would
    "\\n" * 500_000,
    " \t\n" * 500_000,
    ("A" * 19 + "=") * 50_000,
    "ab " * 500_000,
    "kind: Config\n" + "token: x " * 150_000,
])
def test_decoding_stays_bounded_on_hostile_input(text: str) -> None:
    """Linear in the input: a quadratic pattern or an unbounded inflate would take minutes here."""
    assert cpu_seconds(lambda: findings(text)) < 20


def test_nesting_is_followed_as_deep_as_consumers_go_and_no_further() -> None:
    nested = functools.reduce(lambda s, _: b64(s), range(MAX_LAYERS), KEY)
    assert findings(nested) == ["PEM private key"]
    assert findings(b64(nested)) == []  # one layer past the bound


@pytest.mark.parametrize(("name", "credential"), [
    ("DB_PASSWORD", True), ("GF_SECURITY_ADMIN_PASSWORD", True), ("AWS_SECRET_ACCESS_KEY", True),
    ("GITHUB_TOKEN", True), ("API_KEY", True), ("TOKEN", True), ("REDIS_PASS", True), ("OAUTH_CLIENT_SECRET", True),
    ("adminPassword", True),  # one name rule in any spelling (issue 45): env names, values keys, flags alike
    ("GF_SECURITY_ADMIN_PASSWORD__FILE", False), ("TOKEN_TTL", False), ("SECRET_NAME", False), ("PWD", False),
    ("PASSWORD_PATH", False), ("existingSecret", False), ("KEY", False), ("BYPASS", False),
])
def test_credential_names(name: str, credential: bool) -> None:
    assert is_credential_key(name) is credential


@pytest.mark.parametrize("spelling", [
    {"env": [{"name": "DB_PASSWORD", "value": "hunter2"}]},
    {"env": {"DB_PASSWORD": "hunter2"}},
    {"data": {"AWS_SECRET_ACCESS_KEY": "abc"}},
    {"containers": [{"env": [{"value": "hunter2", "name": "API_TOKEN"}]}]},
    {"data": {"adminPassword": "hunter2"}},
])
def test_literal_credentials_under_credential_names_are_found(spelling: dict[str, object]) -> None:
    assert list(credential_literals(spelling))


@pytest.mark.parametrize("spelling", [
    {"env": [{"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]},
    {"env": [{"name": "DB_PASSWORD", "value": "$(FROM_SECRET)"}]},
    {"env": [{"name": "DB_PASSWORD", "value": ""}]},
    {"env": [{"name": "DB_HOST", "value": "db.example"}]},
    {"env": {"GF_SECURITY_ADMIN_PASSWORD__FILE": "/etc/secrets/admin"}},
])
def test_references_and_ordinary_variables_are_not_literal_credentials(spelling: dict[str, object]) -> None:
    assert list(credential_literals(spelling)) == []


def test_many_small_bombs_cost_in_proportion_to_their_size() -> None:
    """The inflate allowance grows with the input (INFLATE_RATIO), so a resource with a small bomb
    in each of many inputs costs what their size does, not a fixed allowance per input each."""
    bomb = b64(gzip.compress(b" " * 1_000_000, mtime=0))
    assert cpu_seconds(lambda: [findings(bomb) for _ in range(200)]) < 20

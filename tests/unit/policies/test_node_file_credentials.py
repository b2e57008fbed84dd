"""user-data-without-secrets: a credential written by value into any file a node writes (issue 27).

The same credential in every spelling a file can hold it and every way user-data can carry the
file must be caught; safe look-alikes (references, paths, durations, names of secrets) must pass,
and so must the project's own rendered user-data."""

from __future__ import annotations

import base64
import gzip
from pathlib import Path

import pytest

from components.policies.secrets import USER_DATA_WITHOUT_SECRETS
from components.settings.credentials import credential_assignments, is_credential_key, looks_like_credential
from tests.unit.helpers import cpu_seconds
from tests.unit.policies.helpers import violations

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "user-data"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
SECRET = "Zq8v2LmN4xR7tY"  # a made-up credential-shaped value


def b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def gz(text: str) -> bytes:
    return gzip.compress(text.encode(), mtime=0)


def cloud_config(path: str, content: str, encoding: str | None = None) -> str:
    enc = f"  encoding: {encoding}\n" if encoding else ""
    body = content if encoding else "|\n" + "".join(f"    {line}\n" for line in content.splitlines())
    return f"#cloud-config\nwrite_files:\n- path: {path}\n  permissions: '0600'\n{enc}  content: {body}\n"


# Each row: (what, the line as a file holds it).
LINES = [
    ("env file", f"DB_PASSWORD={SECRET}"),
    ("env file, quoted", f'DB_PASSWORD="{SECRET}"'),
    ("env file, single-quoted, with a comment", f"DB_PASSWORD='{SECRET}'  # rotated monthly"),
    ("shell export", f"export X_API_KEY={SECRET}"),
    ("YAML", f"dbPassword: {SECRET}"),
    ("YAML, nested", f"database:\n  password: {SECRET}\n  host: db"),
    ("JSON", f'{{"apiKey": "{SECRET}", "region": "eu-west-1"}}'),
    ("INI", f"[auth]\nsecretKey = {SECRET}"),
    ("TOML", f'api-key = "{SECRET}"'),
    ("kebab-case", f"registry-token: {SECRET}"),
    ("systemd Environment=", f'[Service]\nEnvironment="DB_PASSWORD={SECRET}"'),
    ("docker -e", f"docker run -e X_API_KEY={SECRET} registry/app:1.0"),
    ("a command-line flag", f"/usr/bin/app --db-password={SECRET} --port 8080"),
    ("a Kubernetes env entry in a manifest", f"env:\n- name: DB_PASSWORD\n  value: {SECRET}"),
    ("AWS style", f"aws_secret_access_key = {SECRET}Zq8v2LmN4xR7tY"),
    ("glued name (libpq)", f"PGPASSWORD={SECRET}"),
    ("a pwd suffix", f"MYSQL_PWD={SECRET}"),
    ("a client secret", f"OAUTH_CLIENT_SECRET={SECRET}"),
    ("a session token", f"sessionToken: {SECRET}"),
]


@pytest.mark.parametrize("line", [ln for _, ln in LINES], ids=[i for i, _ in LINES])
def test_every_spelling_of_a_credential_line_is_found(line: str) -> None:
    assert credential_assignments(line), line


def _carriers(line: str) -> list[tuple[str, str, dict[str, str]]]:
    """(how, resource type, props): the same line reaching a node in every way user-data carries a file."""
    plain = cloud_config("/etc/app/settings", line)
    mime = ("Content-Type: multipart/mixed; boundary=\"b\"\nMIME-Version: 1.0\n\n--b\n"
            "Content-Type: text/cloud-config\nContent-Transfer-Encoding: base64\n\n"
            f"{b64(plain)}\n--b--\n")
    return [
        ("write_files, plain, instance", INSTANCE, {"userData": plain}),
        ("write_files, launch template (base64)", LAUNCH_TEMPLATE, {"userData": b64(plain)}),
        ("write_files encoding b64", INSTANCE, {"userData": cloud_config("/opt/x/blob", b64(line), "b64")}),
        ("write_files encoding gz+b64", INSTANCE, {"userData": cloud_config("/x", b64(gz(line)), "gz+b64")}),
        ("gzipped user-data in a launch template", LAUNCH_TEMPLATE, {"userData": b64(gz(plain))}),
        ("userDataBase64", INSTANCE, {"userDataBase64": b64(plain)}),
        ("MIME part in base64", INSTANCE, {"userData": mime}),
        ("heredoc in a shell script", INSTANCE,
         {"userData": f"#!/bin/bash\ncat > /srv/any.name <<'EOF'\n{line}\nEOF\n"}),
        ("echo into /etc/environment", INSTANCE, {"userData": f"#!/bin/sh\necho '{line}' >> /etc/environment\n"}),
    ]


CARRIERS = [(f"{how} / {what}", rtype, props) for what, line in LINES[:4] + LINES[6:7] for how, rtype, props in
            _carriers(line)]


@pytest.mark.parametrize(("rtype", "props"), [(t, p) for _, t, p in CARRIERS], ids=[i for i, _, _ in CARRIERS])
def test_every_way_user_data_carries_the_file_is_caught(rtype: str, props: dict[str, str]) -> None:
    found = violations(USER_DATA_WITHOUT_SECRETS, rtype, props)
    assert any("as a literal value" in m for m in found), found
    assert not any(SECRET in m for m in found)  # messages name the variable, never the value


SAFE_LINES = [
    "KEY_FILE=/etc/x/key.pem",
    "TOKEN_TTL=15m",
    "TOKEN_TTL_NS=900000000000",
    "PUBLIC_KEY_PATH=/etc/ck8s-gpu/pub.pem",
    "KEYRING=/usr/share/keyrings/nvidia.gpg",
    "SECRET_NAME=ck8s-x-capi",
    "CK8S_AUTH_SECRET_ID=arn:aws:secretsmanager:eu-west-1:111122223333:secret:ck8s-x-capi",
    "PASSWORD_FILE=/run/ck8s-gpu/password",
    "GF_SECURITY_ADMIN_PASSWORD__FILE=/etc/secrets/admin",
    "DB_PASSWORD=",
    "DB_PASSWORD=$DB_PASSWORD",
    "DB_PASSWORD=${DB_PASSWORD:-}",
    'DB_PASSWORD="$(aws secretsmanager get-secret-value --secret-id x --query SecretString --output text)"',
    "DB_PASSWORD=`cat /run/x`",
    "DB_PASSWORD=<your-password>",
    "DB_PASSWORD={{ db_password }}",
    "DB_PASSWORD=[secret]",
    "DB_PASSWORD=********",
    "API_TOKEN=12345678",
    "API_TOKEN=true",
    "API_TOKEN=disabled",
    "TOKEN_REFRESH: 30s",
    "existingSecret: grafana-admin",
    "imagePullSecret: regcred-ecr",
    "secretKeyRef: {name: db, key: password}",
    "key: password",
    "token_endpoint: https://auth.example/token",
    "PWD=/home/ubuntu/work",
    "BYPASS=on-failure",
    "    token = (doc.get('metadata') or {}).get('token')",
    "token = self.token",
    'sys.exit("generate-join-token: unexpected answer")',
    "password: changeme",  # one character class: prose or a placeholder (docs/policies.md)
    "secret: kube-system",
]


@pytest.mark.parametrize("line", SAFE_LINES)
def test_safe_look_alikes_pass(line: str) -> None:
    assert credential_assignments(line) == []
    assert violations(USER_DATA_WITHOUT_SECRETS, INSTANCE, {"userData": cloud_config("/etc/x.env", line)}) == []


@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*/*.yaml")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_projects_own_user_data_writes_no_credential(path: Path) -> None:
    assert credential_assignments(path.read_text()) == []


@pytest.mark.parametrize(("name", "credential"), [
    ("DB_PASSWORD", True), ("dbPassword", True), ("api-key", True), ("X_API_KEY", True), ("secretKey", True),
    ("APIKey", True), ("apikey", True), ("db.password", True), ("PGPASSWORD", True), ("MYSQL_PWD", True),
    ("CLIENT_SECRET", True), ("credentials", True), ("passphrase", True),
    ("KEY_FILE", False), ("TOKEN_TTL", False), ("PUBLIC_KEY_PATH", False), ("KEYRING", False), ("SECRET_NAME", False),
    ("PASSWORD_FILE", False), ("PWD", False), ("key", False), ("cacheKey", False), ("publicKey", False),
    ("existingSecret", False), ("imagePullSecret", False), ("BYPASS", False), ("passwordPolicy", False),
])
def test_credential_key_names(name: str, credential: bool) -> None:
    assert is_credential_key(name) is credential


@pytest.mark.parametrize(("value", "credential"), [
    (SECRET, True), ("hunter22", True), ("'s3cr3t!!'", True), ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", True),
    ("https://user:pa55@host/", True), ("abcdefghijklmnopqrst", True),
    ("short1", True), ("abc12", False), ("", False), ("$X", False), ("/etc/x", False), ("512Mi", False),
    ("1h30m45s", False), ("0.75", False), ("https://example.com/x", False), ("see the vault", False),
    ("xxxxxxxxxx", False), ("changeme", False), ("self.token", False),
])
def test_credential_values(value: str, credential: bool) -> None:
    assert looks_like_credential(value) is credential


@pytest.mark.parametrize("text", [
    "-a:" * 100_000 + "X(",
    "x=" * 150_000,
    'Environment="x=' + "y=" * 100_000 + '"',
    'x:"' + " a: " * 100_000,
    "--a=" * 100_000,
    "- name: A\n  value: b\n" * 20_000,
])
def test_scanning_stays_linear_on_hostile_input(text: str) -> None:
    assert cpu_seconds(lambda: credential_assignments(text)) < 10

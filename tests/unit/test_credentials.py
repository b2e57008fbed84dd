"""Credentials written where they do not belong (issue 45): one recogniser
(components/settings/credentials.py) for the files a node writes, add-on values and the
Kubernetes objects `view` reads.

Each shape is written in the spellings real tools write it, in every context where it applies (a
file or script in EC2 user-data, an add-on values mapping, a ConfigMap or pod spec); the
look-alikes beside each must stay quiet in every context."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from typing import Any

import pytest

from components.policies.aws_nodes import INSTANCE
from components.policies.secrets import SECRETS_ONLY_IN_SECRET_OBJECTS, USER_DATA_WITHOUT_SECRETS
from components.settings import credentials
from components.settings.problems import field_path
from components.validate import parse
from tests.unit.helpers import cpu_seconds, settings_problems
from tests.unit.policies.helpers import res, stack_violations, violations

# Made-up credentials; no message may ever echo one.
PW = "Tr0ub4dor-x9Kq"
TOKEN = "9f8e7d6c5b4a3210fedcba98Zq"
B64 = base64.b64encode(f"robot:{PW}".encode()).decode()  # Docker's `auth`, HTTP Basic: base64(user:password)
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
VAULT = "hvs.CAESIJ0123456789abcdefABCDEFghij"
NLS = "ZXhhbXBsZS1ubHMtY2xpZW50LWNvbmZpZ3VyYXRpb24tdG9rZW4tMDEyMzQ1Njc4OQ"  # an NLS client configuration token
SECRETS = (PW, TOKEN, B64, AWS_SECRET, VAULT, NLS)
SHA = hashlib.sha256(b"x").hexdigest()
CERT = "-----BEGIN CERTIFICATE-----\nMIIBkTCB+wIJAKHHIG\n-----END CERTIFICATE-----\n"
# A crypt(3) SHA-512 hash (cloud-init docs, "Set Passwords" example): set as a hash, never a password.
HASH = ("$6$rounds=4096$5DJ8a9WMTEzIo5J4$Yms6imfeBvf3Yfu84mQBerh18l7OR1Wm1BJXZqFSpJ6BVas0AYJqIjP7czkOaAZHZi1kxQ5Y1IhgW"
        "N8K9NgxR1")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def sh(script: str) -> str:
    """A user-data shell script."""
    return f"#!/bin/bash\nset -euo pipefail\n{script}\n"


def file(path: str, content: str, encoding: str | None = None) -> str:
    """A cloud-config that writes `content` to `path` (cloud-init write_files)."""
    enc = f"  encoding: {encoding}\n" if encoding else ""
    body = content if encoding else "|\n" + "".join(f"    {line}\n" for line in content.splitlines())
    return f"#cloud-config\nwrite_files:\n- path: {path}\n  permissions: '0600'\n{enc}  content: {body}\n"


def docker_config(entry: dict[str, str]) -> str:
    return json.dumps({"auths": {"registry.example.com": entry}})


# --- the node's files: (shape, user-data) -------------------------------------------------------
NODE = [
    # format strings: the literal is printf's argument, the format names it
    ("printf into a header", sh(f"printf 'Authorization: Bearer %s\\n' {TOKEN} > /etc/app/auth.header")),
    ("printf into a flag", sh(f"ARGS=$(printf -- '--token=%s' {TOKEN})")),
    ("printf into an env line", sh(f"printf 'DB_PASSWORD=%s\\n' '{PW}' >> /etc/app/env")),
    # raw-file tokens: the whole file is the token, its name says so
    ("write_files token file", file("/etc/rancher/k3s/token", TOKEN)),
    ("write_files b64 .token file", file("/var/lib/app/node.token", b64(TOKEN), "b64")),
    ("echo into a token file", sh(f"echo '{TOKEN}' > /var/lib/rancher/k3s/server/token")),
    ("printf into an _token file", sh(f"printf '%s' {TOKEN} > /etc/app/api_token")),
    ("heredoc into a credentials file", sh(f"cat > /root/.config/app/credentials <<'EOF'\n{TOKEN}\nEOF")),
    ("heredoc with the file after the marker", sh(f"cat <<-EOF > /etc/app/registry.token\n\t{TOKEN}\n\tEOF")),
    ("write_files gz+b64 token file", file("/etc/app/token", base64.b64encode(gzip.compress(TOKEN.encode(), mtime=0))
                                           .decode(), "gz+b64")),
    ("tee here-string into a password file", sh(f"tee /etc/app/password <<< '{PW}'")),
    ("NVIDIA NLS client configuration token", file(
        "/etc/nvidia/ClientConfigToken/client_configuration_token_03-11-2025-10-12-44.tok", NLS)),
    # netrc(5): whitespace-separated tokens, on one line or many
    ("netrc on one line", file("/root/.netrc", f"machine registry.example.com login robot password {PW}")),
    ("netrc on lines", file("/root/.netrc", f"machine registry.example.com\n  login robot\n  password {PW}\n")),
    ("netrc default entry", file("/home/app/.netrc", f"default login anonymous password {PW}")),
    # container registry auth: Docker config.json, containerd hosts.toml and CRI config, npm
    ("Docker config auth", file("/root/.docker/config.json", docker_config({"auth": B64}))),
    ("Docker config identitytoken", file("/root/.docker/config.json", docker_config({"identitytoken": TOKEN}))),
    ("Docker config password", file("/root/.docker/config.json", docker_config({"username": "robot", "password": PW}))),
    ("containerd hosts.toml header", file(
        "/etc/containerd/certs.d/registry.example.com/hosts.toml",
        f'server = "https://registry.example.com"\n[host."https://registry.example.com".header]\n'
        f'  Authorization = ["Basic {B64}"]\n')),
    ("containerd CRI registry auth", file(
        "/etc/containerd/config.toml",
        f'[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example.com".auth]\n  auth = "{B64}"\n')),
    ("containerd CRI identitytoken", file(
        "/etc/containerd/config.toml",
        f'[plugins."io.containerd.grpc.v1.cri".registry.configs."r.example.com".auth]\n  identitytoken = "{TOKEN}"\n')),
    ("npmrc _auth", file("/root/.npmrc", f"_auth={B64}\nalways-auth=true")),
    # basic auth in URLs (RFC 3986 userinfo)
    ("git clone", sh(f"git clone https://oauth2:{TOKEN}@gitlab.example.com/group/repo.git /opt/repo")),
    ("pip --index-url", sh(f"pip install --index-url https://robot:{PW}@pypi.example.com/simple app")),
    ("git-credentials file", file("/root/.git-credentials", f"https://robot:{PW}@git.example.com")),
    # headers and curl's user
    ("curl Basic header", sh(f"curl -fsS -H 'Authorization: Basic {B64}' https://api.example.com")),
    ("curl API key header", sh(f'curl -H "X-Api-Key: {TOKEN}" https://api.example.com')),
    ("curl PRIVATE-TOKEN header", sh(f"curl --header 'PRIVATE-TOKEN: glpat-{TOKEN}' https://gitlab.example.com/api")),
    ("wget Token header", sh(f"wget --header='Authorization: Token {TOKEN}' https://api.example.com")),
    ("curl -u", sh(f"curl -u robot:{PW} https://api.example.com")),
    ("curl --user=", sh(f"curl --user=robot:{PW} https://api.example.com")),
    # command-line flags
    ("flag and value apart", sh(f"/usr/bin/app --db-password {PW} --port 8080")),
    ("flag with a quoted value", sh(f"/usr/bin/app --api-key='{TOKEN}'")),
    ("mysql -p glued", sh(f"mysql -uroot -p{PW} app < /srv/schema.sql")),
    ("kubectl --from-literal", sh(f"kubectl create secret generic db --from-literal=password={PW}")),
    # cloud and registry CLIs
    ("aws configure set secret key", sh(f"aws configure set aws_secret_access_key {AWS_SECRET}")),
    ("aws configure set session token", sh(f"aws configure set default.aws_session_token {TOKEN}")),
    ("az login -p", sh(f"az login --service-principal -u 0f1e2d3c-app -p {PW} --tenant example.onmicrosoft.com")),
    ("docker login -p", sh(f"docker login -u robot -p {PW} registry.example.com")),
    ("helm registry login --password", sh(
        f"helm registry login registry.example.com --username robot --password {PW}")),
    ("oras login -p", sh(f"oras login -u robot -p {PW} registry.example.com")),
    ("a literal piped to --password-stdin", sh(f"echo '{PW}' | docker login -u robot --password-stdin r.example.com")),
    ("a here-string into --password-stdin", sh(f"docker login -u robot --password-stdin r.example.com <<< '{PW}'")),
    ("printf piped to --password-stdin", sh(f"printf '%s' '{PW}' | docker login -u robot --password-stdin r.example")),
    ("printf's format piped to --password-stdin", sh(f"printf '{PW}' | docker login -u u --password-stdin registry")),
    ("echo piped to helm registry login", sh(f"echo {PW} | helm registry login r.example -u robot --password-stdin")),
    ("echo -n piped to sudo nerdctl login", sh(f"echo -n '{PW}' | sudo nerdctl login -u robot --password-stdin r")),
    ("echo with a redirection piped to a login", sh(f"echo {PW} 2>&1 | buildah login --password-stdin r.example")),
    ("a here-string into oras login", sh(f"oras login -u robot --password-stdin r.example.com <<< '{PW}'")),
    ("a heredoc into --password-stdin", sh(f"docker login -u robot --password-stdin r.example.com <<'EOF'\n{PW}\nEOF")),
    ("runcmd echo piped to --password-stdin", f"#cloud-config\nruncmd:\n- echo '{PW}' | docker login -u robot "
                                              "--password-stdin r.example.com\n"),
    ("su -c printf into --password-stdin", sh(f"su - app -c \"printf '%s' '{PW}' | podman login --password-stdin\"")),
    # chpasswd(8) reads `user:password` lines on stdin (`-e`: hashes)
    ("echo piped to chpasswd", sh(f"echo 'ubuntu:{PW}' | chpasswd")),
    ("a here-string into sudo chpasswd", sh(f"sudo chpasswd <<< 'root:{PW}'")),
    ("a heredoc into /usr/sbin/chpasswd", sh(f"/usr/sbin/chpasswd <<EOF\nroot:{PW}\nubuntu:{PW}\nEOF")),
    ("runcmd sh -c echo piped to chpasswd", f"#cloud-config\nruncmd:\n- [sh, -c, \"echo 'root:{PW}' | chpasswd\"]\n"),
    # cloud-init set passwords (cloud-init docs, "Set Passwords"; cc_set_passwords.py)
    ("cloud-config password", f"#cloud-config\npassword: {PW}\nchpasswd: {{expire: false}}\nssh_pwauth: true\n"),
    ("a cloud-config password only its parse reads", "#cloud-config\npassword: opensesame\n"),  # one class: not in text
    ("chpasswd list, a block string", f"#cloud-config\nchpasswd:\n  expire: false\n  list: |\n    root:{PW}\n"
                                      "    ubuntu:RANDOM\n"),
    ("chpasswd list, the old flow string", '#cloud-config\nchpasswd: {list: "root:secret\\nubuntu:pw"}\n'),
    ("chpasswd list, a YAML list", f"#cloud-config\nchpasswd:\n  list:\n  - ubuntu:R\n  - root:{PW}\n"),
    ("chpasswd users, type text",
     f"#cloud-config\nchpasswd:\n  users:\n  - {{name: root, password: {PW}, type: text}}\n"),
    ("chpasswd users, no type (a hash by default) holding text",
     f"#cloud-config\nchpasswd:\n  users:\n  - name: root\n    password: {PW}\n"),
    ("chpasswd users beside cloud-init users", f"#cloud-config\nusers:\n- default\nchpasswd:\n  users:\n"
                                               f"  - {{name: ubuntu, password: {PW}, type: text}}\n"),
    # PostgreSQL password files (libpq docs, "The Password File") and PGPASSWORD
    ("write_files .pgpass", file("/root/.pgpass", f"db.example.com:5432:app:app:{PW}\n")),
    ("echo into ~/.pgpass", sh(f"echo 'db.example.com:5432:*:app:{PW}' > ~/.pgpass && chmod 0600 ~/.pgpass")),
    ("heredoc into .pgpass with a comment and wildcards", sh(
        f"cat > /home/app/.pgpass <<'EOF'\n# hostname:port:database:username:password\n*:*:*:app:{PW}\nEOF")),
    ("a .pgpass line with escapes", file("/var/lib/app/.pgpass", f"fd00\\:\\:5:5432:app:app:{PW}\\:x\n")),
    ("the file PGPASSFILE names", sh(f"export PGPASSFILE=/etc/app/db-access\n"
                                     f"printf '%s\\n' 'db:5432:app:app:{PW}' > /etc/app/db-access")),
    ("the file a systemd drop-in's PGPASSFILE names", "#cloud-config\nwrite_files:\n"
     "- path: /etc/systemd/system/app.service.d/pg.conf\n  content: |\n    [Service]\n"
     "    Environment=PGPASSFILE=/etc/app/db-access\n"
     f"- path: /etc/app/db-access\n  permissions: '0600'\n  content: |\n    db:5432:app:app:{PW}\n"),
    ("PGPASSWORD before psql", sh(f"PGPASSWORD='{PW}' psql -h db -U app -c 'select 1'")),
    ("npm config set _authToken", sh(f"npm config set //registry.npmjs.org/:_authToken {TOKEN}")),
    ("vault login", sh(f"vault login {VAULT}")),
    # DSNs
    ("postgres URL", file("/etc/app/env", f"DATABASE_URL=postgres://app:{PW}@db.example.com:5432/app")),
    ("mysql URL", file("/etc/app/env", f"DATABASE_URL=mysql://app:{PW}@db:3306/app")),
    ("mongodb+srv URL", file("/etc/app/env", f"MONGO_URL=mongodb+srv://app:{PW}@cluster0.example.mongodb.net/db")),
    ("redis URL, password only", file("/etc/app/env", f"REDIS_URL=redis://:{PW}@redis:6379/0")),
    ("JDBC query parameters", file("/etc/app/application.properties",
                                   f"spring.datasource.url=jdbc:postgresql://db:5432/app?user=app&password={PW}")),
    ("ODBC Pwd", file("/etc/app/env", f'CONN="Driver={{ODBC Driver 18 for SQL Server}};Server=db;Uid=app;Pwd={PW};"')),
    ("Go MySQL DSN", file("/etc/app/env", f"DSN=app:{PW}@tcp(db:3306)/app")),
    ("libpq keywords", file("/etc/app/env", f"PGCONN='host=db user=app password={PW} dbname=app'")),
    # passphrases and license keys
    ("gpg --passphrase", sh(f"gpg --batch --passphrase {PW} --decrypt /srv/x.gpg")),
    ("openssl pass:", sh(f"openssl pkcs12 -export -in c.pem -inkey k.pem -out c.p12 -passout pass:{PW}")),
    ("ssh-keygen -N", sh(f"ssh-keygen -t ed25519 -N '{PW}' -f /root/.ssh/id_ed25519")),
    ("sshpass -p", sh(f"sshpass -p '{PW}' ssh ops@bastion uptime")),
    ("license key variable", file("/etc/app/env", f"LICENSE_KEY={TOKEN}")),
    ("passphrase in YAML", file("/etc/app/config.yaml", f"signing:\n  passphrase: {PW}")),
]


@pytest.mark.parametrize("user_data", [u for _, u in NODE], ids=[i for i, _ in NODE])
def test_a_credential_a_node_writes_is_found_in_every_shape(user_data: str) -> None:
    found = violations(USER_DATA_WITHOUT_SECRETS, INSTANCE, {"userData": user_data})
    assert found, user_data
    assert not any(s in m for m in found for s in SECRETS), found  # kinds and names, never the value


# --- add-on values: (values, the path refused) ---------------------------------------------------
VALUES = [
    ("printf into a header", {"initScript": f"printf 'Authorization: Bearer %s\\n' {TOKEN}"}, ("initScript",)),
    ("a file as path and content", {"extraFiles": [{"path": "/etc/app/node.token", "content": TOKEN}]},
     ("extraFiles", 0, "content")),
    ("an NLS token file in a ConfigMap's data", {"licensing": {"data": {"client_configuration_token.tok": NLS}}},
     ("licensing", "data", "client_configuration_token.tok")),
    ("netrc", {"netrc": f"machine registry.example.com login robot password {PW}"}, ("netrc",)),
    ("Docker config identitytoken", {"pullSecret": {"dockerconfigjson": docker_config({"identitytoken": TOKEN})}},
     ("pullSecret", "dockerconfigjson")),
    ("registry auth", {"registry": {"auth": B64}}, ("registry", "auth")),
    ("registry identitytoken", {"registry": {"identitytoken": TOKEN}}, ("registry", "identitytoken")),
    ("containerd hosts.toml", {"containerd": {"hostsToml": f'[host."https://r.example.com".header]\n'
                                                          f'  Authorization = ["Basic {B64}"]\n'}},
     ("containerd", "hostsToml")),
    ("Authorization header value", {"webhook": {"headers": {"Authorization": f"Bearer {TOKEN}"}}},
     ("webhook", "headers", "Authorization")),
    ("curl header in a probe", {"probe": {"command": ["sh", "-c", f"curl -H 'X-Api-Key: {TOKEN}' http://localhost"]}},
     ("probe", "command", 2)),
    ("flag and value as list items", {"extraArgs": ["--db-password", PW]}, ("extraArgs", 1)),
    ("flag=value as a list item", {"extraArgs": [f"--password={PW}"]}, ("extraArgs", 0)),
    ("docker login in a script", {"init": {"script": f"docker login -u robot -p {PW} registry.example.com"}},
     ("init", "script")),
    ("aws configure set in a script", {"init": {"script": f"aws configure set aws_secret_access_key {AWS_SECRET}"}},
     ("init", "script")),
    ("redis URL, password only", {"cache": {"url": f"redis://:{PW}@redis:6379/0"}}, ("cache", "url")),
    ("JDBC URL", {"database": {"jdbcUrl": f"jdbc:postgresql://db/app?user=app&password={PW}"}},
     ("database", "jdbcUrl")),
    ("ODBC connection string", {"database": {"odbc": f"Driver={{ODBC}};Server=db;Uid=app;Pwd={PW};"}},
     ("database", "odbc")),
    ("Go MySQL DSN", {"database": {"dsn": f"app:{PW}@tcp(db:3306)/app"}}, ("database", "dsn")),
    ("passphrase", {"gpg": {"passphrase": PW}}, ("gpg", "passphrase")),
    ("license key", {"licensing": {"licenseKey": TOKEN}}, ("licensing", "licenseKey")),
    ("env pair in values", {"extraEnv": [{"name": "DB_PASSWORD", "value": PW}]}, ("extraEnv", 0, "value")),
    ("AWS secret access key by value", {"s3": {"config": f"[default]\naws_secret_access_key = {AWS_SECRET}"}},
     ("s3", "config")),
    ("printf piped to --password-stdin", {"init": {
        "script": f"printf '%s' '{PW}' | docker login -u robot --password-stdin r.example.com"}}, ("init", "script")),
    ("echo piped to chpasswd", {"init": {"script": f"echo 'root:{PW}' | chpasswd"}}, ("init", "script")),
    ("a .pgpass as path and content",
     {"extraFiles": [{"path": "/home/app/.pgpass", "content": f"db:5432:app:app:{PW}"}]}, ("extraFiles", 0, "content")),
    ("a .pgpass in a ConfigMap's data", {"pgpass": {"data": {".pgpass": f"*:*:*:app:{PW}\n"}}},
     ("pgpass", "data", ".pgpass")),
    ("PGPASSWORD env pair", {"extraEnv": [{"name": "PGPASSWORD", "value": PW}]}, ("extraEnv", 0, "value")),
    ("chpasswd list in a structured cloud-config", {"vm": {"cloudConfig": {"chpasswd": {"list": f"root:{PW}\nu:R"}}}},
     ("vm", "cloudConfig", "chpasswd", "list")),
    ("chpasswd users in a structured cloud-config",
     {"vm": {"cloudConfig": {"chpasswd": {"users": [{"name": "root", "password": PW, "type": "text"}]}}}},
     ("vm", "cloudConfig", "chpasswd", "users", 0, "password")),
    ("a cloud-config password in user-data text", {"vm": {"userData": f"#cloud-config\npassword: {PW}\n"}},
     ("vm", "userData")),
]


def _kind(values: dict[str, Any]) -> dict[str, Any]:
    return {"platform": "kind", "gpuStack": {"addons": {"gpuOperator": {"values": values}}}}


@pytest.mark.parametrize(("values", "path"), [(v, p) for _, v, p in VALUES], ids=[i for i, _, _ in VALUES])
def test_a_credential_in_add_on_values_is_refused_in_every_shape(values: dict[str, Any], path: tuple[Any, ...]) -> None:
    found = settings_problems(_kind(values))
    where = field_path(("gpuStack", "addons", "gpuOperator", "values", *path))
    assert list(found) == [where], found
    assert "looks like a credential" in found[where]
    assert not any(s in found[where] for s in SECRETS)


# --- Kubernetes objects `view` reads ------------------------------------------------------------

def _configmap(data: dict[str, str]) -> Any:
    return res("kubernetes:core/v1:ConfigMap", {"metadata": {"name": "cm"}, "data": data}, name="cm")


def _deployment(container: dict[str, Any]) -> Any:
    spec = {"template": {"spec": {"containers": [{"name": "app", "image": "r.example.com/app:1", **container}]}}}
    return res("kubernetes:apps/v1:Deployment", {"metadata": {"name": "d"}, "spec": spec}, name="d")


K8S = [
    ("netrc in a ConfigMap", _configmap({".netrc": f"machine r.example.com login robot password {PW}\n"})),
    ("NLS token file in a ConfigMap", _configmap({"client_configuration_token.tok": NLS})),
    ("Docker config in a ConfigMap", _configmap({"config.json": docker_config({"auth": B64})})),
    ("env file in a ConfigMap", _configmap({"app.env": f"DATABASE_URL=postgres://app:{PW}@db/app\n"})),
    ("flag and value as args", _deployment({"args": ["--db-password", PW]})),
    ("docker login in a command", _deployment({"command": ["sh", "-c", f"docker login -u robot -p {PW} r"]})),
    ("camelCase credential key in a ConfigMap", _configmap({"licenseKey": TOKEN})),
    (".pgpass in a ConfigMap", _configmap({".pgpass": f"db:5432:*:app:{PW}\n"})),
    ("printf piped to --password-stdin in a command", _deployment(
        {"command": ["sh", "-c", f"printf '%s' '{PW}' | docker login -u robot --password-stdin r"]})),
    ("chpasswd in a container's args", _deployment({"args": ["sh", "-c", f"echo 'root:{PW}' | chpasswd"]})),
    ("a cloud-config chpasswd list in a ConfigMap (VM user-data)",
     _configmap({"userdata": f"#cloud-config\nchpasswd:\n  list: |\n    root:{PW}\n"})),
]


@pytest.mark.parametrize("resource", [r for _, r in K8S], ids=[i for i, _ in K8S])
def test_a_credential_in_a_viewable_object_is_found_in_every_shape(resource: Any) -> None:
    found = stack_violations(SECRETS_ONLY_IN_SECRET_OBJECTS, [resource])
    assert found, resource
    assert not any(s in m for m, _ in found for s in SECRETS)


# --- look-alikes that must stay quiet, in every context ----------------------------------------
# (what, a line of a file or script): each is tried as a file a node writes, as a script, as an
# add-on value and as a ConfigMap's file.
QUIET = [
    ("shell variable", "DB_PASSWORD=${TOKEN}"),
    ("command substitution", "DB_PASSWORD=$(cat /run/secrets/db)"),
    ("Helm template", 'password: "{{ .Values.password }}"'),
    ("mustache format token", 'token: "{{token}}"'),
    ("printf verb", "token: '%s'"),
    ("angle-bracket placeholder", "password: <password>"),
    ("changeme (documented: a public placeholder)", "password: changeme"),
    ("REDACTED", "password: REDACTED"),
    ("mask", "password: '***'"),
    ("existingSecret", "existingSecret: db-admin"),
    ("passwordSecretRef", "passwordSecretRef: db-admin"),
    ("passwordSecret names a Secret", "passwordSecret: db-credentials"),
    ("secretKeyRef", "secretKeyRef: {name: db, key: password}"),
    ("password file flag", "/usr/bin/app --password-file=/run/secrets/db"),
    ("tokenFile path", "tokenFile: /var/run/secrets/tokens/app"),
    ("--password-stdin fed from a variable", 'echo "$PW" | docker login -u robot --password-stdin r.example.com'),
    ("--password-stdin from a here-string variable", 'docker login --password-stdin r.example.com <<< "$PW"'),
    ("URL without user info", "REGISTRY=https://registry.example.com/v2"),
    ("URL with a user and no password", "MIRROR=https://robot@registry.example.com/v2"),
    ("DSN with a user and no password", "DATABASE_URL=postgres://app@db:5432/app"),
    ("redis URL without a password", "REDIS_URL=redis://redis:6379/0"),
    ("git clone without credentials", "git clone https://github.com/NVIDIA/k8s-device-plugin.git"),
    ("URL with a password variable", "URL=https://robot:${PASSWORD}@registry.example.com/v2"),
    ("JDBC without a password", "JDBC_URL=jdbc:postgresql://db:5432/app?user=app&ssl=true"),
    ("boolean", "token: true"),
    ("number under a TTL", "TOKEN_TTL=900"),
    ("duration", "token_expiry: 24h"),
    ("TTL key", "tokenTTL: 3600"),
    ("SSH public key", "ssh_authorized_keys:\n- ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx0123456789abcdefghijklmno ops"),
    ("PUBLIC_KEY", "PUBLIC_KEY=MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE"),
    ("publicKey", "publicKey: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx0123456789abcdefghijklmnopq"),
    ("certificate", CERT),
    ("image digest", f"image: nvcr.io/nvidia/k8s-device-plugin@sha256:{SHA}"),
    ("CA cert hash", f"caCertHash: sha256:{SHA}"),
    ("Helm checksum annotation", f"checksum/secret: {SHA}"),
    ("kubeadm join with placeholders", "kubeadm join 10.0.0.1:6443 --token <token> --discovery-token-ca-cert-hash "
                                       "sha256:<hash>"),
    ("bootstrap token docs", "# Bootstrap tokens take the form [a-z0-9]{6}.[a-z0-9]{16} and live in Secrets of type "
                             "bootstrap.kubernetes.io/token"),
    ("bootstrap token Secret type", "type: bootstrap.kubernetes.io/token"),
    ("cacheKey", "cacheKey: v1-deps-0a1b2c3d4e"),
    ("gcloud key file", "gcloud auth activate-service-account --key-file=/etc/gcp/sa.json"),
    ("printf with a variable", "printf 'Authorization: Bearer %s\\n' \"$TOKEN\" > /etc/app/auth.header"),
    ("bearer variable", 'curl -H "Authorization: Bearer $TOKEN" https://api.example.com'),
    ("API key variable", 'curl -H "X-Api-Key: ${API_KEY}" https://api.example.com'),
    ("Basic placeholder", "Authorization: Basic <base64>"),
    ("aws configure set region", "aws configure set region eu-west-1"),
    ("aws configure set from a variable", 'aws configure set aws_secret_access_key "$AWS_SECRET"'),
    ("docker login from a variable", 'docker login -u robot -p "$REGISTRY_PASSWORD" registry.example.com'),
    ("docker run user and ports", "docker run -u 1000:1000 -p 8080:80 app"),
    ("mkdir -p, ssh -p", "mkdir -p /etc/app && ssh -p 2222 ops@bastion"),
    ("mysql -p prompts", "mysql -u root -p app"),
    ("openssl env: and file:", "openssl pkcs12 -export -passout env:P12_PASS -passin file:/run/x -out c.p12"),
    ("ssh-keygen without a passphrase", "ssh-keygen -t ed25519 -N '' -f /root/.ssh/id_ed25519"),
    ("license name", "license: Apache-2.0"),
    ("license file", "licenseFile: /etc/nvidia/ClientConfigToken/"),
    ("prose", "# the password manager for machine learning teams"),
    ("netrc from a variable", "machine registry.example.com login robot password $NETRC_PASSWORD"),
    ("Docker config with a credential helper", '{"auths": {"r.example.com": {}}, "credsStore": "ecr-login"}'),
    ("Docker config with an empty auth", '{"auths": {"r.example.com": {"auth": ""}}}'),
    ("containerd hosts.toml without a header", 'server = "https://registry-1.docker.io"\n'
                                               '[host."https://mirror.example.com"]\n  capabilities = ["pull"]'),
    ("token file from a variable", 'echo "$TOKEN" > /etc/app/token'),
    ("vault login by method", "vault login -method=aws role=app"),
    ("npm config set registry", "npm config set registry https://registry.npmjs.org/"),
    ("request id header", "X-Request-Id: 0f1e2d3c4b5a69788796a5b4"),
    ("auth mode word", "auth: enabled"),
    ("Authorization with a scheme only", "Authorization: Bearer"),
    # what a login or chpasswd reads on stdin: a command, a file or a variable
    ("--password-stdin fed $TOKEN", 'echo "$TOKEN" | docker login --password-stdin'),
    ("--password-stdin from aws ecr get-login-password", "aws ecr get-login-password --region eu-west-1 | docker login "
                                                         "--username AWS --password-stdin 1.dkr.ecr.amazonaws.com"),
    ("--password-stdin from cat of a file", "cat /run/secrets/registry | docker login -u robot --password-stdin r"),
    ("--password-stdin redirected from a file", "docker login -u robot --password-stdin r < /run/secrets/registry"),
    ("printf of a variable into --password-stdin", 'printf "%s" "$REGISTRY_PASSWORD" | oras login --password-stdin r'),
    ("a heredoc of a variable into --password-stdin", "docker login --password-stdin r <<EOF\n$REGISTRY_PASSWORD\nEOF"),
    ("chpasswd fed a variable", 'echo "root:$ROOT_PASSWORD" | chpasswd'),
    ("chpasswd -e fed a hash", "echo 'root:abJnggxhB/yWI' | chpasswd -e"),
    ("chpasswd --encrypted fed a SHA-512 hash", f"chpasswd --encrypted <<< 'root:{HASH}'"),
    ("chpasswd from a file", "chpasswd < /run/secrets/passwords"),
    ("chpasswd as another command's argument", "echo 'status:a1b2c3d4e5' | logger -t chpasswd"),
    # password files: a reference, a comment, `*` (one character, read as a mask), another file's colons
    (".pgpass from a variable", 'echo "db.example.com:5432:app:app:$PGPASSWORD" > ~/.pgpass'),
    (".pgpass with a comment only", "echo '# hostname:port:database:username:password' > ~/.pgpass"),
    (".pgpass with an empty or one-character password", "printf '*:*:*:app:\\n*:*:*:ops:*\\n' > /root/.pgpass"),
    ("five colon fields in another file", "echo 'db.example.com:5432:app:app:Tr0ub4dor-x9Kq' > /etc/app/fields"),
    ("PGPASSFILE names a Secret's mount", "PGPASSFILE=/run/secrets/pgpass"),
    ("PGPASSWORD from a variable", 'PGPASSWORD="$DB_PASSWORD" psql -h db -U app'),
]
QUIET_FILES = [
    ("an encoded credentials file without a credential",
     file("/root/.aws/credentials", b64("[default]\ncredential_process = /usr/local/bin/fetch-credentials\n"), "b64")),
    ("a token file with a placeholder, gzipped", file("/etc/app/token", base64.b64encode(
        gzip.compress(b"${TOKEN}", mtime=0)).decode(), "gz+b64")),
    # cloud-init generates RANDOM passwords and sets hashes as hashes; its `users:` is no kubeconfig
    ("cloud-init RANDOM and hashed passwords", f"#cloud-config\nusers:\n- default\npassword: RANDOM\nchpasswd:\n"
     f"  expire: false\n  users:\n  - {{name: root, type: RANDOM}}\n  - name: ops\n    password: {HASH}\n"
     "    type: hash\n"),
    ("chpasswd list of RANDOM, R and a hash", f"#cloud-config\nchpasswd:\n  list: |\n    root:RANDOM\n    ubuntu:R\n"
                                              f"    ops:{HASH}\n"),
    ("a hashed cloud-config password", f"#cloud-config\npassword: {HASH}\nssh_pwauth: false\n"),
    ("a .pgpass of comments and wildcards", file("/root/.pgpass", "# hostname:port:database:username:password\n"
                                                                 "*:*:*:app:\n")),
]


@pytest.mark.parametrize("line", [t for _, t in QUIET], ids=[i for i, _ in QUIET])
def test_look_alikes_stay_quiet_in_every_context(line: str) -> None:
    for user_data in (file("/etc/app/settings", line), sh(line)):
        assert violations(USER_DATA_WITHOUT_SECRETS, INSTANCE, {"userData": user_data}) == [], user_data
    assert parse(_kind({"extraConfig": line})).platform == "kind"
    assert stack_violations(SECRETS_ONLY_IN_SECRET_OBJECTS, [_configmap({"settings": line})]) == []


@pytest.mark.parametrize("user_data", [u for _, u in QUIET_FILES], ids=[i for i, _ in QUIET_FILES])
def test_encoded_files_are_judged_by_what_is_written(user_data: str) -> None:
    assert violations(USER_DATA_WITHOUT_SECRETS, INSTANCE, {"userData": user_data}) == []


VALUES_QUIET = [
    {"password": "${TOKEN}"}, {"password": "{{ .Values.password }}"}, {"token": "{{token}}"}, {"password": "%s"},
    {"password": "<password>"}, {"password": "changeme"}, {"password": "REDACTED"}, {"password": "***"},
    {"auth": {"existingSecret": "db-admin", "passwordSecretRef": {"name": "db", "key": "password"}}},
    {"passwordSecret": "db-credentials"},
    {"env": [{"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}}]},
    {"extraArgs": ["--password-file=/run/secrets/db", "--password-stdin"]},
    {"extraArgs": ["--token", "$(TOKEN)"]},
    {"tokenFile": "/var/run/secrets/tokens/app"},
    {"mirror": {"url": "https://robot@registry.example.com"}}, {"database": {"url": "postgres://app@db/app"}},
    {"enabled": True, "tokenTTL": 3600, "token_expiry": "24h"},
    {"publicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx0123456789abcdefghijklmnopq"},
    {"PUBLIC_KEY": "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE"},
    {"podAnnotations": {"checksum/secret": SHA}}, {"image": {"digest": f"sha256:{SHA}"}},
    {"cacheKey": "v1-deps-0a1b2c3d4e"}, {"license": "Apache-2.0"}, {"registry": {"auth": "enabled"}},
    {"auth": {"token": "disabled", "password": "auto"}},
    {"webhook": {"headers": {"Authorization": "Bearer $(TOKEN)"}}},
    {"extraFiles": [{"path": "/etc/app/token", "content": "${TOKEN}"}]},
    {"extraFiles": [{"path": "/etc/app/settings", "content": TOKEN}]},  # a token-shaped line, not a token file
    # A credentials-named file, encoded, that holds no credential: judged by what cloud-init writes.
    {"files": [{"path": "/root/.aws/credentials", "encoding": "b64",
                "content": b64("[default]\ncredential_process = /usr/local/bin/fetch-credentials\n")}]},
    {"cloudConfig": {"password": "RANDOM", "chpasswd": {"list": ["ubuntu:R", f"ops:{HASH}"], "users": [
        {"name": "root", "type": "RANDOM"}, {"name": "ops", "password": HASH, "type": "hash"},
        {"name": "app", "password": "Ignored-1x", "type": "RANDOM"}]}}},  # RANDOM ignores a password
    {"pgpass": {"data": {".pgpass": "# hostname:port:database:username:password\n"}}},
    {"extraEnv": [{"name": "PGPASSFILE", "value": "/run/secrets/pgpass"}]},
]


@pytest.mark.parametrize("values", VALUES_QUIET, ids=[json.dumps(v)[:60] for v in VALUES_QUIET])
def test_look_alike_add_on_values_are_accepted(values: dict[str, Any]) -> None:
    assert parse(_kind(values)).platform == "kind"


# --- the recogniser's own rules, row by row ------------------------------------------------------

@pytest.mark.parametrize(("name", "credential"), [
    ("passphrase", True), ("GPG_PASSPHRASE", True), ("licenseKey", True), ("LICENSE_KEY", True),
    ("identitytoken", True), ("_authToken", True), ("X-Api-Key", True), ("PRIVATE-TOKEN", True),
    ("aws_session_token", True), ("tokenSecret", True), ("clientSecret", True),
    ("passwordSecret", False), ("passwordSecretRef", False), ("credentialsSecret", False), ("checksum/secret", False),
    ("token_expiry", False), ("tokenTTL", False), ("PUBLIC_KEY", False), ("cacheKey", False), ("auth", False),
    ("license", False), ("password-stdin", False), ("password-file", False), ("key-file", False),
])
def test_credential_names(name: str, credential: bool) -> None:
    assert credentials.is_credential_key(name) is credential


@pytest.mark.parametrize(("path", "credential"), [
    ("/etc/rancher/k3s/token", True), ("/var/lib/app/node.token", True), ("/etc/app/api_token", True),
    ("/root/.config/app/credentials", True), ("/etc/app/password.txt", True),
    ("/etc/nvidia/ClientConfigToken/client_configuration_token_03-11-2025-10-12-44.tok", True),
    ("/etc/nvidia/ClientConfigToken/anything.tok", True), ("client_configuration_token.tok", True),
    ("/etc/app/settings", False), ("/etc/ck8s-gpu/node.env", False), ("/etc/kubernetes/pki/ca.crt", False),
    ("/etc/app/token_ttl", False), ("/run/secrets/db", False), ("", False),
])
def test_credential_file_names(path: str, credential: bool) -> None:
    assert credentials.is_credential_file(path) is credential


@pytest.mark.parametrize(("value", "placeholder"), [
    ("${TOKEN}", True), ("$(cat /run/x)", True), ("{{ .Values.password }}", True), ("{{token}}", True),
    ("%s", True), ("%(token)s", True), ("{token}", True), ("{self.token}", True), ("<password>", True),
    ("changeme", True), ("REDACTED", True), ("***", True), ("[secret]", True), ("xxxxxxxx", True), ("", True),
    ("password", True), ("'none'", True),
    (PW, False), ("hunter2", False), (TOKEN, False),
])
def test_placeholders(value: str, placeholder: bool) -> None:
    assert credentials.is_placeholder(value) is placeholder


@pytest.mark.parametrize(("value", "credential"), [
    (PW, True), (12345678, True), ("admin", True),
    (True, False), (None, False), ("true", False), ("enabled", False), (f"sha256:{SHA}", False), ("${X}", False),
])
def test_credential_values_under_a_parsed_name(value: Any, credential: bool) -> None:
    assert credentials.is_credential_value(value) is credential


@pytest.mark.parametrize(("value", "credential"), [
    (VAULT, True), ("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", True),
    ("self.token", False), ("settings.SECRET_KEY", False), ("{token}", False), ("%s", False),
    (f"sha256:{SHA}", False), ("password", False),
])
def test_credential_values_in_text(value: str, credential: bool) -> None:
    assert credentials.looks_like_credential(value) is credential


@pytest.mark.parametrize(("value", "basic"), [
    (B64, True), (b64("robot:"), False), (b64("robot"), False), (b64("robot:$PASSWORD"), False),
    (b64("robot:changeme"), False), ("enabled", False), ("", False),
])
def test_basic_auth_is_base64_of_user_and_password(value: str, basic: bool) -> None:
    assert credentials.is_basic_auth(value) is basic


@pytest.mark.parametrize(("content", "passwords"), [
    ("db:5432:app:app:pw\n", ["pw"]), ("*:*:*:*:pw", ["pw"]), ("*:*:*:*:*", ["*"]), ("a:b:c:d:", [""]),
    ("fd00\\:\\:5:5432:app:app:p\\:w\\\\x", ["p:w\\x"]),  # `\:` and `\\` escape
    ("a:b:c:d:pw:more", ["pw"]),  # libpq reads up to the next unescaped colon
    ("# a:b:c:d:pw", []), ("a:b:c:d", []), ("", []),
])
def test_password_file_entries(content: str, passwords: list[str]) -> None:
    assert list(credentials.pgpass_passwords(content)) == passwords


def _alias_bomb(depth: int) -> str:
    lines = ["#cloud-config", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, depth)]
    return "\n".join(lines) + "\n"


def _set_passwords_alias_bomb() -> str:
    """One long password file and list, each repeated by alias in write_files and chpasswd.list."""
    lines = "".join("  a:b:c:d:\n" for _ in range(8_000))
    return (f"#cloud-config\ns: &s |\n{lines}f: &f {{path: /root/.pgpass, content: *s}}\n"
            f"write_files: [{', '.join(['*f'] * 15_000)}]\nchpasswd:\n  list: [{', '.join(['*s'] * 15_000)}]\n")


@pytest.mark.parametrize("text", [
    "machine x " * 100_000,
    "a://" * 100_000,
    "x://" + "a:" * 200_000 + "@",
    "docker login " * 50_000,
    "docker login" + " -p" * 200_000,
    "mysql " * 100_000,
    "mysql" + " -p" * 200_000,
    "printf '%s' " * 50_000,
    "printf '" + "%s" * 100_000 + "' " + "a " * 100_000,
    "echo a " * 50_000 + ">",
    "cat > x " * 50_000 + "<<EOF\n",
    "cat <<a\n" * 50_000,
    "--password-stdin " * 50_000,
    "cat > /etc/x/token <<EOF\n" * 20_000,
    "echo a > " * 50_000,
    "tee /x <<< " * 50_000,
    "Authorization: " * 100_000,
    "--a " * 100_000,
    "?a=" * 100_000,
    ";pwd=" * 100_000,
    "config set " * 100_000,
    "-u " * 100_000,
    "echo x | " * 50_000 + "--password-stdin",
    "vault login " + "-x " * 100_000,
    "a:b@tcp(" * 100_000,
    _alias_bomb(8),
    "printf a | " * 50_000 + "--password-stdin",
    "--password-stdin <<EOF\n" * 50_000,
    "chpasswd " * 100_000,
    "a | chpasswd\n" * 50_000,
    "chpasswd <<EOF\n" * 50_000,
    "echo a:b:c:d:e > ~/.pgpass\n" * 50_000,
    "cat > ~/.pgpass <<EOF\n" + "a\\:" * 200_000,
    "PGPASSFILE=" * 100_000,
    _set_passwords_alias_bomb(),
])
def test_the_new_shapes_stay_linear_on_hostile_input(text: str) -> None:
    assert cpu_seconds(lambda: (credentials.findings(text), credentials.credential_assignments(text))) < 10

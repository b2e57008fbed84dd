"""One recogniser of credentials written where they do not belong (pure; issue 45).

Read by the settings' add-on values rule (components/settings/secrets.py) and by the policy pack
(components/policies/secrets.py: user-data and the files it writes, Kubernetes objects `view`
reads, inputs that are not Pulumi secrets). It lives in the settings layer so both may import it
(docs/architecture.md, "Layers"). docs/policies.md, "What counts as a credential", lists what
each rule below judges; every answer names a kind or a name, never the value (messages end up in
CI logs).

Three questions, each answered once:

- **Names** (`is_credential_key`, `is_credential_file`): does a variable, key, flag or file name
  say it holds a credential?
- **Values** (`is_literal`, `is_placeholder`, `is_credential_value`, `looks_like_credential`): is
  a value the thing itself, not a reference, template, format verb, mask or placeholder? Under a
  key that is parsed (a mapping's key) any such literal counts; in free text, where the name is
  found by a pattern, the value must also look like a credential.
- **Shapes**: text that is a credential whatever it is called (`findings`: private keys,
  kubeconfigs, tokens with a known prefix, basic auth in URLs, headers and `-u`, netrc, DSNs,
  passwords on the command lines of tools that take them or fed to their stdin) and text that
  writes a credential under a name (`credential_assignments`: env, YAML, JSON, INI/TOML, systemd,
  flags, `config set`, connection strings, cloud-config, a token file, a password file), both
  through every view of the text (`decoded_views`: every decoding a consumer applies,
  components/settings/decodings.py, and what printf writes); and structured values
  (`credential_literals`: add-on values, Kubernetes objects, a parsed cloud-config and the
  passwords it sets).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, TypeGuard

import yaml

from .decodings import MAX_LAYERS, Budget, b64, decodings, gunzip, is_der_private_key

Path = tuple[Any, ...]

# --- names ----------------------------------------------------------------------------------------

_NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Last words that say the value is a credential. Glued spellings end in one (`PGPASSWORD`,
# `identitytoken` in Docker's config.json and containerd's CRI config, npm's `_authToken`).
_CREDENTIAL_WORDS = frozenset({"password", "passwd", "passphrase", "secret", "token", "apikey", "credential",
                               "credentials"})
_GLUED = ("password", "passwd", "passphrase", "token")
# `pwd` and `pass` only after another word: `PWD` is the shell's working directory.
_SHORT_WORDS = frozenset({"pwd", "pass"})
# `key` only after a word that makes it a secret one (`PUBLIC_KEY`, `cacheKey`, a bare `key` are not).
_KEY_AFTER = frozenset({"api", "access", "private", "secret", "signing", "encryption", "auth", "master", "session",
                        "client", "license", "licence", "app"})
# A name with one of these words names something else: a Secret (`existingSecret`, Helm charts'
# convention; `imagePullSecret`), or a digest of one (`checksum/secret`, Helm's restart annotation).
_REFERRING_WORDS = frozenset({"existing", "pull", "checksum"})
# `passwordSecret`, `credentialsSecret`, `tlsSecret`: the Secret that holds the password, by name.
# (`tokenSecret`, `clientSecret`, `sharedSecret` stay credentials: OAuth's token secret is one.)
_SECRET_OF = frozenset({"password", "passwd", "passphrase", "credential", "credentials", "tls", "cert"})
# What a file name may end in after the word that says what it holds.
_FILE_SUFFIXES = frozenset({"txt", "tok", "dat", "raw", "b64", "base64"})


def name_words(name: str) -> list[str]:
    """`dbPassword` -> [db, password]; `X_API_KEY` -> [x, api, key]; `APIKey` -> [api, key]."""
    return [w.lower() for part in re.split(r"[_.\-]+", name) for w in _NAME_WORD.findall(part)]


def is_credential_key(name: Any) -> TypeGuard[str]:
    """A variable, key, header or flag name, in any case and with any separator, whose last word
    says credential: `DB_PASSWORD`, `dbPassword`, `X-Api-Key`, `PGPASSWORD`, `identitytoken`,
    `licenseKey`, `MYSQL_PWD`; not `PASSWORD_FILE`, `TOKEN_TTL`, `PUBLIC_KEY`, `cacheKey`, `PWD`,
    `existingSecret`, `passwordSecret`, `checksum/secret`."""
    if not isinstance(name, str):
        return False
    words = name_words(name)
    if not words or _REFERRING_WORDS & set(words):
        return False
    last = words[-1]
    if last == "secret" and len(words) > 1 and words[-2] in _SECRET_OF:
        return False
    if last in _CREDENTIAL_WORDS or last.endswith(_GLUED):
        return True
    if last in _SHORT_WORDS:
        return len(words) > 1
    return last == "key" and len(words) > 1 and words[-2] in _KEY_AFTER


def is_credential_file(path: Any) -> TypeGuard[str]:
    """A file path whose name says the file holds a credential (`/etc/rancher/k3s/token`,
    `node.token`, `api_token`, `credentials`, `password.txt`), or whose folder does: NVIDIA's
    licensing client reads client configuration tokens (`client_configuration_token_<date>.tok`)
    from /etc/nvidia/ClientConfigToken (NVIDIA License System User Guide, "Configuring a Licensed
    Client")."""
    if not isinstance(path, str):
        return False
    parts = [p for p in re.split(r"[/\\]", path.strip()) if p]
    if not parts:
        return False
    words = [w for w in name_words(parts[-1]) if not w.isdigit()]
    while words and words[-1] in _FILE_SUFFIXES:
        words.pop()
    if words and is_credential_key("_".join(words)):
        return True
    return len(parts) > 1 and is_credential_key(parts[-2])


# --- values ---------------------------------------------------------------------------------------

# A reference, template, `<placeholder>` or mask: `$VAR`, `${VAR}`, `$(cmd)`, `{{ .Values.x }}`,
# `<password>`, `[secret]` (the plan's mask), `REDACTED`, `***`.
_NOT_A_VALUE = re.compile(r"^(?:\$|\{\{|<|\[secret|REDACTED|\*+$)", re.IGNORECASE)
# A value that is only a format verb: printf's `%s`, Python's `%(token)s` and `{}`/`{token}`.
_FORMAT_VERB = re.compile(r"%[-#0 +]*[0-9]*(?:\.[0-9]+)?[sdbqvxX]|%\([A-Za-z_][A-Za-z0-9_]*\)s|\{[A-Za-z0-9_]*\}")
# Words that stand in for a value: the public placeholders of chart defaults and docs (a deployed
# `changeme` is a weak password, but no secret leaks by writing it down), and the thing's own name.
_PLACEHOLDER_WORDS = frozenset({"changeme", "change-me", "change_me", "changeit", "password", "passwd", "pass",
                                "secret", "token", "example", "placeholder", "redacted", "dummy", "none", "null",
                                "nil", "undefined", "todo", "tbd"})
_NOT_SECRET_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "required", "optional", "enabled",
                               "disabled", "auto", "default"})
_DIGEST = re.compile(r"^(?:sha1|sha224|sha256|sha384|sha512|md5):[0-9a-fA-F]{16,}$")
_NUMBER_OR_QUANTITY = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]+)?[A-Za-zµ]{0,3})+")  # 15m, 1h30m, 512Mi, 0.5
_CODE_REFERENCE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_URL_WITHOUT_USER = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^@]*$")
MIN_CREDENTIAL_LENGTH = 6


def _unquoted(value: str) -> str:
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        v = v[1:-1].strip()
    return v


def is_literal(value: Any) -> bool:
    """A value given by value: not empty, not a reference, template, `<placeholder>` or mask."""
    return isinstance(value, str) and bool(value.strip()) and not _NOT_A_VALUE.match(value.strip())


def is_placeholder(value: str) -> bool:
    """Text that stands in for a value: empty, a reference (`$VAR`, `${VAR}`, `$(cmd)`, backticks,
    anywhere in it), a template (`{{ }}`), a format verb (`%s`, `{}`), `<placeholder>`, a mask
    (`[secret]`, `REDACTED`, `***`, one character repeated), a placeholder word (`changeme`,
    `password`, `example`, `none`, ...)."""
    v = _unquoted(value)
    if not v or _NOT_A_VALUE.match(v) or "${" in v or "$(" in v or "`" in v or "{{" in v:
        return True
    if v[0] == "{" and v[-1] == "}" and len(v) <= 64 and not any(c.isspace() for c in v):
        return True  # a format field: `{token}`, f-strings' `{self.token}`
    return bool(_FORMAT_VERB.fullmatch(v)) or v.lower() in _PLACEHOLDER_WORDS or len(set(v)) == 1


def is_credential_value(value: Any) -> bool:
    """Under a parsed credential name (a mapping key, a `{name, value}` pair): any literal counts,
    a number too (charts print it as the password); not a placeholder, a boolean or mode word, or
    a digest (`sha256:...`)."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return True
    if not isinstance(value, str) or is_placeholder(value):
        return False
    v = _unquoted(value)
    return v.lower() not in _NOT_SECRET_WORDS and not _DIGEST.match(v)


def looks_like_credential(value: str) -> bool:
    """In free text (the name was found by a pattern, so the value must say it too): a credential
    value (`is_credential_value`) of at least 6 characters that is not a path, a URL without user
    info, a number, duration or size (`15m`, `512Mi`), prose (whitespace inside), code (`self.token`;
    calls and subscripts never match as values), nor a word of one character class shorter than 16
    (`unexpected`, `kube-system`)."""
    v = _unquoted(value)
    if len(v) < MIN_CREDENTIAL_LENGTH or any(c.isspace() for c in v) or not is_credential_value(v):
        return False
    if v.startswith(("/", "./", "../", "~/", "@", "%")) or _URL_WITHOUT_USER.match(v):
        return False
    if (_CODE_REFERENCE.fullmatch(v) and not any(c.isdigit() for c in v)) or _NUMBER_OR_QUANTITY.fullmatch(v):
        return False  # `self.token`, `settings.SECRET_KEY`: code; `hvs.CAES0...`, a JWT: not
    # A single-class word is prose, a placeholder or a name more often than a secret; generated
    # secrets mix classes or are long.
    classes = sum(1 for test in (str.islower, str.isupper, str.isdigit) if any(test(c) for c in v))
    classes += any(not c.isalnum() and c not in "-_." for c in v)  # separators do not make a word a secret
    return classes >= 2 or len(v) >= 16


def is_basic_auth(value: str) -> bool:
    """base64 of `user:password` with a password given by value: HTTP Basic (RFC 7617 2), Docker
    config.json's and containerd's CRI `auth`, npm's `_auth`."""
    v = _unquoted(value)
    if len(v) < 4 or len(v) > 4096 or is_placeholder(v):
        return False
    data = b64(v)
    if data is None:
        return False
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    user, colon, password = text.partition(":")
    return bool(colon) and text.isprintable() and ":" not in user and bool(password) and not is_placeholder(password)


_AUTH_SCHEMES = frozenset({"basic", "bearer", "token", "apikey", "api-key", "sso-key", "digest", "negotiate", "ntlm",
                           "key", "aws4-hmac-sha256"})


def authorization_kind(scheme: str | None, credentials: str) -> str | None:
    """What an Authorization header value (RFC 9110 11.6.2: `<scheme> <credentials>`) carries by
    value, or None. A Basic value must decode to `user:password`; others must look like one."""
    scheme = (scheme or "").lower()
    if credentials.lower() in _AUTH_SCHEMES:
        return None
    if scheme == "basic":
        return "basic auth credentials" if is_basic_auth(credentials) or (
            b64(_unquoted(credentials)) is None and looks_like_credential(credentials)) else None
    if not looks_like_credential(credentials):
        return None
    return "bearer token" if scheme == "bearer" else "Authorization header credentials"


_AUTHORIZATION_VALUE = re.compile(r"^[ \t]*(?:(?P<scheme>[A-Za-z0-9-]+)[ \t]+)?(?P<credentials>[^\s]+)[ \t]*$")


def _authorization_value(value: str) -> str | None:
    m = _AUTHORIZATION_VALUE.match(value)
    return authorization_kind(m.group("scheme"), m.group("credentials")) if m else None


# --- material by shape ----------------------------------------------------------------------------

_PEM_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")  # RFC 7468 10/11, OpenSSH, PGP
_PUTTY_KEY = re.compile(r"PuTTY-User-Key-File-\d+:")
# A kubeconfig (clientcmd/api/v1 Config) in block YAML, flow YAML or JSON: `kind: Config`,
# `current-context`, or a `users:` list of named `user:` entries (cloud-init's `users:` and
# `chpasswd.users` lists are no kubeconfig).
_KUBECONFIG = re.compile(r"(?m)^[ \t]*users:[ \t]*\r?\n(?:[ \t]*-[ \t]*name:[^\n]*\n[ \t]+|[ \t]*-[ \t]*)user:"
                         r"|(?:^|[\s{,\"'])(?:kind[\"']?\s*:\s*[\"']?Config\b|current-context[\"']?\s*:)")
_KUBE_CRED = re.compile(r"(?:^|[\s{,\"'])(client-key-data|token|password)[\"']?\s*:\s*['\"]?([^\s'\",}#]+)")
# IAM User Guide, "Unique identifiers": AKIA (long-term) / ASIA (temporary) access key ids.
_AWS_ACCESS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
_AWS_SECRET = re.compile(r"(?i)aws_secret_access_key[\"']?\s*[=:]\s*['\"]?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])")
_KUBEADM_TOKEN = re.compile(r"\b[a-z0-9]{6}\.[a-z0-9]{16}\b")  # kubeadm "Bootstrap tokens": [a-z0-9]{6}.[a-z0-9]{16}
# GitHub docs, "About authentication to GitHub": token prefixes ghp_ gho_ ghu_ ghs_ ghr_ github_pat_.
_GITHUB_TOKEN = re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b")
# RFC 7519 JWT (JWS compact serialization: base64url header.payload.signature, header `{"`).
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
# A literal (not a shell variable or command substitution) handed to commands that take secrets.
_LITERAL_ARG = r"\s+['\"]?(?!\$)([A-Za-z0-9+/=._-]{16,})"
_JOIN_CMD = re.compile(r"\bk8s\s+join-cluster" + _LITERAL_ARG)
_CAPI_TOKEN = re.compile(r"(?i)(?:capi-auth-token:|x-capi\s+set-auth-token)" + _LITERAL_ARG)

# A command-line argument: quoted, or a word up to whitespace or a shell operator.
_QUOTED_OR_WORD = r"""(?P<value>"[^"\r\n]*+"|'[^'\r\n]*+'|[^\s"'`;|&<>()]++)"""

# RFC 3986 3.2.1 userinfo `user:password@` in any URL: https, git, pip's --index-url, DSNs
# (postgres://, mysql://, mongodb+srv://, redis://:password@, amqp://, jdbc:postgresql://).
# Each class stops at `/`, so a scan started at one `://` never passes the next.
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s/:@?#\"'<>`]*:(?P<password>[^\s/@?#\"'<>`]+)@")
# Go's MySQL driver DSN, `user:password@tcp(host:3306)/db` (go-sql-driver/mysql README, "DSN").
_GO_DSN = re.compile(r"(?<![\w/:@.-])[\w.-]{1,64}:(?P<password>[^\s:@/\"'()]{1,256})@(?:tcp|unix|udp)\(")
# An Authorization header in HTTP (`Authorization: Basic ...`, curl -H, git's http.extraHeader),
# YAML, JSON or TOML (containerd hosts.toml `[host."...".header]` `Authorization = ["Basic ..."]`,
# containerd docs/hosts.md).
_AUTH_HEADER = re.compile(r"(?i)\b(?:proxy-)?authorization\b[\"']?[ \t]*(?::|=>?)[ \t]*\[?[ \t]*[\"']?"
                          r"(?:(?P<scheme>basic|bearer|token|apikey|api-key|sso-key|digest|negotiate|ntlm|key)"
                          r"[ \t]+)?(?P<credentials>[^\s\"'\],;]+)")
# netrc(5): whitespace-separated tokens; `machine <host>` or `default`, then `login`, `account`,
# `port` in any order, then `password <string>`; on one line or many.
_NETRC = re.compile(r"(?<!\S)(?:machine\s+\S+|default)(?:\s+(?:login|account|port)\s+\S+){0,3}\s+password\s+"
                    r"(?P<value>\S+)")
# curl's `-u, --user <user:password>` (and `--proxy-user`, `-U`); wget and httpie spell it too.
_USER_PASSWORD = re.compile(r"(?<![\w-])(?:-u|-U|--user|--proxy-user|--auth)(?:[ \t]+|=)?" + _QUOTED_OR_WORD)
# Registry and cloud logins whose `-p` is the password: docker/podman/nerdctl/buildah/skopeo login,
# oras login, helm registry login, crane auth login, az login (-p, --password), oc and cf login.
_LOGIN = re.compile(r"\b(?P<tool>docker|podman|buildah|nerdctl|skopeo|oras|helm[ \t]+registry|crane[ \t]+auth|"
                    r"az(?:[ \t]+acr)?|oc|cf|regctl[ \t]+registry)[ \t]+login\b(?P<args>[^\n;|&]*+)")
_LOGIN_PASSWORD = re.compile(r"(?<!\S)(?:-p|--password)(?:[ \t]+|=)" + _QUOTED_OR_WORD)
# Tools with their own password flags: mysql/mariadb `-pSECRET` (glued; `-p` alone prompts),
# sshpass `-p`, ssh-keygen `-N` new and `-P` old passphrase.
_TOOLS = re.compile(r"\b(?P<tool>mysql(?:dump|admin|import|show|check|slap)?|mariadb(?:-dump|-admin)?|sshpass|"
                    r"ssh-keygen)\b(?P<args>[^\n;|&]*+)")
_TOOL_FLAG = {
    "mysql": re.compile(r"(?<!\S)-p" + _QUOTED_OR_WORD),
    "sshpass": re.compile(r"(?<!\S)-p[ \t]*" + _QUOTED_OR_WORD),
    "ssh-keygen": re.compile(r"(?<!\S)-[NP][ \t]*" + _QUOTED_OR_WORD),
}
# openssl-passphrase-options(1): `-passin/-passout/-pass pass:<password>` (env:, file:, fd: point elsewhere).
_OPENSSL_PASS = re.compile(r"""(?<![\w-])-pass(?:in|out)?[ \t]+["']?pass:(?P<value>[^\s"']+)""")
# `vault login <token>` (Vault CLI docs, "login": the token is the positional argument).
_VAULT_LOGIN = re.compile(r"\bvault[ \t]+login(?:[ \t]+-\S+)*[ \t]+(?P<value>[^\s\"'`;|&<>()=-][^\s\"'`;|&<>()=]*)"
                          r"(?=[\s;|&]|$)")


def findings(text: str) -> list[str]:
    """Kinds of secret material in `text` or any decoding of it (empty when none). Order is stable."""
    if not text or not isinstance(text, str):
        return []
    found: dict[str, None] = {}
    for view in decoded_views(text):
        if isinstance(view, bytes):
            if is_der_private_key(view):
                found.setdefault("private key (DER)")
        else:
            for kind in _kinds(view):
                found.setdefault(kind)
    return list(found)


def _kinds(text: str) -> Iterator[str]:
    # Cheap substring tests first: each regex runs only where its anchor word appears.
    lower = text.lower()
    if ("private key" in lower and _PEM_KEY.search(text)) or ("putty" in lower and _PUTTY_KEY.search(text)):
        yield "PEM private key"
    if ("users" in text or "Config" in text or "current-context" in text) and _KUBECONFIG.search(text):
        creds = sorted({m.group(1) for m in _KUBE_CRED.finditer(text) if is_literal(m.group(2))})
        if creds:
            yield f"kubeconfig credentials ({', '.join(creds)})"
    if "aws_secret_access_key" in lower and _AWS_SECRET.search(text):
        yield "AWS secret access key"
    elif ("AKIA" in text or "ASIA" in text) and _AWS_ACCESS_KEY_ID.search(text):
        yield "static AWS access key id"
    if "token" in lower and _KUBEADM_TOKEN.search(text):
        yield "bootstrap token"
    if ("gh" in text or "github_pat_" in text) and _GITHUB_TOKEN.search(text):
        yield "GitHub token"
    if "eyJ" in text and _JWT.search(text):
        yield "JSON Web Token"
    if "authorization" in lower:
        for m in _AUTH_HEADER.finditer(text):
            if kind := authorization_kind(m.group("scheme"), m.group("credentials")):
                yield kind
    if ("join-cluster" in text and _JOIN_CMD.search(text)) or _is_k8s_join_token(text):
        yield "Canonical Kubernetes join token"
    if "capi" in lower and _CAPI_TOKEN.search(text):
        yield "join auth token"
    if "://" in text and "@" in text and any(not is_placeholder(m.group("password"))
                                             for m in _URL_PASSWORD.finditer(text)):
        yield "a URL with a password"
    if "@" in text and "(" in text and any(not is_placeholder(m.group("password")) for m in _GO_DSN.finditer(text)):
        yield "a DSN with a password"
    if "password" in lower and any(looks_like_credential(m.group("value")) for m in _NETRC.finditer(text)):
        yield "a netrc password"
    if ("-u" in text or "--auth" in text or "-U" in text) and any(
            _user_password(m.group("value")) for m in _USER_PASSWORD.finditer(text)):
        yield "basic auth credentials (user:password)"
    yield from _command_line_kinds(text, lower)


def _user_password(value: str) -> bool:
    _user, colon, password = _unquoted(value).partition(":")
    return bool(colon) and looks_like_credential(password)


def _command_line_kinds(text: str, lower: str) -> Iterator[str]:
    if "login" in lower:
        for m in _LOGIN.finditer(text):
            if any(looks_like_credential(p.group("value")) for p in _LOGIN_PASSWORD.finditer(m.group("args"))):
                yield f"a password on a command line ({' '.join(m.group('tool').split())} login)"
    if "mysql" in lower or "mariadb" in lower or "sshpass" in lower or "ssh-keygen" in lower:
        for m in _TOOLS.finditer(text):
            tool = m.group("tool")
            flag = _TOOL_FLAG[tool if tool in _TOOL_FLAG else "mysql"]
            if any(looks_like_credential(p.group("value")) for p in flag.finditer(m.group("args"))):
                yield f"a password on a command line ({tool})"
    if "pass:" in text and any(looks_like_credential(m.group("value")) for m in _OPENSSL_PASS.finditer(text)):
        yield "a password on a command line (openssl pass:)"
    if "vault" in lower and any(looks_like_credential(m.group("value")) for m in _VAULT_LOGIN.finditer(text)):
        yield "a token on a command line (vault login)"
    if "--password-stdin" in text or "chpasswd" in text:
        yield from _stdin_kinds(text)


def _is_k8s_join_token(text: str) -> bool:
    """`k8s get-join-token` prints base64 of a JSON document carrying the join secret and the
    cluster certificate fingerprint (canonical/k8s-snap src/k8s/pkg/k8sd/types/join_token.go):
    this sees the decoded document, wherever the base64 was pasted."""
    stripped = text.strip()
    if not stripped.startswith("{") or len(stripped) > 65536:
        return False
    try:
        doc = json.loads(stripped)
    except ValueError:
        return False
    return isinstance(doc, dict) and "secret" in doc and ("fingerprint" in doc or "join_addresses" in doc)


# --- what a shell writes --------------------------------------------------------------------------
# printf(1): the format names the credential, the argument is the literal (`printf 'Authorization:
# Bearer %s' x`, `printf -- '--token=%s' x`). The text printf writes is one more view of the text.
_PRINTF = re.compile(r"""\bprintf[ \t]+(?:-v[ \t]+\w+[ \t]+)?(?:--[ \t]+)?"""
                     r"""(?P<fmt>'[^'\r\n]*+'|"(?:[^"\\\r\n]|\\.)*+")(?P<args>[^\n;|&<>]*+)""")
_PRINTF_VERB = re.compile(r"%%|%[-#0 +]*[0-9]*(?:\.[0-9]+)?[sbdiqxXuo]")
_SHELL_WORD = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|([^\s'"]+)""")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\"}


def _words(args: str) -> list[str]:
    return [next(g for g in m.groups() if g is not None) for m in _SHELL_WORD.finditer(args)]


def _printf(fmt: str, args: list[str]) -> str:
    """What printf writes for the format `fmt` (its quotes removed) and `args`."""
    rest = iter(args)

    def verb(m: re.Match[str]) -> str:
        return "%" if m.group(0) == "%%" else next(rest, m.group(0))  # a verb without an argument stays one

    body = re.sub(r"\\([ntr\\])", lambda m: _ESCAPES[m.group(1)], fmt)
    return _PRINTF_VERB.sub(verb, body)


def _printed(text: str) -> Iterator[str]:
    if "printf" not in text:
        return
    for m in _PRINTF.finditer(text):
        args = _words(m.group("args"))
        if args:
            yield _printf(m.group("fmt")[1:-1], args)


def _views(text: str, budget: Budget, seen: set[tuple[str, str]]) -> Iterator[str | bytes]:
    yield from decodings(text, budget, seen)
    for printed in _printed(text):
        if ("printf", printed) not in seen and budget.take(len(printed)):
            seen.add(("printf", printed))
            yield printed


def decoded_views(text: str) -> Iterator[str | bytes]:
    """`text`, then each view of it (`_views`: every decoding, what printf writes) followed by the
    views of that, depth first, at most MAX_LAYERS deep, under one Budget: what `findings` and
    `credential_assignments` read. Binary that is not text comes as bytes, where it was decoded."""
    budget, seen = Budget(text), set[tuple[str, str]]()

    def walk(view: str, layer: int) -> Iterator[str | bytes]:
        yield view
        if layer < MAX_LAYERS:
            for decoded in _views(view, budget, seen):
                if isinstance(decoded, bytes):
                    yield decoded
                else:
                    yield from walk(decoded, layer + 1)

    return walk(text, 0)


# Files a script writes whole: `echo x > f`, `printf '%s' x > f`, `... | tee f`, `tee f <<< x`,
# `cat > f <<EOF` (bash(1) "Redirection", "Here Documents", "Here Strings"). A pattern whose end is
# optional consumes its run even when it does not write, so a scan never restarts inside the run.
_PATH_WORD = r"""(?P<path>'[^'\n]*'|"[^"\n]*"|[^\s;|&<>()'"`]+)"""
_ECHO_WRITE = re.compile(r"\b(?P<cmd>echo|printf)[ \t]+(?P<rest>[^\n>|;&]*+)"
                         r"(?:(?:[12]?>>?|\|[ \t]*(?:sudo[ \t]+)?tee(?:[ \t]+-a)?)[ \t]*" + _PATH_WORD + ")?")
_HERE_STRING = re.compile(r"\b(?:tee(?:[ \t]+-a)?[ \t]+|cat[ \t]*>>?[ \t]*)" + _PATH_WORD + r"[ \t]*<<<[ \t]*"
                          + _QUOTED_OR_WORD)
_HEREDOC = re.compile(r"""(?<!<)<<(?P<dash>-?)[ \t]*(?P<q>['"]?)(?P<delim>[A-Za-z_]\w*)(?P=q)(?P<tail>[^\n]*)\n""")
_HEAD_PATH = re.compile(r"""(?:\bcat\b[^\n]*?>>?|\btee(?:[ \t]+-a)?)[ \t]*(?P<path>[^\s;|&<>()'"`]+)[^\n>]*$""")
_TAIL_PATH = re.compile(r">>?[ \t]*(?P<path>[^\s;|&<>()'\"`]+)")
_HEAD = 512  # how far before `<<` the writer is looked for: a command line, not a file


def _shell_files(text: str) -> Iterator[tuple[str, str]]:
    """(path, content) of files a script writes whole, as far as the text says."""
    if ">" in text or "tee" in text:
        for m in _ECHO_WRITE.finditer(text):
            if m.group("path") is None:
                continue
            words = _words(m.group("rest"))
            if m.group("cmd") == "echo":
                while words and re.fullmatch(r"-[neE]+", words[0]):
                    words.pop(0)
                content = " ".join(words)
            else:
                if words and words[0] == "--":
                    words.pop(0)
                content = _printf(words[0], words[1:]) if words else ""
            yield _unquoted(m.group("path")), content
    if "<<<" in text:
        for m in _HERE_STRING.finditer(text):
            yield _unquoted(m.group("path")), _unquoted(m.group("value"))
    pos = 0
    while "<<" in text and (h := _HEREDOC.search(text, pos)):
        line_start = text.rfind("\n", max(0, h.start() - _HEAD), h.start()) + 1
        head = _HEAD_PATH.search(text, max(line_start, h.start() - _HEAD), h.start())
        tail = _TAIL_PATH.search(h.group("tail"))
        pos = h.end()
        if not (head or tail):
            continue  # a heredoc fed to a program, not written to a file: its text is read as text anyway
        strip = r"[ \t]*" if h.group("dash") else ""
        end = re.compile(rf"(?m)^{strip}{re.escape(h.group('delim'))}[ \t]*$").search(text, h.end())
        path = head.group("path") if head else tail.group("path")  # type: ignore[union-attr]
        yield path, text[h.end():end.start() if end else len(text)]
        pos = end.end() if end else len(text)


def _is_token_file(content: str) -> bool:
    """A file whose whole content is one credential-looking line."""
    c = content.strip()
    return bool(c) and "\n" not in c and looks_like_credential(c)


# PostgreSQL's password file (libpq docs, "The Password File"): `~/.pgpass` (`pgpass.conf` on
# Windows), or the file PGPASSFILE or the `passfile` connection parameter names. Lines
# `hostname:port:database:username:password`; `*` is a wildcard in the first four fields only;
# `\:` and `\\` escape; a line starting with `#` is a comment. libpq (fe-connect.c
# passwordFromFile) reads the password up to the next unescaped `:` after the fourth.
_PGPASS_NAMES = frozenset({".pgpass", "pgpass.conf"})
_PASSFILE = re.compile(r"(?<![\w-])(?:PGPASSFILE|passfile)[\"']?[ \t]*[=:][ \t]*" + _QUOTED_OR_WORD)
_PGPASS_LINE = re.compile(r"[ \t]*(?:(?:[^:\\\n]|\\.)*+:){4}(?P<password>(?:[^:\\\n]|\\.)*+)")


def _passfiles(text: str) -> frozenset[str]:
    """Paths `text` names as password files: `PGPASSFILE=/etc/app/pgpass`, `passfile=/x`."""
    if "PGPASSFILE" not in text and "passfile" not in text:
        return frozenset()
    return frozenset(_unquoted(m.group("value")) for m in _PASSFILE.finditer(text))


def _is_pgpass_file(path: Any, passfiles: Collection[str] = ()) -> TypeGuard[str]:
    if not isinstance(path, str):
        return False
    path = _unquoted(path)
    return path in passfiles or re.split(r"[/\\]", path)[-1] in _PGPASS_NAMES


def pgpass_passwords(content: str) -> Iterator[str]:
    """The password of each entry of a password file, unescaped (comments and short lines skipped)."""
    for line in content.splitlines():
        if not line.lstrip().startswith("#") and (m := _PGPASS_LINE.match(line)):
            yield re.sub(r"\\(.)", r"\1", m.group("password"))


@functools.lru_cache(maxsize=256)  # a YAML alias repeats one string: read it once (emptied by `_forget`)
def _holds_pgpass_password(content: str) -> bool:
    return any(is_credential_value(p) for p in pgpass_passwords(content))


def _is_credential_file_content(path: Any, content: str, passfiles: Collection[str] = ()) -> bool:
    """A file that holds a credential by its name and content: a token file (a credential file
    that is one credential-looking line), or a password file with a password given by value."""
    if is_credential_file(path) and _is_token_file(content):
        return True
    return _is_pgpass_file(path, passfiles) and _holds_pgpass_password(content)


# --- what a command reads on stdin ----------------------------------------------------------------
# Logins that read the password on stdin (`--password-stdin` of docker, podman, nerdctl, buildah,
# skopeo, oras, `helm registry login`, `crane auth login`: safe when stdin comes from a secret
# store) and chpasswd(8), which reads `user:password` lines (`-e`/`--encrypted`: crypt hashes).
# The text says what they read when it is `echo` or `printf` of a literal piped in, a here-string
# or a heredoc (bash(1) "Pipelines", "Here Strings", "Here Documents"); a command (`aws ecr
# get-login-password |`), a file (`cat f |`, `< f`) or a variable is no literal.
_STDIN_READER = re.compile(r"--password-stdin\b|(?<![\w.-])chpasswd(?![\w.:-])")
_COMMAND_REST = re.compile(r"[^\n|;&]*+")
_LINE_REST = re.compile(r"[^\n]*+")
# A shell word, quoted or not, or an operator; `2>&1`, `&>f` are words (redirections), not `&`.
_SHELL_TOKEN = re.compile(r"""'[^'\n]*'|"(?:[^"\\\n]|\\.)*"|[0-9]*(?:[<>]&|&>>?)[^\s'"|;&]*|\|\||&&|[|;&\n]"""
                          r"""|[^\s'"|;&]+""")
_REDIRECTION = re.compile(r"[0-9]*(?:[<>]|&>)")
_OPERATORS = frozenset({"|", "||", "&&", ";", "&", "\n"})
_HERE_STRING_FEED = re.compile(r"<<<[ \t]*" + _QUOTED_OR_WORD)
_HEREDOC_FEED = re.compile(r"""(?<!<)<<(?P<dash>-?)[ \t]*(?P<q>['"]?)(?P<delim>[A-Za-z_]\w*)(?P=q)""")
_BODY = 4096  # how much of a heredoc fed to a reader is read: a password or a few `user:password` lines


def _stage_output(words: list[str]) -> str | None:
    """What a pipeline stage (its words, unquoted) writes when it runs `echo` or `printf`, after
    whatever starts it (`sudo`, a YAML item's `-`, `sh -c "`); else None."""
    at = next((i for i, w in enumerate(words) if w in ("echo", "printf")), None)
    if at is None:
        return None
    args = [w for w in words[at + 1:] if not _REDIRECTION.match(w)]  # `2>/dev/null`: not written
    if words[at] == "echo":
        while args and re.fullmatch(r"-[neE]+", args[0]):
            args.pop(0)
        return " ".join(args)
    if args and args[0] == "--":
        args.pop(0)
    return _printf(args[0], args[1:]) if args and args[0] != "-v" else None  # `-v var`: into a variable


def _pipeline(text: str, start: int, end: int) -> tuple[list[str], str | None]:
    """The words of the last stage of the command line that ends at `end` (looked at from
    `start`), and what the stage piped into it writes (`_stage_output`)."""
    tokens = [m.group(0) for m in _SHELL_TOKEN.finditer(text, start, end)]
    if "\n" in tokens:
        tokens = tokens[len(tokens) - tokens[::-1].index("\n"):]  # this line only
    ops = [i for i, t in enumerate(tokens) if t in _OPERATORS]
    words = [_unquoted(t) for t in tokens[ops[-1] + 1 if ops else 0:]]
    if not ops or tokens[ops[-1]] != "|":
        return words, None
    first = ops[-2] + 1 if len(ops) > 1 else 0
    return words, _stage_output([_unquoted(t) for t in tokens[first:ops[-1]]])


def _heredoc_body(text: str, start: int, delim: str, dash: bool) -> tuple[str, int]:
    """A heredoc's body from `start` to its delimiter line (at most _BODY characters), and where it ends."""
    window = text[start:start + _BODY]
    at = 0
    for line in window.split("\n"):
        if (line.lstrip("\t") if dash else line).rstrip(" \t") == delim:
            return window[:at], start + at + len(line)
        at += len(line) + 1
    return window, start + len(window)


def _stdin_feeds(text: str) -> Iterator[tuple[str, str]]:
    """(reader, what it reads) for each `--password-stdin` login and chpasswd the text feeds a
    literal: `echo`/`printf` piped in, a here-string, a heredoc. Each run of text is read once:
    the line before a reader back to the previous one (at most _HEAD), its command after."""
    pos = floor = 0
    while m := _STDIN_READER.search(text, pos):
        reader = "chpasswd" if m.group(0) == "chpasswd" else "--password-stdin"
        words, piped = _pipeline(text, max(floor, m.start() - _HEAD), m.start())
        rest_end = _COMMAND_REST.match(text, m.end()).end()  # type: ignore[union-attr]
        rest = text[m.end():rest_end]
        pos = max(rest_end, m.end() + 1)
        if reader == "chpasswd" and (any(w not in ("sudo",) and not w.startswith("-") and not w.endswith("/")
                                         for w in words) or {"-e", "--encrypted"} & set(_words(rest))):
            floor = pos
            continue  # not in a command's place (`echo chpasswd`), or it reads hashes
        if piped is not None:
            yield reader, piped
        if "<<" in rest:
            if here := _HERE_STRING_FEED.search(rest):
                yield reader, _unquoted(here.group("value"))
            elif doc := _HEREDOC_FEED.search(rest):
                line_end = _LINE_REST.match(text, rest_end).end()  # type: ignore[union-attr]
                body, pos = _heredoc_body(text, line_end + 1, doc.group("delim"), bool(doc.group("dash")))
                yield reader, body
        floor = pos


def _stdin_kinds(text: str) -> Iterator[str]:
    for reader, fed in _stdin_feeds(text):
        if reader == "--password-stdin" and _is_token_file(fed):
            yield "a literal fed to --password-stdin"
        elif reader == "chpasswd" and any(sep and looks_like_credential(password) for sep, password in
                                          (line.strip().partition(":")[1:] for line in fed.splitlines())):
            yield "a password fed to chpasswd"


# --- credentials by name in text ------------------------------------------------------------------
# A name starts a line or follows a delimiter; the value is quoted or runs to whitespace or a
# delimiter. No delimiter a name may follow can occur inside an unquoted value, and values match
# possessively: each run of text is scanned once (linear on hostile input).
_ASSIGNMENT = re.compile(
    r"""(?:^|(?<=[\s;,{(\["']))(?P<q>["']?)(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,127})(?P=q)[ \t]*(?::=|=|:(?!:))[ \t]*"""
    r"""(?P<value>"[^"\r\n]*+"|'[^'\r\n]*+'|[^\s,;(){}\[\]<>|\\"'#]++(?=[\s,;}\])"'#]|$))""", re.MULTILINE)
# Command-line flags: `--db-password=value`, `-api-key='value'`, `--from-literal=password=value`.
_FLAG = re.compile(r"""(?<![\w-])--?(?P<name>[A-Za-z][A-Za-z0-9_-]{0,127})="""
                   r"""(?P<value>"[^"\r\n]*+"|'[^'\r\n]*+'|[^\s;"'`|&<>()]++)(?=[\s;"'`|&)]|$)""")
# `--db-password value`, `--passphrase value` (getopt_long(3): a long option's argument may follow apart).
_SPACED_FLAG = re.compile(r"""(?<![\w-])--(?P<name>[A-Za-z][A-Za-z0-9_-]{0,127})[ \t]+"""
                          r"""(?P<value>"[^"\r\n]*+"|'[^'\r\n]*+'|(?!-)[^\s"'`;|&<>()]++)""")  # not the next flag
_ENV_PAIR = re.compile(r"""(?m)^[ \t]*-?[ \t]*name:[ \t]*["']?(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,127})["']?"""
                       r"""[ \t]*\r?\n[ \t]*value:[ \t]*(?P<value>"[^"\r\n]*"|'[^'\r\n]*'|[^\s#]+)""")
# `aws configure set aws_secret_access_key x` (AWS CLI "configure set"), `npm config set
# //registry/:_authToken x`, `gcloud config set`, `pip config set`.
_CONFIG_SET = re.compile(r"\b(?:configure|config)[ \t]+set[ \t]+(?P<name>[^\s\"'=]{1,256})(?:[ \t]+|=)"
                         + _QUOTED_OR_WORD)
# Connection strings: JDBC URL parameters (`?user=u&password=p`, `;password=p`), ODBC/ADO.NET
# (`Uid=u;Pwd=p;`, Microsoft "Connection string syntax"; `Pwd` is a password there, not a folder).
_CONN_PARAM = re.compile(r"(?<=[?&;])[ \t]*(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,63})[ \t]*=[ \t]*"
                         r"(?P<value>\{[^{}\r\n]*\}|\"[^\"\r\n]*\"|'[^'\r\n]*'|[^&;#\s\"'<>{}]+)")
# `auth`, `_auth`, `basicAuth`, `registryAuth`: base64(user:password) when it decodes so. Docker
# CLI docs, "docker login" (config.json `auths.<registry>.auth`); containerd docs/cri/registry.md
# (`registry.configs."<r>".auth` `auth`, `identitytoken`); npm docs, "npmrc" (`_auth`).
_AUTH_NAME = "auth"
# A cloud-config is parsed (cloud-init docs, "write_files", "Users and Groups") and read as values.
MAX_CLOUD_CONFIG = 256 << 10
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def is_auth_pair(name: Any, value: Any) -> bool:
    """A key whose last word is `auth` holding base64 of `user:password` (`is_basic_auth`)."""
    return (isinstance(name, str) and isinstance(value, str) and name_words(name)[-1:] == [_AUTH_NAME]
            and is_basic_auth(value))


def _named_literals(text: str, nested: bool = True) -> Iterator[str]:
    for pattern in (_ASSIGNMENT, _FLAG, _SPACED_FLAG, _ENV_PAIR):
        for m in pattern.finditer(text):
            name, value = m.group("name"), m.group("value")
            if (is_credential_key(name) and looks_like_credential(value)) or is_auth_pair(name, value):
                yield name
            elif nested and pattern in (_ASSIGNMENT, _FLAG) and "=" in value:  # Environment="N=v", --env=N=v
                yield from _named_literals(_unquoted(value), nested=False)
    if "set" in text:
        for m in _CONFIG_SET.finditer(text):
            if is_credential_key(m.group("name")) and looks_like_credential(m.group("value")):
                yield m.group("name")
    if "=" in text:
        for m in _CONN_PARAM.finditer(text):
            name, value = m.group("name"), m.group("value").strip("{}")
            if (is_credential_key(name) or name.lower() in _SHORT_WORDS) and looks_like_credential(value):
                yield name
    passfiles = _passfiles(text)
    for path, content in _shell_files(text):
        if _is_credential_file_content(path, content, passfiles):
            yield path
    yield from _cloud_config_literals(text, passfiles)


def _cloud_config_literals(text: str, passfiles: Collection[str] = ()) -> Iterator[str]:
    if not text.lstrip().startswith("#cloud-config") or len(text) > MAX_CLOUD_CONFIG:
        return
    try:
        doc = yaml.load(text, Loader=_YAML_LOADER)  # a safe loader (CSafeLoader where libyaml is built in)
    except (yaml.YAMLError, RecursionError, ValueError):
        return
    for _path, name in credential_literals(doc, cloud_config=True, passfiles=passfiles):
        yield name


def credential_assignments(text: str) -> list[str]:
    """Names of credentials written by value in `text` or any decoding of it (bounded as
    `findings`): a variable, key or flag, or the path of a file that is a token or a password file."""
    if not text or not isinstance(text, str):
        return []
    found: dict[str, None] = {}
    try:
        for view in decoded_views(text):
            if isinstance(view, str):
                for name in _named_literals(view):
                    found.setdefault(name)
    finally:
        _forget()
    return list(found)


# --- credentials in structured values -------------------------------------------------------------
MAX_NODES = 200_000  # a YAML alias bomb expands into a tree this walk would otherwise follow forever
_FILE_PATH_KEYS = ("path", "filePath", "filename", "fileName", "file")
_FILE_CONTENT_KEYS = ("content", "contents", "data")
_FLAG_ITEM = re.compile(r"--?(?P<name>[A-Za-z][A-Za-z0-9_-]{0,127})")
# cloud-init write_files `encoding` (cloud-init docs, "write_files"): gz, gzip, gz+base64,
# gzip+base64, gz+b64, gzip+b64, b64, base64, text/plain.
_B64_ENCODINGS = frozenset({"b64", "base64"})
_GZ_B64_ENCODINGS = frozenset({"gz+base64", "gzip+base64", "gz+b64", "gzip+b64"})
MAX_FILE = 1 << 20


def _is_seq(value: Any) -> TypeGuard[Sequence[Any]]:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _file_content(content: str, encoding: Any) -> str:
    enc = encoding.lower() if isinstance(encoding, str) else ""
    if enc not in _B64_ENCODINGS | _GZ_B64_ENCODINGS:
        return content
    data = b64("".join(content.split()))
    if data is None:
        return content
    if enc in _GZ_B64_ENCODINGS:
        data = gunzip(data, MAX_FILE)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return ""  # binary: no token file


def credential_pair(key: Any, value: Any) -> bool:
    """A parsed key and its value that are a credential written by value: a credential name with a
    literal (`is_credential_value`), `auth` with base64 `user:password`, an `Authorization`
    header with credentials, or a file name that says token holding one token, or a password
    file (`.pgpass`) holding a password."""
    if is_credential_key(key) and is_credential_value(value):
        return True
    if not isinstance(key, str) or not isinstance(value, str):
        return False
    if is_auth_pair(key, value):
        return True
    if key.lower() in ("authorization", "proxy-authorization") and _authorization_value(value):
        return True
    # A ConfigMap's data key is a file name (`[-._a-zA-Z0-9]+`, no folder): `node.token`, `.pgpass`.
    return "." in key and "/" not in key and _is_credential_file_content(key, value)


# cloud-init's set passwords module (cloud-init docs, "Set Passwords"; cc_set_passwords.py): the
# top-level `password` (the default user's) and `chpasswd.list` (`user:password` lines, a string
# or a list; deprecated) set a password by value, but `R`/`RANDOM` generate one and a crypt hash
# (`$6$...`, a reference to the reader above) is set as a hash; `chpasswd.users` entries
# `{name, password, type}` hold text when `type: text`, a hash when `type: hash` (the default),
# and a generated password when `type: RANDOM` (its `password`, if any, is ignored).
_RANDOM_PASSWORDS = frozenset({"R", "RANDOM"})


class _Walk(NamedTuple):
    skip: Callable[[Any], bool]
    left: list[int]  # nodes still allowed
    passfiles: frozenset[str]


def _set_password(value: Any) -> bool:
    return is_credential_value(value) and not (isinstance(value, str) and value.strip() in _RANDOM_PASSWORDS)


@functools.lru_cache(maxsize=256)  # a YAML alias repeats one string: read it once (emptied by `_forget`)
def _lists_a_password(text: str) -> bool:
    """`user:password` lines (chpasswd.list) with a password set by value."""
    return any(sep and _set_password(password) for sep, password in
               (line.partition(":")[1:] for line in text.splitlines()))


def _set_passwords(doc: Mapping[Any, Any], path: Path, ctx: _Walk) -> Iterator[tuple[Path, str]]:
    """The passwords a cloud-config sets by value (above); each entry costs the walk a node."""
    skip = ctx.skip
    if "password" in doc and not skip(doc["password"]) and _set_password(doc["password"]):
        yield (*path, "password"), "password"
    chpasswd = doc.get("chpasswd")
    if not isinstance(chpasswd, Mapping):
        return
    listed, users = chpasswd.get("list"), chpasswd.get("users")
    entries: list[tuple[int | None, Any]] = list(enumerate(listed)) if _is_seq(listed) else [(None, listed)]
    for i, text in entries:
        ctx.left[0] -= 1
        if ctx.left[0] < 0:
            return
        if isinstance(text, str) and not skip(text) and _lists_a_password(text):
            yield (*path, "chpasswd", "list", *(() if i is None else (i,))), "chpasswd.list"
    for i, user in enumerate(users if _is_seq(users) else []):
        ctx.left[0] -= 1
        if ctx.left[0] < 0:
            return
        if (isinstance(user, Mapping) and user.get("type", "hash") != "RANDOM" and "password" in user
                and not skip(user["password"]) and is_credential_value(user["password"])):
            yield (*path, "chpasswd", "users", i, "password"), "password"


def credential_literals(value: Any, path: Path = (), ignore: Callable[[Any], bool] | None = None, *,
                        cloud_config: bool = False, passfiles: Collection[str] = ()) -> Iterator[tuple[Path, str]]:
    """(path, name) of credentials written by value in structured values: a key (`credential_pair`),
    an environment variable as `{name: DB_PASSWORD, value: x}` (a container's env, a chart's
    `extraEnv`), a file as `{path: /etc/x/token, content: x}` (cloud-init write_files, charts'
    extra files; `encoding` decoded; a password file too, by name or in `passfiles`), a flag and
    its value as two list items (`[--password, x]`), the passwords a cloud-config sets
    (`_set_passwords`: at the top when `cloud_config`, and in any mapping with `chpasswd`).
    `ignore`: leaves that are not plain (the settings' Pulumi secrets). Paths index mappings by key
    and lists by position."""
    skip = ignore or (lambda _v: False)
    try:
        yield from _walk(value, path, _Walk(skip, [MAX_NODES], frozenset(passfiles)), cloud_config)
    finally:
        _forget()


def _forget() -> None:
    """Empty the caches of what was read (they hold file contents) once a call is done."""
    _holds_pgpass_password.cache_clear()
    _lists_a_password.cache_clear()


def _walk(value: Any, path: Path, ctx: _Walk, cloud_config: bool = False) -> Iterator[tuple[Path, str]]:
    skip = ctx.skip
    ctx.left[0] -= 1
    if ctx.left[0] < 0:
        return
    if isinstance(value, Mapping):
        name = value.get("name")
        if "value" in value and is_credential_key(name) and not skip(value["value"]) and is_credential_value(
                value["value"]):
            yield (*path, "value"), name
        file_path = next((value[k] for k in _FILE_PATH_KEYS if isinstance(value.get(k), str)), None)
        if is_credential_file(file_path) or _is_pgpass_file(file_path, ctx.passfiles):
            for k in _FILE_CONTENT_KEYS:
                content = value.get(k)
                if isinstance(content, str) and not skip(content) and _is_credential_file_content(
                        file_path, _file_content(content, value.get("encoding")), ctx.passfiles):
                    yield (*path, k), file_path
        set_passwords = cloud_config or isinstance(value.get("chpasswd"), Mapping)
        if set_passwords:
            yield from _set_passwords(value, path, ctx)
        for key in value:
            child = value[key]
            if set_passwords and key in ("password", "chpasswd"):
                continue
            if not skip(child) and credential_pair(key, child):
                yield (*path, key), str(key)
            else:
                yield from _walk(child, (*path, key), ctx)
    elif _is_seq(value):
        items = list(value)
        for i, item in enumerate(items):
            before = items[i - 1] if i else None
            if (isinstance(before, str) and isinstance(item, str) and (flag := _FLAG_ITEM.fullmatch(before))
                    and is_credential_key(flag.group("name")) and not item.startswith("-") and not skip(item)
                    and is_credential_value(item)):
                yield (*path, i), before
            else:
                yield from _walk(item, (*path, i), ctx)

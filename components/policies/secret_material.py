"""Recognise secret material in text (pure), however it is spelled: private keys, kubeconfig
credentials, AWS keys, tokens.

Patterns aim at the material this project handles (cluster CA keys, admin kubeconfigs, k8s join
tokens, the CAPI-style join auth token) and at common leaks (static AWS keys, bearer tokens).
Each finding names a kind, never the value: policy messages end up in CI logs.

The same material is looked for in every decoding a consumer of the text applies, nested:
- base64, standard or URL-safe, padded or not, on one line or wrapped at any width (Secret
  `data`, kubeconfig `client-key-data`, EC2 `userDataBase64`, cloud-init `encoding: b64`, MIME
  parts, YAML block scalars);
- gzip inside base64 (cloud-init accepts gzipped user-data, and `write_files` `encoding: gz+b64`);
- hex; JSON string escapes (`\\n`, `\\"`, `\\u002d`); percent-encoding;
- a private key's DER without PEM armour (PKCS#1, PKCS#8, SEC1 start with version INTEGER 0 or 1:
  RFC 8017 A.1.2, RFC 5208 5, RFC 5915 3; certificates and public keys do not).
Decoding is bounded so that a hostile input stays linear: at most MAX_LAYERS decodings deep, and
all decoded text of one call together at most twice the input plus INFLATE_RATIO times it, and
never more than DECODE_ALLOWANCE extra (gzip inflates into what is left, never more: material
behind more padding than that is not seen).

`credential_literals` finds the other spelling of a secret: a literal value under an environment
variable name that says it is a credential (`DB_PASSWORD: hunter2`), where no pattern can tell.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from collections.abc import Iterator, Mapping
from typing import Any, TypeGuard
from urllib.parse import unquote

from ..settings.secrets import CREDENTIAL_PAIRS, CREDENTIAL_WORDS
from .props import is_seq

MAX_LAYERS = 4  # base64 of gzip of base64 of a kubeconfig is three; one to spare
# User-data is at most 16 KiB and real cloud-configs compress 3-10x: one gzipped even 64x is seen
# whole, and a gzip bomb costs at most 64 times its own size (about a second at the cap).
INFLATE_RATIO = 64
DECODE_ALLOWANCE = 4 << 20

_PEM_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PUTTY_KEY = re.compile(r"PuTTY-User-Key-File-\d+:")
# A kubeconfig (clientcmd/api/v1 Config) in block YAML, flow YAML or JSON.
_KUBECONFIG = re.compile(r"(?m)^[ \t]*users:[ \t]*$"
                         r"|(?:^|[\s{,\"'])(?:kind[\"']?\s*:\s*[\"']?Config\b|current-context[\"']?\s*:)")
_KUBE_CRED = re.compile(r"(?:^|[\s{,\"'])(client-key-data|token|password)[\"']?\s*:\s*['\"]?([^\s'\",}#]+)")
_AWS_ACCESS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")
_AWS_SECRET = re.compile(r"(?i)aws_secret_access_key[\"']?\s*[=:]\s*['\"]?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])")
_KUBEADM_TOKEN = re.compile(r"\b[a-z0-9]{6}\.[a-z0-9]{16}\b")
_BEARER = re.compile(r"(?i)\bauthorization:\s*bearer\s+([A-Za-z0-9._~+/-]{16,}=*)")
# A literal (not a shell variable or command substitution) handed to commands that take secrets.
_LITERAL_ARG = r"\s+['\"]?(?!\$)([A-Za-z0-9+/=._-]{16,})"
_JOIN_CMD = re.compile(r"\bk8s\s+join-cluster" + _LITERAL_ARG)
_CAPI_TOKEN = re.compile(r"(?i)(?:capi-auth-token:|x-capi\s+set-auth-token)" + _LITERAL_ARG)
# Placeholders that look like values but are not secrets.
_NOT_A_VALUE = re.compile(r"^(?:\$|\{\{|<|\[secret|REDACTED|\*+$)", re.IGNORECASE)

# Encoded runs worth decoding. Character classes are disjoint from their delimiters, so every
# pattern matches in linear time.
_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{20,}={0,2}")
_B64_LINES = re.compile(r"(?m)(?:^[ \t]*[A-Za-z0-9+/=]+[ \t]*(?:\r?\n|\Z)){2,}")
_HEX_RUN = re.compile(r"(?<![0-9A-Za-z])(?:[0-9A-Fa-f]{2}){20,}(?![0-9A-Za-z])")
_JSON_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|([nrtbf\"\\/]))")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_JSON_CHARS = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/"}


class _Budget:
    """Decoded characters still allowed for one `findings` call."""

    def __init__(self, text: str) -> None:
        self.left = 2 * len(text) + min(INFLATE_RATIO * len(text), DECODE_ALLOWANCE)

    def take(self, size: int) -> bool:
        self.left -= size
        return self.left >= 0


def findings(text: str) -> list[str]:
    """Kinds of secret material in `text` or any decoding of it (empty when none). Order is stable."""
    if not text or not isinstance(text, str):
        return []
    found: dict[str, None] = {}
    _scan(text, 0, found, _Budget(text), set())
    return list(found)


def _scan(text: str, layer: int, found: dict[str, None], budget: _Budget, seen: set[tuple[str, str]]) -> None:
    for kind in _kinds(text):
        found.setdefault(kind)
    if layer >= MAX_LAYERS:
        return
    for view in _decodings(text, budget, seen):
        if isinstance(view, bytes):
            if _is_der_private_key(view):
                found.setdefault("private key (DER)")
        else:
            _scan(view, layer + 1, found, budget, seen)


def _kinds(text: str) -> Iterator[str]:
    # Cheap substring tests first: each regex runs only where its anchor word appears.
    lower = text.lower()
    if ("private key" in lower and _PEM_KEY.search(text)) or ("putty" in lower and _PUTTY_KEY.search(text)):
        yield "PEM private key"
    if ("users" in text or "Config" in text or "current-context" in text) and _KUBECONFIG.search(text):
        creds = sorted({m.group(1) for m in _KUBE_CRED.finditer(text) if not _NOT_A_VALUE.match(m.group(2))})
        if creds:
            yield f"kubeconfig credentials ({', '.join(creds)})"
    if "aws_secret_access_key" in lower and _AWS_SECRET.search(text):
        yield "AWS secret access key"
    elif ("AKIA" in text or "ASIA" in text) and _AWS_ACCESS_KEY_ID.search(text):
        yield "static AWS access key id"
    if "token" in lower and _KUBEADM_TOKEN.search(text):
        yield "bootstrap token"
    if "bearer" in lower and _BEARER.search(text):
        yield "bearer token"
    if ("join-cluster" in text and _JOIN_CMD.search(text)) or _is_k8s_join_token(text):
        yield "Canonical Kubernetes join token"
    if "capi" in lower and _CAPI_TOKEN.search(text):
        yield "join auth token"


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


def _decodings(text: str, budget: _Budget, seen: set[tuple[str, str]]) -> Iterator[str | bytes]:
    """Every decoding of `text` or of a run inside it: text where it is UTF-8, else bytes."""
    if "\\" in text:
        unescaped = _JSON_ESCAPE.sub(_unescape, text)
        if unescaped != text and budget.take(len(unescaped)):
            yield unescaped
    if _PERCENT.search(text):
        unquoted = unquote(text)
        if unquoted != text and budget.take(len(unquoted)):
            yield unquoted
    runs = [m.group(0) for m in _B64_RUN.finditer(text)]
    runs += ["".join(m.group(0).split()) for m in _B64_LINES.finditer(text)]
    whole = "".join(text.split())
    if whole not in runs and _B64_RUN.fullmatch(whole):
        runs.append(whole)
    for run in runs:
        if len(run) >= 20 and ("b64", run) not in seen:
            seen.add(("b64", run))
            if (data := _b64(run)) is not None:
                yield from _as_views(data, budget)
    for run in (m.group(0) for m in _HEX_RUN.finditer(text)):
        if ("hex", run) not in seen:
            seen.add(("hex", run))
            yield from _as_views(bytes.fromhex(run), budget)


def _unescape(match: re.Match[str]) -> str:
    code, char = match.groups()
    return chr(int(code, 16)) if code else _JSON_CHARS[char]


def _b64(run: str) -> bytes | None:
    run = run.rstrip("=")
    if len(run) % 4 == 1:
        return None
    padded = run + "=" * (-len(run) % 4)
    try:
        if "-" in run or "_" in run:
            return base64.urlsafe_b64decode(padded)
        return base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        return None


def _as_views(data: bytes, budget: _Budget) -> Iterator[str | bytes]:
    if data[:2] == b"\x1f\x8b":  # gzip (RFC 1952), inflated into what the budget has left
        data = _gunzip(data, max(budget.left, 0))
    if not data or not budget.take(len(data)):
        return
    try:
        if b"\0" not in data:  # text never holds NUL: binary stays bytes, for the DER check only
            yield data.decode("utf-8")
            return
    except UnicodeDecodeError:
        pass
    yield data


def _gunzip(data: bytes, limit: int) -> bytes:
    if limit <= 0:  # zlib reads max_length 0 as "no limit"
        return b""
    try:
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        return inflater.decompress(data, limit)
    except zlib.error:
        return b""


def _is_der_private_key(data: bytes) -> bool:
    """A DER SEQUENCE spanning `data` whose first element is the version INTEGER of a private key:
    0 followed by an INTEGER (PKCS#1 RSA / DSA) or a SEQUENCE (PKCS#8 AlgorithmIdentifier), or 1
    followed by an OCTET STRING (SEC1 EC)."""
    if len(data) < 8 or data[0] != 0x30:
        return False
    if data[1] < 0x80:
        length, start = data[1], 2
    elif data[1] in (0x81, 0x82, 0x83):
        size = data[1] - 0x80
        length, start = int.from_bytes(data[2:2 + size], "big"), 2 + size
    else:
        return False
    if start + length != len(data):
        return False
    body = data[start:start + 4]
    return (body[:3] == b"\x02\x01\x00" and body[3:4] in (b"\x02", b"\x30")) or body == b"\x02\x01\x01\x04"


# --- credentials by name ------------------------------------------------------------------------

_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
# One table of credential words: the settings' add-on values rule reads the same (docs/adr/0038).
_CREDENTIAL_WORDS = CREDENTIAL_WORDS
_CREDENTIAL_PAIRS = CREDENTIAL_PAIRS


def is_credential_name(name: Any) -> TypeGuard[str]:
    """An environment variable name whose last word says it holds a credential: `DB_PASSWORD`,
    `AWS_SECRET_ACCESS_KEY`, `GITHUB_TOKEN`; not `PASSWORD_FILE`, `SECRET_NAME`, `TOKEN_TTL`."""
    if not isinstance(name, str) or not _ENV_NAME.match(name):
        return False
    words = [w for w in name.split("_") if w]
    return bool(words) and (words[-1] in _CREDENTIAL_WORDS or tuple(words[-2:]) in _CREDENTIAL_PAIRS)


def is_literal(value: Any) -> bool:
    """A value that is the thing itself: not empty, not a placeholder or a `$(VAR)` reference."""
    return isinstance(value, str) and bool(value.strip()) and not _NOT_A_VALUE.match(value.strip())


def credential_literals(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path of the value, variable name) for literal credentials spelled as environment
    variables: `{name: DB_PASSWORD, value: x}` (a container's env) or `{DB_PASSWORD: x}` (a
    ConfigMap for envFrom, a chart's `env` map). `valueFrom` references are not literals."""
    if isinstance(value, Mapping):
        name = value.get("name")
        if is_credential_name(name) and is_literal(value.get("value")):
            yield (f"{path}.value" if path else "value"), name
        for key in value:
            child = f"{path}.{key}" if path else str(key)
            if is_credential_name(key) and is_literal(value[key]):
                yield child, key
            else:
                yield from credential_literals(value[key], child)
    elif is_seq(value):
        for i, item in enumerate(value):
            yield from credential_literals(item, f"{path}[{i}]")


# --- credentials by name in a file's text -------------------------------------------------------
# `credential_assignments` reads a file's text (user-data, and every file it writes, in any encoding
# `findings` decodes) for a literal under a name that says credential, in the spellings files use:
# env files `NAME=value` / `export NAME=value`, YAML `name: value`, JSON `"name": "value"`, INI and
# TOML `name = value`, systemd `Environment="NAME=value"`, command lines `--db-password=value`, and a
# manifest's `- name: DB_PASSWORD` / `value: x` pair.

# A name starts a line or follows a delimiter; the value is quoted or runs to whitespace or a
# delimiter. No delimiter a name may follow can occur inside an unquoted value, and values match
# possessively: each run of text is scanned once (linear on hostile input).
_ASSIGNMENT = re.compile(
    r"""(?:^|(?<=[\s;,{(\["']))(?P<q>["']?)(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,127})(?P=q)[ \t]*(?::=|=|:(?!:))[ \t]*"""
    r"""(?P<value>"[^"\r\n]*+"|'[^'\r\n]*+'|[^\s,;(){}\[\]<>|\\"'#]++(?=[\s,;}\])"'#]|$))""", re.MULTILINE)
# Command-line flags: `--db-password=value`, `-api-key=value` (the value stops at `=`, padding aside).
_FLAG = re.compile(r"""(?<![\w-])--?(?P<name>[A-Za-z][A-Za-z0-9_-]{0,127})="""
                   r"""(?P<value>[^\s=;"'`|&<>()]++={0,2})(?=[\s;"'`|&)]|$)""")
_ENV_PAIR = re.compile(r"""(?m)^[ \t]*-?[ \t]*name:[ \t]*["']?(?P<name>[A-Za-z_][A-Za-z0-9_.-]{0,127})["']?"""
                       r"""[ \t]*\r?\n[ \t]*value:[ \t]*(?P<value>"[^"\r\n]*"|'[^'\r\n]*'|[^\s#]+)""")
_NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Last words that say the value is a credential; `key` only after a word that makes it a secret one
# (`PUBLIC_KEY`, `cacheKey`, a bare `key` are not); `pwd` and `pass` not alone (`PWD` is the
# working directory). A name that refers to a credential elsewhere is not one (`existingSecret`,
# `imagePullSecret`: a Secret's name).
_FILE_CREDENTIAL_WORDS = frozenset({"password", "passwd", "passphrase", "secret", "token", "apikey", "credential",
                                    "credentials"})
_FILE_CREDENTIAL_PAIRS = frozenset({"api", "access", "private", "secret", "signing", "encryption", "auth", "master",
                                    "session", "client", "license", "app"})
_REFERRING_WORDS = frozenset({"existing", "pull"})
_NOT_SECRET_VALUES = frozenset({"true", "false", "yes", "no", "on", "off", "null", "none", "nil", "required",
                                "optional", "enabled", "disabled", "auto", "default"})
_NUMBER_OR_QUANTITY = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]+)?[A-Za-zµ]{0,3})+")  # 15m, 1h30m, 512Mi, 0.5
_CODE_REFERENCE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
MIN_CREDENTIAL_LENGTH = 6


def name_words(name: str) -> list[str]:
    """`dbPassword` -> [db, password]; `X_API_KEY` -> [x, api, key]; `APIKey` -> [api, key]."""
    return [w.lower() for part in re.split(r"[_.\-]+", name) for w in _NAME_WORD.findall(part)]


def is_credential_key(name: Any) -> bool:
    """A variable or key name, in any case and with any separator, whose last word says credential."""
    if not isinstance(name, str):
        return False
    words = name_words(name)
    if not words or _REFERRING_WORDS & set(words):
        return False
    last = words[-1]
    if last in _FILE_CREDENTIAL_WORDS or last.endswith(("password", "passwd")):
        return True
    if last in ("pwd", "pass"):
        return len(words) > 1
    return last == "key" and len(words) > 1 and words[-2] in _FILE_CREDENTIAL_PAIRS


def looks_like_credential(value: str) -> bool:
    """A literal long enough to be a credential. Not one: a reference (`$VAR`, `${VAR}`, `$(cmd)`,
    `` `cmd` ``, `{{ template }}`, `<placeholder>`, `[secret]`), a path, a URL without user info, a
    number, a duration or size (`15m`, `512Mi`), a boolean or a mode word, a run of one character,
    prose (whitespace inside), code (`self.token`; calls and subscripts never match as values), a
    word of one character class shorter than 16 (`unexpected`, `changeme`)."""
    v = value.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        v = v[1:-1].strip()
    if len(v) < MIN_CREDENTIAL_LENGTH or any(c.isspace() for c in v) or _NOT_A_VALUE.match(v):
        return False
    if "${" in v or "$(" in v or "`" in v or "{{" in v or v.startswith(("/", "./", "../", "~/", "@", "%")):
        return False
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", v) and "@" not in v:
        return False
    if _CODE_REFERENCE.fullmatch(v):  # `self.token`, `args.password`: code, not a literal
        return False
    if v.lower() in _NOT_SECRET_VALUES or _NUMBER_OR_QUANTITY.fullmatch(v) or len(set(v)) == 1:
        return False
    # A single-class word (`unexpected`, `changeme`, `kube-system`) is prose, a placeholder or a
    # name more often than a secret; generated secrets mix classes or are long.
    classes = sum(1 for test in (str.islower, str.isupper, str.isdigit) if any(test(c) for c in v))
    classes += any(not c.isalnum() and c not in "-_." for c in v)  # separators do not make a word a secret
    return classes >= 2 or len(v) >= 16


def _named_literals(text: str, nested: bool = True) -> Iterator[str]:
    for pattern in (_ASSIGNMENT, _FLAG, _ENV_PAIR):
        for m in pattern.finditer(text):
            name, value = m.group("name"), m.group("value")
            if is_credential_key(name) and looks_like_credential(value):
                yield name
            elif nested and pattern is _ASSIGNMENT and "=" in value:  # systemd Environment="NAME=value"
                yield from _named_literals(value.strip("\"'"), nested=False)


def credential_assignments(text: str) -> list[str]:
    """Names of credential-named literals in `text` or any decoding of it (bounded as `findings`)."""
    if not text or not isinstance(text, str):
        return []
    found: dict[str, None] = {}
    budget, seen = _Budget(text), set[tuple[str, str]]()

    def scan(view: str, layer: int) -> None:
        for name in _named_literals(view):
            found.setdefault(name)
        if layer < MAX_LAYERS:
            for decoded in _decodings(view, budget, seen):
                if isinstance(decoded, str):
                    scan(decoded, layer + 1)

    scan(text, 0)
    return list(found)

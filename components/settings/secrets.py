"""Credentials in add-on values (docs/adr/0038), pure: which values look like one, which are Pulumi
secrets, and how they are handed on.

`gpuStack.addons.<x>.values` is free-form Helm values, so a registry password can be written there.
A stack file is committed and `plan` writes the values into out/, so a credential is accepted
there only as a Pulumi secret (`pulumi config set --secret --path ...`, which stores
`secure: v1:...` at that place). Such a value becomes a `SecretText`: a str (every rule reads it
as the value) that never prints itself, and that the add-on set hands to its Helm release as a
Pulumi secret (components/addons/addon_set.py), so the state, previews and plans show `[secret]`.

What the program is told about secrets (pulumi/pulumi sdk/go/common/resource/config/value.go,
unmarshalValue: `c.secure = hasSecureValue(obj)`): a structured key holding one secure value is
secret AS A WHOLE, and the Python SDK hands the program its decrypted JSON with only that key
name listed secret (pulumi/runtime/config.py is_config_secret). Which leaf was secure is lost, so
under the engine every string in add-on values is taken as secret once the settings key is
(`mark_secrets(..., whole_key_secret=True)`); the offline plan reads the stack file and knows the
exact leaves (their ciphertext, never decrypted, becomes `[secret]`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from .problems import ROOT, Problem, field_path

SECURE = "secure"  # a Pulumi stack file's encrypted value: `{secure: v1:...}` (config.Value YAML form)
REDACTED = "[secret]"  # what plans show for a secret (components/plan/mockengine.py MASK)
CONFIG_KEY = "ck8s-gpu:settings"


class SecretText(str):
    """A secret string value. It IS the string for every rule (`str()`, comparisons, regexes: a
    rule normalising with `str(value)` must keep working under the engine, where every string of
    the add-on values is one); only its repr (what pydantic errors and logs print) and YAML's safe
    dumper write `[secret]`. `reveal()` gives the plain text to wrap in `pulumi.Output.secret`."""

    def __repr__(self) -> str:
        return f"SecretText({REDACTED!r})"

    def reveal(self) -> str:
        return str.__str__(self)  # a plain str copy of the text


# A values document dumped in process (a tool rendering a chart with the final values) writes
# `[secret]`, never the text: PyYAML's SafeDumper would otherwise refuse the str subclass.
yaml.add_representer(SecretText, lambda dumper, _value: dumper.represent_str(REDACTED), Dumper=yaml.SafeDumper)


def is_secure_leaf(value: Any) -> bool:
    """`{secure: <ciphertext>}` as a stack file holds an encrypted value (one key, a string)."""
    return isinstance(value, Mapping) and set(value) == {SECURE} and isinstance(value[SECURE], str)


# --- what looks like a credential -------------------------------------------------------------
# The words are those of components/policies/secret_material.py (is_credential_name), which reads
# environment variable names; settings cannot import the policies (tests/unit/test_layers.py), so
# the policy's words live here and it reads them from this module.
CREDENTIAL_WORDS = frozenset({"PASSWORD", "PASSWD", "PASS", "SECRET", "TOKEN", "APIKEY", "CREDENTIALS"})
CREDENTIAL_PAIRS = frozenset({("API", "KEY"), ("ACCESS", "KEY"), ("PRIVATE", "KEY"), ("SECRET", "KEY"),
                              ("SIGNING", "KEY"), ("ENCRYPTION", "KEY"), ("CLIENT", "SECRET")})
# Helm charts' names for a value that NAMES a Kubernetes Secret or file, not the credential itself:
# `existingSecret` (grafana admin.existingSecret, bitnami charts), `imagePullSecret`, `secretName`,
# `passwordFile` (the last word is another; the first two name a Secret, as the node-file policy reads them).
_REFERRING_WORDS = frozenset({"EXISTING", "PULL"})
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Placeholders, template expressions and references: not the thing itself.
_NOT_A_VALUE = re.compile(r"^(?:\$|\{\{|<|\[secret|REDACTED$|\*+$|changeme$|none$|null$)", re.IGNORECASE)
# Text that is a credential whatever its key is called. Each names its format's source; kinds only,
# the value is never echoed.
_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a PEM private key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")),  # RFC 7468 section 10/11
    # IAM User Guide, "Unique identifiers": AKIA (long-term) / ASIA (temporary) access key ids.
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    # GitHub docs, "About authentication to GitHub", token prefixes ghp_ gho_ ghu_ ghs_ ghr_ github_pat_.
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    # RFC 7519 JWT (JWS compact serialization: base64url header.payload.signature, header `{"`).
    ("a JSON Web Token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    # RFC 3986 userinfo `user:password@` in a URL.
    ("a URL with a password", re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@")),
    # A Docker config (`kubernetes.io/dockerconfigjson`): "auths" with a base64 `auth` or `password`.
    ("a Docker registry config with credentials", re.compile(r'"auths"\s*:.*"(?:auth|password)"\s*:\s*"[^"]', re.S)),
)


def key_words(key: str) -> list[str]:
    """`repoPassword` / `repo_password` / `REPO-PASSWORD` / `s3SecretAccessKey` -> upper-case words."""
    return [w.upper() for w in _WORD.findall(key)]


def is_credential_key(key: Any) -> bool:
    """A values key that says its value is a credential: its last word (`password`, `token`,
    `secret`, `apiKey`, ...) as the policy pack reads environment names; not `passwordFile`,
    `secretName`, `tokenTTL` (the last word is another), nor `existingSecret` (names a Secret)."""
    if not isinstance(key, str):
        return False
    words = key_words(key)
    if not words or _REFERRING_WORDS & set(words):
        return False
    return words[-1] in CREDENTIAL_WORDS or tuple(words[-2:]) in CREDENTIAL_PAIRS


def is_literal(value: Any) -> bool:
    """A value that is the thing itself: a non-empty string or number, not a placeholder/template."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and bool(value.strip()) and not _NOT_A_VALUE.match(value.strip())


def shape(value: str) -> str | None:
    """Which credential format `value` holds (None: none of those known)."""
    return next((name for name, pattern in _SHAPES if pattern.search(value)), None)


def credential_problem(key: Any, value: Any) -> str | None:
    """Why the plain (non-secret) value under `key` is a credential; None when it is not one."""
    if isinstance(value, SecretText):
        return None
    if is_credential_key(key) and is_literal(value):
        return f"the key '{key}' names a credential"
    if isinstance(value, str) and (kind := shape(value)) is not None:
        return f"the value is {kind}"
    return None


def leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, leaf) of every non-container value; mappings by key, lists by index."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from leaves(v, (*path, k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from leaves(v, (*path, i))
    else:
        yield path, value


def how_to_pass(where: str) -> str:
    """The fix, named for the field: set it as a Pulumi secret at that path."""
    return (f"a stack file is committed and `plan` writes the values into out/: pass it as a Pulumi secret, "
            f"`pulumi config set --secret --path '{CONFIG_KEY}.{where.removeprefix(ROOT + '.')}' <value>` "
            "(the stack file then holds `secure: v1:...` there; the release gets it as a secret)")


def values_problems(addon_key: str, values: Mapping[str, Any]) -> Iterator[Problem]:
    """Credentials in plain text in one add-on's `values` override."""
    base = ("gpuStack", "addons", addon_key, "values")
    for path, leaf in leaves(values):
        key = next((p for p in reversed(path) if isinstance(p, str)), None)
        why = credential_problem(key, leaf)
        if why is not None:
            where = field_path((*base, *path))
            yield where, f"looks like a credential ({why}); {how_to_pass(where)}"


# --- secure values in, SecretText out -------------------------------------------------------------

def _mark(value: Any, whole: bool) -> Any:
    if is_secure_leaf(value):
        return SecretText(REDACTED)  # the offline plan: ciphertext nobody decrypts here
    if isinstance(value, Mapping):
        return {k: _mark(v, whole) for k, v in value.items()}
    if isinstance(value, list):
        return [_mark(v, whole) for v in value]
    if whole and isinstance(value, str) and not isinstance(value, SecretText):
        return SecretText(value)
    return value


def mark_secrets(raw: Any, *, whole_key_secret: bool = False) -> tuple[Any, list[Problem]]:
    """Raw settings with each add-on's secret values as SecretText, and the places a secure value
    cannot go (anywhere but add-on values: a setting the program reads is never secret).
    `whole_key_secret`: the engine says the settings key holds a secret somewhere (module doc)."""
    if not isinstance(raw, Mapping):
        return raw, []
    out = dict(raw)
    addons = (raw.get("gpuStack") or {}).get("addons") if isinstance(raw.get("gpuStack"), Mapping) else None
    values_at: set[tuple[Any, ...]] = set()
    if isinstance(addons, Mapping):
        new_addons = dict(addons)
        for key, addon in addons.items():
            if isinstance(addon, Mapping) and isinstance(addon.get("values"), Mapping):
                new_addons[key] = {**addon, "values": _mark(addon["values"], whole_key_secret)}
                values_at.add(("gpuStack", "addons", key, "values"))
        out["gpuStack"] = {**raw["gpuStack"], "addons": new_addons}
    problems = [
        (field_path(path), "a Pulumi secret (secure:) is accepted only under gpuStack.addons.<x>.values: this setting "
                       "is read by the program and is not secret; set it in plain text")
        for path, _ in _secure_leaves(raw) if path[:4] not in values_at]
    return out, problems


def _secure_leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if is_secure_leaf(value):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _secure_leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _secure_leaves(v, (*path, i))


def secret_leaf_paths(values: Any) -> list[tuple[Any, ...]]:
    """Paths of the SecretText leaves of (merged) values."""
    return [path for path, leaf in leaves(values) if isinstance(leaf, SecretText)]


def redacted(values: Any) -> Any:
    """Values with every SecretText as `[secret]`: for digests and anything else kept in clear."""
    if isinstance(values, Mapping):
        return {k: redacted(v) for k, v in values.items()}
    if isinstance(values, list | tuple):
        return [redacted(v) for v in values]
    return REDACTED if isinstance(values, SecretText) else values

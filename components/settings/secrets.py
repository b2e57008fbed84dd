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

from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from .credentials import credential_assignments, credential_literals, findings
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
# One recogniser for add-on values, the files a node writes and Kubernetes objects
# (components/settings/credentials.py, issue 45): names, values and shapes are judged there.

def credential_problem(value: str) -> str | None:
    """Why the plain string `value` (any leaf, whatever its key) holds a credential; None when not."""
    if kinds := findings(value):
        return f"the value holds {', '.join(kinds)}"
    if names := credential_assignments(value):
        return f"the value writes {', '.join(names)} by value"
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
    """Credentials in plain text in one add-on's `values` override: a credential under a key, an
    `{name, value}` pair, a file or a flag (`credential_literals`), or in a string's text."""
    base = ("gpuStack", "addons", addon_key, "values")
    plain = set[tuple[Any, ...]]()
    for path, name in credential_literals(values, ignore=lambda v: isinstance(v, SecretText)):
        if path not in plain:
            plain.add(path)
            where = field_path((*base, *path))
            yield where, f"looks like a credential ('{name}' names a credential); {how_to_pass(where)}"
    for path, leaf in leaves(values):
        if path in plain or not isinstance(leaf, str) or isinstance(leaf, SecretText):
            continue
        if (why := credential_problem(leaf)) is not None:
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

"""Reading resource inputs the way policies need them (pure helpers, no pulumi_policy import).

Policies see inputs as the engine sends them: camelCase keys, nested dicts and lists, values that
are unknown during a preview (`<computed>` in the offline plan, sentinels in the real engine).
An unknown value is never judged: a policy cannot know what it will be.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..kube.helm_values import helm_truthy as helm_truthy  # the one reading of Helm's `if`

# The offline plan's marker for values providers compute, and the real engine's unknown sentinels
# (pulumi_policy/proxy.py UNKNOWN_*_VALUE) for when a proxy hands them through.
UNKNOWN_STRINGS = frozenset({
    "<computed>",
    "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
    "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
    "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
    "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
    "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
})
_PATH = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def is_seq(value: Any) -> bool:
    """A list as policies receive it: a list offline, a read-only Sequence proxy in the real pack
    (pulumi_policy/proxy.py `_ListProxy`), never a string."""
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def plain(value: Any) -> Any:
    """Deep copy into plain dicts and lists (the real pack hands out read-only proxies)."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if is_seq(value):
        return [plain(v) for v in value]
    return value


def is_unknown(value: Any) -> bool:
    return isinstance(value, str) and value in UNKNOWN_STRINGS


def get(props: Any, path: str, default: Any = None) -> Any:
    """`get(p, "a.b[0].c")`: the value there, or `default` when any step is missing."""
    node = props
    for key, index in _PATH.findall(path):
        if index:
            if not is_seq(node) or int(index) >= len(node):
                return default
            node = node[int(index)]
        else:
            if not isinstance(node, Mapping) or key not in node:
                return default
            node = node[key]
    return node


def items(props: Any, path: str) -> list[Any]:
    """The list at `path` (an absent or unknown list is empty)."""
    value = get(props, path)
    return list(value) if is_seq(value) else []


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every scalar under `value` with its path (`a.b[0].c`), depth first."""
    if isinstance(value, Mapping):
        for key in value:
            yield from leaves(value[key], f"{path}.{key}" if path else str(key))
    elif is_seq(value):
        for i, item in enumerate(value):
            yield from leaves(item, f"{path}[{i}]")
    else:
        yield path, value


def under(path: str, prefixes: frozenset[str] | set[str]) -> bool:
    """True when `path` is one of `prefixes` or lies inside one (`a.b` is under `a`)."""
    return any(path == p or path.startswith((p + ".", p + "[")) for p in prefixes)


def truthy_flag(value: Any) -> bool | None:
    """A boolean the AWS provider may spell as a string (launch templates: `"true"`). None = unknown."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def decode_user_data(props: Mapping[str, Any]) -> str | None:
    """User-data as the instance will see it: plain `userData`, or base64 (`userDataBase64`, and
    launch templates, whose `userData` is base64). None when absent or unknown."""
    for key in ("userData", "userDataBase64"):
        raw = props.get(key)
        if not isinstance(raw, str) or not raw or is_unknown(raw):
            continue
        decoded = _b64(raw)
        return decoded if decoded is not None else raw
    return None


def _b64(text: str) -> str | None:
    compact = "".join(text.split())
    if not re.fullmatch(r"[A-Za-z0-9+/=]+", compact) or len(compact) % 4:
        return None
    try:
        data = base64.b64decode(compact, validate=True)
        if data[:2] == b"\x1f\x8b":  # cloud-init accepts gzipped user-data
            data = gzip.decompress(data)
        return data.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, OSError, EOFError):
        return None

"""Names that must fit a length limit: the readable name when it fits, else a stable hashed form
(pure; standard library only, so every layer that derives a name can use it). docs/adr/0042.

A name is `<stem><suffix>`: the stem is the cluster name `ck8s-<environment>-<region>`, the suffix
what the object is (`-api`, `-velero`, `-control-plane-role`). When the whole is longer than the
limit, the stem is cut to a readable head and followed by `-` and the first 8 hex characters of
the SHA-256 of the WHOLE stem; the suffix stays. So:
- same stem, same name, forever (SHA-256, never Python's salted `hash()`);
- every hashed name of one cluster carries the same digest, whatever its limit (grep by it);
- two stems that share a head still differ by their digest (2^-32 per pair to collide);
- a name that fits is never touched: existing stacks keep their names.
"""

from __future__ import annotations

import hashlib

DIGEST_CHARS = 8  # lowercase hex: valid in every AWS name charset the program meets (S3 included)
_HASH_MARK = 1 + DIGEST_CHARS  # "-" + digest


def digest(stem: str) -> str:
    return hashlib.sha256(stem.encode()).hexdigest()[:DIGEST_CHARS]


def fit(stem: str, suffix: str, limit: int) -> str:
    """`stem + suffix` when at most `limit` characters, else `<head>-<digest(stem)><suffix>` of at
    most `limit`, `head` being the stem's longest prefix that fits (no trailing `-` or `.`). A
    suffix that leaves no room for a head gets `stem + suffix` back, for the name rules to report."""
    if len(stem) + len(suffix) <= limit:
        return stem + suffix
    room = limit - len(suffix) - _HASH_MARK
    head = stem[:room].rstrip("-.") if room > 0 else ""
    return f"{head}-{digest(stem)}{suffix}" if head else stem + suffix


def hashed_stems(stem: str) -> list[str]:
    """Every `<head>-<digest>` that `fit` can put in place of `stem`, longest first (for
    normalisers that must read a hashed name as the name it stands for)."""
    mark = f"-{digest(stem)}"
    heads = {stem[:n].rstrip("-.") for n in range(1, len(stem))}
    return sorted((h + mark for h in heads if h), key=len, reverse=True)

"""Every decoding of a text that its consumers apply, bounded (pure): the views the credential
recogniser (components/settings/credentials.py) reads besides the text itself.

- base64, standard or URL-safe, padded or not, on one line or wrapped at any width (Secret
  `data`, kubeconfig `client-key-data`, EC2 `userDataBase64`, cloud-init `encoding: b64`, MIME
  parts, YAML block scalars);
- gzip inside base64 (cloud-init accepts gzipped user-data, and `write_files` `encoding: gz+b64`);
- hex; JSON string escapes (`\\n`, `\\"`, `\\u002d`); percent-encoding;
- binary that is not text stays bytes (for the DER private key check, `is_der_private_key`).

Decoding is bounded so that a hostile input stays linear: at most MAX_LAYERS decodings deep, and
all decoded text of one call together at most twice the input plus INFLATE_RATIO times it, and
never more than DECODE_ALLOWANCE extra (gzip inflates into what is left, never more: material
behind more padding than that is not seen).
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Iterator
from urllib.parse import unquote

MAX_LAYERS = 4  # base64 of gzip of base64 of a kubeconfig is three; one to spare
# User-data is at most 16 KiB and real cloud-configs compress 3-10x: one gzipped even 64x is seen
# whole, and a gzip bomb costs at most 64 times its own size (about a second at the cap).
INFLATE_RATIO = 64
DECODE_ALLOWANCE = 4 << 20

# Encoded runs worth decoding. Character classes are disjoint from their delimiters, so every
# pattern matches in linear time.
_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{20,}={0,2}")
_B64_LINES = re.compile(r"(?m)(?:^[ \t]*[A-Za-z0-9+/=]+[ \t]*(?:\r?\n|\Z)){2,}")
_HEX_RUN = re.compile(r"(?<![0-9A-Za-z])(?:[0-9A-Fa-f]{2}){20,}(?![0-9A-Za-z])")
_JSON_ESCAPE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|([nrtbf\"\\/]))")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_JSON_CHARS = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/"}


class Budget:
    """Decoded characters still allowed for one scan of `text` (module doc)."""

    def __init__(self, text: str) -> None:
        self.left = 2 * len(text) + min(INFLATE_RATIO * len(text), DECODE_ALLOWANCE)

    def take(self, size: int) -> bool:
        self.left -= size
        return self.left >= 0


def decodings(text: str, budget: Budget, seen: set[tuple[str, str]]) -> Iterator[str | bytes]:
    """Every decoding of `text` or of a run inside it: text where it is UTF-8, else bytes. `seen`
    (shared by one scan) keeps a run met again in another view from being decoded twice."""
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
            if (data := b64(run)) is not None:
                yield from as_views(data, budget)
    for run in (m.group(0) for m in _HEX_RUN.finditer(text)):
        if ("hex", run) not in seen:
            seen.add(("hex", run))
            yield from as_views(bytes.fromhex(run), budget)


def _unescape(match: re.Match[str]) -> str:
    code, char = match.groups()
    return chr(int(code, 16)) if code else _JSON_CHARS[char]


def b64(run: str) -> bytes | None:
    """`run` decoded as base64 (standard or URL-safe, padding optional); None when it is not."""
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


def as_views(data: bytes, budget: Budget) -> Iterator[str | bytes]:
    if data[:2] == b"\x1f\x8b":  # gzip (RFC 1952), inflated into what the budget has left
        data = gunzip(data, max(budget.left, 0))
    if not data or not budget.take(len(data)):
        return
    try:
        if b"\0" not in data:  # text never holds NUL: binary stays bytes, for the DER check only
            yield data.decode("utf-8")
            return
    except UnicodeDecodeError:
        pass
    yield data


def gunzip(data: bytes, limit: int) -> bytes:
    """At most `limit` bytes of gzip `data` inflated (empty when it is not gzip)."""
    if limit <= 0:  # zlib reads max_length 0 as "no limit"
        return b""
    try:
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        return inflater.decompress(data, limit)
    except zlib.error:
        return b""


def is_der_private_key(data: bytes) -> bool:
    """A DER SEQUENCE spanning `data` whose first element is the version INTEGER of a private key:
    0 followed by an INTEGER (PKCS#1 RSA / DSA) or a SEQUENCE (PKCS#8 AlgorithmIdentifier), or 1
    followed by an OCTET STRING (SEC1 EC). RFC 8017 A.1.2, RFC 5208 5, RFC 5915 3; certificates
    and public keys do not start so."""
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

"""snapd's offline install from files: `snap ack <file>.assert`, then `snap install ./<file>.snap`
(k8s-snap release-1.34 docs/canonicalk8s/snap/howto/install/offline.md). Messages from
canonical/snapd 2.77 (ff6da804); paths relative to its root.

- `snap ack FILE` posts the file to /v2/assertions (cmd/snapd/cli/cmd_ack.go, client/asserts.go
  Ack): an unreadable file -> `error: cannot assert: open FILE: no such file or directory`; a body
  that is no assertion stream -> `cannot assert: cannot decode request body into assertions: ...`
  (daemon/api_asserts.go). The fake keeps the acked headers; it does not check signatures.
- `snap install PATH` (a name with `/` or ending `.snap` is a local file: cmd_snap_op.go
  isLocalContainer) without --dangerous: snapd derives the revision from the acked snap-revision
  assertion whose snap-sha3-384 is the file's digest and the snap-declaration of its snap-id
  (asserts/snapasserts DeriveSideInfo); none -> `error: cannot find signatures with metadata for
  snap/component "PATH"` (daemon/api_sideload_n_try.go readInfoAndDeriveSideInfo). A missing file ->
  `error: cannot open "PATH": open PATH: no such file or directory` (client/snap_op.go).
- A classic snap without --classic is refused (cmd/snapd/cli/error.go ErrorKindSnapNeedsClassic).
- A base not installed is fetched from the store (overlord/snapstate/handlers_prereq.go
  installPrereqs): unreachable -> the change fails as `cannot perform the following tasks:\n-
  Ensure prerequisites for "NAME" are available (cannot install snap base "BASE": ...)`
  (overlord/state/change.go changeError, handlers_prereq.go prereqError, snap.go).
- Then, on a classic system once seeded (the fake's nodes are), the snapd snap is fetched from the
  store before any snap but one of type snapd, os, base, kernel or gadget while the snapd snap is
  not installed (handlers_prereq.go doPrerequisites, installPrereqs, considerSnapdAsPrereq; since
  snapd 2.66, #14173: a `core` snap no longer stands in for it): unreachable -> `cannot install
  system snap "snapd": ...` (prereqError; spread tests/main/snapd-snap-auto-install). k8s-snap's
  offline.md does not mention it: it relies on the host's snapd snap.
- `snap list NAME` of a snap not installed -> `error: no matching snaps installed`
  (cmd/snapd/cli/cmd_list.go ErrNoMatchingSnaps); installed: a header, then the snap's row.

The fake's `.snap` file is its meta/snap.yaml text (name, version, base, confinement, type), not a
squashfs; its digest is the file's SHA3-384, base64url without padding, as snapd computes it
(asserts/snapasserts SnapFileSHA3_384).
"""

from __future__ import annotations

import base64
import hashlib
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.fakes.k8s_snap import network

CLASSIC = """
This revision of snap "{name}" was published using classic confinement and thus may
perform arbitrary system changes outside of the security sandbox that snaps are
usually confined to, which may put your system at risk.

If you understand and want to proceed repeat the command including --classic."""


class SnapError(Exception):
    pass


def is_local(name: str) -> bool:
    return "/" in name or name.endswith(".snap") or ".snap." in name


def file_digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha3_384(data).digest()).decode().rstrip("=")


def parse_assertions(text: str) -> list[dict[str, str]]:
    """The headers of each assertion of a stream (headers, a blank line, the signature, a blank
    line between assertions)."""
    out: list[dict[str, str]] = []
    for block in text.strip().split("\n\n"):
        if not block.startswith("type: "):
            continue  # a signature
        headers: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.partition(": ")
            if not sep:
                raise SnapError(f'cannot decode request body into assertions: header entry missing ":" '
                                f"separator: {line!r}")
            headers[key] = value
        out.append(headers)
    if not out:
        raise SnapError("cannot decode request body into assertions: unexpected EOF")
    return out


def ack(node: dict[str, Any], path: str) -> None:
    try:
        text = Path(path).read_text()
    except OSError:
        raise SnapError(f"cannot assert: open {path}: no such file or directory") from None
    try:
        node.setdefault("assertions", []).extend(parse_assertions(text))
    except SnapError as exc:
        raise SnapError(f"cannot assert: {exc}") from None


def _side_info(node: dict[str, Any], digest: str) -> tuple[str, str] | None:
    acked = node.get("assertions", [])
    rev = next((a for a in acked if a.get("type") == "snap-revision" and a.get("snap-sha3-384") == digest), None)
    if rev is None:
        return None
    decl = next((a for a in acked if a.get("type") == "snap-declaration" and a.get("snap-id") == rev.get("snap-id")),
                None)
    return None if decl is None else (decl["snap-name"], rev["snap-revision"])


def install_file(state: dict[str, Any], me_id: str, path: str, classic: bool) -> dict[str, Any]:
    """The snap a local file installs: {"name", "revision", "version"} (SnapError: refused)."""
    node = state["instances"][me_id]["node"]
    try:
        data = Path(path).read_bytes()
    except OSError:
        raise SnapError(f'cannot open "{path}": open {path}: no such file or directory') from None
    found = _side_info(node, file_digest(data))
    if found is None:
        raise SnapError(f'cannot find signatures with metadata for snap/component "{path}"')
    name, revision = found
    try:
        meta = yaml.safe_load(data.decode())
        assert isinstance(meta, dict) and meta.get("name") == name
    except (UnicodeDecodeError, yaml.YAMLError, AssertionError):
        raise SnapError(f"cannot read snap file: {path}: not a snap of the fake (meta/snap.yaml)") from None
    if meta.get("confinement") == "classic" and not classic:
        raise SnapError(CLASSIC.format(name=name))
    base = meta.get("base")
    if base and meta.get("type", "app") == "app" and base not in node.get("snap", {}):
        if not network.attempt(state, me_id, "snapd", network.SNAP_STORE, f"install base {base}"):
            raise SnapError(
                f'cannot perform the following tasks:\n- Ensure prerequisites for "{name}" are available '
                f'(cannot install snap base "{base}": Post "https://{network.SNAP_STORE}/v2/snaps/refresh": '
                f"{network.dial_timeout(network.SNAP_STORE)})")
        node.setdefault("snap", {})[base] = "latest/stable"  # what the fake store would have sent
    if meta.get("type", "app") == "app" and "snapd" not in node.get("snap", {}):
        if not network.attempt(state, me_id, "snapd", network.SNAP_STORE, "install snapd"):
            raise SnapError(
                f'cannot perform the following tasks:\n- Ensure prerequisites for "{name}" are available '
                f'(cannot install system snap "snapd": Post "https://{network.SNAP_STORE}/v2/snaps/refresh": '
                f"{network.dial_timeout(network.SNAP_STORE)})")
        node.setdefault("snap", {})["snapd"] = "latest/stable"
    node.setdefault("snap_local", {})[name] = True
    return {"name": name, "revision": revision, "version": str(meta.get("version", ""))}


def list_snap(node: dict[str, Any], name: str) -> int:
    """`snap list NAME` for a snap other than k8s (main.py lists k8s with its release)."""
    if name not in node.get("snap", {}):
        return error(SnapError("no matching snaps installed"))
    tracking = node["snap"][name]
    print("Name  Version  Rev  Tracking  Publisher  Notes")
    print(f"{name}  -  -  {tracking}  canonical**  {'snapd' if name == 'snapd' else '-'}")
    return 0


def error(exc: SnapError) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return 1

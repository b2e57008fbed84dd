"""Moving a pinned stack to the next track with its node images (issue 46, docs/runbooks/upgrade.md).

A pinned stack (`kubernetes.snap` with `fromImage: true`) boots images that carry one track's snap
and images (ADR 0039, 0043): a new track is a new snap pin AND new image lines. `repin` is the
one step that moves them together, offline:

- the stack file: `kubernetes.track`, `kubernetes.snap.version` and its `revisions`, and every
  `ami` that names an image line of images/ which it boots, to that line's new-track copy;
- images/: a new line per booted line, `<line>-k8s-<track>`, the same settings with the new track,
  snap version and this architecture's revision, published under a parameter naming the track
  (`.../k8s-<track>`; the control-plane default already does). The old lines stay: other stacks
  (and this one, until its nodes roll) still boot them.

An unpinned stack that boots a track's image line moves the same way, its file without a pin. It
says what to rebuild, in order, before `ck8s-gpu upgrade` rolls the nodes. Every file is edited
as text, so comments stay (as components/upgrade/stackfile.py does for the track); each result is
parsed again and must differ from the old one exactly where intended, or nothing is written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from ..settings.load import SETTINGS_KEY
from ..settings.model import Settings
from ..settings.rules.cluster import image_track
from ..upgrade.stackfile import StackFileError, with_track
from .agreement import booted_lines
from .settings import IMAGE_KEY, ImageSettings, image_settings_from_config


@dataclass(frozen=True)
class ImageLine:
    name: str  # images/Pulumi.<name>.yaml
    text: str
    settings: ImageSettings


@dataclass(frozen=True)
class Repinned:
    stack_text: str
    new_lines: tuple[tuple[str, str], ...]  # (name, text) of each new image stack file
    rebuild: tuple[str, ...]  # image stacks to build, in order (control planes first)
    changes: tuple[str, ...]  # what changed in the stack file, one line each


def line_name(name: str, track: str) -> str:
    return f"{name}-k8s-{track}"


def new_parameter(line: ImageSettings, track: str) -> str:
    """The parameter a line's new-track copy publishes under: one naming the track (the control-plane
    default, `.../k8s-<track>`, already does: its last level is replaced)."""
    if image_track(line.parameter) is not None:
        return line.parameter.rsplit("/", 1)[0] + f"/k8s-{track}"
    return f"{line.parameter}/k8s-{track}"


def _block(lines: list[str], start: int) -> int:
    """The end (exclusive) of the block whose key line is `start`: its deeper-indented lines."""
    indent = len(lines[start]) - len(lines[start].lstrip(" "))
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].lstrip().startswith("#")
                                or len(lines[end]) - len(lines[end].lstrip(" ")) > indent):
        end += 1
    return end


def _key_line(lines: list[str], key: str, lo: int, hi: int) -> int | None:
    block = re.compile(rf"^[ ]*{re.escape(key)}:[ ]*(#.*)?$")
    hits = [i for i in range(lo, hi) if block.match(lines[i].rstrip("\n"))]
    if len(hits) > 1:
        raise StackFileError(f"more than one `{key}:` block")
    return hits[0] if hits else None


def _sub_once(lines: list[str], lo: int, hi: int, pattern: str, repl: str, what: str) -> None:
    hits = [i for i in range(lo, hi) if re.search(pattern, lines[i])]
    if len(hits) != 1:
        raise StackFileError(f"found {len(hits)} `{what}` lines where one was expected; edit it by hand")
    lines[hits[0]] = re.sub(pattern, repl, lines[hits[0]], count=1)


def _with_snap(text: str, version: str, revisions: Mapping[str, int]) -> str:
    lines = text.splitlines(keepends=True)
    k = _key_line(lines, "kubernetes", 0, len(lines))
    if k is None:
        raise StackFileError("no `kubernetes:` block")
    snap = _key_line(lines, "snap", k + 1, _block(lines, k))
    if snap is None:
        raise StackFileError("kubernetes.snap is not a block of its own lines (`snap:` then `version:`, "
                             "`revisions:`): write it so, or move the pin by hand")
    end = _block(lines, snap)
    _sub_once(lines, snap + 1, end, r"(\bversion:\s*)[^\s#,}]+", rf"\g<1>{version}", "snap version")
    for arch, rev in revisions.items():
        _sub_once(lines, snap + 1, end, rf"(\b{arch}:\s*)\d+", rf"\g<1>{rev}", f"revisions.{arch}")
    return "".join(lines)


def _image_text(line: ImageLine, track: str, version: str, revision: int, parameter: str, source: str) -> str:
    lines = line.text.splitlines(keepends=True)
    image = _key_line(lines, IMAGE_KEY, 0, len(lines))
    if image is None:
        raise StackFileError(f"{source}: no `{IMAGE_KEY}:` block")
    end = _block(lines, image)
    k = _key_line(lines, "kubernetes", image + 1, end)
    if k is None:
        raise StackFileError(f"{source}: no `kubernetes:` block")
    k_end = _block(lines, k)
    _sub_once(lines, k + 1, k_end, r"(\btrack:\s*)[^\s#]+", rf"\g<1>{track}", "track")
    _sub_once(lines, k + 1, k_end, r"(\bversion:\s*)[^\s#,}]+", rf"\g<1>{version}", "snap version")
    _sub_once(lines, k + 1, k_end, r"(\brevision:\s*)\d+", rf"\g<1>{revision}", "snap revision")
    if parameter != line.settings.parameter:
        named = [i for i in range(image + 1, end) if re.match(r"^\s+parameterName:", lines[i])]
        if named:
            lines[named[0]] = re.sub(r"(parameterName:\s*)\S+", rf"\g<1>{parameter}", lines[named[0]], count=1)
        else:
            indent = " " * (len(lines[image]) - len(lines[image].lstrip(" ")) + 2)
            lines.insert(image + 1, f"{indent}parameterName: {parameter}\n")
    head = (f"# Written by `ck8s-gpu upgrade --repin` from images/Pulumi.{line.name}.yaml: the same line for "
            f"track {track}\n# (k8s {version}, revision {revision}), published under its own parameter; the old "
            "line stays for the stacks that still boot it.\n")
    return head + "".join(lines)


def _doc(text: str) -> dict[str, Any]:
    doc = yaml.safe_load(text) or {}
    return dict(doc.get("config") or {})


def repin(stack_text: str, settings: Settings, lines: Sequence[ImageLine], track: str, version: str,
          revisions: Mapping[str, int]) -> Repinned:
    """The stack file and the new image lines for `track` at snap `version` with `revisions`. Raises
    StackFileError when a file cannot be edited as intended (then nothing is to be written)."""
    pin = settings.kubernetes.snap
    by_name = {line.name: line for line in lines}
    booted = booted_lines(settings, [(line.name, line.settings) for line in lines])
    # A pinned stack pins every architecture it runs; an unpinned one needs only its image lines' own.
    needed = set(pin.revisions) if pin is not None else {image.architecture for _, _, image in booted}
    if not needed:
        raise StackFileError("the stack is not pinned and boots no image line of images/: `ck8s-gpu upgrade` "
                             "moves its track itself")
    missing = sorted(needed - set(revisions))
    if missing:
        raise StackFileError(f"give --revision for every architecture the stack pins or boots: {', '.join(missing)}")
    extra = sorted(set(revisions) - needed)
    if extra:
        raise StackFileError(f"the stack pins or boots no {', '.join(extra)} revision: give only "
                             f"{', '.join(sorted(needed))}")
    new_texts: dict[str, str] = {}
    moved: dict[str, str] = {}  # old parameter -> new
    order: list[tuple[int, str]] = []
    for _where, name, image in booted:
        new = line_name(name, track)
        if new in new_texts:
            continue
        parameter = new_parameter(image, track)
        revision = revisions.get(image.architecture)
        if revision is None:
            raise StackFileError(f"images/Pulumi.{name}.yaml is {image.architecture}: give --revision "
                                 f"{image.architecture}=<revision>")
        text = _image_text(by_name[name], track, version, revision, parameter, f"images/Pulumi.{name}.yaml")
        got = image_settings_from_config(_doc(text), f"images/Pulumi.{new}.yaml")  # refuses what it would
        if (got.track, got.snap.version, got.snap.revision, got.parameter) != (track, version, revision, parameter):
            raise StackFileError(f"images/Pulumi.{name}.yaml: could not write its {track} copy; edit it by hand")
        new_texts[new] = text
        moved[image.parameter] = parameter
        order.append((0 if image.role == "control-plane" else 1, new))

    out = with_track(stack_text, track)
    if pin is not None:
        out = _with_snap(out, version, revisions)
    for old, new in moved.items():
        out = re.sub(rf"(?<=ami:)(\s*[\"']?){re.escape(old)}(?=[\"']?\s*(#.*)?$)", rf"\g<1>{new}", out,
                     flags=re.MULTILINE)
    before, after = _doc(stack_text).get(SETTINGS_KEY) or {}, _doc(out).get(SETTINGS_KEY) or {}
    expected = _expected(before, track, version if pin else None, revisions, moved)
    if after != expected:
        raise StackFileError("could not move the track, the snap pin and the images alone; edit them by hand")
    changes = [f"kubernetes.track: {settings.kubernetes.track} -> {track}"]
    if pin is not None:
        changes.append(f"kubernetes.snap: {pin.version} ({_revs(pin.revisions)}) -> {version} ({_revs(revisions)})")
    changes += [f"{where}: {old} -> {moved[old]}" for where, old in _amis(settings) if old in moved]
    return Repinned(out, tuple(sorted(new_texts.items())), tuple(n for _, n in sorted(order)), tuple(changes))


def _revs(revisions: Mapping[Any, int]) -> str:
    return ", ".join(f"{a} {r}" for a, r in sorted(revisions.items()))


def _amis(settings: Settings) -> list[tuple[str, str]]:
    named = [("controlPlane.ami", settings.control_plane.ami)] + [
        (f"nodePools[{p.name}].ami", p.ami) for p in settings.node_pools]
    return [(where, ami) for where, ami in named if ami]


def _expected(before: Mapping[str, Any], track: str, version: str | None, revisions: Mapping[str, int],
              moved: Mapping[str, str]) -> dict[str, Any]:
    out = dict(before)
    k = dict(out.get("kubernetes") or {})
    k["track"] = track
    if version is not None:  # pinned: the pin moves with the track
        snap = dict(k.get("snap") or {})
        snap["version"] = version
        snap["revisions"] = {**(snap.get("revisions") or {}), **revisions}
        k["snap"] = snap
    out["kubernetes"] = k
    if isinstance(out.get("controlPlane"), dict) and out["controlPlane"].get("ami") in moved:
        out["controlPlane"] = {**out["controlPlane"], "ami": moved[out["controlPlane"]["ami"]]}
    out["nodePools"] = [({**p, "ami": moved[p["ami"]]} if isinstance(p, dict) and p.get("ami") in moved else p)
                        for p in (out.get("nodePools") or [])]
    if "nodePools" not in before:
        out.pop("nodePools")
    return out

#!/usr/bin/env python3
"""Build the smoke probe's and the pod sandbox's OCI images on this machine: no registry, no Docker.

The smoke chart runs ``/bin/bash /smoke/probe.sh`` (charts/gpu-smoke-test/templates/_helpers.tpl)
and the probe calls ``env``, ``grep``, ``date`` and ``sleep``; ``nvidia-smi`` is not in the image,
the GPU's CDI spec mounts it (as NVIDIA's does). So the image is a minimal root filesystem of this
host's own Debian binaries plus the shared libraries ``ldd`` names for them, in one uncompressed
layer, written as an OCI image layout archive that ``ctr images import`` reads
(image-spec v1.1: image-layout.md, manifest.md, config.md).

With ``--model-server BIN`` (the node tier passes tools/build.sh's ``ck8s-model-server``, a static
Go binary) the image also carries ``/usr/bin/ck8s-model-server``: the model-server stand-in of the
smoke test's ``inference`` case, which runs from the same image as the probes. With ``--gang-gate
BIN`` (tools/build.sh's ``ck8s-gang-gate``, static Go) it carries ``/usr/bin/ck8s-gang-gate``, the
controller the gang-gate add-on runs (components/addons/gang_gate.py).

The same root filesystem, with ``sleep infinity`` as its entrypoint, is the pod sandbox ("pause")
image containerd pins: kubelet's pods need one and registry.k8s.io cannot be reached here.

Deterministic: fixed mtimes, owners and order, so the same host binaries give the same digests
(the stack pins the probe by digest, like every other image).

    python tools/probe_image.py --out DIR     # prints "<kind> <reference> <archive>" lines
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

#: What the probe script runs (besides bash builtins); resolved on PATH of this host.
PROBE_COMMANDS = ("bash", "env", "grep", "date", "sleep")
REPOSITORY = "ck8s-gpu.local"
PROBE_NAME = f"{REPOSITORY}/smoke-probe"
PAUSE_NAME = f"{REPOSITORY}/pause"
#: Where the model-server stand-in sits in the image (charts/gpu-smoke-test templates/inference.yaml runs it).
MODEL_SERVER = "usr/bin/ck8s-model-server"
#: Where the gang gate sits in the image (components/addons/gang_gate.py runs it).
GANG_GATE = "usr/bin/ck8s-gang-gate"
#: Merged /usr (Debian bookworm): these top-level names are symlinks into /usr in the image too.
USR_MERGE = {"bin": "usr/bin", "lib": "usr/lib", "lib64": "usr/lib64", "sbin": "usr/sbin"}
LAYER_MEDIA = "application/vnd.oci.image.layer.v1.tar"
CONFIG_MEDIA = "application/vnd.oci.image.config.v1+json"
MANIFEST_MEDIA = "application/vnd.oci.image.manifest.v1+json"
INDEX_MEDIA = "application/vnd.oci.image.index.v1+json"
# containerd's import names an image from this annotation (core/images/archive/reference.go).
NAME_ANNOTATION = "io.containerd.image.name"
REF_ANNOTATION = "org.opencontainers.image.ref.name"
_LDD_PATH = re.compile(r"(/\S+)\s+\(0x[0-9a-f]+\)$|=>\s+(/\S+)\s+\(0x")


@dataclass(frozen=True)
class Image:
    kind: str  # probe | pause
    name: str  # repository:tag
    digest: str  # the manifest's sha256:...
    archive: Path

    @property
    def reference(self) -> str:
        return f"{self.name}@{self.digest}"

    @property
    def by_digest(self) -> str:
        """The second name of the image (repository@digest): what the kubelet asks the runtime for."""
        return f"{self.repository}@{self.digest}"

    @property
    def repository(self) -> str:
        return self.name.rsplit(":", 1)[0]

    @property
    def tag(self) -> str:
        return self.name.rsplit(":", 1)[1]


def shared_libraries(binary: Path) -> list[Path]:
    """The libraries the dynamic loader maps for `binary`, with the loader itself (ldd's lines)."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False).stdout
    libs = []
    for line in out.splitlines():
        m = _LDD_PATH.search(line.strip())
        if m:
            libs.append(Path(m.group(1) or m.group(2)))
    return libs


def in_image(path: Path) -> str:
    """Where a host file goes in the image: merged-/usr names resolved to their /usr location."""
    parts = path.parts[1:]
    if parts and parts[0] in USR_MERGE:
        return "/".join((USR_MERGE[parts[0]], *parts[1:]))
    return "/".join(parts)


def rootfs_files(commands: Iterable[str] = PROBE_COMMANDS) -> dict[str, Path]:
    """image path -> host file (resolved), for the commands and their libraries."""
    files: dict[str, Path] = {}
    for cmd in commands:
        found = shutil.which(cmd)
        if found is None:
            raise FileNotFoundError(f"{cmd} is not on PATH: the probe image needs it")
        for host in (Path(found), *shared_libraries(Path(found))):
            files[in_image(host if host.is_absolute() else Path("/") / host)] = host.resolve()
    # The binaries are called by their usual names, e.g. /usr/bin/bash for `/bin/bash`.
    return dict(sorted(files.items()))


def _info(name: str, *, kind: bytes = tarfile.REGTYPE, mode: int = 0o755, size: int = 0,
          target: str = "") -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.type, ti.mode, ti.size, ti.linkname = kind, mode, size, target
    ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = 0, 0, 0, "root", "root"
    return ti


def layer(files: dict[str, Path]) -> bytes:
    """One uncompressed layer: directories, the merged-/usr symlinks, the files, /etc basics."""
    buf = io.BytesIO()
    etc = {"etc/passwd": b"root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
           "etc/group": b"root:x:0:\nnogroup:x:65534:\n"}
    dirs = {"dev", "proc", "sys", "tmp", "run", "etc", "usr", "usr/bin", "usr/lib", "usr/lib64", "usr/sbin"}
    for p in (*files, *etc):
        parent = p.rsplit("/", 1)[0] if "/" in p else ""
        while parent:
            dirs.add(parent)
            parent = parent.rsplit("/", 1)[0] if "/" in parent else ""
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in sorted(dirs):
            tar.addfile(_info(d + "/", kind=tarfile.DIRTYPE, mode=0o1777 if d == "tmp" else 0o755))
        for link, target in sorted(USR_MERGE.items()):
            tar.addfile(_info(link, kind=tarfile.SYMTYPE, mode=0o777, target=target))
        for path, host in files.items():
            data = host.read_bytes()
            tar.addfile(_info(path, mode=os.stat(host).st_mode & 0o755, size=len(data)), io.BytesIO(data))
        for path, data in etc.items():
            tar.addfile(_info(path, mode=0o644, size=len(data)), io.BytesIO(data))
    return buf.getvalue()


def _blob(blobs: dict[str, bytes], data: bytes, media: str) -> dict[str, object]:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media, "digest": digest, "size": len(data)}


def write_image(out: Path, kind: str, name: str, layer_tar: bytes, entrypoint: Sequence[str]) -> Image:
    """An OCI image layout archive (oci-layout, index.json, blobs/sha256/*) at out/<kind>.oci.tar."""
    blobs: dict[str, bytes] = {}
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": list(entrypoint), "Env": ["PATH=/usr/bin:/bin"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer_tar).hexdigest()]},
        "history": [{"created_by": "tools/probe_image.py (host binaries + ldd libraries)"}],
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA,
        "config": _blob(blobs, json.dumps(config, sort_keys=True).encode(), CONFIG_MEDIA),
        "layers": [_blob(blobs, layer_tar, LAYER_MEDIA)],
    }
    desc = _blob(blobs, json.dumps(manifest, sort_keys=True).encode(), MANIFEST_MEDIA)
    repository, tag = name.rsplit(":", 1)
    # Two names for one manifest, as a CRI pull records them (containerd internal/cri/server/images/
    # image_pull.go createOrUpdateImageReference for the tag and the repo digest): the kubelet asks
    # for `repo@sha256:...` when the image is pinned by digest, and only that name answers it.
    by_digest = f"{repository}@{desc['digest']}"
    index = {"schemaVersion": 2, "mediaType": INDEX_MEDIA, "manifests": [
        {**desc, "annotations": {NAME_ANNOTATION: name, REF_ANNOTATION: tag}},
        {**desc, "annotations": {NAME_ANNOTATION: by_digest}},
    ]}
    files = {"oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
             "index.json": json.dumps(index, sort_keys=True).encode()}
    files |= {f"blobs/sha256/{d.split(':', 1)[1]}": data for d, data in sorted(blobs.items())}
    out.mkdir(parents=True, exist_ok=True)
    archive = out / f"{kind}.oci.tar"
    partial = archive.with_suffix(".partial")
    with tarfile.open(partial, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in ("blobs/", "blobs/sha256/"):
            tar.addfile(_info(d, kind=tarfile.DIRTYPE))
        for path, data in files.items():
            tar.addfile(_info(path, mode=0o644, size=len(data)), io.BytesIO(data))
    partial.replace(archive)
    return Image(kind, name, str(desc["digest"]), archive)


def build(out: Path, model_server: Path | None = None, gang_gate: Path | None = None) -> tuple[Image, Image]:
    """(probe, pause): both from one layer; the tag is the layer's content hash (host binaries, and
    the model server and gang gate when given)."""
    files = rootfs_files()
    extra = {where: binary.resolve() for where, binary in ((MODEL_SERVER, model_server), (GANG_GATE, gang_gate))
             if binary is not None}
    if extra:
        files = dict(sorted({**files, **extra}.items()))
    layer_tar = layer(files)
    tag = hashlib.sha256(layer_tar).hexdigest()[:12]
    probe = write_image(out, "probe", f"{PROBE_NAME}:{tag}", layer_tar, ["/bin/bash"])
    pause = write_image(out, "pause", f"{PAUSE_NAME}:{tag}", layer_tar, ["/usr/bin/sleep", "infinity"])
    return probe, pause


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="directory for the .oci.tar archives")
    ap.add_argument("--model-server", type=Path, help="the static ck8s-model-server binary to carry (tools/build.sh)")
    ap.add_argument("--gang-gate", type=Path, help="the static ck8s-gang-gate binary to carry (tools/build.sh)")
    args = ap.parse_args(argv)
    for image in build(args.out, args.model_server, args.gang_gate):
        print(image.kind, image.reference, image.archive)
    return 0


if __name__ == "__main__":
    sys.exit(main())

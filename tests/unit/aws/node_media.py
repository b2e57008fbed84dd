"""What the image program puts on a node image's disk (its contract, components/images/
snap_steps.py and preload_steps.py): /var/lib/ck8s-gpu/snaps/install-order (snapd, bases, apps) with
`<name>_<rev>.snap` and `.assert` (what `snap download --revision` writes),
/var/lib/ck8s-gpu/images/*.tar (OCI archives, `regctl image export --name <ref>`) with images.lock,
and on GPU node images the NVIDIA Container Toolkit's binaries in /usr/bin (document.py)."""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path

from tests.fakes.k8s_snap import containerd, snapd
from tests.fakes.k8s_snap.fleet import Instance

PAUSE = containerd.PAUSE_IMAGE  # k8s-snap's own pause image, side-loaded like every other
# (name, revision, confinement, base, version, type): snapd's own snap has no base and type snapd
# (snapd 2.77 build-aux/snap/snapcraft.yaml).
SNAPD = ("snapd", "25202", "strict", None, "2.77", "snapd")
CORE22 = ("core22", "2045", "strict", None, "20250110", "base")


def _assertions(name: str, revision: str, digest: str) -> str:
    snap_id = f"{name}-snap-id-0000000000000000"[:32]
    return (f"type: snap-declaration\nauthority-id: canonical\nseries: 16\nsnap-id: {snap_id}\n"
            f"publisher-id: canonical\nsnap-name: {name}\n\nSIGNATURE\n\n"
            f"type: snap-revision\nauthority-id: canonical\nsnap-sha3-384: {digest}\nsnap-id: {snap_id}\n"
            f"snap-revision: {revision}\ndeveloper-id: canonical\n\nSIGNATURE\n")


def oci_archive(ref: str | None) -> bytes:
    """An OCI layout tar as `regctl image export --name <ref>` writes it (ref None: no name)."""
    index = {"schemaVersion": 2, "manifests": [
        {"digest": "sha256:" + "ab" * 32, "annotations": {containerd.NAME_ANNOTATION: ref} if ref else {}}]}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        layout = b'{"imageLayoutVersion": "1.0.0"}'
        for name, data in (("oci-layout", layout), ("index.json", json.dumps(index).encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def media(inst: Instance, ack: bool = True, skip: str = "", archives: dict[str, bytes] | None = None,
          k8s: tuple[str, str] = ("5325", "v1.34.4"), snapd_snap: bool = True) -> Instance:
    """The image's media on `inst`: the snapd snap (snapd_snap False: an image built before the
    image program carried it), then the k8s snap at (revision, version) after its core22 base."""
    snaps = inst.root / "var/lib/ck8s-gpu/snaps"
    snaps.mkdir(parents=True, exist_ok=True)
    order = []
    for name, rev, confinement, base, version, type_ in (
            *((SNAPD,) if snapd_snap else ()), CORE22, ("k8s", k8s[0], "classic", "core22", k8s[1], "app")):
        meta = f"name: {name}\nversion: '{version}'\nconfinement: {confinement}\n"
        meta += f"base: {base}\n" if base else f"type: {type_}\n"
        order.append(f"{name} {rev} {confinement}")
        if name == skip:
            continue
        (snaps / f"{name}_{rev}.snap").write_text(meta)
        digest = snapd.file_digest(meta.encode())
        (snaps / f"{name}_{rev}.assert").write_text(_assertions(name, rev, digest if ack else "X" * 64))
    (snaps / "install-order").write_text("\n".join(order) + "\n")
    images = inst.root / "var/lib/ck8s-gpu/images"
    images.mkdir(parents=True, exist_ok=True)
    for file, data in (archives if archives is not None else {"pause.tar": oci_archive(PAUSE)}).items():
        (images / file).write_bytes(data)
    (images / "images.lock").write_text(f"{PAUSE} sha256:{'ab' * 32}\n")
    return inst


def toolkit(inst: Instance) -> Instance:
    """The toolkit's packages in the image (NVIDIA/nvidia-container-toolkit v1.20.0 packaging/debian
    *.install: nvidia-ctk and nvidia-container-runtime in /usr/bin, its .cdi and .legacy from
    -operator-extensions), nvidia-ctk the fake of
    tests/fakes/nvidia_ctk.py."""
    bin_dir = inst.root / "usr/bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    repo = Path(__file__).resolve().parents[3]
    ctk = bin_dir / "nvidia-ctk"
    ctk.write_text(f"#!/bin/sh\nPYTHONPATH='{repo}' exec '{sys.executable}' -m tests.fakes.nvidia_ctk \"$@\"\n")
    ctk.chmod(0o755)
    for name in ("nvidia-container-runtime", "nvidia-container-runtime.cdi", "nvidia-container-runtime.legacy"):
        runtime = bin_dir / name
        runtime.write_text("#!/bin/sh\necho 'fake: containers do not run here' >&2\nexit 1\n")
        runtime.chmod(0o755)
    return inst

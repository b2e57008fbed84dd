"""What a node's user-data says its image carries (pure; docs/adr/0043): the snap from the image or
the store, preloaded images, the registry mirror. The timeline reads it to choose each node's boot steps."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

import yaml


@dataclass(frozen=True)
class NodeMedia:
    """What a node boots with, as its user-data's env file says (components/aws/userdata.py):
    `CK8S_SNAP_SOURCE=image|store` (image: `snap ack` + `snap install ./k8s_<rev>.snap` from the
    AMI's disk), `CK8S_IMAGES_PRELOADED=1|0` (containerd side-loads the AMI's tarballs),
    `CK8S_OFFLINE=1|0`, `CK8S_REGISTRY_MIRROR=<host/path or empty>`. Absent: store, pulled, online."""

    snap_from_image: bool = False
    images_preloaded: bool = False
    offline: bool = False
    mirror: str = ""


_MEDIA_VALUES = {"CK8S_SNAP_SOURCE": ("image", "store"), "CK8S_IMAGES_PRELOADED": ("1", "0"),
                 "CK8S_OFFLINE": ("1", "0")}


_ASSIGNMENT = re.compile(r"^(?:export\s+)?(CK8S_[A-Z0-9_]+)=(.*)$")


def _env_texts(text: str) -> list[str]:
    """The env files of a cloud-config (write_files ending `.env`), else the text itself (a script)."""
    if text.startswith("#cloud-config"):
        doc = yaml.safe_load(text)
        files = doc.get("write_files") if isinstance(doc, dict) else None
        return [str(f.get("content", "")) for f in files or []
                if isinstance(f, dict) and str(f.get("path", "")).endswith(".env")]
    return [text]


def env_assignments(text: str) -> dict[str, str]:
    """`CK8S_*=value` lines of a node's env file; values the shell would expand (`$`) are skipped."""
    out: dict[str, str] = {}
    for env in _env_texts(text):
        for line in env.splitlines():
            m = _ASSIGNMENT.match(line.strip())
            if m is None or "$" in m.group(2):
                continue
            words = shlex.split(m.group(2))
            out[m.group(1)] = words[0] if words else ""
    return out


def node_media(text: str | None) -> NodeMedia:
    """A node's media from its decoded user-data; None (no user-data, or a secret one): the store
    and registries, as before node images carried them. A value outside the contract is refused."""
    env = env_assignments(text) if text else {}
    bad = [f"{k}={env[k]!r} (expected {' or '.join(allowed)})" for k, allowed in _MEDIA_VALUES.items()
           if k in env and env[k] not in allowed]
    if bad:
        raise ValueError("node user-data: " + "; ".join(bad))
    m = NodeMedia(env.get("CK8S_SNAP_SOURCE") == "image", env.get("CK8S_IMAGES_PRELOADED") == "1",
                  env.get("CK8S_OFFLINE") == "1", env.get("CK8S_REGISTRY_MIRROR", ""))
    # components/settings/offline_rules.py refuses these stacks; a user-data saying so is not one of ours.
    if m.offline and not m.snap_from_image:
        raise ValueError("node user-data: CK8S_OFFLINE=1 with CK8S_SNAP_SOURCE=store (an offline node cannot reach "
                         "the Snap Store)")
    if m.offline and not m.images_preloaded:
        raise ValueError("node user-data: CK8S_OFFLINE=1 with CK8S_IMAGES_PRELOADED=0 (offline nodes carry every "
                         "image)")
    return m


def describe_media(m: NodeMedia) -> str:
    snap = "snap from the image" if m.snap_from_image else "snap from the Snap Store"
    images = ("images preloaded (containerd side-loads them)" if m.images_preloaded
              else f"images pulled from {m.mirror or 'their registries'}")
    return ", ".join([snap, images, *(["offline"] if m.offline else [])])

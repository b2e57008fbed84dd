"""k8s-snap's containerd, for what the offline boot needs: side-loaded images and registry hosts.

Side-loading (k8s-snap release-1.34 build-scripts/components/containerd/patches/default/
0001-side-load-images-plugin.patch): plugin `sideload-images`, source `$SNAP_COMMON/images`, glob
`*.tar`; when containerd starts, each archive is imported into namespace k8s.io and renamed
`<file>.loaded`; one that fails to import is logged ("Failed to import images") and left as it is;
interval 0 means at start only. k8sd starts containerd at bootstrap and join, so start() runs there
(k8s_cli.py). Upstream the import runs in a goroutine after the CRI serves; the fake imports at
once (a node script must still wait for the renames: the order is not promised).

Archive format (containerd images/archive/importer.go ImportIndex): an OCI layout (`oci-layout`
and `index.json`); a tar without `oci-layout` or `manifest.json` -> "unrecognized image format",
with `oci-layout` but no `index.json` -> "missing index.json in OCI layout 1.0.0", not a tar ->
Go's archive/tar "invalid tar header". Image names come from the index's
`io.containerd.image.name` annotations (what `regctl image export --name` writes): an archive
without them imports digests only (offline.md's note on `--name`).

Configuration (k8s-snap release-1.34 src/k8s/pkg/k8sd/setup/containerd.go Containerd, run at
bootstrap and join before k8sd starts the services): directories `<base>/etc/containerd`,
`conf.d` and `hosts.d` (0700) and `config.toml` from defaultContainerdConfig (version 2, imports
`conf.d/*.toml`, runc with SystemdCgroup, the CRI's registry config_path hosts.d), rewritten each
time. The fake's node has containerd-base-dir = its root directory (pkg/snap/snap.go: every
containerd path under the base dir), so the paths inside are the files the fake reads. containerd
starts as the unit snap.k8s.containerd.service: systemd first runs the ExecStartPre= lines of its
drop-ins (systemd.unit(5): `<unit>.d/*.conf` in file-name order; systemd.service(5): a failing
ExecStartPre fails the start; a missing executable is "Failed to locate executable"). Then
containerd v1.7.34 loads config.toml and each import in glob order (services/server/config/
config.go LoadConfig), where an import's plugin sections replace the root's whole (mergeConfig
"Replace entire sections instead of merging map's values"): checked against the real containerd
v1.7.34 with k8s-snap's root config (docs/adr/0046). The node records the CRI's runtimes, default
runtime and enable_cdi.

Pulls (containerd docs/hosts.md, v1.7): an image not present is fetched from the hosts of
`/etc/containerd/hosts.d/<registry>/hosts.toml` (k8s-snap classic: ContainerdRegistryConfigDir
under base dir "/", src/k8s/pkg/snap/snap.go), read at each pull, else from the registry itself
(docker.io's API host is registry-1.docker.io). `override_path = true`: the host URL is the full
API path. `[host."<url>".header]` headers go with every request to that host. An ECR host checks
the Basic credential against the tokens the fake ECR issued (aws_cli get_authorization_token).
Errors as the CRI reports them (containerd pkg/cri/server/image_pull.go "failed to pull and
unpack image %q", "failed to resolve reference %q"; remotes/docker/resolver.go "failed to do
request"; remotes/errors.go "unexpected status from %s request to %s: %s").
"""

from __future__ import annotations

import base64
import json
import shlex
import subprocess
import tarfile
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from tests.fakes.k8s_snap import network, world

SIDELOAD = "var/snap/k8s/common/images"
HOSTS_D = "etc/containerd/hosts.d"
NAME_ANNOTATION = "io.containerd.image.name"


CONFIG_DIR = "etc/containerd"
UNIT_DROP_INS = "etc/systemd/system/snap.k8s.containerd.service.d"
CRI = "io.containerd.grpc.v1.cri"
PAUSE_IMAGE = "ghcr.io/canonical/k8s-snap/pause:3.10"  # setup/containerd.go defaultPauseImage


class ArchiveError(Exception):
    pass


class StartError(Exception):
    """snap.k8s.containerd.service did not start (k8sd: "failed to start services")."""


def k8sd_config(base: Path) -> dict[str, Any]:
    """defaultContainerdConfig for a node whose containerd base dir is `base` (CNI dirs are not
    under it: pkg/snap/snap.go CNIConfDir /etc/cni/net.d, CNIBinDir /opt/cni/bin)."""
    etc = base / CONFIG_DIR
    return {
        "version": 2, "oom_score": 0, "imports": [f"{etc}/conf.d/*.toml"],
        "grpc": {"uid": 0, "gid": 0, "max_recv_message_size": 16777216, "max_send_message_size": 16777216},
        "debug": {"uid": 0, "gid": 0, "address": "", "level": ""},
        "metrics": {"address": "", "grpc_histogram": False},
        "cgroup": {"path": ""},
        "plugins": {CRI: {
            "stream_server_address": "127.0.0.1", "stream_server_port": "0", "enable_selinux": False,
            "sandbox_image": PAUSE_IMAGE, "stats_collect_period": 10, "enable_tls_streaming": False,
            "max_container_log_line_size": 16384,
            "containerd": {"no_pivot": False, "default_runtime_name": "runc",
                           "runtimes": {"runc": {"runtime_type": "io.containerd.runc.v2",
                                                 "options": {"SystemdCgroup": True}}}},
            "cni": {"bin_dir": "/opt/cni/bin", "conf_dir": "/etc/cni/net.d"},
            "registry": {"config_path": str(base / HOSTS_D)},
        }},
    }


def write_config(root: Path) -> None:
    """k8sd's setup.Containerd on this node (bootstrap, join)."""
    etc = root / CONFIG_DIR
    for d in (etc, etc / "conf.d", root / HOSTS_D):
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
    (etc / "config.toml").write_text(tomli_w.dumps(k8sd_config(root)))


def _exec_start_pre(root: Path) -> None:
    for conf in sorted((root / UNIT_DROP_INS).glob("*.conf")):
        for line in conf.read_text().splitlines():
            if not line.startswith("ExecStartPre="):
                continue
            argv = shlex.split(line.removeprefix("ExecStartPre="))
            if not argv or not Path(argv[0]).is_file():
                raise StartError(f"snap.k8s.containerd.service: Failed to locate executable {argv[:1]}: "
                                 "No such file or directory")
            done = subprocess.run(argv, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, timeout=60)
            if done.returncode != 0:
                raise StartError(f"snap.k8s.containerd.service: Control process exited, code=exited, "
                                 f"status={done.returncode}: {done.stderr.strip()}")


def loaded_config(root: Path) -> dict[str, Any]:
    """containerd v1.7.34 LoadConfig + mergeConfig: the root file, then each import."""
    path = root / CONFIG_DIR / "config.toml"
    config = tomllib.loads(path.read_text()) if path.exists() else {}
    for pattern in config.get("imports", []):
        for imported in sorted(Path("/").glob(pattern.lstrip("/"))):
            extra = tomllib.loads(imported.read_text())
            plugins = {**config.get("plugins", {}), **extra.get("plugins", {})}
            config = {**config, **{k: v for k, v in extra.items() if k not in ("plugins", "imports")},
                      "plugins": plugins}
    return config


def runtime_state(config: dict[str, Any]) -> dict[str, Any]:
    cri = config.get("plugins", {}).get(CRI, {})
    ctrd = cri.get("containerd", {})
    return {"runtimes": {name: r.get("options", {}).get("BinaryName", "runc")
                         for name, r in ctrd.get("runtimes", {}).items()},
            "default_runtime": ctrd.get("default_runtime_name", "runc"), "enable_cdi": bool(cri.get("enable_cdi")),
            "sandbox_image": cri.get("sandbox_image", ""),
            "systemd_cgroup": {name: bool(r.get("options", {}).get("SystemdCgroup"))
                               for name, r in ctrd.get("runtimes", {}).items()},
            "registry_config_path": cri.get("registry", {}).get("config_path", "")}


def _read_archive(path: Path) -> list[str]:
    """The image names (or digests) an OCI archive holds; ArchiveError as containerd refuses it."""
    try:
        with tarfile.open(path, "r:") as tar:
            names = {m.name.lstrip("./") for m in tar.getmembers() if m.isfile()}
            if "oci-layout" not in names:
                if "manifest.json" in names:
                    return []  # a Docker archive: not what the image program writes
                raise ArchiveError("unrecognized image format")
            if "index.json" not in names:
                raise ArchiveError("missing index.json in OCI layout 1.0.0")
            member = tar.extractfile(next(m for m in tar.getmembers() if m.name.lstrip("./") == "index.json"))
            index = json.loads(member.read()) if member else {}
    except (tarfile.TarError, OSError):
        raise ArchiveError("archive/tar: invalid tar header") from None
    except ValueError:
        raise ArchiveError("invalid character in index.json") from None
    return [m.get("annotations", {}).get(NAME_ANNOTATION) or m.get("digest", "")
            for m in index.get("manifests", [])]


def start(state: dict[str, Any], me: dict[str, Any]) -> None:
    """containerd starts on this node (StartError when its unit does not): the ExecStartPre= of
    the unit's drop-ins, its configuration, then the side-load plugin imports `*.tar` once."""
    node = me["node"]
    _exec_start_pre(Path(me["root"]))
    node["containerd"] = runtime_state(loaded_config(Path(me["root"])))
    images = node.setdefault("images", {})
    log = node.setdefault("containerd_log", [])
    folder = Path(me["root"]) / SIDELOAD
    for path in sorted(folder.glob("*.tar")):
        try:
            refs = _read_archive(path)
        except ArchiveError as exc:
            log.append(f'level=error msg="Failed to import images" dir={folder} error="{exc}" file={path} '
                       "plugin=sideload-images")
            continue
        for ref in refs:
            images[ref] = "side-loaded"
        log.append(f'level=info msg="Imported {len(refs)} images" file={path} plugin=sideload-images')
        path.rename(path.with_name(path.name + ".loaded"))
    node["containerd_started"] = world.now(state)


def split_ref(ref: str) -> tuple[str, str, str]:
    """(registry, repository, tag) of a reference, docker.io's normalisation included
    (distribution/reference ParseNormalizedNamed)."""
    name, _, tag = ref.rpartition(":") if ":" in ref.split("/")[-1] else (ref, "", "latest")
    first, _, rest = name.partition("/")
    if not rest or ("." not in first and ":" not in first and first != "localhost"):
        first, rest = "docker.io", name
    if first == "docker.io" and "/" not in rest:
        rest = f"library/{rest}"
    return first, rest, tag


def _hosts(root: Path, registry: str, api: str) -> list[tuple[str, dict[str, Any]]]:
    """The hosts a pull tries in order (docs/hosts.md): each `[host]` that may pull, then `server`
    (default: the registry itself), the fallback when the hosts fail."""
    path = root / HOSTS_D / registry / "hosts.toml"
    doc = tomllib.loads(path.read_text()) if path.exists() else {}
    hosts = [(url, h) for url, h in doc.get("host", {}).items() if "pull" in h.get("capabilities", ["pull"])]
    server = str(doc.get("server") or f"https://{api}")
    if server not in {u for u, _ in hosts}:
        hosts.append((server, {"override_path": "server" in doc and "/v2" in server}))
    return hosts


def _ecr_authorized(state: dict[str, Any], header: dict[str, Any]) -> bool:
    value = str(header.get("authorization", ""))
    token = value.removeprefix("Basic ")
    expires = state.get("ecr_tokens", {}).get(token)
    return value.startswith("Basic ") and expires is not None and expires > world.now(state) and \
        base64.b64decode(token).startswith(b"AWS:")


def pull(state: dict[str, Any], me_id: str, ref: str) -> str:
    """The kubelet asks the CRI for `ref`: "present", or the manifest URL it came from; PullError
    (the last host's error) when every host fails."""
    me = state["instances"][me_id]
    registry, repo, tag = split_ref(ref)
    full = f"{registry}/{repo}:{tag}"
    images = me["node"].setdefault("images", {})
    if full in images or ref in images:
        return "present"
    pulls = me["node"].setdefault("pulls", [])
    fail = f'failed to pull and unpack image "{full}": failed to resolve reference "{full}": '
    api = network.REGISTRY_API_HOST.get(registry, registry)
    error = ""
    for url, host in _hosts(Path(me["root"]), registry, api):
        base = url.rstrip("/") if host.get("override_path") else f"{url.rstrip('/')}/v2"
        manifest = f"{base}/{repo}/manifests/{tag}"
        hostname = url.split("://", 1)[1].split("/", 1)[0].split(":")[0]
        header = host.get("header", {})
        pulls.append({"ref": full, "url": manifest, "authorization": "authorization" in header})
        if not network.attempt(state, me_id, "containerd", hostname, manifest):
            error = f'{fail}failed to do request: Head "{manifest}": {network.dial_timeout(hostname)}'
        elif hostname.endswith(network.AWS_SUFFIXES) and not _ecr_authorized(state, header):
            error = f"{fail}unexpected status from HEAD request to {manifest}: 401 Unauthorized"
        else:
            images[full] = manifest
            return manifest
    raise PullError(error)


class PullError(Exception):
    pass

"""A fake `nvidia-ctk` (NVIDIA Container Toolkit CLI v1.20.0) for what a GPU node with the toolkit
in its image runs: `--version` and `runtime configure --runtime=containerd` from a file.

Built from NVIDIA/nvidia-container-toolkit tag v1.20.0 and checked against the real binary built
from that tag (`go install .../cmd/nvidia-ctk@v1.20.0`, docs/adr/0046):
- cmd/nvidia-ctk/runtime/configure/configure.go: the flags and their aliases; an unknown one is
  urfave/cli's "Incorrect Usage: flag provided but not defined: -<name>", exit 1; `--runtime`
  defaults to docker (only containerd is modelled here: any other is refused, never faked).
- pkg/config/engine/containerd/containerd.go New/getBaseDropInConfigTree: with a drop-in path the
  drop-in starts as a copy of the root config's whole CRI plugin section (plugin
  `io.containerd.grpc.v1.cri` for config version 2, `io.containerd.cri.v1.runtime` for 3), because
  containerd replaces a plugin's section whole when it imports a file (containerd v1.7.34
  services/server/config/config.go mergeConfig). A root config that does not exist reads as empty:
  version 2 (the real one logs "Using config version 2").
- pkg/config/engine/containerd/config.go AddRuntimeWithOptions/GetDefaultRuntimeOptions: the new
  runtime copies the options of the first low-level runtime there is (runc, then crun), else
  defaults without SystemdCgroup; then `runtime_type` if unset and `options.BinaryName`;
  `--nvidia-set-as-default` sets `default_runtime_name`, otherwise a default naming it is removed.
  EnableCDI sets `enable_cdi = true` on the CRI plugin.
- config_drop_in.go Save/ensureImports: the drop-in is written, then the root config is saved with
  `<drop-in dir>/*.toml` appended to `imports` unless it is there (an empty root gets `version`).
- The runtime path: the default `nvidia-container-runtime` becomes /usr/bin/nvidia-container-runtime
  (what v1.20.0 writes when the binary is not on the PATH, as on the machine it was run on).
"""

from __future__ import annotations

import copy
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tomli_w

VERSION = "1.20.0"
CRI_PLUGIN = {2: "io.containerd.grpc.v1.cri", 3: "io.containerd.cri.v1.runtime"}
LOW_LEVEL_RUNTIMES = ("runc", "crun")  # engine.GetLowLevelRuntimes for containerd
DEFAULT_OPTIONS = {"runtime_type": "io.containerd.runc.v2", "runtime_root": "", "runtime_engine": "",
                   "privileged_without_host_devices": False}
# configure.go: name -> (destination, takes a value); aliases share a destination.
FLAGS: dict[str, tuple[str, bool]] = {
    "dry-run": ("dry_run", False), "runtime": ("runtime", True), "config": ("config", True),
    "drop-in-config": ("drop_in", True), "executable-path": ("executable", True),
    "config-mode": ("config_mode", True), "config-source": ("config_source", True),
    "oci-hook-path": ("oci_hook", True), "nvidia-runtime-name": ("name", True),
    "nvidia-runtime-path": ("path", True), "runtime-path": ("path", True),
    "nvidia-runtime-hook-path": ("hook", True), "nvidia-set-as-default": ("default", False),
    "set-as-default": ("default", False), "cdi.enabled": ("cdi", False), "cdi.enable": ("cdi", False),
    "enable-cdi": ("cdi", False),
}
GLOBAL_FLAGS = {"quiet", "debug", "d"}


class UsageError(Exception):
    pass


def _parse(args: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"runtime": "docker", "name": "nvidia", "path": "nvidia-container-runtime",
                           "config_source": "file", "default": False, "cdi": False, "dry_run": False}
    it = iter(args)
    for arg in it:
        if not arg.startswith("-"):
            raise UsageError(f"unexpected argument {arg!r}")
        name, eq, value = arg.lstrip("-").partition("=")
        if name not in FLAGS:
            raise UsageError(f"flag provided but not defined: -{name}")
        dest, valued = FLAGS[name]
        if valued:
            if not eq:
                value = next(it, "")
                if not value:
                    raise UsageError(f"flag needs an argument: -{name}")
            out[dest] = value
        else:
            out[dest] = value.lower() != "false" if eq else True
    return out


def _load(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text()) if path.exists() else {}


def _write(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tomli_w.dumps(doc))


def configure(opts: dict[str, Any]) -> None:
    if opts["runtime"] != "containerd":
        raise NotImplementedError(f"fake nvidia-ctk: --runtime={opts['runtime']} is not modelled (containerd only)")
    if opts["config_source"] != "file" or not opts.get("config") or not opts.get("drop_in"):
        raise NotImplementedError("fake nvidia-ctk: only --config-source=file with --config and --drop-in-config")
    root_path, drop_path = Path(opts["config"]), Path(opts["drop_in"])
    root = _load(root_path)
    version = int(root.get("version", 2))
    cri = CRI_PLUGIN[version]
    drop: dict[str, Any] = {"version": version}
    if cri in root.get("plugins", {}):
        drop["plugins"] = {cri: copy.deepcopy(root["plugins"][cri])}
    plugin = drop.setdefault("plugins", {}).setdefault(cri, {})
    ctrd = plugin.setdefault("containerd", {})
    runtimes = ctrd.setdefault("runtimes", {})
    base = next((runtimes[r] for r in LOW_LEVEL_RUNTIMES if r in runtimes), None)
    options = copy.deepcopy(base) if base is not None else dict(DEFAULT_OPTIONS)
    runtimes[opts["name"]] = options
    options.setdefault("runtime_type", "io.containerd.runc.v2")
    path = opts["path"] if "/" in opts["path"] else f"/usr/bin/{opts['path']}"
    options.setdefault("options", {})["BinaryName"] = path
    if opts["default"]:
        ctrd["default_runtime_name"] = opts["name"]
    elif ctrd.get("default_runtime_name") == opts["name"]:
        del ctrd["default_runtime_name"]
    if opts["cdi"]:
        plugin["enable_cdi"] = True
    if opts["dry_run"]:
        return
    _write(drop_path, drop)
    pattern = f"{drop_path.parent}/*.toml"
    imports = list(root.get("imports", []))
    if pattern not in imports:
        if not root:
            root["version"] = version
        root["imports"] = [*imports, pattern]
    _write(root_path, root)


def main(argv: Sequence[str]) -> int:
    args = [a for a in argv if a.lstrip("-") not in GLOBAL_FLAGS]
    if args in (["--version"], ["-v"]):
        print(f"NVIDIA Container Toolkit CLI version {VERSION}\ncommit: fake")
        return 0
    if args[:2] != ["runtime", "configure"]:
        print(f"fake nvidia-ctk: {' '.join(argv)!r} is not modelled (--version, runtime configure)", file=sys.stderr)
        return 1
    try:
        configure(_parse(args[2:]))
    except UsageError as exc:
        print(f"Incorrect Usage: {exc}\n", file=sys.stderr)
        return 1
    except NotImplementedError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Shared fixtures of the real-engine integration tests: the tools built by `bash tools/build.sh`
(Pulumi CLI, language host, Kubernetes provider plugin, control plane, KWOK), found or reported.

Missing tools skip with what is missing and how to build it; under CK8S_GPU_REQUIRE_TOOLS=1
(CI, after the build) they fail instead, so the tests cannot silently skip there.
"""

from __future__ import annotations

import base64
import importlib.metadata
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.helpers.tools import load_tool, skip_or_fail

ROOT = Path(__file__).resolve().parents[2]
# The engine's own binaries; the dynamic provider host is a script tools/build.sh writes.
ENGINE_BINARIES = ("pulumi", "pulumi-language-python", "pulumi-resource-kubernetes",
                   "pulumi-resource-pulumi-python")




def k8s_plugin_version() -> str:
    """What the installed pulumi-kubernetes SDK asks the engine for (the build installs it so)."""
    return importlib.metadata.version("pulumi-kubernetes")


@dataclass(frozen=True)
class EngineTools:
    bin_dir: Path

    @property
    def pulumi_home(self) -> Path:
        return self.bin_dir.parent / "pulumi-home"

    def env(self, state_dir: Path, passphrase: str) -> dict[str, str]:
        """What a `pulumi` run needs (tools/README.md): no network, file backend, our plugins."""
        return {
            "PATH": f"{self.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "PULUMI_HOME": str(self.pulumi_home),
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_IGNORE_AMBIENT_PLUGINS": "true",
            "PULUMI_BACKEND_URL": f"file://{state_dir}",
            "PULUMI_CONFIG_PASSPHRASE": passphrase,
            "PULUMI_PYTHON_CMD": sys.executable,  # has every dependency of the program
        }


def missing_engine_tools(bin_dir: Path) -> list[str]:
    lc = load_tool("localcluster")
    missing = list(lc.missing_binaries(bin_dir)) + list(lc.missing_binaries(bin_dir, ENGINE_BINARIES))
    plugin = bin_dir.parent / "pulumi-home" / "plugins" / f"resource-kubernetes-v{k8s_plugin_version()}"
    if not (plugin / "pulumi-resource-kubernetes").is_file():
        missing.append(f"the kubernetes plugin v{k8s_plugin_version()} under {plugin.parent}")
    return missing


@pytest.fixture(scope="session")
def engine_tools() -> EngineTools:
    bin_dir = load_tool("localcluster").tools_bin_dir()
    missing = missing_engine_tools(bin_dir)
    if missing:
        skip_or_fail(f"real-engine tools not built: missing {', '.join(missing)} in {bin_dir}; build them "
                     "once with `bash tools/build.sh` (cold: ~1 h on 2 cores, then cached)")
    return EngineTools(bin_dir)


def inline_kubeconfig(path: Path) -> str:
    """kwokctl's kubeconfig points at certificate files; the project's clusters carry them inline."""
    doc = yaml.safe_load(path.read_text())
    fields = {"certificate-authority": "certificate-authority-data",
              "client-certificate": "client-certificate-data", "client-key": "client-key-data"}
    for entry in [c["cluster"] for c in doc["clusters"]] + [u["user"] for u in doc["users"]]:
        for path_key, data_key in fields.items():
            if path_key in entry:
                entry[data_key] = base64.b64encode(Path(entry.pop(path_key)).read_bytes()).decode()
    return str(yaml.safe_dump(doc))

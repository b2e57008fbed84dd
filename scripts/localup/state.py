"""The state dir of `make up` (default `.local/` in the checkout, ignored by git): where each part lives,
and `up.json`, what `up` recorded for `down` and for the next `up`."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIR = ROOT / ".local"
STACK = "local-kubelet"
STACK_FILE = ROOT / "stacks" / f"Pulumi.{STACK}.yaml"
#: The probe image's second name on every kubelet node: what examples/dra-workload.yaml runs (the probe's
#: own tag is a hash of this host's binaries, tools/probe_image.py).
SAMPLE_IMAGE = "ck8s-gpu.local/smoke-probe:local"
SAMPLE_WORKLOAD = ROOT / "examples" / "dra-workload.yaml"


@dataclass(frozen=True)
class Layout:
    dir: Path

    @property
    def record(self) -> Path:
        return self.dir / "up.json"

    @property
    def cluster(self) -> Path:  # LocalCluster's workdir (kubeconfig, kwokctl's state)
        return self.dir / "cluster"

    @property
    def kubeconfig(self) -> Path:
        return self.cluster / "kubeconfig"

    @property
    def nodes(self) -> Path:  # NodeTier's workdir (logs, images); its sockets live under its short root
        return self.dir / "nodes"

    @property
    def project(self) -> Path:  # the program's copy and its stack file (stacks/ stays untouched)
        return self.dir / "project"

    @property
    def backend(self) -> Path:  # EngineTools.workspace puts the file backend at <work>/state
        return self.dir / "state"

    @property
    def passphrase(self) -> Path:
        return self.dir / "passphrase"

    @property
    def pids(self) -> Path:
        return self.dir / "pids"

    @property
    def logs(self) -> Path:
        return self.dir / "logs"

    @property
    def env_file(self) -> Path:
        return self.dir / "env.sh"


@dataclass
class Record:
    """What `up` started, written as soon as each part exists (a failed `up` is still removable)."""

    bin_dir: str
    cluster_name: str = ""
    nodes: list[str] = field(default_factory=list)  # the node tier's nodes, in index order
    compute_domain_nodes: list[str] = field(default_factory=list)
    shape: str = ""  # fingerprint of the tier's node specs: another shape is replaced, not reused
    probe_image: str = ""
    stack_up: bool = False  # a `pulumi up` ran (destroy has something to do)

    def write(self, layout: Layout) -> None:
        layout.dir.mkdir(parents=True, exist_ok=True)
        tmp = layout.record.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        tmp.replace(layout.record)

    @classmethod
    def read(cls, layout: Layout) -> Record | None:
        try:
            raw: dict[str, Any] = json.loads(layout.record.read_text())
        except (OSError, ValueError):
            return None
        known = {k: v for k, v in raw.items() if k in cls.__dataclass_fields__}
        return cls(**known) if "bin_dir" in known else None

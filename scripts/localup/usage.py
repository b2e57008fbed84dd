"""What `make up` prints once the stack is up, and the env file it writes (pure: text from facts)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from .state import STACK, Layout


@dataclass(frozen=True)
class Cluster:
    layout: Layout
    bin_dir: Path
    python: str  # the venv's interpreter: the program's and the dynamic providers'
    kubelet_nodes: dict[str, int]  # node -> simulated GPUs
    kwok_nodes: dict[str, int]
    sample: Path
    pool_label: str


def env_exports(c: Cluster) -> dict[str, str]:
    """The variables the printed commands need: kubectl and the pulumi CLI on this stack (tools/README.md)."""
    lay = c.layout
    return {
        "KUBECONFIG": str(lay.kubeconfig),
        "PATH": f"{c.bin_dir}:$PATH",
        "PULUMI_HOME": str(c.bin_dir.parent / "pulumi-home"),
        "PULUMI_BACKEND_URL": f"file://{lay.backend}",
        "PULUMI_CONFIG_PASSPHRASE_FILE": str(lay.passphrase),
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_IGNORE_AMBIENT_PLUGINS": "true",
        "PULUMI_PYTHON_CMD": c.python,
    }


def env_file(c: Cluster) -> str:
    lines = ["# Written by `make up` (scripts/local_up.py): `source` it to use the local cluster and its stack."]
    for key, value in env_exports(c).items():
        # PATH keeps $PATH unexpanded until sourced; every other value is quoted as is.
        shown = f'"{value}"' if key == "PATH" else shlex.quote(value)
        lines.append(f"export {key}={shown}")
    return "\n".join(lines) + "\n"


def how_to_use(c: Cluster) -> str:
    gpus = sum(c.kubelet_nodes.values())
    kwok = sum(c.kwok_nodes.values())
    return "\n".join([
        f"The `{STACK}` stack is up: {len(c.kubelet_nodes)} kubelet nodes with {gpus} simulated GPUs "
        f"(pods really run there), {len(c.kwok_nodes)} KWOK nodes publishing {kwok} more (pods only pretend).",
        "",
        "Use it:",
        f"  export KUBECONFIG={c.layout.kubeconfig}",
        f"  export PATH={c.bin_dir}:$PATH    # kubectl and pulumi, built from pins (tools/README.md)",
        f"  # or: source {c.layout.env_file}   (also points the pulumi CLI at the stack)",
        "",
        f"  kubectl get nodes -L {c.pool_label}",
        "  kubectl get resourceslices",
        f"  kubectl apply -f {c.sample}      # a ResourceClaimTemplate and a Pod asking for one GPU",
        "  kubectl wait --for=condition=Ready pod/dra-sample --timeout=120s",
        "  kubectl logs dra-sample                 # nvidia-smi -L inside it: the GPU DRA allocated",
        "  kubectl get resourceclaims -o wide",
        f"  kubectl delete -f {c.sample}",
        f"  pulumi -C {c.layout.project} stack output smokeReport --stack {STACK}   # after `source` above",
        "",
        f"Logs: {c.layout.dir}/logs, {c.layout.nodes}/<node>/logs, {c.layout.cluster}/kwok/clusters/*/logs.",
        "Remove all of it: make down",
    ])

"""A stack deployed by an earlier revision, kept as its exported state: what users have in their
backends when a change moves modules, renames classes or re-derives inputs.

`python -m tests.helpers.deployed_state --rev REV` deploys the `local` stack's program *as it was
at REV* (its `__main__.py`, `components/` and `charts/`, taken with `git archive`) through the real
engine onto a throwaway loopback control plane (tools/localcluster.py), then writes
tests/data/deployed-state/<REV>/: the exported deployment and the stack file (its encryption
salt and the kubeconfig secret, ciphertext under PASSPHRASE). The control plane is gone afterwards,
so the kubeconfig inside names a dead cluster: a preview against that state runs with the cluster
unreachable, which the Kubernetes provider allows (input diffs only), and never changes anything.

tests/integration/test_deployed_state.py previews today's program against it: no change, no
replacement. Regenerate at each release whose state users keep (docs/CONTRIBUTING.md).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import yaml

from tests.helpers.cluster_gates import local_cluster_gates
from tests.helpers.local_stack import SETTINGS_KEY, pool_nodes, publish, start_cluster
from tests.helpers.tools import PROJECT_PARTS, TOOLS_DIR

ROOT = TOOLS_DIR.parent
DATA = ROOT / "tests" / "data" / "deployed-state"
STACK_NAME = "released"  # in every URN: the preview must use the same name
PASSPHRASE = "deployed-state-fixture"  # guards a dead cluster's throwaway client key, nothing else
DEPLOYMENT = "deployment.json"
STACK_FILE = f"Pulumi.{STACK_NAME}.yaml"


def release_settings(rev: str) -> dict[str, Any]:
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:stacks/Pulumi.local.yaml"],
                          check=True, capture_output=True, text=True).stdout
    return dict(yaml.safe_load(text)["config"][SETTINGS_KEY])


def export_project(rev: str, dest: Path) -> Path:
    """The program's files as they were at `rev` (no checkout of the working tree is touched)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, *PROJECT_PARTS],
                             check=True, capture_output=True).stdout
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def deploy(rev: str, out: Path) -> None:
    from pulumi import automation as auto

    from tests.integration.conftest import EngineTools, inline_kubeconfig, load_tool

    bin_dir = load_tool("localcluster").tools_bin_dir()
    tools = EngineTools(bin_dir)
    settings = release_settings(rev)
    nodes = pool_nodes(settings)
    with tempfile.TemporaryDirectory(prefix="deployed-state-") as tmp:
        work = Path(tmp)
        cluster = start_cluster(work / "cluster", bin_dir, nodes, local_cluster_gates(settings))
        stack = None
        try:
            publish(cluster, {n: g for n, (_, _, g) in nodes.items()}, next(iter(nodes.values()))[1])
            project = export_project(rev, work / "project")
            (project / STACK_FILE).write_text(yaml.safe_dump({"config": {SETTINGS_KEY: settings}}, sort_keys=False))
            stack = auto.create_stack(STACK_NAME, work_dir=str(project),
                                      opts=tools.workspace(work, project, PASSPHRASE))
            stack.set_config("ck8s-gpu:kubeconfig",
                             auto.ConfigValue(inline_kubeconfig(Path(cluster.kubeconfig)), secret=True))
            stack.up(on_output=print, color="never")
            # The CLI, not the Automation API: its export_stack adds --show-secrets, and the file is
            # committed with its secrets (the kubeconfig, the pickled providers) as ciphertext.
            exported = subprocess.run([str(bin_dir / "pulumi"), "stack", "export", "--stack", STACK_NAME],
                                      cwd=project, env={**os.environ, **tools.env(work / "state", PASSPHRASE)},
                                      check=True, capture_output=True, text=True).stdout
            assert "plaintext" not in exported, "a secret in plaintext: not written"
            document = json.loads(exported)  # {"version": 3, "deployment": {...}}: what `import` reads
            out.mkdir(parents=True, exist_ok=True)
            (out / DEPLOYMENT).write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
            (out / STACK_FILE).write_text((project / STACK_FILE).read_text())
            print(f"wrote {out} ({len(document['deployment'].get('resources', []))} resources)")
        finally:
            try:
                if stack is not None:
                    stack.destroy(on_output=print, color="never")
                    stack.workspace.remove_stack(stack.name, force=True)
            finally:
                cluster.down()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", required=True, help="the revision whose program deploys the state")
    args = parser.parse_args()
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.rev],
                         check=True, capture_output=True, text=True).stdout.strip()
    deploy(rev, DATA / rev)


if __name__ == "__main__":
    main()

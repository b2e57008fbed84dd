"""A cluster that went away loses nothing and blocks nothing (docs/adr/0021), for real: the `local`
stack through the real engine, its control plane stopped between steps.

Outage: `pulumi refresh` while the API is down fails and keeps every release in state; with the
control plane back, `up` succeeds and changes nothing (no "cannot re-use a name").
Gone for good: `forget-cluster` is refused while the API answers; with the control plane down,
`pulumi destroy` fails on the Helm releases (pulumi-kubernetes cannot delete a release on an
unreachable cluster) and keeps them; `forget-cluster --yes` drops the cluster's resources from
state and `pulumi destroy` then completes, leaving an empty stack.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.smoke.report import passed
from tests.helpers.local_stack import SETTINGS_KEY, local_settings, pool_nodes, publish, stack_objects, start_cluster
from tests.helpers.tools import copy_project
from tests.integration.conftest import ROOT, EngineTools, inline_kubeconfig
from tests.integration.test_local_engine import PASSPHRASE

pytestmark = pytest.mark.integration

RELEASE = "kubernetes:helm.sh/v3:Release"


@dataclass
class Deployed:
    cluster: Any
    stack: Any
    project: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def deployed(engine_tools: EngineTools, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    from pulumi import automation as auto

    work = tmp_path_factory.mktemp("unreachable")
    settings = local_settings()
    nodes = pool_nodes(settings)
    cluster = start_cluster(work / "cluster", engine_tools.bin_dir, nodes)
    stack = None
    try:
        publish(cluster, {n: g for n, (_, _, g) in nodes.items()}, next(iter(nodes.values()))[1])
        project = copy_project(work / "project")
        name = f"unreachable-{uuid.uuid4().hex[:6]}"
        (project / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": {SETTINGS_KEY: settings}}))
        opts = engine_tools.workspace(work, project, PASSPHRASE)
        env = opts.env_vars
        stack = auto.create_stack(name, work_dir=str(project), opts=opts)
        stack.set_config("ck8s-gpu:kubeconfig",
                         auto.ConfigValue(inline_kubeconfig(Path(cluster.kubeconfig)), secret=True))
        up = stack.up(on_output=print, color="never")
        assert passed(up.outputs["smokeReport"].value)
        yield Deployed(cluster, stack, project, env)
    finally:
        try:
            if stack is not None:
                stack.workspace.remove_stack(stack.name, force=True)
        finally:
            cluster.down()


def forget_cluster(d: Deployed, *extra: str) -> subprocess.CompletedProcess[str]:
    """The real CLI, as an operator runs it, against the test's stack and state."""
    cmd = [sys.executable, "-m", "components.cli.main", "forget-cluster", "--stack", d.stack.name,
           "--cwd", str(d.project), *extra]
    proc = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **d.env}, capture_output=True, text=True, timeout=300)
    print(proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def releases(d: Deployed) -> list[str]:
    return sorted(n for t, n, _ in stack_objects(d.stack) if t == RELEASE)


def test_refresh_during_an_outage_keeps_every_release_and_the_next_up_works(deployed: Deployed) -> None:
    from pulumi import automation as auto

    before = sorted(stack_objects(deployed.stack))
    assert releases(deployed), before
    deployed.cluster.stop()
    try:
        t = time.monotonic()
        with pytest.raises(auto.CommandError) as failed:
            deployed.stack.refresh(on_output=print, color="never")
        print(f"refresh with the API down: refused in {time.monotonic() - t:.1f}s")
        assert "unreachable cluster" in str(failed.value), str(failed.value)[-3000:]
        assert sorted(stack_objects(deployed.stack)) == before, "a refresh during an outage dropped state"
    finally:
        deployed.cluster.start()
    up = deployed.stack.up(on_output=print, color="never")
    changes = {op: n for op, n in (up.summary.resource_changes or {}).items() if op != "same" and n}
    assert changes == {}, f"after the outage `up` wants changes: {changes}"
    assert sorted(stack_objects(deployed.stack)) == before


def test_a_cluster_gone_for_good_is_forgotten_and_destroy_completes(deployed: Deployed) -> None:
    from pulumi import automation as auto

    before = sorted(stack_objects(deployed.stack))
    refused = forget_cluster(deployed, "--yes")
    assert refused.returncode == 1 and "answers: refusing" in refused.stderr, refused.stderr
    assert sorted(stack_objects(deployed.stack)) == before

    deployed.cluster.stop()  # and it never comes back
    with pytest.raises(auto.CommandError) as failed:
        deployed.stack.destroy(on_output=print, color="never")
    assert "can't delete Helm Release with unreachable cluster" in str(failed.value), str(failed.value)[-3000:]
    assert set(releases(deployed)) <= {n for t, n, _ in before if t == RELEASE}
    assert releases(deployed), "the failed destroy must keep the releases it could not delete"

    listed = forget_cluster(deployed)
    assert listed.returncode == 0 and "would forget" in listed.stdout and "nothing changed" in listed.stdout
    assert releases(deployed)
    forgot = forget_cluster(deployed, "--yes")
    assert forgot.returncode == 0, forgot.stderr
    backups = list((deployed.project / "out" / "forget-cluster").glob(f"{deployed.stack.name}-*.json"))
    assert len(backups) == 1 and RELEASE in backups[0].read_text()
    assert stack_objects(deployed.stack) == []

    deployed.stack.destroy(on_output=print, color="never")
    left = deployed.stack.export_stack().deployment.get("resources") or []
    assert left == [], [r["urn"] for r in left]

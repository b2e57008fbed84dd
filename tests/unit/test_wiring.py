"""The one wiring (components/wiring.py): the program and the typed components wire the same pieces,
backups included. `GpuCluster` with `backup` settings used to end in an internal error (its Velero
release asked for credentials nobody made); now it makes the backup target as the program does."""

from __future__ import annotations

import ast
from collections import Counter
from typing import Any

import pulumi

from components.api import GpuCluster, GpuClusterArgs, GpuPool
from components.plan.mockengine import PlanRun, run_program
from components.tables.paths import PROJECT_DIR
from components.validate import parse
from components.wiring import Names, wire

POOLS = [GpuPool("l4", "g6.xlarge", nodes=1)]
BACKUP = {"backup": {"region": "eu-central-1"}}


def _component(settings: dict[str, Any]) -> PlanRun:
    def program() -> None:
        c = GpuCluster("demo", GpuClusterArgs(region="eu-north-1", pools=POOLS, settings=settings))
        pulumi.export("backupBucket", c.backup_bucket)
    return run_program(program, {}, stack="t", project="consumer", region="eu-north-1")


def test_gpu_cluster_with_backups_makes_the_backup_target_and_hands_velero_its_credentials() -> None:
    run = _component(BACKUP)
    top = next(r for r in run.resources if r.type == "ck8s-gpu:index:GpuCluster")
    backup = next(r for r in run.resources if r.type == "ck8s-gpu:index:BackupTarget")
    assert backup.name == "demo-backup" and backup.parent == top.urn
    velero = next(r for r in run.resources if r.type == "kubernetes:helm.sh/v3:Release" and r.name.endswith("velero"))
    # the release waits for the bucket's encryption, the user's grant, versioning and the key alias
    by_urn = {r.urn: r for r in run.resources}
    waits_for = {by_urn[d].type for d in velero.dependencies if d in by_urn}
    assert {"aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
            "aws:iam/userPolicy:UserPolicy"} <= waits_for
    assert run.outputs["backupBucket"]


def test_without_backup_settings_there_is_no_backup_target() -> None:
    run = _component({})
    assert "ck8s-gpu:index:BackupTarget" not in {r.type for r in run.resources}
    assert run.outputs["backupBucket"] is None


def _types(run: PlanRun) -> Counter[str]:
    return Counter(r.type for r in run.resources if r.type not in {"ck8s-gpu:index:GpuCluster", "pulumi:providers:aws"})


def test_the_program_and_the_component_wire_the_same_resources() -> None:
    raw = {"platform": "aws", "region": "eu-north-1", "environment": "gpu",
           "nodePools": [p.raw() for p in POOLS], **BACKUP}
    settings = parse(raw, "test")

    def program() -> None:
        wire(settings, None, Names.program(settings))
    as_program = run_program(program, {}, stack="t", project="consumer", region="eu-north-1")
    assert _types(as_program) == _types(_component(BACKUP))


def _calls_to_wire(path: str) -> int:
    tree = ast.parse((PROJECT_DIR / path).read_text())
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "wire")


def test_both_entry_points_wire_through_it_and_nothing_else_registers_the_pieces() -> None:
    assert _calls_to_wire("__main__.py") == 1
    assert _calls_to_wire("components/api.py") == 1
    for path in ("__main__.py", "components/api.py"):
        text = (PROJECT_DIR / path).read_text()
        for piece in ("AddonSet(", "SmokeTest(", "BackupTarget(", "make_cluster("):
            assert piece not in text, f"{path} wires {piece[:-1]} itself: use components/wiring.py wire()"


def test_unset_arguments_take_the_settings_defaults_and_their_rules() -> None:
    """The typed args send only what a program set: the model's defaults and rules decide the rest
    (SmokeTestArgs used to send `scheduler: kai` always, so simulated GPUs, where no KAI runs,
    were refused unless the program said `default`)."""
    from components.api import GpuAddonsArgs, SmokeTestArgs
    from components.settings.model import GpuStackSettings, KubernetesSettings, SmokeTestSettings

    simulated = GpuAddonsArgs(kubeconfig="k", pools=POOLS, simulated_gpus=True).to_settings("demo")
    assert simulated.smoke_test.scheduler == "default"
    plain = GpuAddonsArgs(kubeconfig="k", pools=POOLS, smoke_test=SmokeTestArgs(gpus=1)).to_settings("demo")
    smoke = plain.smoke_test
    assert (smoke.scheduler, smoke.timeout_seconds) == ("kai", SmokeTestSettings().timeout_seconds)
    assert (plain.gpu_stack.driver, plain.kubernetes.track) == (GpuStackSettings().driver, KubernetesSettings().track)
    chosen = GpuAddonsArgs(kubeconfig="k", pools=POOLS, driver="host", kubernetes_track="1.35-classic",
                           smoke_test=SmokeTestArgs(scheduler="default", timeout_seconds=600)).to_settings("demo")
    assert (chosen.gpu_stack.driver, chosen.kubernetes.track) == ("host", "1.35-classic")
    assert (chosen.smoke_test.scheduler, chosen.smoke_test.timeout_seconds) == ("default", 600)

"""The recording mock engine keeps parent, dependencies, flags and masks secrets."""

from __future__ import annotations

import json

import pulumi

from components.plan.mockengine import MASK, run_program


class Box(pulumi.ComponentResource):
    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("ck8s-gpu:index:Box", name, None, opts)
        self.first = pulumi.CustomResource(
            "test:index:Thing", f"{name}-first",
            {"password": pulumi.Output.secret("hunter2-very-secret"), "size": 3},
            pulumi.ResourceOptions(parent=self, protect=True),
        )
        self.second = pulumi.CustomResource(
            "test:index:Thing", f"{name}-second", {"peer": self.first.id},
            pulumi.ResourceOptions(parent=self, depends_on=[self.first], retain_on_delete=True,
                                   custom_timeouts=pulumi.CustomTimeouts(create="20m")),
        )
        self.register_outputs({})


def test_records_graph_flags_and_masks_secrets() -> None:
    run = run_program(lambda: Box("box"), {}, stack="t")
    by_name = {r.name: r for r in run.resources}
    assert set(by_name) == {"box", "box-first", "box-second"}
    box, first, second = by_name["box"], by_name["box-first"], by_name["box-second"]
    assert not box.custom and first.custom
    assert first.parent == box.urn and second.parent == box.urn
    assert first.urn in second.dependencies
    assert first.protect and not first.retain_on_delete
    assert second.retain_on_delete and second.timeouts == {"create": "20m"}
    assert first.inputs["password"] == MASK and first.secret_paths == ["password"]
    assert first.raw_inputs["password"] == "hunter2-very-secret"
    assert "hunter2" not in json.dumps([r.to_json() for r in run.resources])


def test_exports_are_resolved_and_secret_exports_masked() -> None:
    def program() -> None:
        pulumi.export("plain", "value")
        pulumi.export("hidden", pulumi.Output.secret("s3cr3t"))

    run = run_program(program, {}, stack="t")
    assert run.outputs == {"plain": "value", "hidden": MASK}


def test_runs_are_independent() -> None:
    first = run_program(lambda: pulumi.export("only-in-first", 1), {}, stack="zero")
    assert first.outputs == {"only-in-first": 1}
    a = run_program(lambda: Box("a"), {}, stack="one")
    assert a.outputs == {}
    b = run_program(lambda: Box("b"), {}, stack="two")
    assert [r.name for r in b.resources] == ["b", "b-first", "b-second"]
    assert all("::two::" not in r.urn for r in a.resources)
    assert all(r.urn.startswith("urn:pulumi:two::") for r in b.resources)


def test_additional_secret_outputs_come_back_secret() -> None:
    def program() -> None:
        r = pulumi.CustomResource("test:index:Thing", "t", {"token": "abc", "plain": "p"},
                                  pulumi.ResourceOptions(additional_secret_outputs=["token"]))
        # A consumer of the output: its input must be recorded as secret, as under the real engine.
        pulumi.CustomResource("test:index:User", "u", {"copy": r.token, "other": r.plain})  # type: ignore[attr-defined]

    run = run_program(program, {}, stack="t")
    user = next(r for r in run.resources if r.name == "u")
    seen = {"copy": "copy" in user.secret_paths, "other": "other" in user.secret_paths}
    assert seen == {"copy": True, "other": False}
    assert user.inputs["copy"] == MASK


def test_the_old_import_path_still_works() -> None:
    """components/cli/mockengine.py is a shim: scripts and notebooks that import it keep working."""
    from components.cli import mockengine as old
    from components.plan import mockengine as new

    assert old.run_program is new.run_program and old.RecordingMonitor is new.RecordingMonitor


def test_the_plan_does_not_import_the_cli() -> None:
    """Layering (issue 15): cli calls plan, never the other way round."""
    import ast

    from components import PROJECT_DIR

    for f in sorted((PROJECT_DIR / "components" / "plan").glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("components.cli"), f"{f.name} imports {node.module}"


def test_a_plan_after_a_failed_plan_returns() -> None:
    """Issue 14: a run whose program failed inside an Output left its RPCs in the SDK's globals and
    the next run in the same process waited for them for ever. In a subprocess with a timeout, so
    a regression fails instead of hanging the suite."""
    import subprocess
    import sys

    from components import PROJECT_DIR

    script = """
import runpy
from components import PROJECT_DIR
from components.plan.mockengine import run_program
from components.plan.run import plan_stack
from components.settings.load import read_stack_file

config = read_stack_file(PROJECT_DIR / "stacks" / "Pulumi.local.yaml")
config["ck8s-gpu:kubeconfig"] = "clusters: [unclosed"  # fails inside an Output, with RPCs in flight
try:
    run_program(lambda: runpy.run_path(str(PROJECT_DIR / "__main__.py"), run_name="__main__"), config,
                stack="local", secret_keys=["ck8s-gpu:kubeconfig"])
except Exception:
    print("first run failed as it should")
print("second run:", len(plan_stack("local").resources), "resources")
"""
    run = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_DIR, capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "first run failed as it should" in run.stdout and "second run:" in run.stdout

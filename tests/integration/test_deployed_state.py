"""A stack deployed by an earlier revision previews with no change under today's program.

tests/data/deployed-state/<rev>/ holds the exported state of the `local` stack as the program at
<rev> deployed it (tests/helpers/deployed_state.py made it, through the real engine, onto a control
plane that is gone; its secrets are ciphertext). Today's program previews against it with that
cluster unreachable, which the Kubernetes provider allows (input diffs only): every resource must
come out `same`, save the smoke test running again where its chart changed since (a new run id,
every value as deployed but for cases added since, each off: smoke_rerun says so). What the preview
catches: a type token, resource name or parent that moved (a new URN: a delete and a create) and an
input re-derived differently (an update). What it does not:
a dynamic provider class that moved or was renamed. Its pickle (the `__provider` input) names the
class by module path, yet the providers' own `diff` reads only their named inputs, so the preview
stays clean while `refresh` and `destroy`, which unpickle the stored one, would fail. The second
test loads each stored pickle with today's code: it must resolve to the live class (a re-export at
the old path is enough). Both tests were shown failing, on an injected type-token rename and an
injected provider-class rename (issue 39's closing note).
"""

from __future__ import annotations

import base64
import importlib
import json
import shutil
from pathlib import Path
from typing import Any

import dill
import pytest

from tests.helpers.deployed_state import DATA, DEPLOYMENT, PASSPHRASE, STACK_FILE, STACK_NAME
from tests.helpers.tools import copy_project
from tests.integration.conftest import EngineTools

pytestmark = pytest.mark.integration

STATES = sorted(p for p in DATA.iterdir() if (p / DEPLOYMENT).is_file())
STACK_TYPE = "pulumi:pulumi:Stack"


def test_there_is_a_deployed_state_to_preview() -> None:
    assert STATES, f"no deployed state under {DATA}: the preview test below would run nothing"


@pytest.fixture(scope="module", params=STATES, ids=[p.name for p in STATES])
def imported(request: pytest.FixtureRequest, engine_tools: EngineTools,
             tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Today's program (a copy of the project) with the stored state imported into a fresh backend."""
    from pulumi import automation as auto

    state: Path = request.param
    work = tmp_path_factory.mktemp(f"deployed-{state.name}")
    project = copy_project(work / "project")
    shutil.copy(state / STACK_FILE, project / STACK_FILE)  # the encryption salt and the secret config
    stack = auto.create_stack(STACK_NAME, work_dir=str(project), opts=engine_tools.workspace(work, project, PASSPHRASE))
    document = json.loads((state / DEPLOYMENT).read_text())
    stack.import_stack(auto.Deployment(version=document["version"], deployment=document["deployment"]))
    return stack


# The smoke test's chart release and its run: the one change an upgrade may make, by design.
SMOKE_CHART = "kubernetes:helm.sh/v3:Release::smoke-test-chart"
SMOKE_RUN = "pulumi-python:dynamic/ck8s-gpu:SmokeRun::smoke-test-run"
SMOKE_STEPS = {"update", "replace", "create-replacement", "delete-replaced"}


def smoke_rerun(changed: list[tuple[str, str]], old: dict[str, Any], new: dict[str, Any]) -> str:
    """Why the smoke test runs again after this upgrade, when that is all that changes: the chart's
    run id is new (a template or a value changed: components/smoke/values.py run_id, "a template change
    re-runs the test like a value change does") and every value but the run id is as deployed, save
    cases added since, each off. "" otherwise: the changes are then reported as such."""
    smoke = [(op, urn) for op, urn in changed if urn.endswith((SMOKE_CHART, SMOKE_RUN))]
    if not smoke or any(op not in SMOKE_STEPS for op, _ in smoke) or not new:
        return ""
    if old.get("runId") == new.get("runId"):
        return ""
    added = {k: v for k, v in new.items() if k not in old}
    kept = {k: v for k, v in new.items() if k in old and k != "runId"}
    if set(old) - set(new) or kept != {k: v for k, v in old.items() if k != "runId"} or any(
            v != {"enabled": False} for v in added.values()):
        return ""
    return (f"the smoke test runs again: its run id moved {old['runId']} -> {new['runId']} (the chart changed; new "
            f"cases, all off: {', '.join(sorted(added)) or 'none'}); nothing else changes")


def test_todays_program_previews_the_deployed_state_with_no_change(imported: Any) -> None:
    from pulumi import automation as auto

    resources = imported.export_stack().deployment["resources"]
    stored = [r["urn"] for r in resources]
    steps: list[tuple[str, str]] = []
    new_values: dict[str, Any] = {}

    def on_event(event: auto.EngineEvent) -> None:
        if event.resource_pre_event is not None:
            meta = event.resource_pre_event.metadata
            steps.append((meta.op.value, meta.urn))
            if meta.urn.endswith(SMOKE_CHART) and meta.new is not None:
                new_values.update((meta.new.inputs or {}).get("values") or {})

    preview = imported.preview(color="never", on_event=on_event)
    changed = [(op, urn) for op, urn in steps if op != "same"]
    old_values = next((r["inputs"].get("values") or {} for r in resources if r["urn"].endswith(SMOKE_CHART)), {})
    why = smoke_rerun(changed, old_values, new_values)
    if why:
        print(why)
        changed = [(op, urn) for op, urn in changed if not urn.endswith((SMOKE_CHART, SMOKE_RUN))]
    assert not changed, "today's program changes a stack the earlier revision deployed:\n" + "\n".join(
        f"  {op}: {urn}" for op, urn in changed)
    assert set(preview.change_summary) <= ({"same", "update", "replace"} if why else {"same"}), preview.change_summary
    # The preview saw every stored resource (a missing one would be a delete, one under a new URN a
    # create: both are changes above; this says nothing of the state went unvisited). A replacement
    # is three steps of one URN.
    assert sorted({urn for _, urn in steps}) == sorted(stored)
    assert len(stored) >= 10 and any(STACK_TYPE in u for u in stored), stored


def test_each_stored_dynamic_provider_loads_as_todays_class(imported: Any) -> None:
    from pulumi.dynamic import ResourceProvider
    from pulumi.dynamic.dynamic import PROVIDER_KEY

    # The Automation API's export shows secrets (`__provider` is one): the pickles in plaintext.
    pickled = {r["urn"]: r["inputs"][PROVIDER_KEY] for r in imported.export_stack().deployment["resources"]
               if PROVIDER_KEY in (r.get("inputs") or {})}
    assert len(pickled) >= 2, pickled.keys()
    for urn, blob in pickled.items():
        text = json.loads(blob["plaintext"]) if isinstance(blob, dict) else blob
        try:
            provider = dill.loads(base64.b64decode(text))
        except (AttributeError, ImportError) as e:  # what `pulumi destroy` would hit
            raise AssertionError(f"{urn}: its stored provider no longer loads: {e}") from e
        cls = type(provider)
        assert isinstance(provider, ResourceProvider), (urn, cls)
        live = getattr(importlib.import_module(cls.__module__), cls.__qualname__, None)
        assert live is cls, f"{urn}: {cls!r} loaded, but it is not the class today's code defines"

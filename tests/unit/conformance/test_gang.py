"""gang_scheduling's paths that need no scheduler (components/conformance/gang.py); the all-or-nothing
judgement itself runs against a real API server under the KAI stand-in, a one-by-one scheduler and
none (tests/integration/test_kai_claims_local.py)."""

from __future__ import annotations

from components.conformance import gang
from components.conformance.common import Context
from components.settings.model import Settings
from tests.unit.conformance.test_procedures import FakeApi, device


def context(api: FakeApi, settings: Settings | None = None) -> Context:
    return Context(api, "probe:1", "conf", 5.0, lambda _m: None, settings=settings)  # type: ignore[arg-type]


def test_without_kai_s_podgroup_api_it_is_not_implemented_naming_the_setting() -> None:
    r = gang.gang_scheduling(context(FakeApi()))
    assert (r.status, r.outcome) == ("Not Implemented", "skipped") and "kaiScheduler" in r.notes


def test_the_queue_is_the_stack_s_smoke_queue_else_a_leaf_queue() -> None:
    api = FakeApi()
    assert gang._queue(context(api, Settings.model_validate({"platform": "existing",
                                                              "smokeTest": {"queue": "team-a"}}))) == "team-a"
    api.paths["/apis/scheduling.run.ai/v2/queues"] = {"items": [
        {"metadata": {"name": "root"}, "spec": {}},
        {"metadata": {"name": "team-b"}, "spec": {"parentQueue": "root"}},
    ]}
    assert gang._queue(context(api)) == "team-b"
    api.paths["/apis/scheduling.run.ai/v2/queues"] = {"items": []}
    api.paths["/apis/scheduling.run.ai/v2alpha2"] = {"resources": []}
    r = gang.gang_scheduling(context(api))
    assert (r.status, r.outcome) == ("Not Implemented", "failed") and "no leaf Queue" in r.notes


def test_fewer_than_two_whole_gpus_runs_nothing() -> None:
    api = FakeApi()
    api.paths["/apis/scheduling.run.ai/v2alpha2"] = {"resources": []}
    api.slices = [{"spec": {"driver": "gpu.nvidia.com", "nodeName": "n1", "pool": {"name": "n1"},
                            "devices": [device("gpu-0", "GPU-a")]}}]
    r = gang.gang_scheduling(context(api, Settings(platform="existing")))
    assert (r.status, r.outcome) == ("Partially Implemented", "skipped") and "1 are published" in r.notes
    assert not api.objects

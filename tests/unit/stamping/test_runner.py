"""Stamping's decision logic around the Automation API (replaced by a fake): created vs updated,
pre-flight before any up, failure isolation and aggregation, bounded parallelism, exit codes."""

from __future__ import annotations

from components.stamping.backend import OpResult
from components.stamping.derive import StampedStack, derive_all
from components.stamping.overrides import load_overrides
from components.stamping.runner import run_regions
from components.stamping.summary import EXIT_OK, EXIT_REGION_FAILED, exit_code, table
from tests.unit.stamping.helpers import DATA, FakeBackend, template

CTRF_PASSED = {"results": {"summary": {"tests": 6, "passed": 6, "failed": 0, "skipped": 0}}}
CTRF_FAILED = {"results": {"summary": {"tests": 6, "passed": 5, "failed": 1, "skipped": 0}}}


def _stamped(regions: list[str]) -> list[StampedStack]:
    config, _ = template("aws-dev")
    return derive_all("aws-dev", config, regions, {})


def _prod(regions: list[str]) -> list[StampedStack]:
    config, _ = template("aws-prod")
    return derive_all("aws-prod", config, regions, load_overrides(DATA / "aws-prod.regions.yaml"))


def test_existing_stacks_are_updated_new_ones_created() -> None:
    backend = FakeBackend(existing={"aws-dev-us-east-2"},
                          results={s: OpResult(ok=True, outputs={"smokeReport": CTRF_PASSED})
                                   for s in ("aws-dev-us-east-2", "aws-dev-ap-south-1")})
    results = run_regions(_stamped(["us-east-2", "ap-south-1"]), "up", backend, parallel=2, file_actions={},
                          emit=lambda _line: None)
    assert [(r.stack, r.outcome) for r in results] == [("aws-dev-us-east-2", "updated"),
                                                        ("aws-dev-ap-south-1", "created")]
    assert all(r.smoke == "passed (6/6 checks)" for r in results)
    assert exit_code(results) == EXIT_OK


def test_preview_says_what_would_happen() -> None:
    backend = FakeBackend(existing={"aws-dev-us-east-2"})
    results = run_regions(_stamped(["us-east-2", "ap-south-1"]), "preview", backend, parallel=1, file_actions={},
                          emit=lambda _line: None)
    assert [r.outcome for r in results] == ["would update", "would create"]
    assert {op for op, _ in backend.calls} == {"preview"}


def test_preflight_runs_for_every_region_before_any_up_and_failures_skip_only_their_region() -> None:
    events: list[str] = []

    class Recording(FakeBackend):
        def up(self, stack: str, on_output):  # type: ignore[no-untyped-def]
            events.append(f"up {stack}")
            return super().up(stack, on_output)

    def preflight(s: StampedStack) -> list[str]:
        events.append(f"preflight {s.stack}")
        return ["ERROR quota-too-low [L-417A185B]: needs 768 vCPUs"] if s.region == "eu-central-1" else []

    backend = Recording()
    results = run_regions(_prod(["us-east-2", "eu-central-1"]), "up", backend, parallel=2, file_actions={},
                          preflight=preflight, emit=lambda _line: None)
    assert events[:2] == ["preflight aws-prod-us-east-2", "preflight aws-prod-eu-central-1"]
    assert events[2:] == ["up aws-prod-us-east-2"]  # the failing region was never deployed
    assert [r.ok for r in results] == [True, False]
    assert "pre-flight failed" in results[1].error and "L-417A185B" in results[1].error
    assert exit_code(results) == EXIT_REGION_FAILED


def test_a_crashing_or_failing_region_does_not_stop_the_others() -> None:
    backend = FakeBackend(results={
        "aws-dev-us-east-2": RuntimeError("pulumi exploded"),
        "aws-dev-ap-south-1": OpResult(ok=False, error="error: creating EC2 Instance: InsufficientInstanceCapacity"),
        "aws-dev-ca-central-1": OpResult(ok=True, outputs={"smokeReport": CTRF_PASSED}),
    })
    results = run_regions(_stamped(["us-east-2", "ap-south-1", "ca-central-1"]), "up", backend, parallel=3,
                          file_actions={}, emit=lambda _line: None)
    assert [r.outcome for r in results] == ["failed", "failed", "created"]
    assert "RuntimeError: pulumi exploded" in results[0].error
    text = "\n".join(table(results))
    assert "InsufficientInstanceCapacity" in text and "1 of 3 region(s) succeeded, 2 failed" in text
    assert exit_code(results) == EXIT_REGION_FAILED


def test_a_failed_smoke_report_fails_the_region_even_when_up_succeeded() -> None:
    backend = FakeBackend(results={"aws-dev-us-east-2": OpResult(ok=True, outputs={"smokeReport": CTRF_FAILED})})
    [result] = run_regions(_stamped(["us-east-2"]), "up", backend, parallel=1, file_actions={},
                           emit=lambda _line: None)
    assert not result.ok and result.smoke == "failed (1/6 checks)"
    assert exit_code([result]) == EXIT_REGION_FAILED


def test_parallelism_is_bounded() -> None:
    regions = ["us-east-2", "ap-south-1", "ca-central-1", "sa-east-1", "eu-north-1"]
    backend = FakeBackend(delay=0.05)
    run_regions(_stamped(regions), "preview", backend, parallel=2, file_actions={}, emit=lambda _line: None)
    assert backend.max_running == 2
    assert len(backend.calls) == 5
    serial = FakeBackend(delay=0.01)
    run_regions(_stamped(regions), "preview", serial, parallel=1, file_actions={}, emit=lambda _line: None)
    assert serial.max_running == 1


def test_live_progress_is_prefixed_per_region() -> None:
    lines: list[str] = []
    run_regions(_stamped(["us-east-2", "ap-south-1"]), "preview", FakeBackend(), parallel=2,
                file_actions={}, emit=lines.append)
    assert "[aws-dev-us-east-2] preview of aws-dev-us-east-2: working" in lines
    assert "[aws-dev-ap-south-1] preview done" in lines
    assert all(line.startswith("[aws-dev-") for line in lines)


def test_durations_come_from_the_clock() -> None:
    ticks = iter([0.0, 125.0])
    [result] = run_regions(_stamped(["us-east-2"]), "preview", FakeBackend(), parallel=1, file_actions={},
                           emit=lambda _line: None, clock=lambda: next(ticks))
    assert result.seconds == 125.0
    assert "2m05s" in "\n".join(table([result]))

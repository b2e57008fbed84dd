"""Per-region results, the summary table, and the exit code (pure)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

Mode = Literal["offline", "preview", "up"]
# What happened to the region's stack: verbs per mode, "failed" in every mode.
Outcome = Literal["planned", "would create", "would update", "created", "updated", "failed"]

EXIT_OK = 0
EXIT_REGION_FAILED = 1
EXIT_USAGE = 2  # bad template/overrides/arguments, missing CLI: nothing ran


@dataclass(frozen=True)
class RegionResult:
    region: str
    stack: str
    mode: Mode
    new_stack: bool  # the state backend had no such stack (offline: unknown, False)
    file_action: str  # create | update | unchanged (the stack file in stacks/)
    ok: bool
    seconds: float
    changes: dict[str, int]
    smoke: str = "-"
    error: str = ""

    @property
    def outcome(self) -> Outcome:
        if not self.ok:
            return "failed"
        if self.mode == "offline":
            return "planned"
        if self.mode == "preview":
            return "would create" if self.new_stack else "would update"
        return "created" if self.new_stack else "updated"


def smoke_verdict(report: Any) -> tuple[str, bool | None]:
    """(display text, passed?) from the stack output `smokeReport`; None = no verdict to judge.

    The smoke test exports a CTRF document (`results.summary.{passed,failed,tests}`) or
    `{"status": "disabled"}`; its JSON text and simpler verdict shapes are read as well."""
    if report is None:
        return "no report", None
    if isinstance(report, bool):
        return ("passed" if report else "failed"), report
    if isinstance(report, str):
        try:
            return smoke_verdict(json.loads(report))
        except ValueError:
            return report[:40], None
    if isinstance(report, dict):
        summary = (report.get("results") or {}).get("summary") if isinstance(report.get("results"), dict) else None
        if isinstance(summary, dict):  # CTRF, what components/smoke exports
            n_failed, n_passed, n_tests = (int(summary.get(k) or 0) for k in ("failed", "passed", "tests"))
            if n_failed:
                return f"failed ({n_failed}/{n_tests} checks)", False
            if n_passed:
                return f"passed ({n_passed}/{n_tests} checks)", True
            return "no checks ran", False
        verdict = report.get("verdict", report.get("status"))
        passed = report.get("passed", report.get("ok"))
        if isinstance(verdict, str):
            ok = verdict.lower() in ("pass", "passed", "ok", "success", "succeeded")
            failed = verdict.lower() in ("fail", "failed", "error")
            return verdict, True if ok else (False if failed else None)
        if isinstance(passed, bool):
            return ("passed" if passed else "failed"), passed
    return "unreadable report", None


def format_changes(changes: dict[str, int]) -> str:
    symbols = {"create": "+", "update": "~", "delete": "-", "replace": "+-", "same": "="}
    parts = [f"{symbols.get(op, op + ' ')}{n}" for op, n in sorted(changes.items()) if n]
    return " ".join(parts) or "-"


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s"


def table(results: list[RegionResult]) -> list[str]:
    head = ("region", "stack", "file", "result", "changes", "duration", "smoke test")
    rows = [head] + [
        (r.region, r.stack, r.file_action, r.outcome, format_changes(r.changes), _duration(r.seconds), r.smoke)
        for r in results
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    failed = [r for r in results if not r.ok]
    for r in failed:
        lines.append("")
        lines.append(f"{r.region} ({r.stack}) failed:")
        lines += [f"  {line}" for line in r.error.splitlines() or ["(no error text)"]]
    ok = len(results) - len(failed)
    lines.append("")
    lines.append(f"{ok} of {len(results)} region(s) succeeded" + (f", {len(failed)} failed" if failed else ""))
    return lines


def exit_code(results: list[RegionResult]) -> int:
    return EXIT_OK if all(r.ok for r in results) else EXIT_REGION_FAILED

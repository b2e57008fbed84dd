"""The smoke test's report: CTRF-shaped JSON, a summary table, and a diagnostics bundle."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from .expectations import Expectations
from .next_steps import next_steps
from .snapshot import (
    Obj,
    allocation_results,
    attribute,
    claim_of,
    condition,
    container_state,
    labels,
    name,
    reporter,
)
from .verifier import FAILED, PASSED, SKIPPED, CheckResult, Snapshot

TOOL = "ck8s-gpu-smoke"
LOG_TAIL = 40
MARK = {PASSED: "pass", FAILED: "FAIL", SKIPPED: "skip"}


def passed(report: dict[str, Any]) -> bool:
    """True when every non-skipped check passed (and at least one ran)."""
    s = report["results"]["summary"]
    return bool(s["failed"] == 0 and s["passed"] > 0)


def build(
    results: Sequence[CheckResult],
    exp: Expectations,
    *,
    start_ms: int,
    stop_ms: int,
    phases: Sequence[dict[str, Any]] = (),
    diagnostics: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A CTRF document (reportFormat/specVersion/results{tool,summary,tests}) with our extras."""
    tests = []
    for r in results:
        test: dict[str, Any] = {"name": r.name, "status": r.status, "duration": r.duration_ms, "message": r.message,
                                "suite": [exp.run_id, r.hop], "extra": {"hop": r.hop}}
        if r.details and r.status == FAILED:
            test["extra"]["problems"] = list(r.details)
        tests.append(test)
    count = {s: sum(1 for r in results if r.status == s) for s in (PASSED, FAILED, SKIPPED)}
    extra: dict[str, Any] = {
        "runId": exp.run_id,
        "namespace": exp.namespace,
        "scheduler": exp.scheduler,
        "deviceClass": exp.device_class,
        "cases": [c.case for c in exp.cases],
        "phases": list(phases),
    }
    if diagnostics is not None:
        extra["diagnostics"] = diagnostics
    return {
        "reportFormat": "CTRF",
        "specVersion": "0.0.0",
        "reportId": str(uuid.uuid4()),
        "generatedBy": TOOL,
        "results": {
            "tool": {"name": TOOL},
            "summary": {"tests": len(results), "passed": count[PASSED], "failed": count[FAILED],
                        "skipped": count[SKIPPED], "pending": 0, "other": 0, "start": start_ms, "stop": stop_ms},
            "tests": tests,
            "extra": extra,
        },
    }


def table(report: dict[str, Any], width: int = 100) -> str:
    """Fixed-width summary: one row per check."""
    tests = report["results"]["tests"]
    rows = [("CHECK", "HOP", "RESULT", "MS", "DETAIL")]
    for t in tests:
        rows.append((t["name"], t["extra"]["hop"], MARK.get(t["status"], t["status"]), f"{t['duration']:.1f}",
                     t["message"]))
    w = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = []
    for r in rows:
        head = "  ".join(r[i].ljust(w[i]) for i in range(4))
        room = max(20, width - len(head) - 2)
        detail = r[4] if len(r[4]) <= room else r[4][: room - 3] + "..."
        lines.append(f"{head}  {detail}".rstrip())
    s = report["results"]["summary"]
    lines.append(f"{s['passed']} passed, {s['failed']} failed, {s['skipped']} skipped "
                 f"in {(s['stop'] - s['start']) / 1000:.1f}s (run {report['results']['extra']['runId']})")
    return "\n".join(lines)


def failure_message(report: dict[str, Any], *, limit: int = 12) -> str:
    """What `pulumi up` prints when the smoke test fails: each failing hop and its problems."""
    failed = [t for t in report["results"]["tests"] if t["status"] == FAILED]
    extra = report["results"]["extra"]
    lines = [f"GPU smoke test failed: {len(failed)} check(s) failed (run {extra['runId']}, "
             f"namespace {extra['namespace']})"]
    for t in failed:
        lines.append(f"  {t['name']} [{t['extra']['hop']}]:")
        problems = t["extra"].get("problems") or [t["message"]]
        lines += [f"    - {p}" for p in problems[:limit]]
        if len(problems) > limit:
            lines.append(f"    - ... {len(problems) - limit} more")
    lines += ["", table(report), "", *next_steps([t["name"] for t in failed], extra["namespace"])]
    return "\n".join(lines).rstrip()


# --- diagnostics ------------------------------------------------------------------------------


def _event(e: Obj) -> dict[str, Any]:
    about = e.get("involvedObject") or e.get("regarding") or {}
    return {"time": e.get("lastTimestamp") or e.get("eventTime") or "", "type": e.get("type", ""),
            "reason": e.get("reason", ""), "object": f"{about.get('kind', '')}/{about.get('name', '')}",
            "reporter": reporter(e), "count": e.get("count", 1), "message": e.get("message") or e.get("note") or ""}


def _pod(p: Obj, snap: Snapshot) -> dict[str, Any]:
    st = p.get("status", {})
    containers = [c.get("name", "") for c in p.get("spec", {}).get("containers") or []]
    return {"name": name(p), "case": labels(p).get("ck8s-gpu.io/smoke-case", ""), "phase": st.get("phase", ""),
            "node": p.get("spec", {}).get("nodeName", ""), "scheduler": p.get("spec", {}).get("schedulerName", ""),
            "claim": claim_of(snap, p),
            "conditions": [{k: c.get(k) for k in ("type", "status", "reason", "message") if c.get(k)}
                           for c in st.get("conditions") or []],
            "containers": {c: container_state(p, c) for c in containers}}


def _claim(c: Obj) -> dict[str, Any]:
    return {"name": name(c), "allocated": [f"{r.get('driver')}:{r.get('pool')}/{r.get('device')}"
                                           for r in allocation_results(c)],
            "reservedFor": [r.get("name") for r in c.get("status", {}).get("reservedFor") or []]}


def _slice(s: Obj, domain: str) -> dict[str, Any]:
    spec = s.get("spec", {})
    pool = spec.get("pool", {})
    return {"name": name(s), "driver": spec.get("driver"), "node": spec.get("nodeName"),
            "pool": f"{pool.get('name')}@{pool.get('generation')}",
            "devices": [{"name": d.get("name"), "type": attribute(d, "type", domain),
                         "uuid": attribute(d, "uuid", domain), "productName": attribute(d, "productName", domain)}
                        for d in spec.get("devices") or []]}


def _job(j: Obj) -> dict[str, Any]:
    st = j.get("status", {})
    conds = [c for c in (condition(j, "Complete"), condition(j, "Failed")) if c]
    return {"name": name(j), "suspend": j.get("spec", {}).get("suspend"), "active": st.get("active", 0),
            "succeeded": st.get("succeeded", 0), "failed": st.get("failed", 0),
            "conditions": [{k: c.get(k) for k in ("type", "status", "reason", "message")} for c in conds]}


def diagnostics(snap: Snapshot, exp: Expectations) -> dict[str, Any]:
    """Everything needed to see why a hop broke, without cluster access (JSON-serialisable)."""

    def tail(text: str) -> list[str]:
        return text.splitlines()[-LOG_TAIL:]

    return {
        "events": sorted((_event(e) for e in snap.events), key=lambda e: str(e["time"])),
        "pods": [_pod(p, snap) for p in sorted(snap.pods, key=name)],
        "logs": {k: tail(v) for k, v in sorted(snap.logs.items())},
        "logErrors": dict(sorted(snap.log_errors.items())),
        "claims": [_claim(c) for c in sorted(snap.claims, key=name)],
        "jobs": [_job(j) for j in sorted(snap.jobs, key=name)],
        "podGroups": [{"name": name(g), "minMember": g.get("spec", {}).get("minMember"),
                       "phase": g.get("status", {}).get("phase")} for g in snap.pod_groups],
        "deviceClasses": sorted(name(d) for d in snap.device_classes),
        "slices": [_slice(s, exp.driver) for s in sorted(snap.slices, key=name)],
        "metricsNote": snap.metrics_note,
    }

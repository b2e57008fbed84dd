"""Text of a pre-flight result (pure)."""

from __future__ import annotations

from .checks import Finding, failed


def lines(stack: str, region: str, findings: list[Finding]) -> list[str]:
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = sum(1 for f in findings if f.severity == "warning")
    notes = len(findings) - errors - warnings
    verdict = "FAILED" if failed(findings) else "ok"
    out = [f"pre-flight {stack} ({region}): {verdict}, {errors} error(s), {warnings} warning(s)"
           + (f", {notes} note(s)" if notes else "")]
    out += [f"  {f.line()}" for f in findings]
    return out

"""Text of a pre-flight result (pure)."""

from __future__ import annotations

from components.preflight.checks import Finding, failed


def lines(stack: str, region: str, findings: list[Finding]) -> list[str]:
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = len(findings) - errors
    verdict = "FAILED" if failed(findings) else "ok"
    out = [f"pre-flight {stack} ({region}): {verdict}, {errors} error(s), {warnings} warning(s)"]
    out += [f"  {f.line()}" for f in findings]
    return out

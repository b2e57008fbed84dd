"""Every ADR has a status line under its title (Proposed: a decision still open, its facts gathered)
and a row in docs/adr/README.md with the same status;
every ADR a status names as amending or superseding exists and says so itself."""

from __future__ import annotations

import re

from components.tables.paths import PROJECT_DIR

ADR_DIR = PROJECT_DIR / "docs" / "adr"
STATUS = re.compile(r"^Status: (Proposed|Accepted|Deprecated|Superseded by \[(\d{4})\]\(\S+\))"
                    r"(; amended by (\[\d{4}\]\(\S+\)(, )?)+)?( \(\d{4}-\d{2}-\d{2}\))?$")


def _adrs() -> dict[str, list[str]]:
    return {p.name: p.read_text().splitlines() for p in sorted(ADR_DIR.glob("[0-9][0-9][0-9][0-9]-*.md"))}


def _status(lines: list[str]) -> str:
    body = [line for line in lines if line.strip()]
    assert body[0].startswith("# "), "the title comes first"
    return body[1]


def test_every_adr_has_a_status_line_under_its_title() -> None:
    adrs = _adrs()
    assert len(adrs) >= 47
    bad = {name: _status(lines) for name, lines in adrs.items() if not STATUS.match(_status(lines))}
    assert bad == {}


def test_the_index_lists_every_adr_with_its_status() -> None:
    index = (ADR_DIR / "README.md").read_text()
    row = re.compile(r"^\| \[\d{4}\]\((\S+)\) \|[^|]*\| (.*) \|$", re.M)
    rows = {m.group(1): m.group(2).strip() for m in row.finditer(index)}
    adrs = _adrs()
    assert set(rows) == set(adrs)
    assert {n: rows[n] for n in adrs if rows[n] != _status(adrs[n]).removeprefix("Status: ")} == {}


def test_amendments_are_named_on_both_sides() -> None:
    adrs = _adrs()
    for name, lines in adrs.items():
        status = _status(lines)
        amended = status.split("amended by", 1)[1] if "amended by" in status else ""
        for later in re.findall(r"\[(\d{4})\]\((\S+)\)", amended):
            assert later[1] in adrs, f"{name} names a missing ADR {later[1]}"
            assert any(line.startswith("Amends:") and name in line for line in adrs[later[1]]), (
                f"{later[1]} amends {name} but does not say so (`Amends: [NNNN](file)`)")

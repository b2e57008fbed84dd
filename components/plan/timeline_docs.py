"""The generated "time to first GPU job" section of docs/benchmarks.md.

    python -m components.plan.timeline_docs                          # print the section
    python -m components.plan.timeline_docs --write docs/benchmarks.md

tests/unit/plan_timeline/test_docs.py regenerates it and fails when the file differs.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from components import PROJECT_DIR
from components.atomic import write_text_atomic
from components.plan.timeline import Timeline, driver_mode_totals
from components.plan.timeline_render import (
    MARK_END,
    MARK_START,
    clock,
    describe,
    mermaid_gantt,
    path_table,
    sources_table,
    span,
    what_if_table,
)

GANTT_STACK = "aws-dev"
# Reserved capacity (issue 24): aws-prod (h100 on an active On-Demand Capacity Reservation) and the
# same stack with h100 on a Capacity Block that starts 2 h after `up` begins. A fixed clock keeps
# the section reproducible; `plan --timeline` uses the real one.
DOCS_NOW = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
BLOCK_VARIANT = "aws-prod-capacity-block"
BLOCK_STARTS = DOCS_NOW + timedelta(hours=2)
SETTING = {"compiled": "operator"}  # timeline driver mode -> settings value (the rest are the same)
TARGET_SECONDS = 15 * 60  # the target for aws-dev, at the upper bounds


def committed_stacks(stacks_dir: Path | None = None) -> list[str]:
    folder = stacks_dir or PROJECT_DIR / "stacks"
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))


def stacks_table(timelines: Sequence[Timeline]) -> list[str]:
    lines = ["| stack | time to smoke pass | dominating step | steps on the path | estimates on the path |",
             "|---|---:|---|---:|---|"]
    for tl in timelines:
        dom = tl.dominating
        estimates = ", ".join(sorted({f"`{s.key}`" for s in tl.estimates_on_path()})) or "none"
        lines.append(f"| `{tl.stack}` | {span(*tl.total)} | {describe(dom)}, "
                     f"{span(dom.duration.low, dom.duration.high)} | {len(tl.path)} | {estimates} |")
    return lines


def section(timelines: Sequence[Timeline], gantt_stack: str = GANTT_STACK, block: Timeline | None = None) -> str:
    """Everything between the markers (markers included); `block`: the Capacity Block variant."""
    tl = next(t for t in timelines if t.stack == gantt_stack)
    prod = next((t for t in timelines if t.stack == "aws-prod"), None)
    reserved = reserved_lines(prod, block) if prod is not None and block is not None else []
    high = tl.total[1]
    verdict = "met" if high <= TARGET_SECONDS else "not met"
    choices = {w.what_if.name: w.total[1] for w in tl.what_ifs}
    setting = SETTING.get(tl.driver_mode, tl.driver_mode)
    parts = [MARK_START,
             "Modeled from each committed stack's offline plan: every planned resource, the node boot steps "
             "cloud-init runs, the GPU Operator's driver and toolkit and the DRA kubelet plugin's start, with the "
             "durations (and their sources) "
             "of components/plan/durations.py. A step starts when everything it depends on has finished; the "
             "range is the longest chain with every step at its low, then at its high bound.",
             "", *stacks_table([*timelines, *([block] if block is not None else [])]), "", *reserved,
             f"Target (issue): `{gantt_stack}` at most {clock(TARGET_SECONDS)} at the upper bounds: **{verdict}** "
             f"({clock(high)}"
             + "".join(f"; {clock(t)} with `{name}`" for name, t in choices.items()) + ").",
             "", f"`{gantt_stack}` runs `gpuStack.driver: {setting}`; the same graph with each driver "
                 "mode (ADRs 0018, 0020): " + ", ".join(f"{mode} {span(*t)}" for mode, t in
                                                        driver_mode_totals(tl).items()) + ".",
             *[line for p in tl.prerequisites for line in ("", f"Prerequisite, not on this path: {p}.")],
             "", f"`{gantt_stack}`, earliest-start schedule at the upper bounds (names without "
                 f"`{tl.prefix}`):", "", mermaid_gantt(tl), "", *path_table(tl), ""]
    if tl.what_ifs:
        parts += [f"What would shorten `{gantt_stack}` further (modeled, each choice alone):", "",
                  *what_if_table(tl), ""]
    parts += [f"The rows on `{gantt_stack}`'s path and what they rest on (all rows: components/plan/durations.py):",
              "", *sources_table(tl), ""]
    parts += [f"Reproduce: `ck8s-gpu plan --stack {gantt_stack} --timeline --out out/{gantt_stack}` "
              "(prints the path, writes timeline.md); regenerate this section with "
              "`python -m components.plan.timeline_docs --write docs/benchmarks.md`.", MARK_END]
    return "\n".join(parts)


def replace_section(text: str, new_section: str) -> str:
    start, end = text.find(MARK_START), text.find(MARK_END)
    if start < 0 or end < start:
        raise ValueError("docs/benchmarks.md has no timeline markers")
    return text[:start] + new_section + text[end + len(MARK_END):]


def current_section(text: str) -> str:
    start, end = text.find(MARK_START), text.find(MARK_END)
    return text[start:end + len(MARK_END)] if 0 <= start < end else ""


def block_variant_config() -> dict[str, Any]:
    """aws-prod with pool h100 on a Capacity Block starting at BLOCK_STARTS instead of its ODCR."""
    from components.plan.run import stack_file
    from components.settings.load import read_stack_file

    config = copy.deepcopy(read_stack_file(stack_file("aws-prod")))
    for pool in config["ck8s-gpu:settings"]["nodePools"]:
        if pool["name"] == "h100":
            pool["capacityReservation"] = {"id": "cr-0b1c2d3e4f5a60719", "marketType": "capacity-block",
                                           "startsAt": BLOCK_STARTS.strftime("%Y-%m-%dT%H:%M:%SZ")}
            pool.pop("placement", None)  # AWS places a block's instances itself
    return config


def timelines(stacks: Sequence[str] | None = None) -> list[Timeline]:
    from components.plan.run import plan_stack
    from components.plan.timeline import timeline_for_plan

    return [timeline_for_plan(plan_stack(name), now=DOCS_NOW) for name in (stacks or committed_stacks())]


def block_timeline() -> Timeline:
    from components.plan.run import plan_config
    from components.plan.timeline import timeline_for_plan

    return timeline_for_plan(plan_config(block_variant_config(), BLOCK_VARIANT, BLOCK_VARIANT), now=DOCS_NOW)


def reserved_lines(prod: Timeline, block: Timeline) -> list[str]:
    """The reserved-capacity part of the section: the same stack on an active ODCR and on a later block."""
    lines = ["Reserved capacity: `aws-prod` runs pool h100 on an active On-Demand Capacity Reservation (no wait: "
             f"{span(*prod.total)}); `{block.stack}` is the same stack with h100 on a Capacity Block that starts "
             f"{clock((BLOCK_STARTS - DOCS_NOW).total_seconds())} after `up` begins: {span(*block.total)}.", ""]
    lines += [f"- {line}" for line in block_summary(block)]
    return [*lines, ""]


def block_summary(tl: Timeline) -> list[str]:
    from components.plan.timeline_render import summary_lines

    return [line for line in summary_lines(tl) if line.startswith(("Waits for", "WARNING", "Dominating"))]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m components.plan.timeline_docs")
    parser.add_argument("--write", type=Path, default=None, metavar="BENCHMARKS.md")
    args = parser.parse_args(argv)
    new = section(timelines(), block=block_timeline())
    if args.write is None:
        print(new)
        return 0
    write_text_atomic(args.write, replace_section(args.write.read_text(), new))
    print(f"wrote the timeline section of {args.write}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

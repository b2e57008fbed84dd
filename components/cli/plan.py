"""`ck8s-gpu plan`: the offline plan of a stack (no Pulumi CLI, no network, no credentials)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..settings.load import SettingsError
from .outputs import output_problem

if TYPE_CHECKING:
    from ..settings.model import Settings


def register(sub: Any) -> None:
    p = sub.add_parser(
        "plan", help="offline plan of a stack under the mock engine (like `cdk synth`)",
        description="Validate a stack file and run the real Pulumi program under the SDK's mock engine: no Pulumi "
                    "CLI, no cloud, no credentials. Prints the resource tree (or counts with --quiet); --out writes "
                    "resources.json, the rendered manifests and user-data; --diff compares with an earlier "
                    "resources.json; --timeline prints the modeled time to the first GPU job; --cost prints what the "
                    "stack costs an hour (every plan ends with its one-line total). Exit 0: planned; "
                    "2: bad settings (every bad field named) or a bad argument (an --out folder that cannot be "
                    "written: refused before planning).")
    p.add_argument("--stack", required=True, help="stack name: stacks/Pulumi.<stack>.yaml")
    p.add_argument("--stacks-dir", type=Path, default=None, help="folder of stack files (default: stacks/)")
    p.add_argument("--out", type=Path, default=None, help="write resources.json, manifests, user-data here")
    p.add_argument("--diff", type=Path, default=None, metavar="OLD.json", help="compare with an earlier resources.json")
    p.add_argument("--quiet", action="store_true", help="counts only, no tree")
    p.add_argument("--timeline", action="store_true",
                   help="modeled time to the smoke pass: critical path, what runs beside it, timeline.md in --out")
    p.add_argument("--cost", action="store_true",
                   help="USD an hour at the pools' minimum, desired and maximum sizes, line by line, from the "
                        "sourced price tables (docs/cost.md), and the node image lines it boots; cost.json in --out")
    p.add_argument("--images-dir", type=Path, default=None,
                   help="folder of the node image stacks (images/Pulumi.*.yaml) the stack's pools may boot; the lines "
                        "it boots must carry its track and snap pin (default: the checkout's images/)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here so `ck8s-gpu --help` stays fast (the SDKs take a second to import).
    from ..plan import artifacts
    from ..plan.cost import cluster_cost, document, summary_line, table_lines
    from ..plan.diff import diff_resources, format_diff
    from ..plan.run import plan_stack, stack_file
    from ..plan.tree import count_lines, tree_lines
    from ..settings.load import KUBECONFIG_KEY, read_stack_file

    old: list[dict[str, Any]] | None = None
    if args.diff is not None:
        try:
            old = json.loads(args.diff.read_text())["resources"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"ck8s-gpu plan: --diff {args.diff}: not a resources.json ({exc})", file=sys.stderr)
            return 2
    if args.out is not None and (why := output_problem(args.out, folder=True)) is not None:
        print(f"ck8s-gpu plan: --out {args.out}: {why}", file=sys.stderr)  # before planning, nothing written
        return 2
    import pulumi

    try:
        plan = plan_stack(args.stack, args.stacks_dir)
    except SettingsError as exc:
        print(f"ck8s-gpu plan: {exc.message}", file=sys.stderr)
        return 2
    except pulumi.RunError as exc:  # a component refused the settings (e.g. the add-on graph)
        print(f"ck8s-gpu plan: {exc}", file=sys.stderr)
        return 2
    if old is not None:
        from ..upgrade.skew import deployed_track, track_change_problems

        deployed = deployed_track(old)
        problems = track_change_problems(deployed, plan.settings.kubernetes.track) if deployed else []
        if problems:
            print(f"ck8s-gpu plan: settings.kubernetes.track: {'; '.join(problems)} (deployed per {args.diff})",
                  file=sys.stderr)
            return 2
    path = stack_file(args.stack, args.stacks_dir)
    from ..images.agreement import agreement_problems

    lines, unread = committed_image_lines(args.images_dir)  # read once: the check here, --cost below
    disagree = agreement_problems(plan.settings, lines)
    if disagree:  # a node would boot a snap or images of another pin (docs/adr/0059)
        print(f"ck8s-gpu plan: {path}: the node image lines it boots carry another Kubernetes than it pins:\n"
              + "\n".join(f"  {where}: {why}" for where, why in disagree), file=sys.stderr)
        return 2
    config = read_stack_file(path)
    if plan.settings.traits.needs_kubeconfig and KUBECONFIG_KEY not in config:
        print(f"note: config.{KUBECONFIG_KEY} is not set: `pulumi up` needs it "
              f"(pulumi config set --secret {KUBECONFIG_KEY} < kubeconfig)", file=sys.stderr)
    if not args.quiet:
        where = f", {plan.settings.region}" if plan.settings.region else ""
        print(f"Stack {plan.stack} ({plan.settings.platform}{where}) from {path}:")
        print("\n".join(tree_lines(plan.resources)))
        print()
    print("\n".join(count_lines(plan.resources)))
    cost = cluster_cost(plan.settings, plan.stack)
    print(summary_line(cost))
    if args.cost:
        print("\n" + "\n".join(table_lines(cost)))
        print("\n" + "\n".join(image_lines(plan.settings, lines, unread)))
    if args.out is not None:
        written = artifacts.write(plan, args.out)
        if args.cost:
            from ..runtime.atomic import write_text_atomic

            write_text_atomic(args.out / "cost.json", json.dumps(document(cost), indent=2, sort_keys=True) + "\n")
            written.append(args.out / "cost.json")
        print(f"\nwrote {len(written)} files to {args.out}")
    if args.timeline:
        from datetime import UTC, datetime

        from ..plan import timeline_render
        from ..plan.timeline_of_plan import timeline_for_plan
        try:  # now: a Capacity Block's wait runs from the real clock
            tl = timeline_for_plan(plan, now=datetime.now(UTC))
        except ValueError as exc:  # no smoke run to end the timeline, or a cycle
            print(f"ck8s-gpu plan --timeline: {exc}", file=sys.stderr)
            return 2
        print("\n" + "\n".join(timeline_render.text_lines(tl)))
        if args.out is not None:
            print(f"wrote {timeline_render.write(tl, args.out)}")
    if old is not None:
        new = artifacts.resources_document(plan)["resources"]
        print(f"\nChanges against {args.diff}:")
        print("\n".join(format_diff(diff_resources(old, new))))
    return 0


def committed_image_lines(images_dir: Path | None = None) -> tuple[list[tuple[str, Any]], list[str]]:
    """Every image line of images/ (name, ImageSettings), and a line for each file that does not read."""
    from ..images.settings import image_settings_from_config
    from ..settings.load import read_stack_file
    from ..tables.paths import PROJECT_DIR

    lines: list[tuple[str, Any]] = []
    unread: list[str] = []
    for path in sorted((images_dir or PROJECT_DIR / "images").glob("Pulumi.*.yaml")):
        try:
            lines.append((path.stem.removeprefix("Pulumi."), image_settings_from_config(read_stack_file(path),
                                                                                         str(path))))
        except SettingsError as exc:
            unread.append(f"{path.name}: not read: {exc.message}")
    return lines, unread


def image_lines(settings: Settings, lines: list[tuple[str, Any]], unread: list[str]) -> list[str]:
    """The node image lines (images/Pulumi.*.yaml) whose parameter a pool or the control planes name
    and that publish in the stack's region: each one's cost per build and per month. Paid once per
    line, whichever clusters boot it, so never in a cluster's totals."""
    from ..plan.cost import image_line_cost

    named = {a for a in (settings.control_plane.ami, *(p.ami for p in settings.node_pools)) if a}
    head = ("Node image lines this stack boots (images/; paid once per line, shared by every cluster that boots "
            "it, so not in the totals above):")
    out = list(unread)
    sources: dict[str, None] = {}
    for name, image in lines:
        if image.parameter in named and settings.region in image.regions:
            line = image_line_cost(name, image.region, image.regions,
                                   image.build_instance, image.root_volume, image.rebuild, image.keep_images)
            out += line.lines()
            sources.update(dict.fromkeys(line.sources))
    if not out:
        return [f"{head} none: no pool or control plane names an image of images/ published in "
                f"{settings.region or 'this region'}"]
    return [head, *out, "sources:", *(f"  {s}" for s in sources)]

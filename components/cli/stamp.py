"""`ck8s-gpu stamp`: one stack per region from a template stack plus per-region overrides.

    ck8s-gpu stamp --template aws-prod --regions us-west-2,eu-central-1 [--offline|--preview|--up|--check]

Stack files are written into stacks/ (Pulumi.<template>-<region>.yaml) for review, then every
region is planned offline, previewed or deployed (pre-flight first) with at most --parallel at a
time. Exit 0 when every region succeeded, 1 when any failed, 2 when nothing could start (bad
settings or arguments, an --out folder that cannot be written: nothing is written then).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EXIT_USAGE = 2


def register(sub: Any) -> None:
    p = sub.add_parser(
        "stamp", help="create/update one stack per region from a template stack",
        description="Write stacks/Pulumi.<template>-<region>.yaml for each region from the template stack and "
                    "the per-region overrides (docs/stamping.md), validating every region before any file is "
                    "written, then plan them offline (--offline), preview them (--preview, the default), deploy "
                    "them (--up) or only report stale files (--check). Files are written atomically; Ctrl-C exits "
                    "130. Exit 0: every region succeeded; 1: some region failed; 2: bad settings or arguments, or "
                    "an --out folder that cannot be written (nothing is written then).")
    p.add_argument("--template", required=True, help="template stack: stacks/Pulumi.<template>.yaml")
    p.add_argument("--regions", required=True, help="comma-separated AWS regions, e.g. us-west-2,eu-central-1")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--offline", dest="mode", action="store_const", const="offline",
                      help="offline plan of every region (no Pulumi CLI, no credentials)")
    mode.add_argument("--preview", dest="mode", action="store_const", const="preview",
                      help="pulumi preview of every region (the default)")
    mode.add_argument("--up", dest="mode", action="store_const", const="up", help="pulumi up of every region")
    mode.add_argument("--check", dest="mode", action="store_const", const="check",
                      help="only report stack files that differ from a fresh stamp (CI); exit 1 on drift")
    p.set_defaults(mode="preview")
    p.add_argument("--parallel", type=int, default=4, help="regions at a time (default 4)")
    p.add_argument("--stacks-dir", type=Path, default=None, help="folder of stack files (default: stacks/)")
    p.add_argument("--overrides", type=Path, default=None,
                   help="per-region overrides (default: <stacks-dir>/<template>.regions.yaml when present)")
    p.add_argument("--backup-region", default=None, help="backup region for every stamped region")
    p.add_argument("--restore", action="store_true",
                   help="DR rebuild: the stamped stacks restore from the template cluster's backups (read-only)")
    p.add_argument("--preflight", action=argparse.BooleanOptionalAction, default=None,
                   help="AWS pre-flight before running (default: on for --up, off otherwise)")
    p.add_argument("--profile", default=None, help="AWS profile for the pre-flight")
    p.add_argument("--out", type=Path, default=None, help="--offline: write each region's plan artifacts here")
    p.set_defaults(func=run)


def _regions(text: str) -> list[str]:
    return [r.strip() for r in text.split(",") if r.strip()]


def run(args: argparse.Namespace) -> int:
    from ..plan.run import stack_file
    from ..settings.load import SettingsError, read_stack_file
    from ..stamping import stackfile
    from ..stamping.derive import derive_all, unused_overrides
    from ..stamping.overrides import load_overrides, overrides_file
    from ..stamping.summary import exit_code, table
    from ..tables.paths import PROJECT_DIR

    stacks_dir: Path = args.stacks_dir or PROJECT_DIR / "stacks"
    regions = _regions(args.regions)
    if not regions or args.parallel < 1:
        print("ck8s-gpu stamp: --regions needs at least one region and --parallel at least 1", file=sys.stderr)
        return EXIT_USAGE
    overrides_path = args.overrides or overrides_file(args.template, stacks_dir)
    if args.overrides is not None and not args.overrides.exists():
        print(f"ck8s-gpu stamp: --overrides {args.overrides} does not exist", file=sys.stderr)
        return EXIT_USAGE
    try:
        template_config = read_stack_file(stack_file(args.template, stacks_dir))
        overrides = load_overrides(overrides_path)
        stamped = derive_all(args.template, template_config, regions, overrides, backup_region=args.backup_region,
                             restore=args.restore, overrides_source=overrides_path.name)
    except SettingsError as exc:
        print(f"ck8s-gpu stamp: {exc.message}", file=sys.stderr)
        return EXIT_USAGE

    source = overrides_path.name if overrides_path.exists() else None
    files = stackfile.prepare(stamped, stacks_dir, source)
    for s in stamped:
        for note in s.notes:
            print(f"note [{s.stack}]: {note}")
        for key in s.secrets_to_set:
            print(f"note [{s.stack}]: set the secret {key}: pulumi config set --secret {key} -s {s.stack}")
    for region in unused_overrides(regions, overrides):
        print(f"note: {overrides_path.name} has overrides for {region}, not stamped in this run")

    if args.mode == "check":
        for f in files:
            print(f"{f.action:9}  {f.path}")
        return 1 if any(f.action != "unchanged" for f in files) else 0

    if args.out is not None and args.mode == "offline":
        from .outputs import output_problem

        if (why := output_problem(args.out, folder=True)) is not None:  # before any stack file or plan is written
            print(f"ck8s-gpu stamp: --out {args.out}: cannot write the plans there: {why}", file=sys.stderr)
            return EXIT_USAGE

    backend = None
    if args.mode in ("preview", "up"):
        from ..stamping.backend import AutomationBackend, BackendUnavailable

        try:  # before writing anything: a backend that cannot run these stacks stops here
            backend = AutomationBackend(PROJECT_DIR, stacks_dir)
            # A missing Pulumi CLI or backend login shows at its first call: make it here, not after the writes.
            backend.existing_stacks()
        except BackendUnavailable as exc:
            print(f"ck8s-gpu stamp: {exc}", file=sys.stderr)
            return EXIT_USAGE
    stackfile.write(files)
    for f in files:
        print(f"stack file {f.action}: {f.path}")
    actions: dict[str, str] = {f.stack: f.action for f in files}

    if backend is None:
        from ..stamping.offline import plan_regions

        results = plan_regions(stamped, parallel=args.parallel, file_actions=actions, out=args.out)
    else:
        from ..stamping.backend import BackendUnavailable
        from ..stamping.runner import run_regions

        check = args.preflight if args.preflight is not None else args.mode == "up"
        try:
            results = run_regions(stamped, args.mode, backend, parallel=args.parallel, file_actions=actions,
                                  preflight=_preflight(args.profile) if check else None)
        except BackendUnavailable as exc:
            print(f"ck8s-gpu stamp: {exc}", file=sys.stderr)
            return EXIT_USAGE
        # `pulumi stack init` rewrites a new stack's file to add its encryption salt (dropping the
        # header): render again so the committed file is the stamped one, salt kept.
        stackfile.write(stackfile.prepare(stamped, stacks_dir, source))
    print()
    print("\n".join(table(results)))
    print("\n" + "\n".join(cost_lines(stamped)))
    return exit_code(results)


def cost_lines(stamped: list[Any]) -> list[str]:
    """What the stamped stacks create, an hour (docs/cost.md): one line each, and their sum."""
    from ..plan.cost import cluster_cost, summary_line, total_line

    costs = [cluster_cost(s.settings, s.stack) for s in stamped]
    lines = ["Cost of what the stamped stacks create:"]
    lines += [f"  {c.stack}: {summary_line(c)}" for c in costs]
    if len(costs) > 1:
        lines.append(f"  {total_line(costs)}")
    return lines


def _preflight(profile: str | None) -> Any:
    from ..preflight.run import default_session, preflight
    from ..stamping.derive import StampedStack

    session = default_session(profile)

    def check(stamped: StampedStack) -> list[str]:
        return [f.line() for f in preflight(stamped.settings, session) if f.severity == "error"]

    return check

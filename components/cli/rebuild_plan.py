"""`ck8s-gpu rebuild-plan --from STACK --to REGION`: the offline plan of the stack that replaces
STACK in REGION (same settings, region-scoped values re-derived, restoring from STACK's backups)
and what differs from STACK's plan beyond region-scoped values. No CLI, no credentials."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..runtime.atomic import write_text_atomic
from .outputs import output_problem

EXIT_OK, EXIT_USAGE = 0, 2


def register(sub: Any) -> None:
    p = sub.add_parser(
        "rebuild-plan", help="offline plan of a DR replacement of a stack in another region",
        description="Derive the replacement of a lost region's stack in another region (as `stamp --restore` "
                    "would: same settings, this region's overrides, Velero reading the old backups), plan both "
                    "offline and list what differs. Writes nothing unless --out is given. Exit 0: planned; 2: "
                    "bad settings or arguments (an --out folder that cannot be written: refused before planning).")
    p.add_argument("--from", dest="source", required=True, help="the stack to replace (stacks/Pulumi.<stack>.yaml)")
    p.add_argument("--to", dest="region", required=True, help="the region to rebuild in")
    p.add_argument("--backup-region", default=None,
                   help="backup region of the replacement (needed when --to is the old backup region)")
    p.add_argument("--stacks-dir", type=Path, default=None, help="folder of stack files (default: stacks/)")
    p.add_argument("--overrides", type=Path, default=None,
                   help="per-region overrides (default: <stacks-dir>/<stack>.regions.yaml when present)")
    p.add_argument("--out", type=Path, default=None,
                   help="write both plans (resources.json, manifests, user-data) and differences.txt here")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..dr.restore import restore_commands
    from ..plan import artifacts
    from ..plan.cost import cluster_cost, summary_line
    from ..plan.run import plan_config, stack_file
    from ..plan.tree import count_lines
    from ..settings.load import SettingsError, read_stack_file
    from ..stamping.derive import derive_all
    from ..stamping.overrides import load_overrides, overrides_file
    from ..stamping.parity import format_violations, violations
    from ..tables.paths import PROJECT_DIR

    if args.out is not None and (why := output_problem(args.out, folder=True)) is not None:
        print(f"ck8s-gpu rebuild-plan: --out {args.out}: {why}", file=sys.stderr)  # before planning
        return EXIT_USAGE
    stacks_dir: Path = args.stacks_dir or PROJECT_DIR / "stacks"
    overrides_path = args.overrides or overrides_file(args.source, stacks_dir)
    try:
        config = read_stack_file(stack_file(args.source, stacks_dir))
        [stamped] = derive_all(args.source, config, [args.region], load_overrides(overrides_path),
                               backup_region=args.backup_region, restore=True, overrides_source=overrides_path.name)
        old = plan_config(config, args.source, str(stack_file(args.source, stacks_dir)))
        new = plan_config(stamped.config, stamped.stack, f"rebuild of {args.source} in {args.region}")
    except SettingsError as exc:
        print(f"ck8s-gpu rebuild-plan: {exc.message}", file=sys.stderr)
        return EXIT_USAGE

    print(f"Replacement of {args.source} ({old.settings.region}) in {args.region}: stack {stamped.stack}, "
          f"cluster {stamped.settings.cluster_name}")
    for note in stamped.notes:
        print(f"  {note}")
    for key in stamped.secrets_to_set:
        print(f"  set the secret {key}: pulumi config set --secret {key} -s {stamped.stack}")
    print()
    print("\n".join(count_lines(new.resources)))
    print(summary_line(cluster_cost(new.settings, stamped.stack)))

    old_doc = artifacts.resources_document(old)["resources"]
    new_doc = artifacts.resources_document(new)["resources"]
    diff = violations(old_doc, old.settings, new_doc, new.settings)
    print(f"\nDifferences from {args.source} beyond region-scoped values (names, AZs, AMI ids, CIDRs):")
    lines = format_violations(diff) if not diff.empty else ["none: the replacement is the same stack, moved"]
    print("\n".join(lines))

    stamp = (f"ck8s-gpu stamp --template {args.source} --regions {args.region} --restore"
             + (f" --backup-region {args.backup_region}" if args.backup_region else ""))
    print("\nNext steps (docs/runbooks/dr-rebuild.md):")
    print(f"  {stamp} --preview --preflight")
    print(f"  {stamp} --up")
    for command in restore_commands(stamped.settings):
        print(f"  {command}")

    if args.out is not None:
        artifacts.write(old, args.out / args.source)
        artifacts.write(new, args.out / stamped.stack)
        write_text_atomic(args.out / "differences.txt", "\n".join(lines) + "\n")
        write_text_atomic(args.out / "replacement-config.json", json.dumps(stamped.config, indent=2) + "\n")
        print(f"\nwrote both plans and differences.txt to {args.out}")
    return EXIT_OK

"""`ck8s-gpu preflight --stack NAME`: can the stack's region run it (instance types offered in the
chosen AZs, the Ubuntu AMI parameter, GPU vCPU quotas at maximum size)? Read-only AWS calls."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def register(sub: Any) -> None:
    p = sub.add_parser(
        "preflight", help="check a stack's AWS region before `up` (offerings, AMI, quotas)",
        description="Ask the stack's AWS region, read-only, whether `pulumi up` can succeed there: every instance "
                    "type offered in the zones the subnets use, every pool image and Canonical's AMI resolvable, "
                    "vCPU quotas for the pools at maxSize. Each finding says what to change or which quota "
                    "increase to request. Exit 0: nothing blocks; 1: something blocks or could not be checked; "
                    "2: bad settings or arguments.")
    p.add_argument("--stack", required=True, help="stack name: stacks/Pulumi.<stack>.yaml")
    p.add_argument("--stacks-dir", type=Path, default=None, help="folder of stack files (default: stacks/)")
    p.add_argument("--profile", default=None, help="AWS profile (default: the usual AWS credential chain)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..plan.run import stack_file
    from ..preflight.checks import failed
    from ..preflight.report import lines
    from ..preflight.run import default_session, preflight
    from ..settings.load import SettingsError, read_stack_file
    from ..validate import from_config as settings_from_config

    try:
        settings = settings_from_config(read_stack_file(stack_file(args.stack, args.stacks_dir)),
                                        f"stack {args.stack}", offline=True)
    except SettingsError as exc:
        print(f"ck8s-gpu preflight: {exc.message}", file=sys.stderr)
        return EXIT_USAGE
    if settings.platform != "aws":
        print(f"ck8s-gpu preflight: {args.stack} is a {settings.platform} stack; pre-flight checks AWS regions",
              file=sys.stderr)
        return EXIT_USAGE
    findings = preflight(settings, default_session(args.profile))
    print("\n".join(lines(args.stack, settings.region or "", findings)))
    return EXIT_FAILED if failed(findings) else EXIT_OK

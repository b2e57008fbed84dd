#!/usr/bin/env python3
"""`make up` / `make down`: the `local-kubelet` stack on this machine, and all of it removed again.

    python3 scripts/local_up.py check up|down    # can this machine? (system python3, before any install)
    .venv/bin/python scripts/local_up.py up      # control plane, kubelet nodes, `pulumi up`, smoke report
    python3 scripts/local_up.py down             # destroy, stop, remove: nothing left

State: --state-dir, else $CK8S_GPU_LOCAL_DIR, else .local/ in the checkout (ignored by git).
Exit: 0 done; 1 failed (printed); 2 this machine cannot (printed, nothing created); 3 another node
tier runs here. docs/local-cluster.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from localup import preflight  # scripts/localup, beside this file
from localup.state import DEFAULT_DIR, ROOT, Layout

sys.path.insert(0, str(ROOT))  # `components` and `tests.helpers` of this checkout (up only)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--state-dir", type=Path, default=Path(os.environ.get("CK8S_GPU_LOCAL_DIR") or DEFAULT_DIR))
    sub = ap.add_subparsers(dest="cmd", required=True)
    check = sub.add_parser("check", help="exit 2 with the reasons when this machine cannot run `make up`/`down`")
    check.add_argument("action", choices=("up", "down"))
    sub.add_parser("up", help="start the cluster and deploy the stack (in the project's venv)")
    sub.add_parser("down", help="destroy the stack and remove everything `up` made")
    args = ap.parse_args(argv)
    action = args.action if args.cmd == "check" else args.cmd
    problems = preflight.check(action)
    if problems:
        print(preflight.refusal(action, problems), file=sys.stderr)
        return 2
    if args.cmd == "check":
        return 0
    layout = Layout(args.state_dir)
    if args.cmd == "up":
        from localup import up

        return up.run(layout)
    from localup import down

    return down.teardown(layout)


if __name__ == "__main__":
    sys.exit(main())

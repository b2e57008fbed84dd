"""`ck8s-gpu forget-cluster --stack NAME`: when a stack's cluster is gone for good, forget its
Kubernetes resources so that `pulumi destroy` can finish (docs/adr/0021, docs/runbooks/cluster-unreachable.md).

Refused while the cluster's API answers: then `pulumi destroy` works and forgetting would orphan
real releases. Without --yes it only lists what it would forget. With --yes it keeps the export
it started from (secrets stay encrypted) next to the project, then imports the smaller state.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_REFUSED, EXIT_USAGE = 0, 1, 2


def register(sub: Any) -> None:
    p = sub.add_parser(
        "forget-cluster", help="drop a deleted cluster's Kubernetes resources from state so `destroy` can finish",
        description="For a stack whose Kubernetes cluster is gone for good (deleted by hand, lost with its "
                    "region): list the resources Pulumi keeps for that cluster (the Kubernetes providers, the "
                    "Helm releases and objects created through them, their children) and, with --yes, remove "
                    "them from the stack's state so `pulumi destroy` completes; pulumi-kubernetes cannot delete "
                    "a Helm release on an unreachable cluster. Refused while the cluster's API answers. "
                    "Exit 0: listed or forgotten; 1: refused; 2: bad arguments or no such stack.")
    p.add_argument("--stack", required=True, help="the Pulumi stack (as `pulumi stack ls` names it)")
    p.add_argument("--cwd", type=Path, default=None, help="the Pulumi project folder (default: this checkout)")
    p.add_argument("--yes", action="store_true", help="forget them (without it: list only, change nothing)")
    p.set_defaults(func=run)


def _select(stack: str, cwd: Path | None) -> Any:
    from pulumi import automation as auto

    from ..tables.paths import PROJECT_DIR

    return auto.select_stack(stack_name=stack, work_dir=str(cwd or PROJECT_DIR))


def run(args: argparse.Namespace) -> int:
    from pulumi import automation as auto

    from ..kube.client import unreachable_reason
    from ..runtime.atomic import write_text_atomic
    from ..state.forget import cluster_resources, without

    me = "ck8s-gpu forget-cluster"
    try:
        stack = _select(args.stack, args.cwd)
        exported = stack.export_stack()
        outputs = stack.outputs()
    except auto.CommandError as exc:
        print(f"{me}: stack {args.stack}: {str(exc).strip().splitlines()[-1]}", file=sys.stderr)
        return EXIT_USAGE
    forgotten = cluster_resources(exported.deployment)
    if not forgotten:
        print(f"stack {args.stack} holds no Kubernetes resources: nothing to forget")
        return EXIT_OK
    kubeconfig = outputs.get("kubeconfig")
    if kubeconfig is not None and kubeconfig.value:
        reason = unreachable_reason(str(kubeconfig.value))
        if reason is None:
            print(f"{me}: the cluster of stack {args.stack} answers: refusing to forget its resources. "
                  "`pulumi destroy` can delete them; if it fails, its error names the resource.", file=sys.stderr)
            return EXIT_REFUSED
        print(f"the cluster is unreachable: {reason}")
    else:
        print("the stack exports no kubeconfig: the cluster cannot be probed; treating it as gone")
    print(f"{'would forget' if not args.yes else 'forgetting'} {len(forgotten)} resource(s) of stack {args.stack}:")
    for f in forgotten:
        print(f"  {f.type}  {f.name}")
    if not args.yes:
        print("nothing changed; re-run with --yes to forget them, then `pulumi destroy`")
        return EXIT_OK
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    backup = Path(stack.workspace.work_dir) / "out" / "forget-cluster" / f"{args.stack}-{stamp}.json"
    write_text_atomic(backup, json.dumps({"version": exported.version, "deployment": exported.deployment}))
    stack.import_stack(auto.Deployment(version=exported.version, deployment=without(exported.deployment, forgotten)))
    print(f"forgotten; the previous state is kept in {backup} (`pulumi stack import --file` restores it).\n"
          f"Next: pulumi destroy -s {args.stack}")
    return EXIT_OK

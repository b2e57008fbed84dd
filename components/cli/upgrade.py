"""`ck8s-gpu upgrade` and `ck8s-gpu replace-node`: day-2 operations on an AWS stack (ADR 0015, 0016).

`upgrade --plan` is offline: the ordered steps, the nodes each touches, the expected durations.
Without `--plan` it writes the next track into the stack file and runs `pulumi up` through the
Automation API: the node-upgrade resources roll the nodes, then add-ons and the smoke test follow.
Interrupted, the same command resumes: every node step reads the cluster first and skips what
is done. `replace-node` takes a control plane out of the membership before its instance is
replaced (or drains a worker before its group replaces it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..settings.load import SettingsError


def register(sub: Any) -> None:
    up = sub.add_parser(
        "upgrade", help="upgrade a stack's Kubernetes track one minor (control planes, then pools, then add-ons)",
        description="Upgrade the stack's Canonical Kubernetes track by one minor, in place: control planes one "
                    "at a time, then each GPU pool (cordon, let GPU jobs finish, drain honouring PDBs, snap refresh, "
                    "Ready, uncordon), then launch templates, add-ons and the smoke test. --plan prints the steps "
                    "offline. Run it again after an interruption to resume.",
    )
    up.add_argument("--stack", required=True, help="stack name: stacks/Pulumi.<stack>.yaml")
    up.add_argument("--to", required=True, metavar="TRACK", help="the next track, e.g. 1.35-classic")
    up.add_argument("--stacks-dir", type=Path, default=None, help="folder of stack files (default: stacks/)")
    up.add_argument("--from", dest="deployed", default=None, metavar="TRACK",
                    help="the track the cluster runs now (default: the stack's kubernetesTrack output, else the "
                         "stack file)")
    up.add_argument("--plan", action="store_true", help="print the steps, nodes and durations; change nothing")
    up.add_argument("--repin", metavar="VERSION", default=None,
                    help="a pinned stack (kubernetes.snap): move its track, snap pin and the node image lines it boots "
                         "to --to at this k8s version, offline, and say what to build; then run `upgrade` again "
                         "without --repin to roll the nodes (docs/runbooks/upgrade.md, ADR 0059)")
    up.add_argument("--revision", action="append", default=[], metavar="ARCH=REV",
                    help="with --repin: the version's snap revision for one architecture (`snapcraft status k8s`), "
                         "once per architecture the stack pins, e.g. --revision amd64=6101 --revision arm64=6104")
    up.add_argument("--images-dir", type=Path, default=None,
                    help="with --repin: the folder of node image stacks (default: the checkout's images/)")
    up.set_defaults(func=run_upgrade)

    rep = sub.add_parser(
        "replace-node", help="replace one node: leave the cluster first, then a new instance joins",
        description="Replace one node of an AWS stack. A control plane is drained and removed from the etcd/k8sd "
                    "membership (from another control plane) before `pulumi up --replace` swaps its instance; the "
                    "new one joins by itself. Refused on a single control plane unless --force (its data would be "
                    "lost). A worker is cordoned and drained, its instance terminated without lowering the group's "
                    "desired capacity, and its Node deleted; the group launches a replacement that joins by itself.",
    )
    rep.add_argument("--stack", required=True, help="stack name: stacks/Pulumi.<stack>.yaml")
    rep.add_argument("--node", required=True, help="the Kubernetes node name (the instance's private DNS name)")
    rep.add_argument("--stacks-dir", type=Path, default=None, help="folder of stack files (default: stacks/)")
    rep.add_argument("--force", action="store_true", help="allow replacing the only control plane (loses its data)")
    rep.add_argument("--plan", action="store_true", help="print what would happen; change nothing")
    rep.set_defaults(func=run_replace)


def _load(stack: str, stacks_dir: Path | None) -> tuple[Any, Path]:
    from ..plan.run import stack_file
    from ..validate import load_stack

    path = stack_file(stack, stacks_dir)
    return load_stack(path), path


def _deployed_track(stack: Any) -> str | None:
    out = stack.outputs().get("kubernetesTrack")
    return str(out.value) if out is not None else None


def _automation_stack(stack: str) -> Any:
    from pulumi import automation as auto

    from ..tables.paths import PROJECT_DIR

    return auto.select_stack(stack_name=stack, work_dir=str(PROJECT_DIR))


def _progress(event: Any) -> None:
    """One line per node-upgrade step, release and smoke run as the engine reports them."""
    watched = (":NodeUpgrade", ":PoolUpgrade", "helm.sh/v3:Release", ":SmokeRun", "ec2/launchTemplate:")
    for kind in ("resource_pre_event", "res_outputs_event", "res_op_failed_event"):
        ev = getattr(event, kind, None)
        if ev is None:
            continue
        meta = ev.metadata
        op = str(getattr(meta.op, "value", meta.op))
        if op in ("same", "read") or not any(w in meta.type for w in watched):
            return
        name = meta.urn.rsplit("::", 1)[-1]
        state = {"resource_pre_event": "started", "res_outputs_event": "done", "res_op_failed_event": "FAILED"}[kind]
        print(f"  {state:<8} {op:<8} {name}", flush=True)


def _aws_stack(command: str, args: argparse.Namespace) -> tuple[Any, Path] | None:
    """The stack's settings and file, or None after printing why this command cannot act on it."""
    try:
        settings, path = _load(args.stack, args.stacks_dir)
    except SettingsError as exc:
        print(f"ck8s-gpu {command}: {exc.message}", file=sys.stderr)
        return None
    if settings.platform != "aws":
        print(f"ck8s-gpu {command}: stack {args.stack} is platform {settings.platform}: only the nodes this project "
              "runs (aws) are upgraded or replaced by it; other platforms manage their own", file=sys.stderr)
        return None
    return settings, path


def _revisions(given: list[str]) -> tuple[dict[str, int], list[str]]:
    out: dict[str, int] = {}
    bad: list[str] = []
    for item in given:
        arch, _, rev = item.partition("=")
        if arch not in ("amd64", "arm64") or not rev.isdigit() or int(rev) < 1 or arch in out:
            bad.append(item)
        else:
            out[arch] = int(rev)
    return out, bad


def _repin(args: argparse.Namespace, settings: Any, path: Path) -> int:
    """`upgrade --repin`: the stack file and new image lines for the next track, nothing deployed."""
    from ..images.repin import ImageLine, repin
    from ..images.settings import image_settings_from_config
    from ..runtime.atomic import write_text_atomic
    from ..settings.load import read_stack_file
    from ..tables.paths import PROJECT_DIR
    from ..upgrade.stackfile import StackFileError
    from ..validate import from_config

    revisions, bad = _revisions(args.revision)
    if bad or not revisions:
        print(f"ck8s-gpu upgrade: --revision: {', '.join(bad) or 'none given'}: give ARCH=REV (ARCH amd64 or arm64, "
              "REV a positive number), once per architecture", file=sys.stderr)
        return 2
    images_dir: Path = args.images_dir or PROJECT_DIR / "images"
    lines: list[ImageLine] = []
    try:
        for image in sorted(images_dir.glob("Pulumi.*.yaml")):
            lines.append(ImageLine(image.stem.removeprefix("Pulumi."), image.read_text(),
                                   image_settings_from_config(read_stack_file(image), str(image))))
        moved = repin(path.read_text(), settings, lines, args.to, args.repin, revisions)
        # the moved stack must pass every rule before a file is written (its track's version, the images)
        import yaml

        from_config(yaml.safe_load(moved.stack_text)["config"], f"{path} (moved to {args.to})", offline=True)
    except (StackFileError, SettingsError) as exc:
        why = exc.message if isinstance(exc, SettingsError) else f"{path}: {exc}"
        print(f"ck8s-gpu upgrade --repin: {why}\nnothing written", file=sys.stderr)
        return 2
    targets = [(images_dir / f"Pulumi.{name}.yaml", text) for name, text in moved.new_lines]
    clash = [t for t, text in targets if t.exists() and t.read_text() != text]
    if clash:
        print(f"ck8s-gpu upgrade --repin: {', '.join(map(str, clash))} exists with other content: move it away or "
              "remove it first; nothing written", file=sys.stderr)
        return 2
    for target, text in targets:  # the lines first: a stack file never names a line that is not there
        write_text_atomic(target, text)
        print(f"wrote {target}")
    write_text_atomic(path, moved.stack_text)
    print(f"wrote {path}:")
    print("\n".join(f"  {change}" for change in moved.changes))
    print("\nBuild the new image lines, control planes first (each about half an hour; docs/images.md):")
    print("\n".join(f"  pulumi stack select -C images --create {name} && pulumi up -C images -s {name}"
                    for name in moved.rebuild))
    print(f"then roll the nodes: ck8s-gpu upgrade --stack {args.stack} --to {args.to}")
    return 0


def run_upgrade(args: argparse.Namespace) -> int:
    from ..upgrade import stackfile, steps

    loaded = _aws_stack("upgrade", args)
    if loaded is None:
        return 2
    settings, path = loaded
    if args.repin is not None:
        if args.plan:
            print("ck8s-gpu upgrade: --repin writes the stack and image files; --plan changes nothing: give one",
                  file=sys.stderr)
            return 2
        return _repin(args, settings, path)
    if args.revision or args.images_dir is not None:
        print("ck8s-gpu upgrade: --revision and --images-dir go with --repin", file=sys.stderr)
        return 2
    pin = settings.kubernetes.snap
    if pin is not None and not args.plan and args.to != settings.kubernetes.track:
        # Writing the track alone would leave a pin of the old track (refused by settings, ADR 0039).
        print(f"ck8s-gpu upgrade: settings.kubernetes.snap: pinned to {pin.version}; on a pinned stack the track "
              f"moves with the pin and the node images: the same command with --repin VERSION and --revision "
              "ARCH=REV for each architecture writes them and says what to build; then run this command again "
              "(docs/runbooks/upgrade.md)", file=sys.stderr)
        return 2
    stack = None if args.plan else _automation_stack(args.stack)  # selected once: read, then `up`
    deployed = args.deployed or (_deployed_track(stack) if stack else None) or settings.kubernetes.track
    try:
        plan = steps.upgrade_steps(settings, deployed, args.to)
    except steps.PlanRefused as exc:
        print(f"ck8s-gpu upgrade: settings.kubernetes.track: {exc}", file=sys.stderr)
        return 2
    if not plan:
        print(f"{settings.cluster_name} already runs {args.to}: nothing to upgrade "
              "(after an interrupted run, `pulumi up` finishes it)")
        return 0
    print(steps.render(settings, deployed, args.to, plan))
    if args.plan:
        return 0
    try:
        text = stackfile.with_track(path.read_text(), args.to)
        if settings.kubernetes.track != args.to:  # the file on the new track must pass every rule first
            import yaml

            from ..validate import from_config

            from_config(yaml.safe_load(text)["config"], f"{path} (on {args.to})", offline=True)
        stackfile.write_atomic(path, text)
    except stackfile.StackFileError as exc:
        print(f"ck8s-gpu upgrade: {path}: {exc}", file=sys.stderr)
        return 2
    except SettingsError as exc:
        print(f"ck8s-gpu upgrade: {exc.message}\nnothing written", file=sys.stderr)
        return 2
    print(f"\n{path}: kubernetes.track = {args.to}; running pulumi up (resume: run this command again)")
    try:
        assert stack is not None
        result = stack.up(on_event=_progress, color="never")
    except KeyboardInterrupt:
        print("ck8s-gpu upgrade: interrupted; nodes already on the new minor are kept. Run the same command to "
              "resume from the next node.", file=sys.stderr)
        return 130
    except Exception as exc:  # the engine's own message names the resource and the reason
        print(f"ck8s-gpu upgrade: pulumi up failed:\n{_engine_error(exc)}\nFix the cause, then run the same command "
              "to resume.", file=sys.stderr)
        return 1
    outputs = result.outputs.get("kubernetesTrack")
    print(f"done: {settings.cluster_name} on {outputs.value if outputs else args.to}; smoke test passed")
    return 0


def _engine_error(exc: Exception) -> str:
    text = str(exc)
    lines = [line for line in text.splitlines() if "error:" in line or "UpgradeStopped" in line]
    return "\n".join(lines[-8:]) or text[-2000:]


def run_replace(args: argparse.Namespace) -> int:
    from ..upgrade import replace

    loaded = _aws_stack("replace-node", args)
    if loaded is None:
        return 2
    settings, _ = loaded
    try:
        return replace.run(settings, args.stack, args.node, args.force, _automation_stack, plan_only=args.plan)
    except replace.ReplaceError as exc:
        print(f"ck8s-gpu replace-node: {exc}", file=sys.stderr)
        return 1

"""`ck8s-gpu conformance`: the CNCF Kubernetes AI Conformance checklist against a live cluster, and
the check of a signed evidence bundle (components/conformance, docs/conformance.md).

`run` exits 0 when no MUST requirement's procedure failed, 1 when one did or the cluster refused,
2 on bad arguments, 130 when interrupted (after deleting what it created). `verify` exits 0 when
the bundle is what the key's holder signed, 1 otherwise (every problem named), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from .outputs import output_problem

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
ONLY_HELP = "comma-separated requirement ids (default: every requirement of the checklist)"


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("conformance", help="the CNCF AI Conformance checklist against a cluster",
                              description="Run the CNCF Kubernetes AI Conformance checklist against a live cluster "
                                          "and write its evidence; verify a signed evidence bundle.")
    sub = p.add_subparsers(dest="conformance", required=True, parser_class=type(p))
    r = sub.add_parser("run", help="run a procedure per requirement and write PRODUCT.yaml, junit and logs")
    r.add_argument("--kubeconfig", required=True, type=Path)
    r.add_argument("--context", default=None)
    r.add_argument("--out", type=Path, default=Path("out/conformance"),
                   help="evidence directory (default out/conformance)")
    r.add_argument("--only", default=None, metavar="IDS", help=ONLY_HELP)
    r.add_argument("--checklist", default=None, metavar="1.MINOR",
                   help="this checklist instead of the cluster's minor's (e.g. 1.35 ahead of an upgrade)")
    r.add_argument("--image", default=None, help="the probe image the procedures' pods run (default: the smoke "
                                                 "test's pinned one)")
    r.add_argument("--stack", type=Path, default=None, metavar="STACK_FILE",
                   help="stacks/Pulumi.<stack>.yaml: the stack's settings for the procedures that run its smoke "
                        "cases (pools, scheduler, the inference case's image and Prometheus)")
    r.add_argument("--prometheus-url", default=None, metavar="URL",
                   help="the Prometheus KEDA queries in the inference case (default: the stack's, else "
                        "kube-prometheus-stack's in-cluster Service)")
    r.add_argument("--timeout", type=int, default=180, metavar="SECONDS", help="what one pod may take (default 180)")
    r.add_argument("--sign-key", type=Path, default=None, metavar="PEM",
                   help="Ed25519 private key (PKCS#8 PEM): sign the bundle (attestation.dsse.json)")
    r.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    r.set_defaults(func=run)
    v = sub.add_parser("verify", help="check a signed evidence bundle")
    v.add_argument("bundle", type=Path, help="the evidence directory")
    v.add_argument("--public-key", required=True, type=Path, metavar="PEM", help="the signer's Ed25519 public key")
    v.set_defaults(func=verify)


def _connect(kubeconfig: str, context: str | None) -> Any:
    from ..kube.client import api_client
    from ..smoke.gateway import KubeGateway

    return KubeGateway(api_client(kubeconfig, context=context))


def run(args: argparse.Namespace) -> int:
    return execute(args)


def _checklist_minor(text: str) -> int | None:
    from ..conformance import checklist as cl

    major, _, minor = text.removeprefix("v").partition(".")
    return int(minor) if major == "1" and minor.isdigit() and int(minor) in cl.CHECKLISTS else None


def _args_problems(args: argparse.Namespace, known: set[str]) -> tuple[list[str], list[str] | None]:
    from ..conformance import checklist as cl

    problems: list[str] = []
    only = None
    if args.only is not None:
        only = [x.strip() for x in args.only.split(",") if x.strip()]
        unknown = sorted(set(only) - known)
        if unknown or not only:
            problems.append(f"--only {args.only!r}: unknown {', '.join(unknown) or 'empty list'} "
                            f"(ids: {', '.join(sorted(known))})")
    if args.checklist is not None and _checklist_minor(args.checklist) is None:
        problems.append(f"--checklist {args.checklist}: published ones are "
                        f"{', '.join(f'1.{m}' for m in sorted(cl.CHECKLISTS))}")
    if args.timeout < 10:
        problems.append(f"--timeout {args.timeout}: at least 10 seconds")
    if (why := output_problem(args.out, folder=True)) is not None:  # before the cluster is touched
        problems.append(f"--out {args.out}: {why}")
    if args.sign_key is not None and not args.sign_key.is_file():
        problems.append(f"--sign-key {args.sign_key}: no such file")
    if args.prometheus_url is not None:
        from pydantic import ValidationError

        from ..settings.model import InferenceCaseSettings

        try:  # the settings model's own rule for smokeTest.inference.prometheusUrl
            InferenceCaseSettings.model_validate({"prometheusUrl": args.prometheus_url})
        except ValidationError as exc:
            problems.append(f"--prometheus-url {args.prometheus_url}: {exc.errors()[0]['msg']}")
    return problems, only


def _stack_settings(args: argparse.Namespace, problems: list[str]) -> Any:
    """The stack file's settings, judged as `pulumi up` judges them offline; None without --stack."""
    from ..settings.load import SettingsError, read_stack_file
    from ..validate import from_config as settings_from_config

    if args.stack is None:
        return None
    stack = args.stack.absolute()  # the file really read, as `plan` names it
    try:
        return settings_from_config(read_stack_file(stack), str(stack), offline=True)
    except SettingsError as exc:
        problems.append(f"--stack: {exc.message}")
        return None


def execute(args: argparse.Namespace, *, connect: Callable[[str, str | None], Any] = _connect,
            out: TextIO | None = None, err: TextIO | None = None) -> int:
    from ..conformance import checklist as cl
    from ..conformance import evidence as ev
    from ..conformance.common import Context
    from ..conformance.procedures import PROCEDURES
    from ..smoke.gateway import KubeError, KubeUnreachable
    from ..smoke.run import Ref, cleanup
    from ..tables import pins

    out, err = out or sys.stdout, err or sys.stderr
    known = {q.id for reqs in cl.CHECKLISTS.values() for q in reqs}
    problems, only = _args_problems(args, known)
    settings = _stack_settings(args, problems)
    key = None
    if args.sign_key is not None and not problems:
        try:
            key = ev.load_private_key(args.sign_key.read_bytes())
        except ValueError as exc:
            problems.append(f"--sign-key {args.sign_key}: {exc}")
    gw = None
    try:
        gw = connect(args.kubeconfig.read_text(), args.context) if not problems else None
    except (OSError, ValueError) as exc:
        problems.append(f"--kubeconfig {args.kubeconfig}: {exc}")
    if problems or gw is None:
        print("ck8s-gpu conformance run: bad arguments:\n" + "\n".join(f"  {p}" for p in problems), file=err)
        return EXIT_USAGE
    try:
        version = gw.server_version()
    except (KubeError, KubeUnreachable) as exc:
        print(f"ck8s-gpu conformance run: cannot reach the cluster of {args.kubeconfig}: {exc}", file=err)
        return EXIT_FAILED
    minor = int("".join(c for c in version.split(".")[1] if c.isdigit()))
    chosen = _checklist_minor(args.checklist) if args.checklist is not None else None
    checklist = chosen if chosen is not None else cl.nearest(minor)
    reqs = [q for q in cl.CHECKLISTS[checklist] if only is None or q.id in only]
    which = "asked for" if chosen is not None else "its own" if checklist == minor else "the nearest published"
    print(f"Kubernetes {version}: checklist 1.{checklist} ({which}, {cl.source(checklist)}); "
          f"{len(reqs)} requirement(s)", file=out, flush=True)
    ns = f"ck8s-gpu-conformance-{secrets.token_hex(3)}"
    ctx = Context(gw, args.image or pins.image("smoke-test").ref, ns, float(args.timeout),
                  lambda m: print(f"  {m}", file=out, flush=True), settings=settings,
                  prometheus_url=args.prometheus_url, custom_image=args.image, kubernetes_minor=minor)
    results: dict[str, ev.Result] = {}
    interrupted = False
    try:
        gw.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": ns, "labels": {"pod-security.kubernetes.io/enforce": "baseline"}}})
        ctx.created.append(Ref("v1", "Namespace", ns, None))
        for q in reqs:
            print(f"[{q.level}] {q.id}", file=out, flush=True)
            t0 = time.monotonic()
            try:
                r = PROCEDURES[q.id](ctx)
            except (KubeError, KubeUnreachable) as exc:
                r = ev.Result(q.id, "Not Implemented", "failed", f"the cluster refused the procedure: {exc}")
            r.seconds = time.monotonic() - t0
            results[q.id] = r
            print(f"  -> {r.status} ({r.outcome}): {r.notes}", file=out, flush=True)
    except KeyboardInterrupt:
        interrupted = True
        print("ck8s-gpu conformance run: interrupted, cleaning up", file=err)
    finally:
        left = cleanup(gw, ctx.created)
        if left:
            print(f"ck8s-gpu conformance run: could not delete: {'; '.join(left)}", file=err)
    if interrupted:
        return EXIT_INTERRUPTED
    meta = {"platformName": "ck8s-gpu", "platformVersion": _version()}
    cluster = {"serverVersion": version, "nodes": _node_versions(gw)}
    ev.write(args.out, checklist, results, meta, cluster)
    if key is not None:
        ev.sign(args.out, key, {"checklist": cl.source(checklist), "kubernetes": version})
    failed = [q.id for q in reqs if q.level == "MUST" and results[q.id].outcome == "failed"]
    if args.json:
        print(json.dumps({"checklist": f"1.{checklist}", "results": [
            {"id": q.id, "level": q.level, "status": results[q.id].status, "outcome": results[q.id].outcome,
             "notes": results[q.id].notes} for q in reqs], "failedMust": failed, "evidence": str(args.out)},
            indent=2), file=out)
    else:
        for q in reqs:
            print(f"{q.id:<28} {q.level:<7} {results[q.id].status:<22} {results[q.id].outcome}", file=out)
        print(f"evidence: {args.out} (PRODUCT.yaml, junit.xml, logs/)"
              + (", signed: attestation.dsse.json" if key is not None else ""), file=out)
    if failed:
        print(f"ck8s-gpu conformance run: MUST requirement(s) failed: {', '.join(failed)}", file=err)
        return EXIT_FAILED
    return EXIT_OK


def _version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("ck8s-gpu")
    except PackageNotFoundError:
        return "unknown"


def _node_versions(gw: Any) -> dict[str, dict[str, str]]:
    nodes = gw.list("v1", "Node")[0]
    return {n["metadata"]["name"]: {"kubelet": n.get("status", {}).get("nodeInfo", {}).get("kubeletVersion", ""),
                                    "containerRuntime": n.get("status", {}).get("nodeInfo", {}).get(
                                        "containerRuntimeVersion", "")} for n in nodes}


def verify(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    from ..conformance import evidence as ev

    out, err = out or sys.stdout, err or sys.stderr
    try:
        public = ev.load_public_key(args.public_key.read_bytes())
    except (OSError, ValueError) as exc:
        print(f"ck8s-gpu conformance verify: --public-key {args.public_key}: {exc}", file=err)
        return EXIT_USAGE
    if not args.bundle.is_dir():
        print(f"ck8s-gpu conformance verify: {args.bundle}: not a directory", file=err)
        return EXIT_USAGE
    problems = ev.verify(args.bundle, public)
    if problems:
        print("ck8s-gpu conformance verify: the bundle is not what was signed:\n"
              + "\n".join(f"  {p}" for p in problems), file=err)
        return EXIT_FAILED
    print(f"{args.bundle}: every file is the one signed by key {ev.key_id(public)[:16]}", file=out)
    return EXIT_OK

"""`ck8s-gpu smoke`: the stack's smoke test against any cluster, by hand (after a DR rebuild, an
upgrade, or on a cluster this project did not build).

Renders charts/gpu-smoke-test with a fresh run id, creates it, runs the same runner and verifier
as `pulumi up`, prints progress per hop and a summary table, and deletes what it created, also
on Ctrl-C or SIGTERM. Exit 0: every non-skipped check passed; 1: a check failed; 2: bad
arguments, bad settings, or the cluster cannot be reached; 130: interrupted (after cleanup).
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from ..runtime.atomic import write_text_atomic
from .outputs import output_problem

EXIT_PASSED, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
CLI_RELEASE = "smoke-cli"
DCGM_MODES: dict[str, bool | None] = {"auto": None, "require": True, "off": False}


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "smoke", help="run the DRA GPU smoke test against a cluster and clean up",
        description="Prove the DRA allocation path (DeviceClass, ResourceSlices, claims, scheduler, kubelet/CDI, "
                    "container) on any cluster. Exit 0 only when every non-skipped check passed.")
    p.add_argument("--kubeconfig", required=True, type=Path, help="kubeconfig of the cluster to test")
    p.add_argument("--context", default=None, help="kubeconfig context (default: current)")
    p.add_argument("--namespace", default=None, help="namespace for the test objects (default: settings)")
    p.add_argument("--report", type=Path, default=None, metavar="FILE", help="write the CTRF JSON report here")
    p.add_argument("--stack", type=Path, default=None, metavar="STACK_FILE",
                   help="stacks/Pulumi.<stack>.yaml: expectations (pools, scheduler, cases) of that stack")
    p.add_argument("--gpus", type=int, default=None, help="single-GPU pods that must get distinct GPUs")
    p.add_argument("--scheduler", choices=("kai", "default"), default=None)
    p.add_argument("--queue", default=None, help="KAI leaf queue")
    p.add_argument("--device-class", default=None)
    p.add_argument("--shared-claim", action="store_true", default=None, help="also run the shared-claim case")
    p.add_argument("--gang", action="store_true", default=None, help="also run the KAI gang case")
    p.add_argument("--mig", action="store_true", default=None, help="also run the MIG case")
    p.add_argument("--timeout", type=int, default=None, metavar="SECONDS", help="budget for the whole run")
    p.add_argument("--registry", default=None, help="pull the pinned test image from this mirror")
    p.add_argument("--simulated", action="store_true",
                   help="simulated GPUs (fake-gpu-operator): containers see GPU_DEVICE_* instead of nvidia-smi")
    p.add_argument("--no-kubelet", action="store_true", help="KWOK nodes: in-container checks are skipped")
    p.add_argument("--dcgm", choices=tuple(DCGM_MODES), default="auto",
                   help="DCGM exporter check: auto (when an exporter exists), require, off")
    p.add_argument("--keep", action="store_true", help="leave the test objects in place for inspection")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return execute(args, connect=_connect)


class _Usage(Exception):
    """Bad input: printed, exit 2."""


def _settings(args: argparse.Namespace) -> tuple[Any, bool]:
    from pydantic import ValidationError

    from ..settings.load import SettingsError, read_stack_file
    from ..settings.model import Settings, SmokeTestSettings
    from ..validate import from_config as settings_from_config

    if args.stack is not None:
        stack = args.stack.absolute()  # the file really read, as `plan` names it
        try:
            settings = settings_from_config(read_stack_file(stack), str(stack), offline=True)
        except SettingsError as exc:
            raise _Usage(exc.message) from None
    else:
        settings = Settings(platform="existing")
    overrides = {k: v for k, v in {
        "namespace": args.namespace, "gpus": args.gpus, "scheduler": args.scheduler, "queue": args.queue,
        "device_class": args.device_class, "shared_claim": args.shared_claim, "gang": args.gang, "mig": args.mig,
        "timeout_seconds": args.timeout, "registry": args.registry}.items() if v is not None}
    try:
        smoke = SmokeTestSettings.model_validate({**settings.smoke_test.model_dump(), **overrides})
    except ValidationError as exc:
        problems = "; ".join(f"--{'.'.join(map(str, e['loc'])).replace('_', '-')}: {e['msg']}" for e in exc.errors())
        raise _Usage(f"bad option: {problems}") from None
    if smoke.gang and smoke.gpus < 2:
        raise _Usage("--gang needs --gpus 2 or more: a gang of one pod proves nothing")
    if smoke.gang and smoke.scheduler != "kai":
        raise _Usage("--gang needs --scheduler kai")
    return settings.model_copy(update={"smoke_test": smoke}), args.stack is not None


def _facts(settings: Any, from_stack: bool, args: argparse.Namespace, minor: int) -> Any:
    from ..facts.cluster import live_cluster_facts

    return live_cluster_facts(settings if from_stack else None, minor, simulated=args.simulated,
                              has_kubelet=not args.no_kubelet)


def _minor(version: str) -> int:
    m = re.match(r"^v?1\.(\d+)", version)
    if not m:
        raise _Usage(f"cannot read the Kubernetes version from '{version}'")
    return int(m.group(1))


def _connect(kubeconfig: str, context: str | None) -> Any:
    from ..kube.client import api_client
    from ..smoke.gateway import KubeGateway

    return KubeGateway(api_client(kubeconfig, context=context))


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """CI cancels with SIGTERM: treat it like Ctrl-C so the cleanup runs."""

    def handler(_sig: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    try:
        old = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: nothing to install
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def execute(args: argparse.Namespace, *, connect: Callable[[str, str | None], Any] = _connect,
            out: TextIO | None = None, err: TextIO | None = None, **run_kw: Any) -> int:
    """`run` with the cluster boundary (`connect`) and streams injectable for tests."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        return _execute(args, connect, out, err, run_kw)
    except _Usage as exc:
        print(f"ck8s-gpu smoke: {exc}", file=err)
        return EXIT_USAGE


def _execute(args: argparse.Namespace, connect: Callable[[str, str | None], Any], out: TextIO, err: TextIO,
             run_kw: dict[str, Any]) -> int:
    from ..kube.charts import render
    from ..smoke import report as reports
    from ..smoke.gateway import KubeError, KubeUnreachable
    from ..smoke.plan import smoke_plan
    from ..smoke.run import Progress, Ref, RunSpec, cleanup, install, namespace_labels, run_smoke
    from ..smoke.values import SmokeConfigError
    from ..tables import pins

    settings, from_stack = _settings(args)
    if args.report is not None and (why := output_problem(args.report, folder=False)) is not None:
        raise _Usage(f"--report {args.report}: {why}")  # before anything is created in the cluster
    try:
        text = args.kubeconfig.read_text()
    except OSError as exc:
        raise _Usage(f"--kubeconfig {args.kubeconfig}: {exc.strerror or exc}") from None
    try:
        gw = connect(text, args.context)
        version = gw.server_version()
    except ValueError as exc:
        raise _Usage(f"--kubeconfig {args.kubeconfig}: {exc}") from None
    except (KubeError, KubeUnreachable) as exc:
        raise _Usage(f"cannot reach the cluster of {args.kubeconfig}: {exc}") from None
    try:
        plan = smoke_plan(settings, _facts(settings, from_stack, args, _minor(version)), pins.image("smoke-test"),
                          release=CLI_RELEASE, nonce=secrets.token_hex(4), pools_known=from_stack,
                          dcgm=DCGM_MODES[args.dcgm])
    except SmokeConfigError as exc:
        raise _Usage(str(exc)) from None
    print(f"Smoke test {plan.run_id} on {version} in namespace {plan.namespace}: "
          f"{', '.join(c.case for c in plan.expectations.cases)} (scheduler {plan.expectations.scheduler})", file=out)

    def progress(p: Progress) -> None:
        print(f"[{p.elapsed:7.1f}s] {p.hop:<9} {p.message}", file=out, flush=True)

    objects = render("gpu-smoke-test", plan.values, release=plan.release, namespace=plan.namespace)
    created: list[Ref] = []
    outcome = None
    with _sigterm_as_interrupt():
        try:
            install(gw, objects, plan.namespace, created, say=lambda m: progress(Progress(0.0, "install", m)),
                    labels=namespace_labels(plan.expectations),
                    clock=run_kw.get("clock"))
            outcome = run_smoke(gw, RunSpec.from_dict(plan.spec()), progress=progress, **run_kw)
        except (KubeError, KubeUnreachable) as exc:
            print(f"ck8s-gpu smoke: the cluster failed mid-run: {exc}", file=err)
        except KeyboardInterrupt:
            print("ck8s-gpu smoke: interrupted, cleaning up", file=err)
            raise
        finally:
            _finish(gw, created, args.keep, cleanup, progress, err)
    if outcome is None:
        return EXIT_USAGE
    print("", file=out)
    print(reports.table(outcome.report), file=out)
    if args.report is not None:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(args.report, json.dumps(outcome.report, indent=2, sort_keys=True) + "\n")
        print(f"report: {args.report}", file=out)
    return EXIT_PASSED if outcome.passed else EXIT_FAILED


def _finish(gw: Any, created: list[Any], keep: bool, cleanup: Callable[..., list[str]],
            progress: Callable[[Any], None], err: TextIO) -> None:
    from ..smoke.run import Progress

    if keep:
        if created:
            print(f"ck8s-gpu smoke: --keep: left {len(created)} object(s): " + ", ".join(map(str, created)), file=err)
        return
    try:
        left = cleanup(gw, created, say=lambda m: progress(Progress(0.0, "cleanup", m)))
    except KeyboardInterrupt:  # a second Ctrl-C: say exactly what is left, then stop
        print("ck8s-gpu smoke: cleanup interrupted", file=err)
        _print_left([str(r) for r in created], err)
        raise
    _print_left(left, err)


def _print_left(left: list[str], err: TextIO) -> None:
    if left:
        print("ck8s-gpu smoke: not deleted (delete by hand):", file=err)
        for item in left:
            print(f"  {item}", file=err)

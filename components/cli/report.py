"""`ck8s-gpu report utilization`: GPU time paid for, allocated and busy, per node pool and per KAI
queue over a window (components/report, docs/utilization.md).

Exit 0: the report was written; 1: Prometheus or the cluster refused; 2: bad arguments or stack
file (every bad one named).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ..runtime.atomic import write_text_atomic
from .outputs import output_problem

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(s|m|h|d)$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser("report", help="reports over a running cluster's history",
                              description="Reports over a running cluster's history.")
    sub = p.add_subparsers(dest="report", required=True, parser_class=type(p))
    u = sub.add_parser(
        "utilization", help="GPU-hours paid, allocated and busy per pool and queue",
        description="GPU-hours paid for (GPU nodes' lifetimes), allocated (devices held by pods, MIG "
                    "instances by their share) and busy (DCGM activity) per node pool and per KAI queue, "
                    "and the GPUs allocated but idle now.")
    u.add_argument("--kubeconfig", type=Path, default=None,
                   help="the cluster: its nodes and pods now, and its Prometheus through the API server")
    u.add_argument("--context", default=None, help="kubeconfig context (default: current)")
    u.add_argument("--prometheus-url", default=None, metavar="URL",
                   help="a Prometheus this machine reaches (default: kube-prometheus-stack's, through the API server)")
    u.add_argument("--since", default="24h", metavar="DURATION", help="window length, e.g. 90m, 24h, 7d (default 24h)")
    u.add_argument("--until", default=None, metavar="UNIX_SECONDS", help="window end (default: now)")
    u.add_argument("--step", default="60s", metavar="DURATION", help="sample step (default 60s)")
    u.add_argument("--idle-below", type=float, default=0.01, metavar="RATIO",
                   help="activity under which an allocated GPU counts as idle (default 0.01)")
    u.add_argument("--stack", type=Path, default=None, metavar="STACK_FILE",
                   help="stacks/Pulumi.<stack>.yaml: GPUs per node of its pools (else the instance type's)")
    u.add_argument("--json", action="store_true", help="print JSON instead of tables")
    u.add_argument("--out", type=Path, default=None, metavar="FILE", help="also write the JSON report here")
    u.set_defaults(func=run)


def duration(text: str) -> float | None:
    m = _DURATION.match(text.strip())
    return float(m.group(1)) * _UNITS[m.group(2)] if m and float(m.group(1)) > 0 else None


def _problems(args: argparse.Namespace) -> tuple[list[str], dict[str, float]]:
    problems, got = [], {}
    for flag, value in (("--since", args.since), ("--step", args.step)):
        seconds = duration(value)
        if seconds is None:
            problems.append(f"{flag} {value!r}: a positive duration like 90s, 30m, 24h, 7d")
        else:
            got[flag] = seconds
    if args.until is not None:
        try:
            got["--until"] = float(args.until)
        except ValueError:
            problems.append(f"--until {args.until!r}: unix seconds")
    if not 0 <= args.idle_below <= 1:
        problems.append(f"--idle-below {args.idle_below}: a ratio of activity, 0 to 1")
    if args.kubeconfig is None and args.prometheus_url is None:
        problems.append("--kubeconfig or --prometheus-url: give the cluster, its Prometheus, or both")
    if "--since" in got and "--step" in got and got["--step"] > got["--since"]:
        problems.append(f"--step {args.step} is longer than the window (--since {args.since})")
    if args.out is not None and (why := output_problem(args.out, folder=False)) is not None:
        problems.append(f"--out {args.out}: {why}")
    return problems, got


def _pool_gpus(stack: Path | None) -> dict[str, int]:
    if stack is None:
        return {}
    from ..settings.facts import pool_gpus
    from ..settings.load import read_stack_file
    from ..validate import from_config

    stack = stack.absolute()  # the file really read, as `plan` names it
    settings = from_config(read_stack_file(stack), str(stack), offline=True)
    return {p.name: f.count for p in settings.node_pools if (f := pool_gpus(p)) is not None}


def _connect(kubeconfig: str, context: str | None) -> Any:
    from ..kube.client import api_client
    from ..smoke.gateway import KubeGateway

    return KubeGateway(api_client(kubeconfig, context=context))


def run(args: argparse.Namespace) -> int:
    return execute(args)


def execute(args: argparse.Namespace, *, connect: Callable[[str, str | None], Any] = _connect,
            prometheus: Callable[[str], Any] | None = None, now: Callable[[], float] = time.time,
            out: TextIO | None = None, err: TextIO | None = None) -> int:
    """`run` with its boundaries injectable for tests: the cluster, Prometheus, the clock, streams."""
    from ..report.sources import HttpPrometheus, PrometheusError, ProxiedPrometheus, gather
    from ..report.utilization import compute, render
    from ..settings.load import SettingsError
    from ..smoke.gateway import KubeError, KubeUnreachable

    out, err = out or sys.stdout, err or sys.stderr
    problems, got = _problems(args)
    try:
        pool_gpus = _pool_gpus(args.stack)
    except SettingsError as exc:
        problems.append(exc.message)
    if problems:
        print("ck8s-gpu report utilization: bad arguments:\n" + "\n".join(f"  {p}" for p in problems), file=err)
        return EXIT_USAGE
    gw = None
    if args.kubeconfig is not None:
        try:
            gw = connect(args.kubeconfig.read_text(), args.context)
        except OSError as exc:
            print(f"ck8s-gpu report utilization: --kubeconfig {args.kubeconfig}: {exc.strerror or exc}", file=err)
            return EXIT_USAGE
        except ValueError as exc:
            print(f"ck8s-gpu report utilization: --kubeconfig {args.kubeconfig}: {exc}", file=err)
            return EXIT_USAGE
    if args.prometheus_url:
        prom = (prometheus or HttpPrometheus)(args.prometheus_url)
    else:
        assert gw is not None  # _problems: one of the two is given
        prom = ProxiedPrometheus(gw)
    end = got.get("--until", now())
    start = end - got["--since"]
    try:
        inputs = gather(prom, gw, start, end, got["--step"], pool_gpus)
    except PrometheusError as exc:
        print(f"ck8s-gpu report utilization: {exc}", file=err)
        return EXIT_FAILED
    except (KubeError, KubeUnreachable) as exc:
        print(f"ck8s-gpu report utilization: the cluster: {exc}", file=err)
        return EXIT_FAILED
    report = compute(start, end, inputs.step, inputs.nodes, inputs.devices, inputs.queue_of,
                     idle_below=args.idle_below, notes=inputs.notes)
    doc = json.dumps(report.as_dict(), indent=2) + "\n"
    if args.out is not None:
        write_text_atomic(args.out, doc)
    out.write(doc if args.json else render(report))
    return EXIT_OK

"""Measured timeline of a real `pulumi up`, from the engine's event stream, against the modeled graph (pure).

`Recorder` is the `on_event` callback of the Automation API's `stack.up`: it keeps every engine
event with its arrival time. `measure` turns them into one span per custom resource:
`resource_pre_event` starts the resource's step, `res_outputs_event` ends it,
`res_op_failed_event` ends it as failed; keyed by `metadata.urn`, in seconds from the first event.

Times are arrival times (`time.monotonic()` in the callback), not the events' own `timestamp`,
which the engine stamps in whole seconds (backend/display/display.go, `stampEvents`): too coarse
for an `up` of a few seconds. With a Pulumi CLI newer than 3.205 the Automation API receives the
events over one gRPC stream (`tcp://` event log; older ones had it tail a log file every 0.1 s,
pulumi/automation/_stack.py `_setup_event_log`): the CLI sends them one at a time in sequence
order and one server thread calls `on_event` for each, so arrival order is the engine's order and
the delay is the stream's, bounded by `Measured.latency_bound`.

Left out of the spans, on purpose:
- component resources (the root stack, `ck8s-gpu:index:*`): their pre event is the program
  registering them and their outputs event the program calling `register_outputs`; neither is
  work the engine does, and the modeled graph already stands a dependency on a component for
  its custom descendants (`components.plan.timeline._expand`);
- the engine's default providers (`pulumi:providers:<pkg>::default*`, e.g. the one dynamic
  resources run on): the program never registers them, so the offline plan has none. They are
  kept in `Measured.providers` because the engine does make a resource wait for its provider, as
  `build_steps` has explicit providers as dependencies: a resource on a default provider is ready
  no earlier than that provider's step ended. The engine starts the provider's process while it
  registers the provider, before that step (0.55 s for the dynamic-provider host on an idle
  2-core machine, from the engine's own log at -v=7; about 1.1 s loaded): that time is not checked.
Steps whose operation is `same` (nothing to do on an unchanged resource) are kept as spans but
are not work: they end a dependency for the resources after them and are not checked.

`compare` checks the spans against the modeled steps (`components.plan.timeline.build_steps` on
the offline plan of the same stack and settings), matched by URN:
(a) order: every resource started after each of its modeled dependencies ended, by the events'
    sequence numbers (exact: one ordered stream; times with `ORDER_TOLERANCE` only where a
    sequence number is missing);
(b) no needless wait: a resource started at most `WAIT_SLACK` after its last modeled dependency
    (or its default provider) ended; after the program started when it has none: the root
    stack's registration, so the interpreter's start and imports do not count. The slack is for
    what lies between one step's end and the next one's start and is no dependency: the snapshot
    write, the program getting the outputs and registering the next resource, the provider's
    Check (a dynamic resource's first Check imports its provider's module in the provider host).
    A hidden dependency on a step shorter than the slack does not show as a wait;
(c) every pair of resources the graph lets run at the same time (neither depends on the other,
    even through others), with how long they overlapped and how long both were ready together.
    (c) is a listing: two short steps may miss each other without anything serialising them; a
    wait the graph does not explain is what (b) reports.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any

from ..tables import tokens

if TYPE_CHECKING:
    from pulumi.automation import EngineEvent

    from .timeline import Step
ORDER_TOLERANCE = 0.05  # s; only where an event has no sequence number
WAIT_SLACK = 1.0  # s; see (b) above
ROOT_STACK = tokens.PULUMI_STACK
SAME = "same"
DELETE_OPS = frozenset({"delete", "delete-replaced", "discard", "discard-replaced"})


# --------------------------------------------------------------------------------------------
# events -> spans


@dataclass(frozen=True)
class Arrival:
    at: float  # time.monotonic() when on_event was called
    wall: float  # time.time() then: only to bound the delivery latency against the whole-second stamp
    event: EngineEvent


class Recorder:
    """`stack.up(on_event=recorder)`: every event with its arrival time (called from one thread)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time) -> None:
        self._clock, self._wall = clock, wall
        self.arrivals: list[Arrival] = []

    def __call__(self, event: EngineEvent) -> None:
        self.arrivals.append(Arrival(self._clock(), self._wall(), event))


@dataclass(frozen=True)
class Span:
    urn: str
    type: str
    op: str  # the step's operation (create, update, same, replace...); the last one seen
    start: float  # s from the first event
    end: float | None  # None: neither outputs nor failure came
    start_seq: int | None = None
    end_seq: int | None = None
    failed: bool = False
    provider: str = ""  # URN of the provider that ran the step ("" when the event names none)

    @property
    def name(self) -> str:
        return urn_name(self.urn)

    @property
    def work(self) -> bool:
        return self.op != SAME


@dataclass
class Measured:
    spans: dict[str, Span]  # custom resources by URN
    skipped: dict[str, str]  # URN -> why it has no span (component, default provider)
    providers: dict[str, Span]  # the engine's default providers by URN
    program_start: float  # the root stack's registration (first event when absent), s from the first event
    end: float  # the last event, s from the first event
    events: int
    # Each event is stamped in whole seconds when emitted, so `wall - timestamp` bounds its delivery
    # latency from above; the tightest bounds are at a second boundary (first event stamped with a
    # new second). Smallest such bound and how many boundaries there were (None: no boundary).
    latency_bound: float | None = None
    boundaries: int = 0

    def intervals(self) -> dict[str, tuple[float, float]]:
        """{urn: (start, end)} of the resources the engine did work on and finished."""
        return {u: (s.start, s.end) for u, s in self.spans.items() if s.work and s.end is not None}


def urn_name(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def urn_type(urn: str) -> str:
    parts = urn.split("::")
    return parts[2].rsplit("$", 1)[-1] if len(parts) >= 4 else ""


def _op(metadata: Any) -> str:
    op = getattr(metadata, "op", "")
    return str(getattr(op, "value", op))


def _provider(metadata: Any) -> str:
    """The provider reference `<urn>::<id>` of a step, as a URN."""
    ref = str(getattr(metadata, "provider", "") or "")
    return ref.rsplit("::", 1)[0] if ref.count("::") > 3 else ref


def is_default_provider(urn: str, type_: str = "") -> bool:
    return (type_ or urn_type(urn)).startswith(tokens.PROVIDER_PREFIX) and urn_name(urn).startswith("default")


def _custom(metadata: Any) -> bool | None:
    """The step's state says custom; the engine's JSON omits `custom: false` (components read None)."""
    states = [s for s in (getattr(metadata, "new", None), getattr(metadata, "old", None)) if s is not None]
    if not states:
        return None  # no state to tell: kept as a resource
    return any(bool(getattr(s, "custom", False)) for s in states)


def skip_reason(urn: str, type_: str, custom: bool | None) -> str | None:
    if type_ == ROOT_STACK:
        return "the root stack (the program's start and end)"
    if is_default_provider(urn, type_):
        return "the engine's default provider (not registered by the program; what runs on it waits for it)"
    if custom is False:
        return "components (their events are the program's registration and register_outputs, not work)"
    return None


def measure(arrivals: Iterable[Arrival]) -> Measured:
    """Spans of the custom resources, in seconds from the first event."""
    arrivals = list(arrivals)
    origin = arrivals[0].at if arrivals else 0.0
    starts: dict[str, tuple[float, int | None, str, str, str]] = {}
    ends: dict[str, tuple[float, int | None, bool, str]] = {}
    skipped: dict[str, str] = {}
    program_start: float | None = None
    bounds: list[float] = []
    previous_stamp: int | None = None
    for a in arrivals:
        e = a.event
        t = a.at - origin
        stamp = getattr(e, "timestamp", None)
        if isinstance(stamp, int) and stamp > 0:
            if previous_stamp is not None and stamp > previous_stamp:
                bounds.append(a.wall - stamp)
            previous_stamp = stamp
        seq = getattr(e, "sequence", None)
        seq = seq if isinstance(seq, int) else None
        for kind in ("resource_pre_event", "res_outputs_event", "res_op_failed_event"):
            payload = getattr(e, kind, None)
            if payload is None:
                continue
            md = payload.metadata
            urn, op = str(md.urn), _op(md)
            type_ = str(getattr(md, "type", "") or urn_type(urn))
            if type_ == ROOT_STACK and kind == "resource_pre_event" and program_start is None:
                program_start = t
            reason = skip_reason(urn, type_, _custom(md))
            if reason is not None:
                skipped[urn] = reason
                if not is_default_provider(urn, type_):
                    continue
            if kind == "resource_pre_event":
                if urn not in starts:  # a replacement has several steps: the first starts it
                    starts[urn] = (t, seq, op, type_, _provider(md))
                else:
                    starts[urn] = (*starts[urn][:2], op, type_, _provider(md))
            else:
                ends[urn] = (t, seq, kind == "res_op_failed_event", op)
    spans: dict[str, Span] = {}
    for urn in sorted(starts.keys() | ends.keys(), key=lambda u: (starts.get(u, (0.0,))[0], u)):
        s_t, s_seq, op, type_, provider = starts.get(urn, (0.0, None, "", urn_type(urn), ""))
        e_t, e_seq, failed, e_op = ends.get(urn, (None, None, False, ""))
        spans[urn] = Span(urn, type_, op or e_op, s_t, e_t, s_seq, e_seq, failed, provider)
    end = (arrivals[-1].at - origin) if arrivals else 0.0
    return Measured({u: sp for u, sp in spans.items() if u not in skipped}, skipped,
                    {u: sp for u, sp in spans.items() if u in skipped},
                    program_start if program_start is not None else 0.0, end, len(arrivals),
                    min(bounds) if bounds else None, len(bounds))


# --------------------------------------------------------------------------------------------
# spans against the modeled graph


@dataclass(frozen=True)
class Row:
    urn: str
    name: str
    deps: tuple[str, ...]  # modeled dependencies (URNs of resources)
    span: Span | None
    ready: float | None  # when its last modeled dependency (or default provider) ended; else the program's start
    last_dep: str = ""  # the dependency that ended last ("" without any)
    default_provider: str = ""  # the engine's default provider it ran on, a dependency too

    @property
    def wait(self) -> float | None:
        if self.span is None or self.ready is None:
            return None
        return self.span.start - self.ready


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    overlap: float  # s both ran at once (<= 0: they did not)
    together: float  # s both were ready (every modeled dependency ended) and not yet finished

    @property
    def overlapped(self) -> bool:
        return self.overlap > 0


@dataclass
class Report:
    rows: list[Row]
    pairs: list[Pair]
    only_modeled: list[str]  # URNs
    only_measured: list[str]
    unchanged: list[str]  # measured with op `same`
    skipped: dict[str, str]
    problems: list[str]
    program_start: float
    end: float
    slack: float
    events: int
    latency_bound: float | None = None
    boundaries: int = 0
    names: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def resource_deps(steps: Sequence[Step]) -> dict[str, tuple[str, ...]]:
    """Each resource step's dependencies on resources, through synthetic steps (node boot...)."""
    by_id = {s.id: s for s in steps}
    out: dict[str, tuple[str, ...]] = {}

    def through(step_id: str, seen: set[str]) -> set[str]:
        found: set[str] = set()
        for d in by_id[step_id].deps:
            if d not in by_id or d in seen:
                continue
            seen.add(d)
            found |= through(d, seen) if by_id[d].synthetic else {d}
        return found

    for s in steps:
        if not s.synthetic:
            out[s.id] = tuple(sorted(through(s.id, set())))
    return out


def _ancestors(deps: Mapping[str, tuple[str, ...]]) -> dict[str, set[str]]:
    memo: dict[str, set[str]] = {}

    def walk(urn: str) -> set[str]:
        if urn not in memo:
            memo[urn] = set()  # a cycle ends here (build_steps' graphs have none)
            found: set[str] = set()
            for d in deps.get(urn, ()):
                found |= {d} | walk(d)
            memo[urn] = found
        return memo[urn]

    for urn in deps:
        walk(urn)
    return memo


def _before(dep: Span, span: Span, tolerance: float) -> bool:
    """Did `dep` end before `span` started? By sequence numbers when both have them."""
    if dep.end is None:
        return False
    if dep.end_seq is not None and span.start_seq is not None:
        return dep.end_seq < span.start_seq
    return span.start >= dep.end - tolerance


def _s(x: float) -> str:
    return f"{x:.2f} s"


def compare(steps: Sequence[Step], measured: Measured, *, slack: float = WAIT_SLACK,
            tolerance: float = ORDER_TOLERANCE) -> Report:
    """Measured spans against the modeled graph: (a) order, (b) no needless wait, (c) pairs."""
    deps = resource_deps(steps)
    names = {s.id: s.name for s in steps if not s.synthetic}
    spans = measured.spans
    modeled = set(deps)
    names.update({u: s.name for u, s in spans.items() if u not in names})
    problems: list[str] = []

    only_modeled = sorted(modeled - spans.keys())
    only_measured = sorted(u for u, s in spans.items() if u not in modeled and s.op not in DELETE_OPS)
    problems += [f"{names[u]} ({u}): in the modeled graph, but the engine reported no step for it"
                 for u in only_modeled]
    problems += [f"{names[u]} ({u}): the engine ran a step for it ({spans[u].op}), the modeled graph has no "
                 "such resource" for u in only_measured]

    rows: list[Row] = []
    names.update({u: p.name for u, p in measured.providers.items()})
    for urn in sorted(modeled & spans.keys(), key=lambda u: (spans[u].start, u)):
        span = spans[urn]
        measured_deps = [spans[d] for d in deps[urn] if d in spans]
        provider = measured.providers.get(span.provider)
        waited_for = [*measured_deps, *([provider] if provider is not None else [])]
        finished = [d for d in waited_for if d.end is not None]
        last = max(finished, key=lambda d: (d.end or 0.0, d.urn)) if finished else None
        if not waited_for:
            ready: float | None = measured.program_start if not deps[urn] else None
        else:
            ready = (last.end if last is not None else None) if len(finished) == len(waited_for) else None
        row = Row(urn, names[urn], deps[urn], span, ready, last.urn if last is not None else "",
                  provider.urn if provider is not None else "")
        if span.work:
            rows.append(row)
        if span.failed:
            problems.append(f"{row.name}: {span.op} failed at {_s(span.end or 0.0)}")
        elif span.end is None:
            problems.append(f"{row.name}: started at {_s(span.start)} and never finished")
        if not span.work:
            continue
        for d in waited_for:
            if not _before(d, span, tolerance):
                ended = f"ended at {_s(d.end)}" if d.end is not None else "never ended"
                what = "default provider" if d.urn in measured.providers else "modeled dependency"
                problems.append(f"order: {row.name} started at {_s(span.start)} before its {what} "
                                f"{names[d.urn]} ({ended})")
        wait = row.wait
        if wait is not None and wait > slack:
            what = "default provider" if row.last_dep in measured.providers else "modeled dependency"
            after = f"its last {what} {names[row.last_dep]} ended" if row.last_dep else \
                "the program started (it has no modeled dependency)"
            problems.append(f"wait: {row.name} started {_s(wait)} after {after}, more than the {_s(slack)} slack: "
                            "something the modeled graph does not have held it back")

    ancestors = _ancestors(deps)
    by_urn = {r.urn: r for r in rows}
    pairs: list[Pair] = []
    for a, b in combinations(by_urn, 2):
        if a in ancestors.get(b, set()) or b in ancestors.get(a, set()):
            continue
        sa, sb = spans[a], spans[b]
        if sa.end is None or sb.end is None:
            continue
        overlap = min(sa.end, sb.end) - max(sa.start, sb.start)
        ra, rb = by_urn[a].ready, by_urn[b].ready
        together = (min(sa.end, sb.end) - max(ra, rb)) if ra is not None and rb is not None else 0.0
        pairs.append(Pair(a, b, overlap, max(together, 0.0)))

    unchanged = sorted(u for u, s in spans.items() if not s.work)
    return Report(rows, pairs, only_modeled, only_measured, unchanged, dict(measured.skipped), problems,
                  measured.program_start, measured.end, slack, measured.events, measured.latency_bound,
                  measured.boundaries, names)


# --------------------------------------------------------------------------------------------
# markdown


def _cell(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def verdict(report: Report) -> str:
    if report.ok:
        return (f"Measured order matches the modeled graph: **yes** ({len(report.rows)} resources, every one started "
                f"after its modeled dependencies and at most {report.slack:g} s after the last of them ended; "
                f"{sum(p.overlapped for p in report.pairs)} of {len(report.pairs)} pairs the graph lets run at "
                "the same time overlapped).")
    return "Measured order matches the modeled graph: **no**:\n\n" + "\n".join(f"- {p}" for p in report.problems)


def markdown(report: Report) -> str:
    """The measured timeline as a table, the pairs the graph lets run together, the verdict."""
    name = report.names.get
    lines = [
        f"Seconds from the first engine event; the program (root stack) started at {report.program_start:.2f} s, "
        f"the last of {report.events} events came at {report.end:.2f} s. \"wait after deps\": start minus the end "
        "of the last modeled dependency or default provider (the program's start without any).",
        "",
        "| resource | modeled deps | start | end | wait after deps |",
        "|---|---|---:|---:|---:|",
    ]
    for r in report.rows:
        engine = [f"default provider `{urn_name(r.default_provider)}`"] if r.default_provider else []
        deps = ", ".join([f"`{name(d, d)}`" for d in r.deps] + engine) or "-"
        end = r.span.end if r.span is not None else None
        failed = " (failed)" if r.span is not None and r.span.failed else ""
        lines.append(f"| `{r.name}` | {deps} | {_cell(r.span.start if r.span else None)} | {_cell(end)}{failed} "
                     f"| {_cell(r.wait)} |")
    lines.append("")
    if report.pairs:
        lines += ["Pairs the modeled graph lets run at the same time (neither depends on the other, even through "
                  "others); \"both ready\": how long both had every modeled dependency done and neither had "
                  "finished, the most they could have overlapped:", "",
                  "| resources | overlapped (s) | both ready (s) |", "|---|---:|---:|"]
        lines += [f"| `{name(p.a, p.a)}` and `{name(p.b, p.b)}` | {max(p.overlap, 0.0):.2f} | {p.together:.2f} |"
                  for p in report.pairs]
        lines.append("")
    else:
        lines += ["The modeled graph is a chain here: no two resources may run at the same time.", ""]
    if report.skipped:
        by_reason: dict[str, list[str]] = {}
        for u, why in report.skipped.items():
            by_reason.setdefault(why, []).append(f"`{urn_name(u)}`")
        lines += ["Not compared: " + "; ".join(f"{why}: {', '.join(us)}" for why, us in by_reason.items()) + ".", ""]
    if report.unchanged:
        lines += ["Unchanged (`same`, no work): " + ", ".join(f"`{name(u, u)}`" for u in report.unchanged) + ".", ""]
    lines.append(verdict(report))
    return "\n".join(lines)
